"""The agent loop: call the model with tools, run every tool it asks for, repeat until it answers.

Contract (the multi-turn session relies on it):

- ``run_agent`` appends to the ``messages`` list it is given, in place: the user
  message, then for each step the assistant message and one ``tool`` message per tool
  call (same order, matching ``tool_call_id``), then the final assistant answer.
- If anything raises during the turn -- an API error, a bug, Ctrl-C -- every message
  this turn appended is removed before the exception propagates, so the list is
  exactly as it was: never a tool call without its result.
- If the model is still calling tools after ``max_steps`` requests, the turn ends with
  an honest assistant message saying so (all tool calls answered, so the list stays valid).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from helpers.client import chat
from helpers.compat import normalize_messages
from helpers.tools import REGISTRY, Tool, run_tool, tool_schemas

MAX_STEPS = 6
EMPTY_REPLY = "(the model returned an empty reply)"
DEFAULT_SYSTEM_PROMPT = (
    "You are the Larkspur University campus assistant. Use the tools to look things up; never invent "
    "campus facts. Cite knowledge-base ids in square brackets. Always use days_until_weekday to count or "
    "compare days rather than estimating."
)


@dataclass
class AgentResult:
    """What one turn produced."""

    answer: str
    messages: list[dict]
    added: list[dict]
    steps: int
    stopped: str  # "answer" or "max_steps"
    usage: list = field(default_factory=list)  # one usage object per request


def _short(text: str, width: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _format_call(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments or "{}")
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else arguments
    except ValueError:
        shown = arguments
    return f"{name}({shown})"


def _streamed_reply(stream):
    """Read a streamed completion: yield text pieces as they arrive, rebuild tool calls by index.

    Returns (assistant message dict, usage or None) as the generator's value.
    """
    content, calls, usage = [], {}, None
    for chunk in stream:
        if getattr(chunk, "usage", None):
            usage = chunk.usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            content.append(delta.content)
            yield delta.content
        for fragment in delta.tool_calls or []:
            call = calls.setdefault(fragment.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = fragment.id or call["id"]
            if fragment.function is not None:
                call["name"] += fragment.function.name or ""
                call["arguments"] += fragment.function.arguments or ""
    message = {"role": "assistant", "content": "".join(content)}
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for _, c in sorted(calls.items())]
    return normalize_messages([message])[0], usage


class _Streamed:
    """The part of a response the callers of ``on_response`` read, for streamed replies."""

    def __init__(self, message: dict, usage):
        self.message, self.usage = message, usage


def run_agent(question: str, messages: list[dict] | None = None, **options) -> AgentResult:
    """Answer one question with tools, appending the whole turn to ``messages`` (rolled back on error).

    Options are those of ``agent_turn``: client, settings, tools, registry, max_steps,
    verbose, system_prompt, on_response, and any chat() keyword.
    """
    turn = agent_turn(question, messages, stream=False, **options)
    while True:
        try:
            next(turn)
        except StopIteration as done:
            return done.value


def agent_turn(question: str, messages: list[dict] | None = None, *, stream: bool = False, client=None,
               settings=None, tools: list[str] | None = None, registry: dict[str, Tool] | None = None,
               max_steps: int = MAX_STEPS, verbose: bool = False, system_prompt: str = DEFAULT_SYSTEM_PROMPT,
               on_response: Callable[[int, object], None] | None = None, **chat_kwargs):
    """The loop itself, as a generator: yields answer text as it arrives (``stream=True``) and
    returns the AgentResult. Closing it early rolls the turn back like any other failure."""
    registry = REGISTRY if registry is None else registry
    schemas = tool_schemas(tools, registry)
    if messages is None:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    start = len(messages)
    usage = []
    say = print if verbose else (lambda *a, **k: None)
    try:
        messages.append({"role": "user", "content": question})
        say(f"user    {_short(question)}")
        for step in range(1, max_steps + 1):
            sent = len(messages)
            if not stream:
                response = chat(messages, client=client, settings=settings, tools=schemas, **chat_kwargs)
                reply = normalize_messages([response.choices[0].message])[0]
            else:
                chunks = chat(messages, client=client, settings=settings, tools=schemas, stream=True,
                              stream_options={"include_usage": True}, **chat_kwargs)
                reply, streamed_usage = yield from _streamed_reply(chunks)
                response = _Streamed(reply, streamed_usage)
            usage.append(response.usage)
            if on_response is not None and response.usage is not None:
                on_response(sent, response)
            calls = reply.get("tool_calls") or []
            if not calls and not (reply.get("content") or "").strip():
                reply = {"role": "assistant", "content": EMPTY_REPLY}  # a strict server rejects an empty one
            messages.append(reply)
            if not calls:
                say(f"answer  {_short(reply.get('content') or '', 400)}")
                return AgentResult(reply.get("content") or "", messages, messages[start:], step, "answer", usage)
            for call in calls:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                say(f"step {step}  → {_short(_format_call(name, arguments))}")
                result = run_tool(name, arguments, registry)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
                marker = "  ✗ " if result.startswith('{"error"') else "  ← "
                say(f"       {marker}{_short(result)}")
        answer = (f"I stopped after {max_steps} step{'s' if max_steps != 1 else ''} without reaching an answer. "
                  "The tools I used are listed above; please rephrase or ask a narrower question.")
        messages.append({"role": "assistant", "content": answer})
        if stream:
            yield answer
        say(f"stop    step limit ({max_steps}) reached")
        return AgentResult(answer, messages, messages[start:], max_steps, "max_steps", usage)
    except BaseException:
        del messages[start:]
        raise

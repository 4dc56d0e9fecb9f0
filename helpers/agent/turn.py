"""``agent_loop`` of notebook 06, hardened for real use: ``agent_turn`` (and ``run_agent``, which runs it to
the end), with this contract (the multi-turn sessions of notebooks 07 and 11 rely on it):

- it appends to the ``messages`` list it is given, in place: the user message, then for each step the
  assistant message and one ``tool`` message per tool call (same order, matching ``tool_call_id``), then
  the final assistant answer;
- if anything raises during the turn -- an API error, a bug, Ctrl-C -- every message this turn appended
  is removed before the exception propagates, so the list is exactly as it was: never a tool call
  without its result;
- if the model is still calling tools after ``max_steps`` requests, the turn ends with an honest
  assistant message saying so (all tool calls answered, so the list stays valid);
- only the tools offered in the request run: a call to any other tool (a model's mistake, or an
  instruction injected through a tool result) gets an error result;
- with ``stream=True`` it yields the answer's text as it arrives; a streamed reply that is not a chat
  completion stream (an HTML page, an error, no chunks, chunks without choices) raises
  ``ResponseFormatError`` -- never a blank answer (``helpers.llm.stream_reader`` reads the stream). A server
  that cannot stream while tools are offered (``ServerProfile.stream_with_tools``, e.g. llama.cpp) gets
  plain requests, and the answer is yielded in one piece;
- a reply with neither text nor a tool call is asked for once more with ``tool_choice="none"`` (with
  llama.cpp's ``chatml-function-calling`` and ``tool_choice="auto"`` a model can only call a tool or
  stop, never answer in words). If that reply is empty too, the answer is ``EMPTY_REPLY`` and the turn
  is rolled back: a placeholder never enters the history (``stopped == "empty"``, ``added == []``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from helpers.agent.loop import DEFAULT_SYSTEM_PROMPT, MAX_STEPS
from helpers.llm.api_key import safe_url
from helpers.llm.client import chat, get_settings
from helpers.llm.compat import profile_for
from helpers.core.errors import ConfigError
from helpers.llm.stream_reader import read_streamed_reply, reply_as_message, reported_usage
from helpers.core.text import shorten
from helpers.agent.tools import REGISTRY, Tool, run_tool, tool_schemas

EMPTY_REPLY = "(the model returned an empty reply)"
TRACE_CHARS = 110  # a verbose trace line's text: one line, at most this long


@dataclass
class AgentResult:
    """What one turn produced."""

    answer: str
    messages: list[dict]
    added: list[dict]
    steps: int
    stopped: str  # "answer", "max_steps", or "empty" (no words even when asked again: nothing kept)
    usage: list = field(default_factory=list)  # one usage object per request


def check_max_steps(max_steps) -> int:
    """``max_steps`` itself, if it is a whole number of at least 1; otherwise a ConfigError saying so."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ConfigError(f"max_steps must be a whole number of at least 1 (got {max_steps!r}); it is how "
                          f"many model requests one turn may make (default {MAX_STEPS})")
    return max_steps


def run_agent(question: str, messages: list[dict] | None = None, **options) -> AgentResult:
    """Answer one question with tools, appending the whole turn to ``messages`` (rolled back on error).

    Options are those of ``agent_turn``: client, settings, tools, registry, max_steps,
    verbose, system_prompt, on_response, and any chat() keyword.
    """
    turn = agent_turn(question, messages, stream=False, **options)
    while True:  # without streaming the turn yields nothing: run it to its return value
        try:
            next(turn)
        except StopIteration as done:
            return done.value


def agent_turn(question: str, messages: list[dict] | None = None, *, stream: bool = False, client=None,
               settings=None, tools: list[str] | None = None, registry: dict[str, Tool] | None = None,
               max_steps: int = MAX_STEPS, verbose: bool = False, system_prompt: str = DEFAULT_SYSTEM_PROMPT,
               on_response: Callable[[int, object], None] | None = None, **chat_kwargs):
    """``agent_loop`` with the contract above, as a generator: yields answer text as it arrives
    (``stream=True``) and returns the AgentResult. Closing it early rolls the turn back."""
    registry = REGISTRY if registry is None else registry
    check_max_steps(max_steps)
    schemas = tool_schemas(tools, registry)
    offered = [schema["function"]["name"] for schema in schemas]  # the only tools this turn may run
    if messages is None:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    start = len(messages)
    usage = []
    say = print if verbose else (lambda *a, **k: None)
    try:
        messages.append({"role": "user", "content": question})
        say(f"user    {shorten(question, TRACE_CHARS)}")
        for step in range(1, max_steps + 1):
            sent = len(messages)
            reply, response = yield from _ask(messages, schemas, stream, client, settings, chat_kwargs)
            _count(response, sent, usage, on_response)
            calls = reply.get("tool_calls") or []
            if not calls and not (reply.get("content") or "").strip() and schemas and \
                    chat_kwargs.get("tool_choice") != "none":
                say("empty   no words and no tool call: asking again with tool_choice='none'")
                retry = {**chat_kwargs, "tool_choice": "none"}
                reply, response = yield from _ask(messages, schemas, stream, client, settings, retry)
                _count(response, sent, usage, on_response)
                reply = {"role": "assistant", "content": reply.get("content") or ""}  # no tool was allowed
                calls = []
            if not calls and not (reply.get("content") or "").strip():
                say(f"empty   {EMPTY_REPLY}: this turn is not kept")
                del messages[start:]  # a placeholder never enters the history (nor a summary of it)
                if stream:
                    yield EMPTY_REPLY
                return AgentResult(EMPTY_REPLY, messages, [], step, "empty", usage)
            messages.append(reply)
            if not calls:
                say(f"answer  {shorten(reply.get('content') or '', 400)}")
                answer = reply.get("content") or ""
                return AgentResult(answer, messages, messages[start:], step, "answer", usage)
            for call in calls:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                say(f"step {step}  → {shorten(_format_call(name, arguments), TRACE_CHARS)}")
                result = run_tool(name, arguments, registry, offered=offered)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
                marker = "  ✗ " if result.startswith('{"error"') else "  ← "
                say(f"       {marker}{shorten(result, TRACE_CHARS)}")
        steps = f"{max_steps} step{'s' if max_steps != 1 else ''}"
        answer = (f"I stopped after {steps} without reaching an answer. "
                  "The tools I used are listed above; please rephrase or ask a narrower question.")
        messages.append({"role": "assistant", "content": answer})
        if stream:
            yield answer
        say(f"stop    step limit ({max_steps}) reached")
        return AgentResult(answer, messages, messages[start:], max_steps, "max_steps", usage)
    except BaseException:
        del messages[start:]
        raise


def _ask(messages: list[dict], schemas: list[dict], stream: bool, client, settings, chat_kwargs: dict):
    """One model request (a generator that yields streamed text): returns (assistant message, response)."""
    used = settings or get_settings()
    if stream and schemas and chat_kwargs.get("tool_choice") != "none" and \
            not profile_for(used).stream_with_tools:
        reply, response = yield from _ask(messages, schemas, False, client, settings, chat_kwargs)
        if reply.get("content"):
            yield reply["content"]  # this server cannot stream with tools: the whole answer at once
        return reply, response
    if not stream:
        response = chat(messages, client=client, settings=settings, tools=schemas, **chat_kwargs)
        where = f"The server at {safe_url(used.base_url)}"
        return reply_as_message(response.choices[0].message, where, used.api_key), response
    chunks = chat(messages, client=client, settings=settings, tools=schemas, stream=True,
                  stream_options={"include_usage": True}, **chat_kwargs)
    reply, usage = yield from read_streamed_reply(chunks, settings)
    return reply, _Streamed(reply, usage)


def _count(response, sent: int, usage: list, on_response) -> None:
    """Note one response's reported usage (None when the server sent no usable count) and tell ``on_response``
    of it, with how many messages were sent, when there is a count."""
    reported = reported_usage(response.usage)
    usage.append(reported)
    if on_response is not None and reported is not None:
        on_response(sent, response)


def _format_call(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments[:10_000] if isinstance(arguments, str) else arguments or "{}")
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else arguments
    except (TypeError, ValueError, RecursionError):  # shown as sent; run_tool explains the problem
        shown = arguments
    return f"{name}({str(shown)[:1_000]})"


class _Streamed:
    """The part of a response the callers of ``on_response`` read, for streamed replies."""

    def __init__(self, message: dict, usage):
        self.message, self.usage = message, usage

"""The agent loop: call the model with tools, run every tool it asks for, repeat until it answers.

The module opens with ``agent_loop``, the loop notebook 06 builds (about twenty lines). After it comes the
same loop hardened for real use, ``agent_turn`` (and ``run_agent``, which runs it to the end), with this
contract (the multi-turn session of notebook 07 relies on it):

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
  ``ResponseFormatError`` -- never a blank answer. The stream reader is at the end of the module.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import openai

from helpers.client import (FORMAT_ADVICE, ResponseFormatError, chat, describe_body, explain, get_settings,
                            hide_secret)
from helpers.compat import CompatError, assistant_message_to_dict, normalize_messages
from helpers.config import ConfigError, safe_url
from helpers.tools import REGISTRY, Tool, run_tool, tool_schemas

MAX_STEPS = 6
EMPTY_REPLY = "(the model returned an empty reply)"
DEFAULT_SYSTEM_PROMPT = (
    "You are the Larkspur University campus assistant. Use the tools to look things up; never invent "
    "campus facts. Cite knowledge-base ids in square brackets. Always use days_until_weekday to count or "
    "compare days rather than estimating."
)


# ---------------------------------------------------------------- the loop (notebook 06)

def agent_loop(question: str, messages: list[dict], tools: list[str] | None = None,
               registry: dict[str, Tool] | None = None, max_steps: int = MAX_STEPS,
               client=None, settings=None) -> str:
    """Plan, act, observe: ask the model with tools, run every call it makes, repeat until it answers."""
    schemas = tool_schemas(tools, registry)  # what the model may call
    messages.append({"role": "user", "content": question})
    for _ in range(max_steps):
        response = chat(messages, client=client, settings=settings, tools=schemas)  # plan
        reply = assistant_message_to_dict(response.choices[0].message)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]  # no tool asked for: this is the answer
        for call in reply["tool_calls"]:  # act: run every call, in order
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            result = run_tool(name, arguments, registry, offered=tools)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})  # observe
    answer = f"I stopped after {max_steps} steps without reaching an answer."
    messages.append({"role": "assistant", "content": answer})
    return answer


# ---------------------------------------------------------------- the same loop, hardened

@dataclass
class AgentResult:
    """What one turn produced."""

    answer: str
    messages: list[dict]
    added: list[dict]
    steps: int
    stopped: str  # "answer" or "max_steps"
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
        say(f"user    {_short(question)}")
        for step in range(1, max_steps + 1):
            sent = len(messages)
            reply, response = yield from _ask(messages, schemas, stream, client, settings, chat_kwargs)
            reported = _reported_usage(response.usage)  # None when the server sent no usable count
            usage.append(reported)
            if on_response is not None and reported is not None:
                on_response(sent, response)
            calls = reply.get("tool_calls") or []
            if not calls and not (reply.get("content") or "").strip():
                reply = {"role": "assistant", "content": EMPTY_REPLY}  # a strict server rejects an empty one
            messages.append(reply)
            if not calls:
                say(f"answer  {_short(reply.get('content') or '', 400)}")
                answer = reply.get("content") or ""
                return AgentResult(answer, messages, messages[start:], step, "answer", usage)
            for call in calls:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                say(f"step {step}  → {_short(_format_call(name, arguments))}")
                result = run_tool(name, arguments, registry, offered=offered)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
                marker = "  ✗ " if result.startswith('{"error"') else "  ← "
                say(f"       {marker}{_short(result)}")
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
    if not stream:
        response = chat(messages, client=client, settings=settings, tools=schemas, **chat_kwargs)
        used = settings or get_settings()
        where = f"The server at {safe_url(used.base_url)}"
        return _as_reply(response.choices[0].message, where, used.api_key), response
    chunks = chat(messages, client=client, settings=settings, tools=schemas, stream=True,
                  stream_options={"include_usage": True}, **chat_kwargs)
    reply, usage = yield from _streamed_reply(chunks, settings)
    return reply, _Streamed(reply, usage)


def _short(text: str, width: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _format_call(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments[:10_000] if isinstance(arguments, str) else arguments or "{}")
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else arguments
    except (TypeError, ValueError, RecursionError):  # shown as sent; run_tool explains the problem
        shown = arguments
    return f"{name}({str(shown)[:1_000]})"



# ---------------------------------------------------------------- reading a streamed reply

def _streamed_reply(stream, settings=None):
    """Read a streamed completion: yield text pieces as they arrive, rebuild tool calls by index.

    Returns (assistant message dict, usage or None) as the generator's value. Anything that is not a
    chat completion stream raises ResponseFormatError naming what the server sent.
    """
    secret = (settings or get_settings()).api_key
    where = _server(stream)
    _refuse_unstreamed_body(stream, where, secret)
    content, calls, usage, chunks, with_choices = [], {}, None, 0, 0
    for chunk in _chunks(stream, where, settings, secret):
        chunks += 1
        try:
            usage = _reported_usage(getattr(chunk, "usage", None)) or usage
            if not hasattr(chunk, "choices"):
                raise TypeError("it has no choices field")
            if not chunk.choices:  # e.g. the usage chunk that ends a stream
                continue
            with_choices += 1
            delta = chunk.choices[0].delta
            if delta is None:
                continue
            text = delta.content
            if text is not None and not isinstance(text, str):
                raise TypeError(f"its content is {type(text).__name__}, not text")
            for fragment in delta.tool_calls or []:
                index = fragment.index if isinstance(fragment.index, int) else 0  # some servers omit it
                call = calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
                call["id"] = fragment.id or call["id"]
                if fragment.function is not None:
                    call["name"] += fragment.function.name or ""
                    call["arguments"] += fragment.function.arguments or ""
        except (AttributeError, TypeError, IndexError) as exc:
            raise ResponseFormatError(f"{where} sent a stream chunk that is not a chat completion chunk "
                                      f"({exc}): {_excerpt(chunk, secret)}. {FORMAT_ADVICE}") from None
        if text:
            content.append(text)
            yield text
    if not chunks:
        raise ResponseFormatError(f"{where} answered HTTP 200 but its stream ended without a single chunk, "
                                  f"so there is no reply. {FORMAT_ADVICE}")
    if not with_choices:
        raise ResponseFormatError(f"{where} sent {chunks} stream chunk{'s' if chunks != 1 else ''} but none "
                                  f"carried a choice, so there is no reply. {FORMAT_ADVICE}")
    message = {"role": "assistant", "content": "".join(content)}
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for _, c in sorted(calls.items())]
    return _as_reply(message, where, secret), usage


def _as_reply(message, where: str, secret) -> dict:
    """The server's assistant message as a plain dict, or a ResponseFormatError saying what is wrong."""
    try:
        return normalize_messages([message])[0]
    except CompatError as exc:
        problem = str(exc)
        detail = f" ({problem.removeprefix('message 0: ')})" if problem.startswith("message 0: ") else ""
        raise ResponseFormatError(f"{where} answered with an assistant message that cannot go back into the "
                                  f"conversation{detail}: {_excerpt(message, secret)}") from None


def _server(stream) -> str:
    """'The server at <url>' for error messages (no user name, password or query string)."""
    request = getattr(getattr(stream, "response", None), "request", None)
    return f"The server at {safe_url(request.url)}" if request is not None else "The server"


def _chunks(stream, where: str, settings, secret):
    """The stream's chunks; errors reading it become EndpointErrors that say what the server sent."""
    try:
        yield from stream
    except (openai.APITimeoutError, openai.APIConnectionError) as error:
        raise explain(error, settings) from error
    except openai.APIError as error:  # a ``data: {"error": ...}`` event
        raise ResponseFormatError(f"{where} answered HTTP 200, then sent an error inside the stream: "
                                  f"{_excerpt(error.message, secret)}") from None
    except (ValueError, RecursionError) as error:  # a data: line that is not JSON
        sent = _excerpt(getattr(error, "doc", error), secret)
        raise ResponseFormatError(f"{where} sent a stream event that is not JSON: {sent}. "
                                  f"{FORMAT_ADVICE}") from None


def _refuse_unstreamed_body(stream, where: str, secret) -> None:
    """A JSON or HTML body is not a stream at all: read (the start of) it and say what it was."""
    response = getattr(stream, "response", None)
    content_type = response.headers.get("content-type", "") if response is not None else ""
    if "json" not in content_type and "html" not in content_type:
        return
    body = b""
    try:
        for part in response.iter_bytes():
            body += part
            if len(body) > 65_536:
                break
    finally:
        stream.close()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = body
    if isinstance(data, dict) and "choices" in data and not data.get("error"):
        raise ResponseFormatError(f"{where} answered a streamed request with one whole completion, not a "
                                  "stream: this server does not stream. Call it without streaming.")
    raise ResponseFormatError(f"{where} answered HTTP 200 with {describe_body(data, secret=secret)} where a "
                              f"streamed chat completion was expected. {FORMAT_ADVICE}")


def _excerpt(value, secret, width: int = 120) -> str:
    """The start of what the server sent, quoted, on one line, with the key hidden."""
    try:
        if hasattr(value, "model_dump"):  # a chunk the openai client built: show it as the JSON it came as
            value = json.dumps(value.model_dump(mode="json", exclude_none=True, warnings=False))
        text = value if isinstance(value, str) else repr(value)
    except Exception:  # a repr that recurses too deeply or fails
        text = f"<{type(value).__name__}>"
    text = " ".join(hide_secret(text[: width * 4], secret).split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _reported_usage(usage):
    """``usage`` if it holds a whole ``prompt_tokens`` count, else None (a server may send none, or junk)."""
    tokens = getattr(usage, "prompt_tokens", None)
    return usage if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None


class _Streamed:
    """The part of a response the callers of ``on_response`` read, for streamed replies."""

    def __init__(self, message: dict, usage):
        self.message, self.usage = message, usage

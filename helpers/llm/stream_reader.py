"""Reading a streamed chat completion: its text as it arrives, tool calls rebuilt, anything else refused.

``read_streamed_reply`` yields each piece of text as the server sends it and returns the whole assistant
message. A reply that is not a chat completion stream -- an HTML page, a JSON error, one whole completion,
no chunks, chunks without choices, an error event inside the stream -- raises ``ResponseFormatError``
naming what the server sent, with the key hidden: never a blank answer. Streaming turns use it
(``helpers.agent.turn.agent_turn(..., stream=True)``, the chat window of notebook 11).

Two checks apply to every reply, streamed or not: ``reply_as_message`` (an assistant message that can go
back into the conversation) and ``reported_usage`` (a token count that is really one).
"""
from __future__ import annotations

import json

import openai

from helpers.llm.api_key import safe_url
from helpers.llm.client import (FORMAT_ADVICE, ResponseFormatError, describe_body, explain, get_settings,
                            hide_secret)
from helpers.llm.message_format import CompatError, normalize_messages
from helpers.core.text import shorten


def read_streamed_reply(stream, settings=None):
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
            usage = reported_usage(getattr(chunk, "usage", None)) or usage
            if not hasattr(chunk, "choices"):
                raise _not_a_chunk(where, "it has no choices field", chunk, secret)
            if not chunk.choices:  # e.g. the usage chunk that ends a stream
                continue
            with_choices += 1
            delta = chunk.choices[0].delta
            if delta is None:
                continue
            text = delta.content
            if text is not None and not isinstance(text, str):
                raise _not_a_chunk(where, f"its content is {type(text).__name__}, not text", chunk, secret)
            for fragment in delta.tool_calls or []:
                index = fragment.index if isinstance(fragment.index, int) else 0  # some servers omit it
                call = calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
                call["id"] = fragment.id or call["id"]
                if fragment.function is not None:
                    call["name"] += fragment.function.name or ""
                    call["arguments"] += fragment.function.arguments or ""
        except (AttributeError, TypeError, IndexError) as exc:  # reading the chunk: a field of another shape
            raise _not_a_chunk(where, exc, chunk, secret) from None
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
    return reply_as_message(message, where, secret), usage


def reply_as_message(message, where: str, secret) -> dict:
    """The server's assistant message as a plain dict, or a ResponseFormatError saying what is wrong."""
    try:
        return normalize_messages([message])[0]
    except CompatError as exc:
        problem = str(exc)
        detail = f" ({problem.removeprefix('message 0: ')})" if problem.startswith("message 0: ") else ""
        raise ResponseFormatError(f"{where} answered with an assistant message that cannot go back into the "
                                  f"conversation{detail}: {_excerpt(message, secret)}") from None


def reported_usage(usage):
    """``usage`` if it holds a whole ``prompt_tokens`` count, else None (a server may send none, or junk)."""
    tokens = getattr(usage, "prompt_tokens", None)
    return usage if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None


def _server(stream) -> str:
    """'The server at <url>' for error messages (no user name, password or query string)."""
    request = getattr(getattr(stream, "response", None), "request", None)
    return f"The server at {safe_url(request.url)}" if request is not None else "The server"


def _chunks(stream, where: str, settings, secret):
    """The stream's chunks; errors reading it become EndpointErrors that say what the server sent.

    The new error is raised after the ``except`` block, so it carries no ``__context__``: the openai
    error it replaces may quote a key the server echoed.
    """
    failure = None
    try:
        yield from stream
    except (openai.APITimeoutError, openai.APIConnectionError) as error:
        failure = explain(error, settings)
    except openai.APIError as error:  # a ``data: {"error": ...}`` event
        failure = ResponseFormatError(f"{where} answered HTTP 200, then sent an error inside the stream: "
                                      f"{_excerpt(error.message, secret)}")
    except (ValueError, RecursionError) as error:  # a data: line that is not JSON
        sent = _excerpt(getattr(error, "doc", error), secret)
        failure = ResponseFormatError(f"{where} sent a stream event that is not JSON: {sent}. {FORMAT_ADVICE}")
    if failure is not None:
        raise failure


def _not_a_chunk(where: str, problem, chunk, secret) -> ResponseFormatError:
    """The error for a stream chunk that is not a chat completion chunk (``problem`` says why)."""
    return ResponseFormatError(f"{where} sent a stream chunk that is not a chat completion chunk "
                               f"({problem}): {_excerpt(chunk, secret)}. {FORMAT_ADVICE}")


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
    return repr(shorten(hide_secret(text[: width * 4], secret), width))

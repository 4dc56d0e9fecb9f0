"""Token counts: the offline stand-in's exact count, and the quick estimate everything else uses.

``approx_tokens`` (at the end) is the cheap estimate a session trims by before a server has
counted a message: about four characters a token, plus framing and tool calls.

A real server counts tokens with its model's tokenizer; the stand-in needs some
count that behaves the same way for the token-budget lessons:

- a word piece is a run of letters/digits (split every 4 characters) or one
  punctuation character, so ``count_text("Thursday at 18:00")`` is 7;
- a message costs 4 tokens of framing plus its role, content, name, tool call
  names and arguments, and tool_call_id;
- a request costs the sum of its messages, plus 3 tokens to prime the reply, plus
  the tool schemas when tools are sent.

Because the total is a plain sum, the difference between two requests' prompt
tokens is exactly the cost of the messages added in between.

The framing costs are defined here once and shared by every counter: the stand-in's,
``approx_tokens``, the trimming overhead and the usage ledger.
"""
from __future__ import annotations

import json
import functools
import re
from typing import Any

_PIECE = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")
MESSAGE_OVERHEAD = 4  # tokens of framing around every message
REPLY_PRIMING = 3  # tokens every request adds to prime the reply (tool schemas come on top)
IMAGE_TOKENS = 85  # a rough estimate for a non-text content part


def count_text(text: str | None) -> int:
    """Tokens in a piece of text under the stand-in's rule."""
    if not text:
        return 0
    return _count(text) if isinstance(text, str) else _count(str(text))


@functools.lru_cache(maxsize=8192)  # a request is counted again and again as its blocks are fitted
def _count(text: str) -> int:
    total = 0
    for piece in _PIECE.findall(text):
        total += (len(piece) + 3) // 4 if piece[0].isalnum() else 1
    return total


def content_text(content) -> str:
    """The text of a message's content: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def count_message(message: dict) -> int:
    """Tokens one message adds to a request."""
    total = MESSAGE_OVERHEAD + count_text(str(message.get("role", "")))
    total += count_text(content_text(message.get("content")))
    total += count_text(message.get("name"))
    total += count_text(message.get("tool_call_id"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        total += count_text(function.get("name")) + count_text(str(function.get("arguments", "")))
    return total


def count_tools(tools: list | None) -> int:
    """Tokens the tool schemas add to a request."""
    if not tools:
        return 0
    return count_text(json.dumps(tools, sort_keys=True))


def count_request(messages: list[dict], tools: list | None = None) -> int:
    """Prompt tokens the stand-in reports for a request."""
    return sum(count_message(m) for m in messages) + REPLY_PRIMING + count_tools(tools)


# ----------------------------------------------------------------------------- a quick estimate


def _text_chars(content: Any) -> tuple[int, int]:
    """(characters of text, non-text parts) in a message's content."""
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return len(content), 0
    if isinstance(content, list):
        chars = images = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                chars += len(part["text"])
            else:
                images += 1
        return chars, images
    return len(str(content)), 0


def approx_tokens(message: dict) -> int:
    """Cheap token estimate for one message: ~characters/4 plus framing, tool calls included."""
    if not isinstance(message, dict):
        return MESSAGE_OVERHEAD + (len(str(message)) + 3) // 4
    chars, images = _text_chars(message.get("content"))
    chars += len(str(message.get("role", "")))
    for key in ("name", "tool_call_id"):
        if isinstance(message.get(key), str):
            chars += len(message[key])
    extra = 0
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            chars += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
        extra += 3
    return MESSAGE_OVERHEAD + extra + images * IMAGE_TOKENS + (chars + 3) // 4

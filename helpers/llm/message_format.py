"""Messages in the plain OpenAI format, whatever a notebook holds.

``normalize_messages`` turns plain dicts, or the ``ChatCompletionMessage`` objects the ``openai`` client
returns, into plain OpenAI-format dicts with only the standard keys for each role: ``content`` never
``None`` for an assistant, tool-call arguments always a JSON string, a tool result always text.
``assistant_message_to_dict`` does the same for the assistant message of a reply, to append it to a
conversation. Both are pure: they never change their inputs and never touch the network. Every request
``helpers.llm.client.chat`` sends passes through ``normalize_messages`` (in ``helpers.llm.compat.prepare_request``).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from helpers.core.errors import WorkshopError

_KEYS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id"),
    "function": ("role", "content", "name"),  # legacy, still accepted by most servers
}


class CompatError(WorkshopError, ValueError):
    """A message or request cannot be made valid for the target server; the message says what to change."""


def _as_dict(message: Any, index: int) -> dict:
    """A plain dict view of one message: dicts as they are, pydantic objects via model_dump."""
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        return dump()
    raise CompatError(f"message {index} is a {type(message).__name__}; pass a dict like "
                      "{'role': 'user', 'content': '...'} or a message object returned by the openai client")


def _arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON string the wire format requires."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _tool_call(call: Any, index: int, position: int) -> dict:
    raw = _as_dict(call, index)
    function = raw.get("function")
    if function is not None and not isinstance(function, Mapping):
        function = _as_dict(function, index)
    kind = raw.get("type") or "function"
    if kind != "function" or not function or not function.get("name"):
        raise CompatError(f"message {index}: tool_calls[{position}] is not a function call with a name "
                          f"(type={kind!r}); only function tool calls can be sent back")
    if not raw.get("id"):
        raise CompatError(f"message {index}: tool_calls[{position}] has no 'id'; keep the id the server "
                          "returned, the matching tool result needs it as tool_call_id")
    return {"id": str(raw["id"]), "type": "function",
            "function": {"name": str(function["name"]),
                         "arguments": _arguments_text(function.get("arguments"))}}


def _tool_content(content: Any) -> Any:
    """A tool result as text: None becomes "", dicts and numbers become JSON."""
    if content is None:
        return ""
    if isinstance(content, (str, list)):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _normalize_one(message: Any, index: int) -> dict:
    raw = _as_dict(message, index)
    role = raw.get("role")
    if role not in _KEYS_BY_ROLE:
        raise CompatError(f"message {index} has role {role!r}; use one of {', '.join(_KEYS_BY_ROLE)}")
    out: dict[str, Any] = {"role": role}
    for key in _KEYS_BY_ROLE[role][1:]:
        value = raw.get(key)
        if key == "content":
            if role == "assistant" and value is None:
                value = ""
            elif role == "tool":
                value = _tool_content(value)
            out["content"] = value
        elif key == "tool_calls":
            if value:
                out["tool_calls"] = [_tool_call(c, index, i) for i, c in enumerate(value)]
        elif value is not None:
            out[key] = value if key != "tool_call_id" else str(value)
    if role == "tool" and "tool_call_id" not in out:
        raise CompatError(f"message {index} (tool) has no tool_call_id; set it to the id of the tool call "
                          "it answers")
    return out


def normalize_messages(messages: Iterable[Any]) -> list[dict]:
    """Plain OpenAI-format dicts with only each role's standard keys (assistant content None -> "")."""
    if isinstance(messages, (str, bytes, Mapping)):
        raise CompatError("messages must be a list of messages, not a single "
                          f"{type(messages).__name__}; wrap it in a list")
    return [_normalize_one(m, i) for i, m in enumerate(messages)]


def assistant_message_to_dict(message: Any) -> dict:
    """A response's assistant message (or a whole ChatCompletion) as a history entry dict."""
    choices = getattr(message, "choices", None)
    if choices:
        message = choices[0].message
    entry = _normalize_one(message, 0)
    if entry["role"] != "assistant":
        raise CompatError(f"expected an assistant message, got role {entry['role']!r}")
    return entry

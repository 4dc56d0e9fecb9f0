"""One place that smooths over the differences between OpenAI-compatible servers.

Every request the workshop sends goes through two steps:

1. ``normalize_messages`` turns whatever the notebook holds (plain dicts, or the
   ``ChatCompletionMessage`` objects the ``openai`` client returns) into plain
   OpenAI-format dicts with only the standard keys for each role.
2. ``prepare_request`` applies the fixes one particular server needs, described by
   a ``ServerProfile`` (``nim``, ``openai-compatible``, ``llama.cpp``, ``offline``).

Both are pure: they never change their inputs and never touch the network.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from helpers.errors import WorkshopError

PROFILE_ENV = "WORKSHOP_SERVER_PROFILE"

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


# ---------------------------------------------------------------- messages

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


def parse_tool_arguments(arguments: Any) -> dict:
    """A tool call's arguments as a dict; tolerates raw newlines in strings (small local models emit them)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    text = (arguments or "").strip() or "{}"
    try:
        value = json.loads(text, strict=False)
    except ValueError as error:
        raise CompatError(f"tool arguments are not valid JSON ({error.msg} at character {error.pos}): "
                          f"{text[:80]!r}; ask again, or give the parameter an enum or maxLength") from None
    if not isinstance(value, dict):
        raise CompatError(f"tool arguments must be a JSON object, got {type(value).__name__}: {text[:80]!r}")
    return value


# ---------------------------------------------------------------- server profiles

@dataclass(frozen=True)
class ServerProfile:
    """The request fixes one kind of server needs (see PROFILES for the named ones)."""

    name: str
    explicit_tool_choice: bool = True          # send tool_choice="auto" when tools come without one
    tool_max_tokens: int | None = None         # cap max_tokens on requests that carry tools
    unsupported_params: frozenset[str] = frozenset()  # request keys this server rejects or ignores
    max_completion_tokens_as_max_tokens: bool = False  # server only knows the older max_tokens
    developer_as_system: bool = False          # server has no 'developer' role
    json_schema_as_json_object: bool = False   # server knows only response_format type json_object
    tool_results_as_user: bool = False         # server's template drops role 'tool' messages
    tools_need_system_message: bool = False    # tool schemas reach the model only via a system message
    required_tool_choice: bool = True          # tool_choice="required" works
    stream_with_tools: bool = True             # streaming works when tools are offered
    several_choices: bool = True               # n > 1 returns n choices
    string_max_length: int | None = None       # add maxLength to free-text string tool parameters
    description_in_parameters: bool = False    # template shows only parameters, not the tool description
    parameters_required: bool = False          # every tool needs a 'parameters' schema, even an empty one


PROFILES: dict[str, ServerProfile] = {}


def _register(profile: ServerProfile) -> ServerProfile:
    PROFILES[profile.name] = profile
    return profile


# Hosted NIM and generic servers get only the fixes that are standard anyway (explicit tool_choice,
# no None values, no empty tool lists). NIM was not reachable from the test machine, so nothing
# NIM-specific is assumed. The offline stand-in is strict and standard and needs nothing more.
NIM = _register(ServerProfile(name="nim"))
OPENAI_COMPATIBLE = _register(ServerProfile(name="openai-compatible"))
OFFLINE = _register(ServerProfile(name="offline"))
# llama-cpp-python's server with --chat_format chatml-function-calling (0.3.36); every flag below
# was observed over HTTP, see tests/test_real_server.py.
LLAMA_CPP = _register(ServerProfile(
    name="llama.cpp",
    tool_max_tokens=256,
    unsupported_params=frozenset({"parallel_tool_calls", "stream_options", "store", "metadata",
                                  "service_tier", "reasoning_effort", "modalities", "prediction"}),
    max_completion_tokens_as_max_tokens=True,
    developer_as_system=True,
    json_schema_as_json_object=True,
    tool_results_as_user=True,
    tools_need_system_message=True,
    required_tool_choice=False,
    stream_with_tools=False,
    several_choices=False,
    string_max_length=400,
    description_in_parameters=True,
    parameters_required=True,
))


def get_profile(name: str) -> ServerProfile:
    """The named profile; raises CompatError listing the known names."""
    key = (name or "").strip().lower()
    key = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp"}.get(key, key)
    if key not in PROFILES:
        raise CompatError(f"unknown server profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[key]


def profile_for(settings: Any) -> ServerProfile:
    """The profile for these settings: WORKSHOP_SERVER_PROFILE if set, else the backend's name."""
    explicit = getattr(settings, "server_profile", None) or os.environ.get(PROFILE_ENV, "").strip()
    return get_profile(explicit or getattr(settings, "backend", "openai-compatible"))


# ---------------------------------------------------------------- request fixes

def _tool_names(tools: list) -> list[str]:
    return [t.get("function", {}).get("name") for t in tools if isinstance(t, Mapping)]


def _bound_strings(schema: Any, limit: int) -> Any:
    """A JSON schema copy where every free-text string (no enum/const/maxLength/format) gets maxLength."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    if out.get("type") == "string" and not {"enum", "const", "maxLength", "format", "pattern"} & set(out):
        out["maxLength"] = limit
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: _bound_strings(v, limit) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = _bound_strings(out["items"], limit)
    return out


def _fixed_tools(tools: list, profile: ServerProfile) -> list:
    """Tools with this server's schema fixes (empty schema added, text bounded, description shown)."""
    out = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            out.append(tool)
            continue
        params = function.get("parameters")
        if params is None and profile.parameters_required:
            params = {"type": "object", "properties": {}}
        if params is not None and profile.string_max_length is not None:
            params = _bound_strings(params, profile.string_max_length)
        if (params is not None and profile.description_in_parameters and function.get("description")
                and "description" not in params):
            params = {"description": function["description"], **params}
        if params is not function.get("parameters"):
            tool = {**tool, "function": {**function, "parameters": params}}
        out.append(tool)
    return out


def _plain_result(content: Any) -> str:
    """A tool result as plain text; a flat JSON object becomes "key: value, ..." (no quotes to escape)."""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    try:
        data = json.loads(content)
    except ValueError:
        return content
    if isinstance(data, dict) and all(isinstance(v, (str, int, float, bool)) or v is None
                                      for v in data.values()):
        return ", ".join(f"{k}: {v}" for k, v in data.items())
    return content


def _tool_results_as_user(messages: list[dict]) -> list[dict]:
    """Rewrite role 'tool' messages as user messages that name the tool (for templates that drop them)."""
    names: dict[str, str] = {}
    out = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
        if message["role"] == "tool":
            name = names.get(message["tool_call_id"], "the tool")
            out.append({"role": "user", "content": f"Result of {name}: {_plain_result(message['content'])}"})
        else:
            out.append(message)
    return out


def prepare_request(kwargs: Mapping[str, Any], *, profile: ServerProfile) -> dict:
    """A copy of chat.completions.create kwargs with this server's fixes applied (messages normalised)."""
    request = {k: v for k, v in kwargs.items() if v is not None}
    if "messages" in request:
        request["messages"] = normalize_messages(request["messages"])
    tools = request.get("tools")
    if tools is not None and len(tools) == 0:
        request.pop("tools")
        request.pop("tool_choice", None)
        tools = None
    if not tools:
        request.pop("parallel_tool_calls", None)

    if profile.max_completion_tokens_as_max_tokens and "max_completion_tokens" in request:
        value = request.pop("max_completion_tokens")
        request.setdefault("max_tokens", value)
    for key in profile.unsupported_params:
        request.pop(key, None)
    if not profile.several_choices and (request.get("n") or 1) > 1:
        raise CompatError(f"the {profile.name} server returns one choice whatever n is; "
                          f"send {request['n']} separate requests instead of n={request['n']}")

    if profile.developer_as_system and "messages" in request:
        request["messages"] = [{**m, "role": "system"} if m["role"] == "developer" else m
                               for m in request["messages"]]

    fmt = request.get("response_format")
    if profile.json_schema_as_json_object and isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        request["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}

    if tools:
        request["tools"] = _fixed_tools(tools, profile)
        if profile.explicit_tool_choice and "tool_choice" not in request:
            request["tool_choice"] = "auto"
        if profile.tool_max_tokens is not None:
            request["max_tokens"] = min(request.get("max_tokens") or profile.tool_max_tokens,
                                        profile.tool_max_tokens)
        if request.get("tool_choice") == "required" and not profile.required_tool_choice:
            names = _tool_names(tools)
            if len(names) != 1:
                raise CompatError(f"the {profile.name} server does not support tool_choice='required' with "
                                  f"{len(names)} tools; name one tool: tool_choice={{'type': 'function', "
                                  "'function': {'name': ...}}, or use 'auto'")
            request["tool_choice"] = {"type": "function", "function": {"name": names[0]}}
        if request.get("stream") and not profile.stream_with_tools and request.get("tool_choice") != "none":
            raise CompatError(f"the {profile.name} server cannot stream a reply when tools are offered; "
                              "call without stream=True (or with tool_choice='none')")
        if profile.tools_need_system_message and "messages" in request:
            if not any(m["role"] == "system" for m in request["messages"]):
                request["messages"] = [{"role": "system", "content": "You are a helpful assistant."}] + \
                    request["messages"]
    if profile.tool_results_as_user and "messages" in request:
        request["messages"] = _tool_results_as_user(request["messages"])
    return request

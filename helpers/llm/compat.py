"""One place that smooths over the differences between OpenAI-compatible servers.

Every request the workshop sends goes through ``prepare_request``, in two steps:

1. ``normalize_messages`` (``helpers.llm.message_format``) turns whatever the notebook holds into plain
   OpenAI-format dicts with only the standard keys for each role.
2. The fixes one particular server needs are applied, as described by a ``ServerProfile`` (``nim``,
   ``openai-compatible``, ``llama.cpp``, ``offline``).

Both are pure: they never change their inputs and never touch the network.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from helpers.llm.message_format import CompatError, normalize_messages

PROFILE_ENV = "WORKSHOP_SERVER_PROFILE"  # read into Settings.server_profile by helpers.llm.config, never here


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
    json_object_format: bool = True            # response_format {"type": "json_object"} works (else dropped)
    tool_results_as_user: bool = False         # server's template drops role 'tool' messages
    tools_need_system_message: bool = False    # tool schemas reach the model only via a system message
    required_tool_choice: bool = True          # tool_choice="required" works
    stream_with_tools: bool = True             # streaming works when tools are offered
    several_choices: bool = True               # n > 1 returns n choices
    string_max_length: int | None = None       # add maxLength to free-text string tool parameters
    description_in_parameters: bool = False    # template shows only parameters, not the tool description
    parameters_required: bool = False          # every tool needs a 'parameters' schema, even an empty one
    html_escaped_text: bool = False            # the template HTML-escapes message text: send look-alikes instead


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
    html_escaped_text=True,
))


def get_profile(name: str) -> ServerProfile:
    """The named profile; raises CompatError listing the known names."""
    key = (name or "").strip().lower()
    key = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp"}.get(key, key)
    if key not in PROFILES:
        raise CompatError(f"unknown server profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[key]


def profile_for(settings: Any) -> ServerProfile:
    """The profile for these settings: ``settings.server_profile`` (WORKSHOP_SERVER_PROFILE), else the backend's.

    A profile describes an openai-compatible server, so only that backend uses it: hosted NIM and the
    offline stand-in always get their own profile. The setting is read from ``settings`` only (``load_settings``
    fills it from the environment or .env); an object without a ``server_profile`` field gets the backend's.
    """
    backend = getattr(settings, "backend", "openai-compatible")
    if backend != "openai-compatible":
        return get_profile(backend)
    explicit = getattr(settings, "server_profile", None) or ""
    return get_profile(explicit.strip() or backend)


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


# llama-cpp-python renders chatml-function-calling's template with Jinja autoescape, so '"' reaches the model
# as '&#34;' (4 tokens instead of 1), "'" as '&#39;', '<' as '&lt;': the model sees, and copies, HTML entities.
# Typographic look-alikes are not escaped. '&' is kept: no look-alike is cheaper than '&amp;'.
_LOOK_ALIKES = str.maketrans({'"': "\u201d", "'": "\u2019", "<": "\u2039", ">": "\u203a"})


def _unescaped_text(message: dict) -> dict:
    """A message whose text uses look-alikes of the characters an HTML-escaping template would mangle."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": content.translate(_LOOK_ALIKES)}
    if isinstance(content, list):
        parts = [{**part, "text": part["text"].translate(_LOOK_ALIKES)}
                 if isinstance(part, Mapping) and isinstance(part.get("text"), str) else part for part in content]
        return {**message, "content": parts}
    return message


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
    if not profile.json_object_format and isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        request.pop("response_format")  # the prompt still asks for JSON; the reply is parsed strictly anyway
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
    if profile.html_escaped_text and "messages" in request:
        request["messages"] = [_unescaped_text(m) for m in request["messages"]]
    return request

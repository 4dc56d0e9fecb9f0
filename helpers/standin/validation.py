"""The offline stand-in's request checks: what the chat completions API accepts, refuses, and why.

The rules follow the published API (the openai-openapi specification and the API reference):

- every parameter the specification lists is accepted with any value it allows; a wrong type, a
  value out of range or an unknown enum value is an HTTP 400 whose ``param`` gives the field's path
  (``messages[3].content``, ``tools[0].function.name``) and whose ``code`` is the one the real API
  uses (``invalid_type``, ``invalid_value``, ``integer_above_max_value``, ``missing_required_parameter``,
  ``unknown_parameter``, ``empty_array``...);
- rules the real API enforces beyond the schema are enforced too: message ``name`` values match
  ``^[a-zA-Z0-9_-]+$``, ``logit_bias`` keys are token ids, tool results answer the tool calls just
  before them (``helpers.chat.validity``), ``strict`` schemas close every object and require every property,
  JSON mode needs the word "json" in the messages, ``tool_choice`` needs ``tools``, ``top_logprobs``
  needs ``logprobs``, ``stream_options`` needs ``stream``;
- what the stand-in cannot honour is refused with a 400 that says "the offline stand-in does not do
  ...": audio output, the legacy functions API (``functions``, ``function_call``, role ``function``)
  and custom (free-form) tools. Everything else it accepts, and what it does not implement (sampling
  settings, caching hints, web search options, predicted outputs...) it accepts and ignores.

An explicit ``null`` for an optional parameter counts as leaving it out.
"""
from __future__ import annotations

import json
import re

import httpx2

from helpers.llm.config import OFFLINE_CHAT_MODEL
from helpers.standin.schemas import SHOWN_CHARS, problem as schema_problem
from helpers.core.text import shorten
from helpers.chat.validity import scan, word_problems

CHAT_MODELS = (OFFLINE_CHAT_MODEL,)
MAX_TOOLS = 128
MAX_NESTING = 100  # a request body nested deeper than this is refused before anything walks it
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")  # message names (the real API's pattern)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # tool and response-format names
_TOKEN_ID = re.compile(r"^[0-9]{1,9}$")
NOT_DONE = "the offline stand-in does not do"


class _RequestError(Exception):
    """An HTTP error answer: status, message, the parameter it is about, the error type and code."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 kind: str = "invalid_request_error", code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.kind, self.code = status, message, param, kind, code


def error_response(err: _RequestError) -> httpx2.Response:
    """The OpenAI-shaped error body ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": err.message, "type": err.kind, "param": err.param, "code": err.code}}
    return httpx2.Response(err.status, json=body)


class _Invalid(Exception):
    """One problem with a request: the field's path, what is wrong, and the error code."""

    def __init__(self, param: str | None, message: str, code: str = "invalid_value"):
        super().__init__(message)
        self.param, self.message, self.code = param, message, code


def _raise_if(found) -> None:
    if found is not None:
        raise _Invalid(found.param, found.message, found.code)


def _check(value, schema, path: str) -> None:
    _raise_if(schema_problem(value, schema, path))


def _not_done(param: str, what: str, instead: str, code: str = "unsupported_parameter") -> _Invalid:
    return _Invalid(param, f"'{param}': {NOT_DONE} {what}; {instead}", code)


def _kind(value) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _expect(ok: bool, param: str, what: str, value) -> None:
    if not ok:
        shown = shorten(repr(value), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid(param, f"Invalid type for '{param}': expected {what}, but got {_kind(value)} "
                              f"({shown}) instead.", "invalid_type")


# ---------------------------------------------------------------- the parameters, as schemas

def _number(low, high) -> dict:
    return {"type": "number", "minimum": low, "maximum": high}


def _choice(*values) -> dict:
    return {"type": "string", "enum": list(values)}


def _closed(properties: dict, required=(), nullable: bool = False) -> dict:
    return {"type": ["object", "null"] if nullable else "object", "properties": properties,
            "required": list(required), "additionalProperties": False}


_STRING, _BOOLEAN = {"type": "string"}, {"type": "boolean"}
_BREAKPOINT = _closed({"mode": {"const": "explicit"}}, ["mode"])
TEXT_PART = _closed({"type": {"const": "text"}, "text": _STRING, "prompt_cache_breakpoint": _BREAKPOINT},
                    ["type", "text"])
PART_SCHEMAS = {
    "text": TEXT_PART,
    "refusal": _closed({"type": {"const": "refusal"}, "refusal": _STRING}, ["type", "refusal"]),
    "image_url": _closed({"type": {"const": "image_url"}, "prompt_cache_breakpoint": _BREAKPOINT,
                          "image_url": _closed({"url": _STRING, "detail": _choice("auto", "low", "high")},
                                               ["url"])}, ["type", "image_url"]),
    "input_audio": _closed({"type": {"const": "input_audio"}, "prompt_cache_breakpoint": _BREAKPOINT,
                            "input_audio": _closed({"data": _STRING, "format": _choice("wav", "mp3")},
                                                   ["data", "format"])}, ["type", "input_audio"]),
    "file": _closed({"type": {"const": "file"}, "prompt_cache_breakpoint": _BREAKPOINT,
                     "file": _closed({"filename": _STRING, "file_data": _STRING, "file_id": _STRING})},
                    ["type", "file"]),
}
_MODERATION_MODE = _closed({"mode": _choice("score", "block")}, ["mode"], nullable=True)
PARAM_SCHEMAS = {  # every optional parameter but messages, tools, tool_choice and response_format
    "model": _STRING,
    "frequency_penalty": _number(-2, 2), "presence_penalty": _number(-2, 2),
    "temperature": _number(0, 2), "top_p": _number(0, 1),
    "n": {"type": "integer", "minimum": 1, "maximum": 128},
    "max_tokens": {"type": "integer", "minimum": 1}, "max_completion_tokens": {"type": "integer", "minimum": 1},
    "top_logprobs": {"type": "integer", "minimum": 0, "maximum": 20},
    "seed": {"type": "integer", "minimum": -2 ** 63, "maximum": 2 ** 63 - 1},
    "logprobs": _BOOLEAN, "store": _BOOLEAN, "stream": _BOOLEAN, "parallel_tool_calls": _BOOLEAN,
    "user": _STRING, "prompt_cache_key": _STRING, "safety_identifier": {"type": "string", "maxLength": 64},
    "prompt_cache_retention": _choice("in_memory", "24h"),
    "service_tier": _choice("auto", "default", "flex", "scale", "priority", "fast"),
    "reasoning_effort": _choice("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "verbosity": _choice("low", "medium", "high"),
    "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 512}},
    "stop": {"anyOf": [_STRING, {"type": "array", "minItems": 1, "maxItems": 4, "items": _STRING}]},
    "logit_bias": {"type": "object", "additionalProperties": {"type": "integer", "minimum": -100, "maximum": 100}},
    "modalities": {"type": "array", "items": _choice("text", "audio")},
    "audio": _closed({"voice": {"anyOf": [_STRING, _closed({"id": _STRING}, ["id"])]},
                      "format": _choice("wav", "aac", "mp3", "flac", "opus", "pcm16")}, ["voice", "format"]),
    "prediction": _closed({"type": {"const": "content"}, "content": {"anyOf": [
        _STRING, {"type": "array", "minItems": 1, "items": TEXT_PART}]}}, ["type", "content"]),
    "stream_options": _closed({"include_usage": _BOOLEAN, "include_obfuscation": _BOOLEAN}),
    "web_search_options": _closed({
        "search_context_size": _choice("low", "medium", "high"),
        "user_location": _closed({"type": {"const": "approximate"}, "approximate": _closed(
            {"city": _STRING, "country": _STRING, "region": _STRING, "timezone": _STRING})},
            ["type", "approximate"], nullable=True)}),
    "prompt_cache_options": _closed({"ttl": _choice("30m"), "mode": _choice("implicit", "explicit")}),
    "moderation": _closed({"model": _STRING, "policy": _closed({"input": _MODERATION_MODE,
                                                                "output": _MODERATION_MODE}, nullable=True)},
                          ["model"]),
    "functions": {"type": "array", "minItems": 1, "maxItems": 128, "items": {
        "type": "object", "required": ["name"], "properties": {
            "name": _STRING, "description": _STRING, "parameters": {"type": "object"}}}},
    "function_call": {"anyOf": [_choice("none", "auto"), {"type": "object", "required": ["name"],
                                                           "properties": {"name": _STRING}}]},
}
CHAT_PARAMS = frozenset(PARAM_SCHEMAS) | {"messages", "tools", "tool_choice", "response_format"}
_MESSAGE_KEYS = {
    "system": {"role", "content", "name"}, "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"}, "tool": {"role", "content", "tool_call_id", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call",
                  "annotations"}}
_PART_TYPES = {"user": ("text", "image_url", "input_audio", "file"), "assistant": ("text", "refusal")}


# ---------------------------------------------------------------- messages

def _check_message_fields(messages: list) -> None:
    """Field types that must hold before the conversation's order can be checked."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role is not None:
            _expect(isinstance(role, str), f"messages[{i}].role", "a string such as 'user'", role)
        if role == "function":
            raise _not_done(f"messages[{i}].role", "the legacy functions API (messages with role 'function')",
                            "send tool results as {'role': 'tool', 'tool_call_id': ..., 'content': ...} "
                            "answering an assistant message's 'tool_calls'", "unsupported_value")
        if message.get("tool_call_id") is not None:
            _expect(isinstance(message["tool_call_id"], str), f"messages[{i}].tool_call_id", "a string",
                    message["tool_call_id"])
        if role == "assistant" and message.get("function_call") is not None:
            raise _not_done(f"messages[{i}].function_call", "the legacy functions API",
                            "send the call in 'tool_calls'", "unsupported_value")
        calls = message.get("tool_calls") if role == "assistant" else None
        for k, call in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(call, dict) and call.get("type") == "custom":
                raise _not_done(f"messages[{i}].tool_calls[{k}].type", "custom (free-form) tools",
                                "use function tools", "unsupported_value")


def _conversation_problem(messages: list) -> _Invalid | None:
    """The conversation-order problems of ``helpers.chat.validity`` as one 400 naming the first message."""
    problems = scan(messages)
    if not problems:
        return None
    index, who, parts = min(problems, key=lambda p: p[0])
    text = "".join(p for p in parts if isinstance(p, str))
    field, code = "", "invalid_value"
    if "no content" in text or "content is of type" in text:
        field = ".content"
        code = "missing_required_parameter" if "no content" in text else "invalid_type"
    elif "tool_call_id" in text and "has no" in text:
        field, code = ".tool_call_id", "missing_required_parameter"
    elif "tool_calls" in text and who == "assistant":
        field = ".tool_calls"
    elif "role" in text or who == "tool":
        field = ".role"
    message = "Invalid 'messages': " + "; ".join(word_problems(problems))
    return _Invalid(f"messages[{index}]{field}", message, code)


def _check_message_shapes(messages: list) -> None:
    """Per-message fields the API checks beyond the conversation's order."""
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message["role"]
        for key in message:
            if key not in _MESSAGE_KEYS[role]:
                raise _Invalid(f"{where}.{key}", f"Unknown parameter: '{where}.{key}'. A {role} message takes "
                                                 f"{', '.join(sorted(_MESSAGE_KEYS[role]))}.", "unknown_parameter")
        if message.get("name") is not None:
            _check_name(message["name"], f"{where}.name")
        content = message.get("content")
        if isinstance(content, list):
            if not content:
                raise _Invalid(f"{where}.content", f"Invalid '{where}.content': empty array. Expected a string or "
                                                   "an array with minimum length 1, but got an empty array instead.",
                               "empty_array")
            allowed = _PART_TYPES.get(role, ("text",))
            for k, part in enumerate(content):
                at = f"{where}.content[{k}]"
                _expect(isinstance(part, dict), at, "an object like {'type': 'text', 'text': '...'}", part)
                if part.get("type") not in allowed:
                    shown = shorten(repr(part.get("type")), SHOWN_CHARS, ellipsis="...", flatten=False)
                    raise _Invalid(f"{at}.type", f"Invalid value for '{at}.type': {shown}. "
                                                 f"Supported values for a {role} message are: "
                                                 f"{', '.join(allowed)}.", "invalid_value")
                _check(part, PART_SCHEMAS[part["type"]], at)
        if role == "assistant":
            _check_assistant_extras(message, where)


def _check_name(name, param: str) -> None:
    _expect(isinstance(name, str), param, "a string", name)
    if not _NAME.match(name):
        shown = shorten(repr(name), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid(param, f"Invalid '{param}': string does not match pattern. Expected a string that matches "
                              f"the pattern '^[a-zA-Z0-9_-]+$' (letters, digits, '_' and '-'; no spaces), but got "
                              f"{shown}.", "invalid_value")


def _check_assistant_extras(message: dict, where: str) -> None:
    if message.get("refusal") is not None:
        _expect(isinstance(message["refusal"], str), f"{where}.refusal", "a string or null", message["refusal"])
    if message.get("audio") is not None:
        _check(message["audio"], _closed({"id": _STRING}, ["id"]), f"{where}.audio")
    for k, call in enumerate(message.get("tool_calls") or []):
        at = f"{where}.tool_calls[{k}]"
        if call.get("type", "function") != "function":
            shown = shorten(repr(call.get("type")), SHOWN_CHARS, ellipsis="...", flatten=False)
            raise _Invalid(f"{at}.type", f"Invalid value for '{at}.type': {shown}. Supported "
                                         "values are: 'function'.", "invalid_value")
        _check(call, _closed({"id": _STRING, "type": {"const": "function"},
                              "function": _closed({"name": _STRING, "arguments": _STRING}, ["name", "arguments"])},
                             ["id", "function"]), at)
        name = call["function"]["name"]
        if not _TOOL_NAME.match(name):
            shown = shorten(repr(name), SHOWN_CHARS, ellipsis="...", flatten=False)
            raise _Invalid(f"{at}.function.name", f"Invalid '{at}.function.name': string does not match pattern. "
                                                  "Expected a string that matches the pattern "
                                                  f"'^[a-zA-Z0-9_-]+$', but got {shown}.", "invalid_value")


# ---------------------------------------------------------------- tools

def _tool_problems(tools) -> list[_Invalid]:
    """Every problem with a request's ``tools``, each with the path of the field it is about."""
    if not isinstance(tools, list):
        return [_Invalid("tools", f"Invalid type for 'tools': expected an array of tool objects, but got "
                                  f"{_kind(tools)} instead.", "invalid_type")]
    if not tools:
        return [_Invalid("tools", "Invalid 'tools': empty array. Expected an array with minimum length 1, but got "
                                  "an empty array instead; send at least one tool, or leave 'tools' out.",
                         "empty_array")]
    problems = []
    if len(tools) > MAX_TOOLS:
        problems.append(_Invalid("tools", f"Invalid 'tools': array too long. Expected an array with maximum "
                                          f"length {MAX_TOOLS}, but got {len(tools)} tools.", "array_above_max_length"))
    names: list[str] = []
    for i, tool in enumerate(tools):
        try:
            name, found = _check_tool(tool, f"tools[{i}]")
        except _Invalid as problem:
            found, name = [problem], None
        problems += found
        if name is not None:
            names.append(name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(_Invalid("tools", f"tool names must be unique; repeated: {', '.join(repeated)}"))
    return problems


def _check_tool(tool, where: str) -> tuple[str | None, list[_Invalid]]:
    """The tool's name (None when unusable) and its problems; a wrong overall shape raises at once."""
    _expect(isinstance(tool, dict), where, "an object like {'type': 'function', 'function': {...}}", tool)
    if tool.get("type") == "custom":
        raise _not_done(f"{where}.type", "custom (free-form) tools ('tools[].type' 'custom')",
                        "describe the tool as {'type': 'function', 'function': {...}}", "unsupported_value")
    if tool.get("type") != "function":
        shown = shorten(repr(tool.get("type")), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid(f"{where}.type", f"Invalid value for '{where}.type': {shown}. Supported "
                                        "values are: 'function' (and 'custom', which the offline stand-in does not "
                                        "do).", "invalid_value")
    extra = sorted(set(tool) - {"type", "function"})
    if extra:
        raise _Invalid(f"{where}.{extra[0]}", f"Unknown parameter: '{where}.{extra[0]}'. '{where}' has unknown "
                                              f"field(s) {extra}; a tool has only 'type' and 'function'.",
                       "unknown_parameter")
    function = tool.get("function")
    _expect(isinstance(function, dict), f"{where}.function", "an object with 'name' (and optionally "
            "'description', 'parameters', 'strict')", function)
    extra = sorted(set(function) - {"name", "description", "parameters", "strict"})
    if extra:
        raise _Invalid(f"{where}.function.{extra[0]}", f"Unknown parameter: '{where}.function.{extra[0]}'. "
                                                       f"'{where}.function' has unknown field(s) {extra}; allowed: "
                                                       "name, description, parameters, strict.", "unknown_parameter")
    name, problems = function.get("name"), []
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        shown = shorten(repr(name), SHOWN_CHARS, ellipsis="...", flatten=False)
        problems.append(_Invalid(f"{where}.function.name", f"'{where}.function.name' {shown} must be a "
                                                           "string of 1-64 letters, digits, '_' or '-' "
                                                           "(^[A-Za-z0-9_-]{1,64}$)"))
        name = None
    if "description" in function and function["description"] is not None:
        _expect(isinstance(function["description"], str), f"{where}.function.description", "a string",
                function["description"])
    if function.get("strict") is not None:
        _expect(isinstance(function["strict"], bool), f"{where}.function.strict", "a boolean", function["strict"])
    if "parameters" in function:
        try:
            _check_parameters(function["parameters"], f"{where}.function.parameters")
            if function.get("strict"):
                _check_strict_schema(function["parameters"], f"{where}.function.parameters",
                                     f"function '{name}'")
        except _Invalid as problem:
            problems.append(problem)
    return name, problems


def _check_parameters(params, where: str) -> None:
    if not isinstance(params, dict) or params.get("type") != "object":
        shown = shorten(repr(params), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid(where, f"'{where}' must be a JSON schema with type 'object', like {{'type': 'object', "
                              f"'properties': {{...}}}}; got {shown}", "invalid_function_parameters")
    properties = params.get("properties", {})
    _expect(isinstance(properties, dict), f"{where}.properties", "an object mapping names to schemas", properties)
    for key, schema in properties.items():
        _expect(isinstance(schema, dict), f"{where}.properties.{key}", "a JSON schema object", schema)
    required = params.get("required", [])
    _expect(isinstance(required, list) and all(isinstance(r, str) for r in required), f"{where}.required",
            "an array of property names", required)
    unknown = sorted(set(required) - set(properties))
    if unknown:
        raise _Invalid(f"{where}.required", f"'{where}.required' names unknown properties {unknown}; add them to "
                                            "'properties' or remove them from 'required'",
                       "invalid_function_parameters")


def _check_strict_schema(schema, where: str, owner: str, path: str = "", depth: int = 0) -> None:
    """Structured outputs' rules for ``strict: true``: every object lists all its properties in ``required``
    and sets ``additionalProperties`` to false."""
    if not isinstance(schema, dict) or depth > 32:
        return
    here = f"context=({path or 'root'})"
    if schema.get("type") == "object" or (isinstance(schema.get("type"), list) and "object" in schema["type"]) \
            or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise _Invalid(where, f"Invalid schema for {owner}: In {here}, 'additionalProperties' is required to be "
                                  "supplied and to be false (strict: true).", "invalid_function_parameters")
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        missing = [k for k in properties if k not in required]
        if missing:
            raise _Invalid(where, f"Invalid schema for {owner}: In {here}, 'required' is required to be supplied and "
                                  f"to be an array including every key in properties. Missing {missing[0]!r} "
                                  "(strict: true; make an optional field nullable instead).",
                           "invalid_function_parameters")
        for key, sub in properties.items():
            _check_strict_schema(sub, where, owner, f"{path}.{key}" if path else key, depth + 1)
    if isinstance(schema.get("items"), dict):
        _check_strict_schema(schema["items"], where, owner, f"{path}[]", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for n, sub in enumerate(schema.get(key) if isinstance(schema.get(key), list) else []):
            _check_strict_schema(sub, where, owner, f"{path}.{key}[{n}]", depth + 1)
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items() if isinstance(schema.get(key), dict) else []:
            _check_strict_schema(sub, where, owner, f"{key}.{name}", depth + 1)


def validate_tools(tools) -> list[str]:
    """Problems with a request's tool schemas, empty when a strict server would accept them."""
    return [] if tools is None else [p.message for p in _tool_problems(tools)]


def _check_tool_choice(choice, names: set[str]) -> None:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise _Invalid("tool_choice", f"Invalid value for 'tool_choice': {choice!r}. Supported values are: "
                                          "'auto', 'none', 'required' or {'type': 'function', 'function': "
                                          "{'name': ...}}.", "invalid_value")
        return
    _expect(isinstance(choice, dict), "tool_choice", "'auto', 'none', 'required' or an object", choice)
    kind = choice.get("type")
    if kind == "custom":
        raise _not_done("tool_choice.type", "custom (free-form) tools", "name a function tool", "unsupported_value")
    if kind == "allowed_tools":
        _check(choice, _closed({"type": {"const": "allowed_tools"}, "allowed_tools": _closed({
            "mode": _choice("auto", "required"), "tools": {"type": "array", "items": {"type": "object"}}},
            ["mode", "tools"])}, ["type", "allowed_tools"]), "tool_choice")
        for k, tool in enumerate(choice["allowed_tools"]["tools"]):
            at = f"tool_choice.allowed_tools.tools[{k}]"
            if tool.get("type") == "custom":
                raise _not_done(f"{at}.type", "custom (free-form) tools", "allow function tools only",
                                "unsupported_value")
            wanted = (tool.get("function") or {}).get("name") if isinstance(tool.get("function"), dict) else None
            if tool.get("type") != "function" or wanted not in names:
                shown = shorten(repr(tool), SHOWN_CHARS, ellipsis="...", flatten=False)
                raise _Invalid(at, f"'{at}' must be {{'type': 'function', 'function': {{'name': ...}}}} naming one of "
                                   f"the tools sent ({', '.join(sorted(names))}), but got {shown}")
        return
    function = choice.get("function")
    if kind != "function" or not isinstance(function, dict):
        shown = shorten(repr(choice), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid("tool_choice", f"Invalid 'tool_choice': as an object it must be {{'type': 'function', "
                                      f"'function': {{'name': ...}}}} or {{'type': 'allowed_tools', ...}}, but got "
                                      f"{shown}", "invalid_value")
    _check(choice, _closed({"type": {"const": "function"}, "function": _closed({"name": _STRING}, ["name"])},
                           ["type", "function"]), "tool_choice")
    wanted = function.get("name")
    if wanted not in names:
        shown = shorten(repr(wanted), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid("tool_choice.function.name", f"Invalid 'tool_choice.function.name': {shown} is not "
                                                    f"one of the tools sent ({', '.join(sorted(names))})")


def _check_response_format(fmt, messages: list) -> None:
    _expect(isinstance(fmt, dict), "response_format", "an object like {'type': 'json_object'}", fmt)
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        shown = shorten(repr(kind), SHOWN_CHARS, ellipsis="...", flatten=False)
        raise _Invalid("response_format.type", f"Invalid value for 'response_format.type': {shown}. "
                                               "Supported values are: 'text', 'json_object' and 'json_schema'.")
    if kind != "json_schema":
        _check(fmt, _closed({"type": _STRING}, ["type"]), "response_format")
    else:
        _check(fmt, _closed({"type": _STRING, "json_schema": _closed({
            "name": _STRING, "description": _STRING, "schema": {"type": "object"},
            "strict": {"type": ["boolean", "null"]}}, ["name"])}, ["type", "json_schema"]), "response_format")
        spec = fmt["json_schema"]
        if not _TOOL_NAME.match(spec["name"]):
            shown = shorten(repr(spec["name"]), SHOWN_CHARS, ellipsis="...", flatten=False)
            raise _Invalid("response_format.json_schema.name", "Invalid 'response_format.json_schema.name': string "
                                                               "does not match pattern. Expected a string that "
                                                               "matches the pattern ^[A-Za-z0-9_-]{1,64}$, but got "
                                                               f"{shown}.")
        if spec.get("strict") and "schema" in spec:
            owner = f"response_format '{spec['name']}'"
            if spec["schema"].get("type") != "object":
                kind = shorten(repr(spec["schema"].get("type")), SHOWN_CHARS, ellipsis="...", flatten=False)
                raise _Invalid("response_format.json_schema.schema",
                               f"Invalid schema for {owner}: schema must be a JSON Schema of 'type: \"object\"' "
                               f"(strict: true), got {kind}.", "invalid_json_schema")
            try:
                _check_strict_schema(spec["schema"], "response_format.json_schema.schema", owner)
            except _Invalid as problem:
                raise _Invalid(problem.param, problem.message, "invalid_json_schema") from None
    if kind == "json_object":
        said = json.dumps([m.get("content") for m in messages if isinstance(m, dict)]).lower()
        if "json" not in said:
            raise _Invalid("messages", "'messages' must contain the word 'json' in some form to use "
                                       "'response_format' of type 'json_object'; ask for JSON in the prompt")


# ---------------------------------------------------------------- the whole request

def nesting_depth(value, limit: int = MAX_NESTING) -> int:
    """How deeply lists and objects nest in ``value`` (counted without recursion; stops past ``limit``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack += [(child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)]
    return deepest


def _check_params(body: dict) -> None:
    for name, schema in PARAM_SCHEMAS.items():
        if body.get(name) is not None:
            _check(body[name], schema, name)
    metadata = body.get("metadata")
    if metadata is not None:
        if len(metadata) > 16:
            raise _Invalid("metadata", f"Invalid 'metadata': too many properties. Expected an object with at most 16 "
                                       f"properties, but got {len(metadata)}.", "object_above_max_properties")
        for key in metadata:
            if len(key) > 64:
                shown = shorten(repr(key), SHOWN_CHARS, ellipsis="...", flatten=False)
                raise _Invalid(f"metadata.{key}", f"Invalid 'metadata': key {shown} is longer than 64 "
                                                  "characters.", "string_above_max_length")
    for key in body.get("logit_bias") or {}:
        if not _TOKEN_ID.match(key):
            shown = shorten(repr(key), SHOWN_CHARS, ellipsis="...", flatten=False)
            raise _Invalid(f"logit_bias.{key}", f"Invalid key in 'logit_bias': {shown}. Keys are token ids "
                                                "(whole numbers written as strings, like '50256').")


def _check_not_done(body: dict) -> None:
    if body.get("audio") is not None:
        raise _not_done("audio", "audio output", "leave 'audio' out and ask for text")
    if "audio" in (body.get("modalities") or []):
        raise _not_done("modalities", "audio output", "send 'modalities': ['text'] or leave it out",
                        "unsupported_value")
    for name in ("functions", "function_call"):
        if body.get(name) is not None:
            instead = "send 'tools'" if name == "functions" else "send 'tool_choice'"
            raise _not_done(name, "the legacy functions API ('functions' and 'function_call')", f"{instead} instead")


def check_chat(body) -> None:
    """Raise ``_Invalid`` for the first thing the chat completions API would reject in ``body``."""
    if not isinstance(body, dict):
        raise _Invalid(None, f"the request body must be a JSON object with 'model' and 'messages', but got "
                             f"{_kind(body)}", "invalid_type")
    unknown = sorted(set(body) - CHAT_PARAMS)
    if unknown:
        raise _Invalid(unknown[0], f"Unrecognized request argument supplied: {', '.join(unknown)} (Unknown parameter: "
                                   f"'{unknown[0]}'); check the spelling against the chat completions API reference",
                       "unknown_parameter")
    if body.get("model") is None:
        raise _Invalid("model", "you must provide a model parameter ('model'); the stand-in serves "
                                f"{', '.join(CHAT_MODELS)}", "missing_required_parameter")
    _expect(isinstance(body["model"], str), "model", "a string", body["model"])
    messages = body.get("messages")
    if messages is None:
        raise _Invalid("messages", "Missing required parameter: 'messages': send a non-empty array of messages",
                       "missing_required_parameter")
    _expect(isinstance(messages, list), "messages", "an array of message objects", messages)
    if not messages:
        raise _Invalid("messages", "Invalid 'messages': empty array. Expected a non-empty array with minimum length "
                                   "1; add at least one user message.", "empty_array")
    _check_params(body)
    _check_not_done(body)
    _check_message_fields(messages)
    found = _conversation_problem(messages)
    if found:
        raise found
    _check_message_shapes(messages)
    tools = body.get("tools")
    if tools is not None:
        problems = _tool_problems(tools)
        if problems:
            raise _Invalid(problems[0].param, "Invalid 'tools': " + "; ".join(p.message for p in problems),
                           problems[0].code)
    for name in ("tool_choice", "parallel_tool_calls"):
        if body.get(name) is not None and tools is None:
            raise _Invalid(name, f"'{name}' is only allowed when 'tools' are specified; send 'tools' or leave "
                                 f"'{name}' out")
    if body.get("tool_choice") is not None:
        _check_tool_choice(body["tool_choice"], {t["function"]["name"] for t in tools})
    if body.get("stream_options") is not None and not body.get("stream"):
        raise _Invalid("stream_options", "'stream_options' is only allowed when 'stream' is true")
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        raise _Invalid("top_logprobs", "'top_logprobs' needs 'logprobs' set to true")
    if body.get("response_format") is not None:
        _check_response_format(body["response_format"], messages)


def check_chat_request(body) -> None:
    """Raise ``_RequestError`` (HTTP 400, or 404 for an unknown model) for a request the API would reject."""
    try:
        check_chat(body)
    except _Invalid as problem:
        raise _RequestError(400, problem.message, problem.param, code=problem.code) from None
    if body["model"] not in CHAT_MODELS:
        raise _RequestError(404, f"The model '{body['model']}' does not exist or you do not have access to it. "
                                 f"The offline stand-in serves {', '.join(CHAT_MODELS)}.", "model",
                            code="model_not_found")

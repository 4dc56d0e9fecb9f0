"""The offline stand-in: an in-process OpenAI-compatible server for the real ``openai`` client.

It is not a language model. It speaks the wire protocol (``/v1/chat/completions``
with tools and streaming, ``/v1/embeddings``, ``/v1/models``), validates requests
like the published chat completions API (every malformed field is an HTTP 400 with an
OpenAI-shaped error body ``{"error": {"message", "type", "param", "code"}}`` whose message
and ``param`` name the field, so the client raises ``openai.BadRequestError``; a missing
model is a 400, an unknown one a 404), reports token usage with the deterministic
tokenizer in ``helpers.tokens``, and decides replies with the small rule set in
``helpers.standin.policy``. It keeps no state between requests: it knows only the
messages it is sent. What it cannot serve (audio, predicted outputs, web search, the
deprecated functions API, custom tools) is refused with a 400 that says so; ``n``
gives n identical choices and ``stop`` cuts the reply; the other sampling parameters
are checked and then ignored, as a deterministic server would.
"""
from __future__ import annotations

import hashlib
import json
import math
import re

import httpx2
import openai

from helpers import clock, tokens
from helpers.embeddings import local_embed
from helpers.config import OFFLINE_API_KEY, OFFLINE_BASE_URL, OFFLINE_CHAT_MODEL, OFFLINE_EMBEDDING_MODEL
from helpers.validity import find_problems
from helpers.standin.policy import decide

CHAT_MODELS = (OFFLINE_CHAT_MODEL,)
EMBEDDING_MODELS = (OFFLINE_EMBEDDING_MODEL,)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class _RequestError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind


def _error_response(err: _RequestError) -> httpx2.Response:
    body = {"error": {"message": err.message, "type": err.kind, "param": err.param, "code": None}}
    return httpx2.Response(err.status, json=body)


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------- validation
#
# The checks follow the published chat completions API (the openai-openapi spec and the API reference):
# parameter names, types and ranges, message shapes per role, tool schemas, and the rules that tie
# parameters together (tool_choice and parallel_tool_calls need tools, stream_options needs stream,
# top_logprobs needs logprobs, JSON mode needs the word "json" in the messages). Every problem is an
# HTTP 400 whose message names the field (``param`` carries its path). The stand-in answers every n
# (1..128) with identical deterministic choices and honours ``stop``; the other sampling parameters
# are checked and ignored, as a deterministic server would.

_CHAT_PARAMS = frozenset({
    "model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls",
    "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort",
    "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
    "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
    "web_search_options"})
_NOT_OFFERED = {  # known to the API, but they need a capability the stand-in does not have
    "audio": "audio output", "modalities": "audio output", "functions": "the deprecated functions API "
    "(use 'tools')", "function_call": "the deprecated functions API (use 'tool_choice')",
    "prediction": "predicted outputs", "web_search_options": "web search"}
_RANGES = {  # name: (lowest, highest, whole numbers only)
    "temperature": (0, 2, False), "top_p": (0, 1, False), "frequency_penalty": (-2, 2, False),
    "presence_penalty": (-2, 2, False), "n": (1, 128, True), "max_tokens": (1, None, True),
    "max_completion_tokens": (1, None, True), "top_logprobs": (0, 20, True),
    "seed": (-2 ** 63, 2 ** 63 - 1, True)}
_CHOICES = {
    "service_tier": ("auto", "default", "flex", "scale", "priority", "fast"),
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "verbosity": ("low", "medium", "high"), "prompt_cache_retention": ("in_memory", "24h")}
_MESSAGE_KEYS = {
    "system": {"role", "content", "name"}, "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"}, "tool": {"role", "content", "tool_call_id"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call",
                  "annotations"}}
_PART_TYPES = {"user": ("text", "image_url", "input_audio", "file"), "assistant": ("text", "refusal")}
MAX_TOOLS = 128


class _Problem(Exception):
    """One validation problem: the field's path and what is wrong with it."""

    def __init__(self, param: str | None, message: str):
        super().__init__(message)
        self.param, self.message = param, message


def _bad(param: str, text: str) -> _Problem:
    """The problem "'<param>' <text>"."""
    return _Problem(param, f"'{param}' {text}")


def _kind(value) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _expect(ok: bool, param: str, what: str, value) -> None:
    if not ok:
        raise _Problem(param, f"'{param}' must be {what}, but got {_kind(value)} ({_short(value)})")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _tool_problems(tools) -> list[_Problem]:
    """Every problem with a request's ``tools``, each with the path of the field it is about."""
    if not isinstance(tools, list):
        return [_bad("tools", f"must be an array of tool objects, but got {_kind(tools)}")]
    if not tools:
        return [_bad("tools", "is an empty array; send at least one tool, or leave 'tools' out")]
    problems = []
    if len(tools) > MAX_TOOLS:
        problems.append(_bad("tools", f"has {len(tools)} tools; at most {MAX_TOOLS} are allowed"))
    names: list[str] = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        try:
            name, found = _check_tool(tool, where)
        except _Problem as problem:
            found, name = [problem], None
        problems += found
        if name is not None:
            names.append(name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(_Problem("tools", f"tool names must be unique; repeated: {', '.join(repeated)}"))
    return problems


def _check_tool(tool, where: str) -> tuple[str | None, list[_Problem]]:
    """The tool's name (None when unusable) and its problems; a wrong overall shape raises at once."""
    _expect(isinstance(tool, dict), where, "an object like {'type': 'function', 'function': {...}}", tool)
    if tool.get("type") != "function":
        raise _bad(f"{where}.type", "must be 'function' (the only tool type the offline stand-in serves), "
                                    f"but got {_short(tool.get('type'))}")
    extra = sorted(set(tool) - {"type", "function"})
    if extra:
        raise _bad(where, f"has unknown field(s) {extra}; a tool has only 'type' and 'function'")
    function = tool.get("function")
    _expect(isinstance(function, dict), f"{where}.function", "an object with 'name' (and optionally "
            "'description', 'parameters', 'strict')", function)
    extra = sorted(set(function) - {"name", "description", "parameters", "strict"})
    if extra:
        raise _bad(f"{where}.function", f"has unknown field(s) {extra}; allowed: name, description, "
                                        "parameters, strict")
    name, problems = function.get("name"), []
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        problems.append(_bad(f"{where}.function.name", f"{_short(name)} must be a string of 1-64 letters, "
                                                       f"digits, '_' or '-' (^[A-Za-z0-9_-]{{1,64}}$)"))
        name = None
    if "description" in function:
        _expect(isinstance(function["description"], str), f"{where}.function.description", "a string",
                function["description"])
    if "strict" in function:
        _expect(isinstance(function["strict"], bool) or function["strict"] is None,
                f"{where}.function.strict", "a boolean", function["strict"])
    if "parameters" in function:
        try:
            _check_parameters(function["parameters"], f"{where}.function.parameters")
        except _Problem as problem:
            problems.append(problem)
    return name, problems


def _check_parameters(params, where: str) -> None:
    if not isinstance(params, dict) or params.get("type") != "object":
        raise _Problem(where, f"'{where}' must be a JSON schema with type 'object', like {{'type': 'object', "
                              f"'properties': {{...}}}}; got {_short(params)}")
    properties = params.get("properties", {})
    _expect(isinstance(properties, dict), f"{where}.properties", "an object mapping names to schemas",
            properties)
    for key, schema in properties.items():
        _expect(isinstance(schema, dict), f"{where}.properties.{key}", "a JSON schema object", schema)
    required = params.get("required", [])
    _expect(isinstance(required, list) and all(isinstance(r, str) for r in required), f"{where}.required",
            "an array of property names", required)
    unknown = sorted(set(required) - set(properties))
    if unknown:
        raise _bad(f"{where}.required", f"names unknown properties {unknown}; add them to 'properties' or "
                                        "remove them from 'required'")


def validate_tools(tools) -> list[str]:
    """Problems with a request's tool schemas, empty when a strict server would accept them."""
    return [] if tools is None else [p.message for p in _tool_problems(tools)]


def _check_message_fields(messages: list) -> None:
    """Field types that must hold before the conversation's order can be checked."""
    for i, message in enumerate(messages):
        if isinstance(message, dict):
            role = message.get("role")
            if role is not None:
                _expect(isinstance(role, str), f"messages[{i}].role", "a string such as 'user'", role)
            if message.get("tool_call_id") is not None:
                _expect(isinstance(message["tool_call_id"], str), f"messages[{i}].tool_call_id", "a string",
                        message["tool_call_id"])


def _check_message_shapes(messages: list) -> None:
    """Per-message fields the API checks beyond the conversation's order (helpers.validity.find_problems)."""
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or message.get("role") not in _MESSAGE_KEYS:
            continue  # find_problems names these
        role = message["role"]
        extra = sorted(set(message) - _MESSAGE_KEYS[role])
        if extra:
            raise _Problem(where, f"'{where}' ({role}) has unknown field(s) {extra}; a {role} message takes "
                                  f"{', '.join(sorted(_MESSAGE_KEYS[role]))}")
        if "name" in message:
            _expect(isinstance(message["name"], str), f"{where}.name", "a string", message["name"])
        content = message.get("content")
        if isinstance(content, list):
            if not content:
                raise _bad(f"{where}.content", "is an empty array; give a string or at least one content "
                                               "part")
            allowed = _PART_TYPES.get(role, ("text",))
            for k, part in enumerate(content):
                at = f"{where}.content[{k}]"
                _expect(isinstance(part, dict), at, "an object like {'type': 'text', 'text': '...'}", part)
                if part.get("type") not in allowed:
                    raise _bad(f"{at}.type", f"must be one of {', '.join(allowed)} for a {role} message, but "
                                             f"got {_short(part.get('type'))}")
                if part["type"] in ("text", "refusal"):
                    _expect(isinstance(part.get(part["type"]), str), f"{at}.{part['type']}", "a string",
                            part.get(part["type"]))
        for k, call in enumerate(message.get("tool_calls") or [] if role == "assistant" else []):
            if isinstance(call, dict) and call.get("type", "function") != "function":
                raise _bad(f"{where}.tool_calls[{k}].type", "must be 'function', but got "
                                                            f"{_short(call.get('type'))}")


def _check_tool_choice(choice, names: set[str]) -> None:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise _bad("tool_choice", f"{choice!r} must be 'auto', 'none', 'required' or {{'type': "
                                      f"'function', 'function': {{'name': ...}}}}")
        return
    _expect(isinstance(choice, dict), "tool_choice", "'auto', 'none', 'required' or an object", choice)
    if choice.get("type") == "allowed_tools":
        raise _bad("tool_choice", "of type 'allowed_tools' is not served by the offline stand-in; send only "
                                  "the allowed tools in 'tools' instead")
    function = choice.get("function")
    if choice.get("type") != "function" or not isinstance(function, dict):
        raise _bad("tool_choice", f"as an object must be {{'type': 'function', 'function': {{'name': "
                                  f"...}}}}, but got {_short(choice)}")
    wanted = function.get("name")
    if not isinstance(wanted, str) or wanted not in names:
        sent = ", ".join(sorted(names))
        raise _bad("tool_choice.function.name", f"{_short(wanted)} is not one of the tools sent ({sent})")


def _check_response_format(fmt, messages: list) -> None:
    _expect(isinstance(fmt, dict), "response_format", "an object like {'type': 'json_object'}", fmt)
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        raise _bad("response_format.type", "must be 'text', 'json_object' or 'json_schema', but got "
                                           f"{_short(kind)}")
    if kind == "json_schema":
        schema = fmt.get("json_schema")
        _expect(isinstance(schema, dict), "response_format.json_schema", "an object with 'name' and 'schema'",
                schema)
        name = schema.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise _bad("response_format.json_schema.name", f"must match ^[A-Za-z0-9_-]{{1,64}}$, but got "
                                                           f"{_short(name)}")
    if kind == "json_object":
        said = json.dumps([m.get("content") for m in messages if isinstance(m, dict)]).lower()
        if "json" not in said:
            raise _bad("messages", "must contain the word 'json' in some form to use 'response_format' of "
                                   "type 'json_object'; ask for JSON in the prompt")


def _check_scalars(body: dict) -> None:
    for name, (low, high, whole) in _RANGES.items():
        value = body.get(name)
        if value is None:
            continue
        if whole:
            _expect(isinstance(value, int) and not isinstance(value, bool), name, "an integer", value)
        else:
            _expect(_is_number(value), name, "a finite number", value)
        if value < low or (high is not None and value > high):
            span = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise _Problem(name, f"'{name}' must be {span}, but got {value}")
    for name in ("stream", "logprobs", "store", "parallel_tool_calls"):
        if body.get(name) is not None:
            _expect(isinstance(body[name], bool), name, "a boolean (true or false)", body[name])
    for name in ("user", "safety_identifier", "prompt_cache_key"):
        if body.get(name) is not None:
            _expect(isinstance(body[name], str), name, "a string", body[name])
    for name, allowed in _CHOICES.items():
        if body.get(name) is not None and body[name] not in allowed:
            raise _bad(name, f"must be one of {', '.join(allowed)}, but got {_short(body[name])}")
    stop = body.get("stop")
    if stop is not None:
        _expect(isinstance(stop, str) or (isinstance(stop, list) and len(stop) <= 4
                                          and all(isinstance(s, str) for s in stop)),
                "stop", "a string or an array of at most 4 strings", stop)
    metadata = body.get("metadata")
    if metadata is not None:
        _expect(isinstance(metadata, dict) and len(metadata) <= 16
                and all(isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512
                        for k, v in metadata.items()),
                "metadata", "an object of at most 16 string keys (<= 64 characters) and string values "
                "(<= 512 characters)",
                metadata)
    bias = body.get("logit_bias")
    if bias is not None:
        _expect(isinstance(bias, dict) and all(_is_number(v) and -100 <= v <= 100 for v in bias.values()),
                "logit_bias", "an object mapping token ids to numbers between -100 and 100", bias)


def _check_chat(body) -> None:
    """Raise ``_Problem`` for the first thing the chat completions API would reject in ``body``."""
    if not isinstance(body, dict):
        raise _Problem(None, f"the request body must be a JSON object with 'model' and 'messages', but got "
                             f"{_kind(body)}")
    unknown = sorted(set(body) - _CHAT_PARAMS)
    if unknown:
        raise _Problem(unknown[0], f"Unrecognized request argument supplied: {', '.join(unknown)}; check the "
                                   "spelling against the chat completions API reference")
    for name, what in _NOT_OFFERED.items():
        if body.get(name) is not None:
            raise _Problem(name, f"'{name}' asks for {what}, which the offline stand-in does not serve; "
                                 f"leave '{name}' out")
    if body.get("model") is None:
        raise _Problem("model", "you must provide a model parameter ('model'); the stand-in serves "
                                f"{', '.join(CHAT_MODELS)}")
    _expect(isinstance(body["model"], str), "model", "a string", body["model"])
    messages = body.get("messages")
    if messages is None:
        raise _bad("messages", "is required: send a non-empty array of messages")
    _expect(isinstance(messages, list), "messages", "an array of message objects", messages)
    if not messages:
        raise _bad("messages", "must be a non-empty array; add at least one user message")
    _check_message_fields(messages)
    problems = find_problems(messages)
    if problems:
        raise _Problem("messages", "Invalid 'messages': " + "; ".join(problems))
    _check_message_shapes(messages)
    tools = body.get("tools")
    if tools is not None:
        problems = _tool_problems(tools)
        if problems:
            raise _Problem(problems[0].param, "Invalid 'tools': " + "; ".join(p.message for p in problems))
    for name in ("tool_choice", "parallel_tool_calls"):
        if body.get(name) is not None and tools is None:
            raise _Problem(name, f"'{name}' is only allowed when 'tools' are specified; send 'tools' or "
                                 f"leave '{name}' out")
    if body.get("tool_choice") is not None:
        _check_tool_choice(body["tool_choice"], {t["function"]["name"] for t in tools})
    _check_scalars(body)
    if body.get("stream_options") is not None:
        if not body.get("stream"):
            raise _bad("stream_options", "is only allowed when 'stream' is true")
        options = body["stream_options"]
        _expect(isinstance(options, dict) and all(isinstance(options.get(k, False), bool)
                                                  for k in ("include_usage", "include_obfuscation")),
                "stream_options", "an object like {'include_usage': true}", options)
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        raise _bad("top_logprobs", "needs 'logprobs' set to true")
    if body.get("response_format") is not None:
        _check_response_format(body["response_format"], messages)


def _check_chat_request(body) -> None:
    """Raise ``_RequestError`` (HTTP 400, or 404 for an unknown model) for a request the API would reject."""
    try:
        _check_chat(body)
    except _Problem as problem:
        raise _RequestError(400, problem.message, problem.param) from None
    if body["model"] not in CHAT_MODELS:
        raise _RequestError(404, f"The model '{body['model']}' does not exist. Available: "
                            f"{', '.join(CHAT_MODELS)}", "model", "not_found_error")


# ---------------------------------------------------------------- replies

def _reply(body: dict) -> tuple[dict, dict]:
    """The assistant message and usage for a validated chat request."""
    messages, tools = body["messages"], body.get("tools")
    choice = body.get("tool_choice")
    decision = decide(messages, tools, choice)
    if isinstance(choice, dict) and not decision.tool_calls:
        decision.tool_calls = [(choice["function"]["name"], {})]
    seed = _digest([messages, tools])[:8]
    message: dict = {"role": "assistant", "content": decision.content}
    if decision.tool_calls:
        message["content"] = None
        message["tool_calls"] = [
            {"id": f"call_{seed}{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(decision.tool_calls)
        ]
        if body.get("parallel_tool_calls") is False:
            message["tool_calls"] = message["tool_calls"][:1]
    prompt_tokens = tokens.count_request(messages, tools)
    completion_tokens = tokens.count_message(message) - tokens.MESSAGE_OVERHEAD
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    finish = "tool_calls" if decision.tool_calls else "stop"
    if max_tokens and not decision.tool_calls and completion_tokens > max_tokens:
        words = message["content"].split(" ")
        while words and tokens.count_text(" ".join(words)) > max_tokens:
            words.pop()
        message["content"], finish = " ".join(words), "length"
        completion_tokens = tokens.count_text(message["content"])
    stop = body.get("stop")
    stops = [s for s in ([stop] if isinstance(stop, str) else stop or []) if s]
    cuts = [message["content"].find(s) for s in stops if message.get("content") and s in message["content"]]
    if cuts:
        message["content"], finish = message["content"][:min(cuts)], "stop"
        completion_tokens = tokens.count_text(message["content"])
    completion_tokens *= body.get("n") or 1  # n identical choices
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    return message, {"usage": usage, "finish_reason": finish, "id": f"chatcmpl-offline-{seed}"}


def _completion(body: dict) -> dict:
    message, meta = _reply(body)
    return {
        "id": meta["id"], "object": "chat.completion", "created": int(clock.now().timestamp()),
        "model": body["model"], "system_fingerprint": "offline-stand-in",
        "choices": [{"index": i, "message": message, "finish_reason": meta["finish_reason"], "logprobs": None}
                    for i in range(body.get("n") or 1)],
        "usage": meta["usage"],
    }


def _stream_chunks(body: dict):
    """The same reply as server-sent-event chunks: text in small pieces, tool calls by index."""
    message, meta = _reply(body)
    base = {"id": meta["id"], "object": "chat.completion.chunk", "created": int(clock.now().timestamp()),
            "model": body["model"], "system_fingerprint": "offline-stand-in"}

    def chunk(delta: dict, finish=None, usage=None, index=0):
        choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
        data = dict(base, choices=[choice])
        if usage is not None:
            data = dict(base, choices=[], usage=usage)
        return "data: " + json.dumps(data) + "\n\n"

    for n in range(body.get("n") or 1):
        yield chunk({"role": "assistant", "content": ""}, index=n)
        if message.get("tool_calls"):
            for index, call in enumerate(message["tool_calls"]):
                args = call["function"]["arguments"]
                half = len(args) // 2
                start = {"index": index, "id": call["id"], "type": "function",
                         "function": {"name": call["function"]["name"], "arguments": ""}}
                yield chunk({"tool_calls": [start]}, index=n)
                for piece in (args[:half], args[half:]):
                    yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, index=n)
        else:
            for piece in re.findall(r"\S+\s*|\s+", message["content"] or ""):
                yield chunk({"content": piece}, index=n)
        yield chunk({}, finish=meta["finish_reason"], index=n)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield chunk({}, usage=meta["usage"])
    yield "data: [DONE]\n\n"


_EMBEDDING_PARAMS = frozenset({"model", "input", "encoding_format", "dimensions", "user",
                               "input_type", "truncate"})  # the last two: NVIDIA NIM's extensions


def _embeddings(body) -> dict:
    if not isinstance(body, dict):
        raise _RequestError(400, f"the request body must be a JSON object with 'model' and 'input', but got "
                                 f"{_kind(body)}")
    unknown = sorted(set(body) - _EMBEDDING_PARAMS)
    if unknown:
        raise _RequestError(400, f"Unrecognized request argument supplied: {', '.join(unknown)}", unknown[0])
    model = body.get("model")
    if not isinstance(model, str):
        raise _RequestError(400, f"'model' must be a string naming an embedding model "
                                 f"({', '.join(EMBEDDING_MODELS)}), but got {_kind(model)}", "model")
    if model not in EMBEDDING_MODELS:
        raise _RequestError(404, f"The embedding model '{model}' does not exist. Available: "
                            f"{', '.join(EMBEDDING_MODELS)}", "model", "not_found_error")
    if body.get("encoding_format") not in (None, "float", "base64"):
        raise _RequestError(400, "'encoding_format' must be 'float' or 'base64', but got "
                                 f"{_short(body['encoding_format'])}", "encoding_format")
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _RequestError(400, "'input' must be a non-empty string or list of strings", "input")
    if any(not t.strip() for t in texts):
        raise _RequestError(400, "'input' contains an empty string", "input")
    vectors = local_embed(texts)
    used = sum(tokens.count_text(t) for t in texts)
    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                     for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": used, "total_tokens": used}}


def handle(request: httpx2.Request) -> httpx2.Response:
    """Answer one HTTP request the way an OpenAI-compatible server would."""
    path = request.url.path.rstrip("/")
    try:
        if request.method == "GET" and path.endswith("/models"):
            models = [{"id": m, "object": "model", "owned_by": "offline"}
                      for m in CHAT_MODELS + EMBEDDING_MODELS]
            return httpx2.Response(200, json={"object": "list", "data": models})
        if request.method != "POST":
            raise _RequestError(405, f"{request.method} {path} is not supported")
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            raise _RequestError(400, "the request body is not valid JSON; send a JSON object with "
                                     "'model' and 'messages'") from None
        if path.endswith("/chat/completions"):
            _check_chat_request(body)
            if body.get("stream"):
                payload = "".join(_stream_chunks(body)).encode()
                return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=payload)
            return httpx2.Response(200, json=_completion(body))
        if path.endswith("/embeddings"):
            return httpx2.Response(200, json=_embeddings(body))
        raise _RequestError(404, f"no route for {path}")
    except _RequestError as err:
        return _error_response(err)
    except Exception as error:  # a bug in the stand-in: answer like a server would, never crash the client
        return _error_response(_RequestError(
            500, f"the offline stand-in failed on this request ({type(error).__name__}: {error}); this is a "
                 "bug in helpers/standin/server.py, please report it with the request", kind="server_error"))


def make_offline_client(**kwargs) -> openai.OpenAI:
    """A real ``openai.OpenAI`` client whose requests are answered in-process by the stand-in."""
    return openai.OpenAI(
        api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handle)), **kwargs,
    )

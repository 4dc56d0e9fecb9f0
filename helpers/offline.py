"""The offline stand-in: an in-process OpenAI-compatible server for the real ``openai`` client.

It is not a language model. It speaks the wire protocol (``/v1/chat/completions``
with tools and streaming, ``/v1/embeddings``, ``/v1/models``), validates requests
like a strict server (HTTP 400 with an OpenAI-shaped error body, so the client
raises ``openai.BadRequestError``), reports token usage with the deterministic
tokenizer in ``helpers.tokens``, and decides replies with the small rule set in
``helpers.offline_policy``. It keeps no state between requests: it knows only the
messages it is sent.
"""
from __future__ import annotations

import hashlib
import json
import re

import httpx2
import openai

from helpers import clock, tokens
from helpers.config import OFFLINE_API_KEY, OFFLINE_BASE_URL, OFFLINE_CHAT_MODEL, OFFLINE_EMBEDDING_MODEL
from helpers.history import find_problems
from helpers.offline_policy import decide

CHAT_MODELS = (OFFLINE_CHAT_MODEL,)
EMBEDDING_MODELS = (OFFLINE_EMBEDDING_MODEL,)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class _RequestError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind


def _error_response(err: _RequestError) -> httpx2.Response:
    body = {"error": {"message": err.message, "type": err.kind, "param": err.param, "code": None}}
    return httpx2.Response(err.status, json=body)


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------- validation

def validate_tools(tools) -> list[str]:
    """Problems with a request's tool schemas, empty when a strict server would accept them."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["'tools' must be a list"]
    problems = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            problems.append(f"{where}: type must be 'function'")
            continue
        function = tool.get("function")
        if not isinstance(function, dict):
            problems.append(f"{where}: missing 'function' object")
            continue
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            problems.append(f"{where}.function.name {name!r} must match ^[A-Za-z0-9_-]{{1,64}}$")
        params = function.get("parameters")
        if params is not None:
            if not isinstance(params, dict) or params.get("type") != "object":
                problems.append(f"{where}.function.parameters must be a JSON schema with type 'object'")
            elif not isinstance(params.get("properties", {}), dict):
                problems.append(f"{where}.function.parameters.properties must be an object")
            elif not set(params.get("required", [])) <= set(params.get("properties", {})):
                missing = sorted(set(params.get("required", [])) - set(params.get("properties", {})))
                problems.append(f"{where}.function.parameters.required names unknown properties {missing}")
    names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)]
    if len(names) != len(set(names)):
        problems.append("tool names must be unique")
    return problems


def _check_chat_request(body: dict) -> None:
    model = body.get("model")
    if model not in CHAT_MODELS:
        raise _RequestError(404, f"The model '{model}' does not exist. Available: {', '.join(CHAT_MODELS)}",
                            "model", "not_found_error")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _RequestError(400, "'messages' must be a non-empty list", "messages")
    problems = find_problems(messages)
    if problems:
        raise _RequestError(400, "Invalid 'messages': " + "; ".join(problems), "messages")
    problems = validate_tools(body.get("tools"))
    if problems:
        raise _RequestError(400, "Invalid 'tools': " + "; ".join(problems), "tools")
    choice = body.get("tool_choice")
    names = {t["function"]["name"] for t in body.get("tools") or []}
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name")
        if wanted not in names:
            raise _RequestError(400, f"tool_choice names {wanted!r}, which is not in 'tools'", "tool_choice")
    elif choice not in (None, "auto", "none", "required"):
        raise _RequestError(400, f"tool_choice {choice!r} must be 'auto', 'none', 'required' or a function",
                            "tool_choice")
    elif choice == "required" and not names:
        raise _RequestError(400, "tool_choice 'required' needs 'tools'", "tool_choice")


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
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    return message, {"usage": usage, "finish_reason": finish, "id": f"chatcmpl-offline-{seed}"}


def _completion(body: dict) -> dict:
    message, meta = _reply(body)
    return {
        "id": meta["id"], "object": "chat.completion", "created": int(clock.now().timestamp()),
        "model": body["model"], "system_fingerprint": "offline-stand-in",
        "choices": [{"index": 0, "message": message, "finish_reason": meta["finish_reason"], "logprobs": None}],
        "usage": meta["usage"],
    }


def _stream_chunks(body: dict):
    """The same reply as server-sent-event chunks: text in small pieces, tool calls by index."""
    message, meta = _reply(body)
    base = {"id": meta["id"], "object": "chat.completion.chunk", "created": int(clock.now().timestamp()),
            "model": body["model"], "system_fingerprint": "offline-stand-in"}

    def chunk(delta: dict, finish=None, usage=None):
        data = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}])
        if usage is not None:
            data = dict(base, choices=[], usage=usage)
        return "data: " + json.dumps(data) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if message.get("tool_calls"):
        for index, call in enumerate(message["tool_calls"]):
            args = call["function"]["arguments"]
            half = len(args) // 2
            yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"], "arguments": ""}}]})
            for piece in (args[:half], args[half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    else:
        for piece in re.findall(r"\S+\s*|\s+", message["content"] or ""):
            yield chunk({"content": piece})
    yield chunk({}, finish=meta["finish_reason"])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield chunk({}, usage=meta["usage"])
    yield "data: [DONE]\n\n"


def _embeddings(body: dict) -> dict:
    model = body.get("model")
    if model not in EMBEDDING_MODELS:
        raise _RequestError(404, f"The embedding model '{model}' does not exist. Available: "
                            f"{', '.join(EMBEDDING_MODELS)}", "model", "not_found_error")
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _RequestError(400, "'input' must be a non-empty string or list of strings", "input")
    if any(not t.strip() for t in texts):
        raise _RequestError(400, "'input' contains an empty string", "input")
    from helpers.embeddings import local_embed

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
            models = [{"id": m, "object": "model", "owned_by": "offline"} for m in CHAT_MODELS + EMBEDDING_MODELS]
            return httpx2.Response(200, json={"object": "list", "data": models})
        if request.method != "POST":
            raise _RequestError(405, f"{request.method} {path} is not supported")
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            raise _RequestError(400, "request body is not valid JSON") from None
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


def make_offline_client(**kwargs) -> openai.OpenAI:
    """A real ``openai.OpenAI`` client whose requests are answered in-process by the stand-in."""
    return openai.OpenAI(
        api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handle)), **kwargs,
    )

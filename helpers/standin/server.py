"""The offline stand-in: an in-process OpenAI-compatible server for the real ``openai`` client.

It is not a language model. It speaks the wire protocol (``/v1/chat/completions`` with tools,
streaming and log probabilities, ``/v1/embeddings``, ``/v1/models`` and ``/v1/models/{id}``) and
validates requests like the published chat completions API (``helpers.standin.validation``: a
malformed request is an HTTP 400 whose OpenAI-shaped body ``{"error": {"message", "type", "param",
"code"}}`` names the field, so the client raises ``openai.BadRequestError``; an unknown model is a
404 ``model_not_found``). Its replies conform to the specification's response schemas: every
message carries ``refusal`` (null), every choice ``logprobs``, every response ``usage``,
``service_tier`` and ``system_fingerprint``. It reports token usage with the deterministic tokenizer
in ``helpers.core.tokens`` and decides replies with the small rule set in ``helpers.standin.policy``; it
keeps no state between requests.

What it accepts, it honours: ``tool_choice`` (``none``, ``auto``, ``required``, a named function,
``allowed_tools``), ``strict`` tools, ``parallel_tool_calls``, ``response_format`` (``json_object``
and ``json_schema``, whose reply conforms to the schema), ``logprobs``/``top_logprobs``, ``n``,
``stop``, ``max_tokens``/``max_completion_tokens``, ``stream_options.include_usage``, and for
embeddings ``encoding_format`` and ``dimensions``. Sampling settings and hints it accepts and ignores,
as a deterministic server would. What it cannot honour (audio output, the legacy functions API,
custom tools) it refuses with a 400 that says "the offline stand-in does not do ...".
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from urllib.parse import unquote

import httpx2
import numpy as np
import openai

from helpers.core import clock, tokens
from helpers.llm.config import OFFLINE_API_KEY, OFFLINE_BASE_URL, OFFLINE_EMBEDDING_MODEL
from helpers.retrieval.embeddings import EMBEDDING_DIM, local_embed
from helpers.core.text import bracket_depth
from helpers.standin import schemas
from helpers.standin.policy import decide
from helpers.standin.instructions import apply as honour_instructions  # notebook 13: a required detail
from helpers.standin.memory_calls import memory_step  # notebook 13: the agent's memory tool
from helpers.standin.validation import (CHAT_MODELS, MAX_NESTING, NOT_DONE, _RequestError, check_chat_request,
                                        error_response, nesting_depth, validate_tools)

EMBEDDING_MODELS = (OFFLINE_EMBEDDING_MODEL,)
MODEL_CREATED = 1767225600  # 2026-01-01T00:00:00Z: a fixed "created" for the models it lists
SYSTEM_FINGERPRINT = "offline-stand-in"
READABLE_NESTING = 200  # tool results nested deeper are handed to the rules as plain text

# The names other modules and tests import from here.
_error_response, _check_chat_request = error_response, check_chat_request
__all__ = ["handle", "make_offline_client", "validate_tools", "CHAT_MODELS", "EMBEDDING_MODELS"]


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------- what the rules are shown

def _json_nesting(text: str) -> int:
    """How deeply brackets nest in a JSON-like text or Python literal (outside string literals), without parsing it."""
    if sum(text.count(c) for c in "[{(") <= READABLE_NESTING:
        return 0  # too few brackets to matter: skip the scan
    return bracket_depth(text, "[{(", "]})")


def _readable(messages: list[dict]) -> list[dict]:
    """The messages as the rules may read them: a tool result whose JSON nests more than READABLE_NESTING
    levels deep is passed on as a short plain-text note (a parser would recurse past Python's limit), and
    tool-call arguments that deep as unreadable (empty)."""
    readable = []
    for message in messages:
        if message.get("role") == "tool":
            text = tokens.content_text(message.get("content"))
            if _json_nesting(text) > READABLE_NESTING:
                note = f"(a tool result nested more than {READABLE_NESTING} levels deep, which begins) "
                message = dict(message, content=note + text[:READABLE_NESTING] + "...")
        elif message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                arguments = (call.get("function") or {}).get("arguments") or ""
                if _json_nesting(arguments) > READABLE_NESTING:
                    call = dict(call, function=dict(call["function"], arguments=""))
                calls.append(call)
            message = dict(message, tool_calls=calls)
        readable.append(message)
    return readable


# ---------------------------------------------------------------- tool calls

def _question(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return tokens.content_text(message.get("content")).strip()
    return ""


def _tool_mode(choice, tools: list | None) -> tuple[str, list]:
    """('none' | 'auto' | 'required' | 'named', the tools the reply may call)."""
    tools = tools or []
    if choice is None or choice == "auto":
        return "auto", tools
    if choice in ("none", "required"):
        return choice, tools if choice == "required" else []
    if choice.get("type") == "allowed_tools":
        allowed = {t["function"]["name"] for t in choice["allowed_tools"]["tools"]}
        return choice["allowed_tools"]["mode"], [t for t in tools if t["function"]["name"] in allowed]
    return "named", [t for t in tools if t["function"]["name"] == choice["function"]["name"]]


def _best_tool(tools: list, question: str) -> dict:
    """The tool whose name and description share most words with the question (the first on a tie)."""
    asked = set(re.findall(r"[a-z0-9]+", question.lower()))

    def overlap(tool):
        function = tool["function"]
        words = re.findall(r"[a-z0-9]+", (function["name"].replace("_", " ") + " " +
                                          str(function.get("description") or "")).lower())
        return len(asked & set(words))

    return max(tools, key=lambda t: (overlap(t), -tools.index(t)))


def _arguments(tool: dict, args: dict, question: str, forced: bool, where: str, hints: dict | None = None) -> dict:
    """The arguments of one call: a ``strict`` tool's always conform to its parameters; a forced call's
    have every required parameter (the rules' own values where they fit -- ``hints`` are the values the
    rules gave another tool --, else the question or a placeholder of the right type)."""
    function = tool["function"]
    params = function.get("parameters")
    if not isinstance(params, dict):
        return args
    strict = function.get("strict") is True
    if not strict and (not forced or all(r in args for r in params.get("required") or [])):
        return args
    if strict and schemas.conforms(args, params):
        return args
    try:
        made = schemas.make_instance(params, question, hints={**(hints or {}), **args})
    except schemas._CannotMake as error:
        raise _RequestError(400, f"{NOT_DONE} arguments for the tool '{function['name']}' that fit its parameters "
                                 f"({error}); simplify the schema", where, code="unsupported_value") from None
    return made if strict else {**made, **args}


def _tool_calls(body: dict, decision, mode: str, offered: list, question: str) -> list[tuple[str, dict]]:
    """The calls the reply makes, after ``tool_choice``: none, the rules' own, or a forced one."""
    if mode == "none" or not offered:
        return []
    names = [t["function"]["name"] for t in offered]
    calls = [(name, args if isinstance(args, dict) else {}) for name, args in decision.tool_calls if name in names]
    forced = mode in ("named", "required")
    hints = {}
    if forced and not calls:  # the rules answered in text, or picked another tool: call the one asked for
        hints = {k: v for _, args in decision.tool_calls if isinstance(args, dict) for k, v in args.items()}
        tool = offered[0] if mode == "named" else _best_tool(offered, question)
        calls = [(tool["function"]["name"], {})]
    index = {t["function"]["name"]: i for i, t in enumerate(body["tools"])}
    return [(name, _arguments(body["tools"][index[name]], args, question, forced,
                              f"tools[{index[name]}].function.parameters", hints)) for name, args in calls]


# ---------------------------------------------------------------- response formats

def _formatted(text: str | None, fmt: dict | None) -> str | None:
    """The reply text in the requested format: JSON for json_object, conforming JSON for json_schema."""
    if not fmt or fmt.get("type") == "text":
        return text
    text = text or ""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    schema = (fmt.get("json_schema") or {}).get("schema") if fmt["type"] == "json_schema" else None
    if schema is None:
        return text if isinstance(parsed, dict) else json.dumps({"answer": text})
    if parsed is not None and schemas.conforms(parsed, schema):
        return text
    try:
        made = schemas.make_instance(schema, text)
        if isinstance(made, dict) and text and text not in json.dumps(made) and "answer" not in made:
            kept = dict(made, answer=text)  # no string field took the reply: keep it where the schema allows
            made = kept if schemas.conforms(kept, schema) else made
        return json.dumps(made)
    except schemas._CannotMake as error:
        raise _RequestError(400, f"{NOT_DONE} JSON that conforms to this schema ({error}); simplify the schema",
                            "response_format.json_schema.schema", code="unsupported_value") from None


# ---------------------------------------------------------------- log probabilities

_TOKEN = re.compile(r"^\s+|(?:[A-Za-z0-9]{1,4}|[^\sA-Za-z0-9])\s*")
_ALTERNATIVES = (" the", " a", ".", ",", " and", " to", " of", " is", " in", " it", " that", " for", " on",
                 " with", " you", " I", "\n", " be", " as", " at", " this")
UNLIKELY = -9999.0  # the API's log probability for a token outside the most likely ones


def text_tokens(text: str) -> list[str]:
    """The reply split the way ``helpers.core.tokens`` counts it (whitespace rides on the token before it)."""
    return _TOKEN.findall(text or "")


def _logprobs(text: str | None, top: int | None) -> dict:
    """Deterministic log probabilities: each token of the reply was the only candidate (log p = 0.0);
    ``top_logprobs`` lists it first, then common tokens at the API's "very unlikely" value."""
    content = []
    for token in text_tokens(text or ""):
        entry = {"token": token, "logprob": 0.0, "bytes": list(token.encode("utf-8", "surrogatepass"))}
        others = [t for t in _ALTERNATIVES if t != token][:max((top or 0) - 1, 0)]
        entry["top_logprobs"] = ([{"token": token, "logprob": 0.0, "bytes": entry["bytes"]}] if top else []) + [
            {"token": t, "logprob": UNLIKELY, "bytes": list(t.encode())} for t in others]
        content.append(entry)
    return {"content": content, "refusal": None}


# ---------------------------------------------------------------- replies

def _reply(body: dict) -> tuple[dict, dict]:
    """The assistant message and the rest of the choice (usage, finish reason, id) for a valid request."""
    messages, tools = body["messages"], body.get("tools")
    choice = body.get("tool_choice")
    mode, offered = _tool_mode(choice, tools)
    restricted = isinstance(choice, dict) and mode != "named"  # allowed_tools: only those may be called
    readable = _readable(messages)
    decision = memory_step(readable, tools, choice) or decide(readable, (offered or None) if restricted else tools,
                                                              mode if restricted else choice)
    decision = honour_instructions(decision, readable)
    question = _question(messages)
    calls = _tool_calls(body, decision, mode, offered, question)
    seed = _digest([messages, tools])[:8]
    message: dict = {"role": "assistant", "content": decision.content, "refusal": None}
    if calls:
        message["content"] = None
        message["tool_calls"] = [
            {"id": f"call_{seed}{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
        if body.get("parallel_tool_calls") is False:
            message["tool_calls"] = message["tool_calls"][:1]
    else:
        message["content"] = _formatted(message["content"], body.get("response_format"))
    prompt_tokens = tokens.count_request(messages, tools)
    completion_tokens = tokens.count_message(message) - tokens.MESSAGE_OVERHEAD
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    finish = "tool_calls" if calls else "stop"
    if max_tokens and not calls and completion_tokens > max_tokens:
        # the longest run of first words within max_tokens: a token never spans the space between two words, so
        # the words' counts add up, and one pass finds it (linear in the reply, however much is cut)
        kept, total = 0, 0
        for word in message["content"].split(" "):
            cost = tokens.count_text(word)
            if total + cost > max_tokens:
                break
            kept, total = kept + 1, total + cost
        message["content"], finish = " ".join(message["content"].split(" ")[:kept]), "length"
        completion_tokens = tokens.count_text(message["content"])
    stop = body.get("stop")
    stops = [s for s in ([stop] if isinstance(stop, str) else stop or []) if s]
    cuts = [message["content"].find(s) for s in stops if message.get("content") and s in message["content"]]
    if cuts:
        message["content"], finish = message["content"][:min(cuts)], "stop"
        completion_tokens = tokens.count_text(message["content"])
    completion_tokens *= body.get("n") or 1  # n identical choices
    predicted = body.get("prediction") or {}
    rejected = tokens.count_text(tokens.content_text(predicted.get("content"))) if predicted else 0
    completion_tokens += rejected  # a prediction the reply did not use is billed, as the API does
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens,
             "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                           "accepted_prediction_tokens": 0, "rejected_prediction_tokens": rejected}}
    return message, {"usage": usage, "finish_reason": finish, "id": f"chatcmpl-offline-{seed}"}


def _moderation() -> dict:
    """What ``moderation`` reports: the stand-in runs no moderation model, and says so in the spec's error form."""
    said = {"type": "error", "code": "moderation_unavailable",
            "message": f"{NOT_DONE} moderation: nothing was checked (no moderation model runs offline)"}
    return {"input": said, "output": dict(said)}


def _envelope(body: dict, meta: dict, kind: str) -> dict:
    tier = body.get("service_tier")
    return {"id": meta["id"], "object": kind, "created": int(clock.now().timestamp()), "model": body["model"],
            "service_tier": tier if tier not in (None, "auto") else "default",
            "system_fingerprint": SYSTEM_FINGERPRINT}


def _completion(body: dict) -> dict:
    message, meta = _reply(body)
    logprobs = _logprobs(message.get("content"), body.get("top_logprobs")) if body.get("logprobs") else None
    reply = _envelope(body, meta, "chat.completion")
    reply["choices"] = [{"index": i, "message": message, "finish_reason": meta["finish_reason"],
                         "logprobs": logprobs} for i in range(body.get("n") or 1)]
    reply["usage"] = meta["usage"]
    if body.get("moderation") is not None:
        reply["moderation"] = _moderation()
    return reply


def _stream_chunks(body: dict):
    """The same reply as server-sent-event chunks: text in small pieces, tool calls by index."""
    message, meta = _reply(body)
    base = _envelope(body, meta, "chat.completion.chunk")
    wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    if wants_usage:
        base["usage"] = None  # every chunk has the field; only the last one fills it
    with_logprobs, top = bool(body.get("logprobs")), body.get("top_logprobs")
    chunks = []

    def chunk(delta: dict, finish=None, index=0, logprobs=None):
        choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
        chunks.append(dict(base, choices=[choice]))

    for n in range(body.get("n") or 1):
        chunk({"role": "assistant", "content": "", "refusal": None}, index=n)
        if message.get("tool_calls"):
            for index, call in enumerate(message["tool_calls"]):
                args = call["function"]["arguments"]
                half = len(args) // 2
                start = {"index": index, "id": call["id"], "type": "function",
                         "function": {"name": call["function"]["name"], "arguments": ""}}
                chunk({"tool_calls": [start]}, index=n)
                for piece in (args[:half], args[half:]):
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, index=n)
        else:
            for piece in re.findall(r"\S+\s*|\s+", message["content"] or ""):
                chunk({"content": piece}, index=n, logprobs=_logprobs(piece, top) if with_logprobs else None)
        chunk({}, finish=meta["finish_reason"], index=n)
    if wants_usage:
        chunks.append(dict(base, choices=[], usage=meta["usage"]))
    if body.get("moderation") is not None:
        chunks[-1]["moderation"] = _moderation()
    for data in chunks:
        yield "data: " + json.dumps(data) + "\n\n"
    yield "data: [DONE]\n\n"


# ---------------------------------------------------------------- embeddings and models

_EMBEDDING_PARAMS = frozenset({"model", "input", "encoding_format", "dimensions", "user",
                               "input_type", "truncate"})  # the last two: NVIDIA NIM's extensions


def _token_ids(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool)
                                                           for t in value)


def _embedding_inputs(texts) -> list[str]:
    """The texts to embed; token-id input (which needs the real model's vocabulary) is refused."""
    if isinstance(texts, str):
        texts = [texts]
    if isinstance(texts, list) and texts and (_token_ids(texts) or all(_token_ids(t) for t in texts)):
        raise _RequestError(400, f"'input': {NOT_DONE} token-id input (arrays of integers); send the text itself",
                            "input", code="unsupported_value")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _RequestError(400, "Invalid 'input': expected a non-empty string or a non-empty array of strings",
                            "input", code="invalid_type")
    if len(texts) > 2048:
        raise _RequestError(400, f"Invalid 'input': array too long. Expected an array with maximum length 2048, but "
                                 f"got {len(texts)} items.", "input", code="array_above_max_length")
    for i, text in enumerate(texts):
        if not text.strip():
            raise _RequestError(400, f"Invalid 'input[{i}]': an empty string cannot be embedded", f"input[{i}]",
                                code="invalid_value")
    return texts


def _embeddings(body) -> dict:
    if not isinstance(body, dict):
        raise _RequestError(400, f"the request body must be a JSON object with 'model' and 'input', but got "
                                 f"{type(body).__name__}", code="invalid_type")
    unknown = sorted(set(body) - _EMBEDDING_PARAMS)
    if unknown:
        raise _RequestError(400, f"Unrecognized request argument supplied: {', '.join(unknown)} (Unknown parameter: "
                                 f"'{unknown[0]}')", unknown[0], code="unknown_parameter")
    model = body.get("model")
    if not isinstance(model, str):
        raise _RequestError(400, f"'model' must be a string naming an embedding model "
                                 f"({', '.join(EMBEDDING_MODELS)}), but got {type(model).__name__}", "model",
                            code="missing_required_parameter" if model is None else "invalid_type")
    if model not in EMBEDDING_MODELS:
        raise _RequestError(404, f"The model '{model}' does not exist or you do not have access to it. The offline "
                                 f"stand-in embeds with {', '.join(EMBEDDING_MODELS)}.", "model",
                            code="model_not_found")
    if body.get("encoding_format") not in (None, "float", "base64"):
        raise _RequestError(400, "Invalid value for 'encoding_format': "
                                 f"{body['encoding_format']!r}. Supported values are: 'float' and 'base64'.",
                            "encoding_format", code="invalid_value")
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise _RequestError(400, "Invalid type for 'user': expected a string.", "user", code="invalid_type")
    texts = _embedding_inputs(body.get("input"))
    size = body.get("dimensions")
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool):
            raise _RequestError(400, "Invalid type for 'dimensions': expected an integer.", "dimensions",
                                code="invalid_type")
        if not 1 <= size <= EMBEDDING_DIM:
            raise _RequestError(400, f"Invalid 'dimensions': {size}. {model} makes {EMBEDDING_DIM}-dimensional "
                                     f"vectors; ask for 1 to {EMBEDDING_DIM}.", "dimensions", code="invalid_value")
    vectors = np.asarray(local_embed(texts), dtype=np.float32)
    if size is not None:
        vectors = vectors[:, :size]  # keep the leading dimensions and make each row unit length again
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
    as_base64 = body.get("encoding_format") == "base64"
    used = sum(tokens.count_text(t) for t in texts)
    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "index": i,
                      "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode("ascii") if as_base64
                      else [float(x) for x in v]}
                     for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": used, "total_tokens": used}}


def _model(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": MODEL_CREATED, "owned_by": "offline"}


def _models(path: str) -> httpx2.Response:
    if path.endswith("/models"):
        return httpx2.Response(200, json={"object": "list",
                                          "data": [_model(m) for m in CHAT_MODELS + EMBEDDING_MODELS]})
    wanted = unquote(path.split("/models/", 1)[1])
    if wanted not in CHAT_MODELS + EMBEDDING_MODELS:
        raise _RequestError(404, f"The model '{wanted}' does not exist or you do not have access to it. The offline "
                                 f"stand-in serves {', '.join(CHAT_MODELS + EMBEDDING_MODELS)}.", "model",
                            code="model_not_found")
    return httpx2.Response(200, json=_model(wanted))


# ---------------------------------------------------------------- HTTP

def _body(request: httpx2.Request):
    try:
        body = json.loads(request.content or b"{}")
    except RecursionError:
        raise _RequestError(400, f"the request body nests JSON more than {MAX_NESTING} levels deep",
                            code="invalid_value") from None
    except ValueError:
        raise _RequestError(400, "the request body is not valid JSON; send a JSON object with "
                                 "'model' and 'messages'", code="invalid_json") from None
    if nesting_depth(body) > MAX_NESTING:
        raise _RequestError(400, f"the request body nests JSON more than {MAX_NESTING} levels deep",
                            code="invalid_value")
    return body


def handle(request: httpx2.Request) -> httpx2.Response:
    """Answer one HTTP request the way an OpenAI-compatible server would."""
    path = request.url.path.rstrip("/")
    try:
        if "/models" in path and (path.endswith("/models") or "/models/" in path):
            if request.method != "GET":
                raise _RequestError(405, f"{request.method} {path} is not supported; models can only be read "
                                         "(GET)", code="method_not_allowed")
            return _models(path)
        if request.method != "POST":
            raise _RequestError(405, f"{request.method} {path} is not supported", code="method_not_allowed")
        if path.endswith("/chat/completions"):
            body = _body(request)
            check_chat_request(body)
            if body.get("stream"):
                payload = "".join(_stream_chunks(body)).encode()
                return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=payload)
            return httpx2.Response(200, json=_completion(body))
        if path.endswith("/embeddings"):
            return httpx2.Response(200, json=_embeddings(_body(request)))
        raise _RequestError(404, f"no route for {path}; the offline stand-in serves /v1/chat/completions, "
                                 "/v1/embeddings and /v1/models", code="unknown_url")
    except _RequestError as err:
        return error_response(err)
    except Exception as error:  # a bug in the stand-in: answer like a server would, never crash the client
        return error_response(_RequestError(
            500, f"the offline stand-in failed on this request ({type(error).__name__}: {error}); this is a "
                 "bug in helpers/standin/server.py, please report it with the request", kind="server_error",
            code="internal_error"))


def make_offline_client(answer: Callable[[httpx2.Request], httpx2.Response] = handle,
                        **kwargs) -> openai.OpenAI:
    """A real ``openai.OpenAI`` client whose requests are answered in-process by the stand-in.

    The one way the package builds an offline client (the layers above the stand-in take it from
    ``helpers.llm.client``). A harness or a scripted fake server passes its own ``answer`` (request ->
    response), usually one that wraps ``handle`` to watch or change what the stand-in says; ``kwargs`` go to
    ``openai.OpenAI`` (``timeout=``...). No retries: a check sees every failure it scripts."""
    return openai.OpenAI(
        api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)), **kwargs,
    )

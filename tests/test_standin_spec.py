"""The stand-in against the published API specification (tests/data/openapi_chat_extract.json).

The extract holds the chat, embeddings and models schemas of openai/openai-openapi (the commit is
noted inside). These tests check, from the specification itself rather than from the stand-in's code:

- every response, stream chunk, embeddings list, model object and error body conforms to the
  specification's response schemas;
- every property of ``CreateChatCompletionRequest`` is accepted with valid values made from its
  schema (a 200 with a conforming reply) -- unless it asks for something the stand-in documents that
  it cannot do, which is a 400 saying "the offline stand-in does not do ...";
- invalid values made from the same schemas (a wrong type, a number out of range, an unknown enum
  value, a missing required field, too many or too few items) are a 400 whose ``param`` names the
  property and whose ``code`` is set;
- the stand-in's own JSON Schema reader (``helpers.standin.schemas``) agrees with a real validator, and
  what it makes for tool arguments and ``json_schema`` replies passes one.

Two readings of the specification are spelled out here. It mixes OpenAPI 3.0's ``nullable: true`` into
a 3.1 document; that is read as "or null". Where its prose (not its schemas) constrains a value, the
values made follow the prose: parameters and response-format schemas are JSON Schemas of type object,
``logit_bias`` keys are token ids, an assistant message has content or tool calls, a tool result
answers the tool call before it, and ``allowed_tools`` lists function tools by name. An explicit null
for an optional parameter counts as leaving it out, so null is not among the invalid values tried.
"""
import base64
import copy
import json
from pathlib import Path

import httpx2
import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.retrieval.embeddings import local_embed
from helpers.standin import schemas
from helpers.standin.server import handle, make_offline_client
from helpers.standin.validation import CHAT_PARAMS, NOT_DONE

EXTRACT = json.loads((Path(__file__).parent / "data" / "openapi_chat_extract.json").read_text())
SCHEMAS = EXTRACT["components"]["schemas"]
MODEL = "offline/stand-in"
EMBEDDING_MODEL = "local/all-minilm-l6-v2"
ASK = [{"role": "user", "content": "When does the AI club meet? Answer in JSON."}]


# ---------------------------------------------------------------- reading the specification

def _with_null(schema):
    """OpenAPI 3.0's ``nullable: true`` as JSON Schema: the schema, or null."""
    if isinstance(schema, list):
        return [_with_null(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: _with_null(v) for k, v in schema.items()}
    if schema.pop("nullable", False):
        return {"anyOf": [schema, {"type": "null"}]}
    return schema


ROOT = {"components": {"schemas": _with_null(SCHEMAS)}}


def validator(schema) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(dict(ROOT, **_with_null(schema)))


def by_name(name: str) -> jsonschema.Draft202012Validator:
    return validator({"$ref": f"#/components/schemas/{name}"})


def resolve(schema) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def request_properties() -> dict[str, list]:
    """Each CreateChatCompletionRequest property with every schema the allOf parts give it."""
    found: dict[str, list] = {}

    def gather(schema):
        schema = resolve(schema)
        for part in schema.get("allOf", []):
            gather(part)
        for name, sub in schema.get("properties", {}).items():
            found.setdefault(name, []).append(sub)

    gather(SCHEMAS["CreateChatCompletionRequest"])
    return found


PROPERTIES = request_properties()


def spec_accepts(name: str, value) -> bool:
    return all(validator(s).is_valid(value) for s in PROPERTIES[name])


def spec_rejects(name: str, value) -> bool:
    return not any(validator(s).is_valid(value) for s in PROPERTIES[name])


# ---------------------------------------------------------------- values made from a schema

TOOL = {"type": "function", "function": {"name": "x", "parameters": {"type": "object", "properties": {}}}}
JSON_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
               "additionalProperties": False}
BY_PROSE = {  # schemas whose prose says more than their "type": the values made follow the prose
    "FunctionParameters": [JSON_SCHEMA, {"type": "object", "properties": {}}],
    "ResponseFormatJsonSchemaSchema": [JSON_SCHEMA],
    "ChatCompletionAllowedTools": [{"mode": mode, "tools": [{"type": "function", "function": {"name": "x"}}]}
                                   for mode in ("auto", "required")],
}


def examples(schema, depth: int = 0) -> list:
    """Valid values of ``schema``: one per anyOf/oneOf branch and enum end, objects with only their
    required properties and then with each optional property added in turn (nulls left out)."""
    if isinstance(schema, dict) and "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in BY_PROSE:
            return copy.deepcopy(BY_PROSE[name])
    schema = resolve(schema)
    if depth > 16 or not isinstance(schema, dict):
        return []
    if "enum" in schema:
        values = [v for v in schema["enum"] if v is not None]
        return list(dict.fromkeys(values[:1] + values[-1:])) if all(isinstance(v, str) for v in values) else values
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return [v for branch in branches for v in examples(branch, depth + 1) if v is not None]
    kind = schema.get("type")
    if kind == "null":
        return []
    if kind == "string":
        return [schema.get("default") if isinstance(schema.get("default"), str) else "x"]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        value = 1 if kind == "integer" else 0.5
        if low is not None and value < low:
            value = low
        if high is not None and value > high:
            value = high
        return [value]
    if kind == "boolean":
        return [True, False]
    if kind == "array":
        items = examples(schema.get("items", {}), depth + 1)[:4]
        return [[item] for item in items] or [[]]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        base = {}
        for name in required:
            made = examples(properties.get(name, {}), depth + 1)
            base[name] = made[0] if made else "x"
        out = [base]
        for name, sub in properties.items():
            if name not in required:
                out += [dict(base, **{name: v}) for v in examples(sub, depth + 1)[:3]]
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not properties:  # a map: the key is a token id for logit_bias
            out += [{"1": v} for v in examples(extra, depth + 1)[:1]]
        return out
    return ["x"]


def conversation(message: dict) -> list:
    """A conversation that puts one message where the API accepts it (the rules of the spec's prose)."""
    message = copy.deepcopy(message)
    role = message.get("role")
    if role == "assistant":
        if message.get("content") is None and not message.get("tool_calls"):
            message["content"] = "Noted."
        calls = message.get("tool_calls") or []
        for k, call in enumerate(calls):
            call["id"] = f"call_{k}"
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "{}"} for c in calls]
        return [{"role": "user", "content": "hi"}, message] + results + [{"role": "user", "content": "thanks"}]
    if role == "tool":
        message["tool_call_id"] = "call_0"
        call = {"id": "call_0", "type": "function", "function": {"name": "x", "arguments": "{}"}}
        return [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                message]
    if role in ("system", "developer"):
        return [message, {"role": "user", "content": "hi"}]
    return [message]


def valid_values(name: str) -> list:
    if name == "model":
        return [MODEL]
    if name == "messages":
        made = examples(SCHEMAS["ChatCompletionRequestMessage"])
        return [conversation(m) for m in made]
    values = []
    for value in examples(PROPERTIES[name][-1]):
        if value not in values and spec_accepts(name, value):
            values.append(value)
    return values


def with_companions(name: str, value) -> dict:
    """The request for one property: what the API requires beside it is added."""
    body = {"model": MODEL, "messages": ASK, name: value}
    if name == "top_logprobs":
        body["logprobs"] = True
    if name == "stream_options":
        body["stream"] = True
    if name in ("tool_choice", "parallel_tool_calls"):
        body["tools"] = [TOOL]
    return body


def refused_as_not_done(name: str, value) -> bool:
    """What the stand-in documents that it cannot do: audio output, the legacy functions API, custom tools."""
    text = json.dumps(value)
    if name in ("audio", "functions", "function_call"):
        return True
    if name == "modalities":
        return "audio" in value
    if name in ("tools", "tool_choice"):
        return '"custom"' in text
    if name == "messages":
        return any(m.get("role") == "function" or m.get("function_call") or
                   any(c.get("type") == "custom" for c in m.get("tool_calls") or []) for m in value)
    return False


# ---------------------------------------------------------------- talking to the stand-in

def send(body, path="/v1/chat/completions", method="POST"):
    content = json.dumps(body).encode() if body is not None else None
    response = handle(httpx2.Request(method, "http://offline.stand-in" + path, content=content))
    return response


def events(response) -> list[dict]:
    text = response.content.decode()
    assert text.endswith("data: [DONE]\n\n")
    return [json.loads(line[6:]) for line in text.split("\n\n") if line.startswith("data: {")]


def assert_conforms(response, stream: bool = False):
    assert response.status_code == 200, response.content[:500]
    if stream:
        chunks = events(response)
        assert chunks
        for chunk in chunks:
            errors = [e.message for e in by_name("CreateChatCompletionStreamResponse").iter_errors(chunk)]
            assert not errors, (errors, chunk)
        return chunks
    data = json.loads(response.content)
    errors = [e.message for e in by_name("CreateChatCompletionResponse").iter_errors(data)]
    assert not errors, (errors, data)
    return data


def assert_error(response, status: int, name: str):
    assert response.status_code == status, response.content[:500]
    body = json.loads(response.content)
    assert not list(by_name("ErrorResponse").iter_errors(body)), body
    error = body["error"]
    param = error["param"] or ""
    assert param == name or param.startswith((name + ".", name + "[")), (name, error)
    assert error["code"], error
    return error


# ---------------------------------------------------------------- the tests

def test_the_extract_names_its_source():
    source = EXTRACT["source"]
    assert source["repository"] == "openai/openai-openapi" and len(source["commit"]) == 40
    for root in EXTRACT["roots"]:
        assert root in SCHEMAS
    jsonschema.Draft202012Validator.check_schema(dict(ROOT, **_with_null(SCHEMAS["CreateChatCompletionRequest"])))


def test_every_request_property_of_the_spec_is_known_to_the_stand_in():
    assert set(PROPERTIES) == set(CHAT_PARAMS)


VALID_CASES = [(name, value) for name in sorted(PROPERTIES) for value in valid_values(name)]


@pytest.mark.parametrize("name, value", VALID_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(VALID_CASES)])
def test_valid_value_of_each_property_is_accepted_with_a_conforming_reply(name, value):
    body = with_companions(name, value)
    if name != "messages":
        assert spec_accepts(name, value), value
    response = send(body)
    if refused_as_not_done(name, value):
        error = assert_error(response, 400, name)
        assert NOT_DONE in error["message"], error
        return
    assert_conforms(response, stream=bool(body.get("stream")))


def test_the_property_cases_cover_every_property_and_branch():
    covered = {name for name, _ in VALID_CASES}
    assert covered == set(PROPERTIES)
    kinds = {json.dumps(v, sort_keys=True) for n, v in VALID_CASES if n == "tool_choice"}
    assert any('"allowed_tools"' in k for k in kinds) and any('"function"' in k for k in kinds)
    roles = {m["role"] for n, v in VALID_CASES if n == "messages" for m in v}
    assert roles == {"developer", "system", "user", "assistant", "tool", "function"}


GENERIC_BAD = [12345, 1.5, -1, "no-such-value", True, [], ["no-such-value"], [12345], {}, {"no_such_field": 1},
               {"1": "no-such-value"}]


def _bounds(schema, found):
    schema = resolve(schema)
    if not isinstance(schema, dict):
        return
    for key in ("minimum", "maximum", "minItems", "maxItems", "maxLength"):
        if key in schema:
            found.append((key, schema[key], schema))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            _bounds(branch, found)


def _out_of_range(name: str) -> list:
    found = []
    for schema in PROPERTIES[name]:
        _bounds(schema, found)
    values = []
    for key, bound, schema in found:
        if key == "minimum":
            values.append(bound - 1)
        elif key == "maximum":
            values.append(bound + 1)
        elif key == "maxLength":
            values.append("x" * (bound + 1))
        elif key == "maxItems":
            item = (examples(schema.get("items", {})) or ["x"])[0]
            values.append([item] * (bound + 1))
        elif key == "minItems" and bound > 0:
            values.append([])
    return values


def _nested(value, depth=0):
    """``value`` with one field inside it replaced by a generic bad value, for objects and their lists."""
    if depth > 1:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            for bad in GENERIC_BAD[:6]:
                yield dict(value, **{key: bad})
            for changed in _nested(inner, depth + 1):
                yield dict(value, **{key: changed})
    elif isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        for changed in _nested(value[0], depth + 1):
            yield [changed] + value[1:]


def invalid_values(name: str) -> list:
    candidates = GENERIC_BAD + _out_of_range(name)
    for value in valid_values(name)[:6]:
        candidates += list(_nested(value))
    out, seen = [], set()
    for value in candidates:
        key = json.dumps(value, sort_keys=True)
        if key not in seen and spec_rejects(name, value):
            seen.add(key)
            out.append(value)
    return out


INVALID_CASES = [(name, value) for name in sorted(PROPERTIES) for value in invalid_values(name)]


@pytest.mark.parametrize("name, value", INVALID_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(INVALID_CASES)])
def test_invalid_value_of_each_property_is_a_400_naming_it(name, value):
    body = with_companions(name, value)
    assert_error(send(body), 400, name)


def test_invalid_cases_cover_type_range_and_enum_problems():
    names = {name for name, _ in INVALID_CASES}
    assert names == set(PROPERTIES)
    assert ("temperature", 3) in INVALID_CASES and ("n", 129) in INVALID_CASES
    assert ("service_tier", "no-such-value") in INVALID_CASES and ("stop", []) in INVALID_CASES
    codes = {json.loads(send(with_companions(n, v)).content)["error"]["code"] for n, v in INVALID_CASES[::7]}
    assert {"invalid_type", "invalid_value"} <= codes


FEATURES = [  # requests that exercise each part of a reply
    {"messages": ASK},
    {"messages": ASK, "n": 3, "logprobs": True, "top_logprobs": 5},
    {"messages": ASK, "max_tokens": 3},
    {"messages": ASK, "stop": ["club"]},
    {"messages": ASK, "response_format": {"type": "json_object"}},
    {"messages": ASK, "response_format": {"type": "json_schema", "json_schema": {
        "name": "answer", "strict": True, "schema": JSON_SCHEMA}}},
    {"messages": [{"role": "user", "content": "How many days until Thursday?"}], "tools": [
        {"type": "function", "function": {"name": "days_until_weekday", "parameters": {
            "type": "object", "properties": {"weekday": {"type": "string"}}, "required": ["weekday"]}}}]},
    {"messages": ASK, "tools": [TOOL], "tool_choice": "required", "logprobs": True},
    {"messages": ASK, "moderation": {"model": "omni-moderation-latest"}, "service_tier": "flex",
     "prediction": {"type": "content", "content": "The AI club meets on Thursdays."}},
]


@pytest.mark.parametrize("extra", FEATURES, ids=[str(i) for i in range(len(FEATURES))])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_every_reply_and_chunk_conforms_to_the_response_schemas(extra, stream):
    body = {"model": MODEL, **extra}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    made = assert_conforms(send(body), stream=stream)
    if not stream:
        for choice in made["choices"]:
            assert "refusal" in choice["message"] and choice["message"]["refusal"] is None
            assert "logprobs" in choice and choice["finish_reason"] in ("stop", "length", "tool_calls")
        assert made["usage"]["total_tokens"] == made["usage"]["prompt_tokens"] + made["usage"]["completion_tokens"]
        assert made["service_tier"] and made["system_fingerprint"] and isinstance(made["created"], int)


def test_embeddings_models_and_errors_conform():
    response = send({"model": EMBEDDING_MODEL, "input": ["one", "two"]}, path="/v1/embeddings")
    assert not list(by_name("CreateEmbeddingResponse").iter_errors(json.loads(response.content)))
    encoded = json.loads(send({"model": EMBEDDING_MODEL, "input": "one", "encoding_format": "base64"},
                              path="/v1/embeddings").content)
    for item in encoded["data"]:  # the spec's Embedding schema knows only the float form; base64 is a string
        assert isinstance(item["embedding"], str)
        item["embedding"] = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4").tolist()
    assert not list(by_name("CreateEmbeddingResponse").iter_errors(encoded))
    listed = send(None, path="/v1/models", method="GET")
    assert not list(by_name("ListModelsResponse").iter_errors(json.loads(listed.content)))
    one = send(None, path="/v1/models/offline%2Fstand-in", method="GET")
    assert one.status_code == 200 and not list(by_name("Model").iter_errors(json.loads(one.content)))
    assert_error(send(None, path="/v1/models/gpt-4o", method="GET"), 404, "model")
    assert_error(send({"model": "gpt-4o", "messages": ASK}), 404, "model")


def test_real_client_reads_every_reply_kind():
    """The openai client parses what the specification promises: logprobs, refusal, usage details, service tier."""
    client = make_offline_client()
    reply = client.chat.completions.create(model=MODEL, messages=ASK, logprobs=True, top_logprobs=2)
    choice = reply.choices[0]
    assert choice.message.refusal is None and reply.service_tier == "default"
    assert "".join(t.token for t in choice.logprobs.content) == choice.message.content
    assert all(len(t.top_logprobs) == 2 and t.logprob == 0.0 for t in choice.logprobs.content)
    vectors = client.embeddings.create(model=EMBEDDING_MODEL, input=["hello world"])  # the client asks for base64
    assert np.allclose(vectors.data[0].embedding, local_embed(["hello world"])[0])
    assert client.models.retrieve(MODEL).id == MODEL


def test_base64_embeddings_are_little_endian_float32():
    data = json.loads(send({"model": EMBEDDING_MODEL, "input": "hi", "encoding_format": "base64"},
                           path="/v1/embeddings").content)
    vector = np.frombuffer(base64.b64decode(data["data"][0]["embedding"]), dtype="<f4")
    assert np.array_equal(vector, local_embed(["hi"])[0])


# ---------------------------------------------------------------- the stand-in's own JSON Schema reader


def _bounded(kind):
    def build(low, span, step):
        schema = {"type": kind, "minimum": low, "maximum": low + span}
        if step:
            schema.update(minimum=low * step, maximum=(low + span) * step, multipleOf=step)
        return schema
    numbers = st.integers(-50, 50)
    return st.builds(build, numbers, st.integers(0, 20), st.sampled_from([None, 2, 5]) if kind == "integer"
                     else st.just(None))


LEAVES = st.one_of(
    st.just({"type": "string"}), st.just({"type": "boolean"}), st.just({"type": "null"}),
    st.builds(lambda n: {"type": "string", "enum": [f"v{i}" for i in range(n)]}, st.integers(1, 3)),
    st.builds(lambda lo, extra: {"type": "string", "minLength": lo, "maxLength": lo + extra},
              st.integers(0, 5), st.integers(0, 5)),
    st.sampled_from([{"type": "string", "pattern": p} for p in
                     (r"^[A-Z]{3}-[0-9]{4}$", r"^\S+@\S+\.\w{2,}$", r"^[a-z_]+$", r"^(?:yes|no)$")]),
    st.sampled_from([{"type": "string", "format": f} for f in ("date-time", "date", "email", "uuid", "uri")]),
    _bounded("integer"), _bounded("number"),
)


def _objects(inner):
    return st.dictionaries(st.sampled_from(["a", "b", "c", "query", "when"]), inner, min_size=1, max_size=3).flatmap(
        lambda props: st.builds(lambda req, closed: {"type": "object", "properties": props,
                                                     "required": sorted(set(req) & set(props)),
                                                     **({"additionalProperties": False} if closed else {})},
                                st.lists(st.sampled_from(sorted(props))), st.booleans()))


SCHEMA_TREES = st.recursive(LEAVES, lambda inner: st.one_of(
    _objects(inner),
    st.builds(lambda items, lo: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + 2},
              inner, st.integers(0, 2)),
    st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
    st.builds(lambda s: {**s, "type": [s["type"], "null"]} if isinstance(s.get("type"), str) else s, inner),
), max_leaves=8)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-100, 100) | st.floats(-100, 100) |
                           st.sampled_from(["", "a", "v0", "AAA-0000", "x@y.zz", "yes"]),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["a", "b", "c", "query", "z"]), inner, max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMA_TREES, text=st.text(max_size=30))
def test_made_values_conform_to_their_schema(schema, text):
    """What the stand-in makes for a tool's parameters or a json_schema reply passes a real validator."""
    made = schemas.make_instance(schema, text)
    jsonschema.Draft202012Validator(schema).validate(made)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMA_TREES, value=JSON_VALUES)
def test_the_reader_agrees_with_a_real_validator(schema, value):
    assert schemas.conforms(value, schema) == jsonschema.Draft202012Validator(schema).is_valid(value), \
        schemas.problem(value, schema)

"""The stand-in validates chat requests like the published API: a malformed one is a 400 naming the field.

The later sections follow the issue "A stand-in a learner can trust": what the specification allows is
accepted (and ignored where the stand-in has nothing to do with it), what it accepts it honours
(``tool_choice``, ``strict``, ``response_format``, ``logprobs``, embeddings' ``encoding_format`` and
``dimensions``), what the real API rejects it rejects with the real error ``code`` and ``param``, and
no valid request gets a 500 or a 405. tests/test_standin_spec.py checks the same against the spec itself.
"""
import json

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.standin.server import handle, validate_tools

MODEL = "offline/stand-in"
HI = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "days_until_weekday", "parameters": {
    "type": "object", "properties": {"weekday": {"type": "string"}}, "required": ["weekday"]}}}


def post(body, path="/v1/chat/completions", raw=None):
    """Send one request straight to the stand-in; the status and the decoded JSON body."""
    content = raw if raw is not None else json.dumps(body).encode()
    response = handle(httpx2.Request("POST", "http://offline.stand-in" + path, content=content))
    return response.status_code, json.loads(response.content)


def with_tool(**fields):
    return {"type": "function", "function": {"name": "f", **fields}}


def chat(**fields):
    return {"model": MODEL, "messages": HI, **fields}


MALFORMED = [  # (request body, the field the message must name)
    (chat(tools=[with_tool(parameters={"type": "object", "properties": {}, "required": 5})]), "required"),
    (chat(tools=[{"type": "function", "function": "f"}]), "tools[0].function"),
    (chat(tools=[{"type": "function", "function": {"name": ["f"]}}]), "tools[0].function.name"),
    (chat(tools=[with_tool(parameters={"type": "object", "properties": []})]), "properties"),
    (chat(tools=[with_tool(parameters={"type": "object", "properties": {"x": 5}})]), "properties.x"),
    (chat(tools=[with_tool(description=7)]), "description"),
    (chat(tools=[with_tool(), with_tool()]), "unique"),
    (chat(tools=[{"type": "custom", "custom": {"name": "f"}}]), "tools[0].type"),
    (chat(tools=[with_tool(colour="red")]), "colour"),
    (chat(tools="days_until_weekday"), "tools"),
    (chat(tools=[]), "tools"),
    (chat(tools=[TOOL] * 129), "tools"),
    (chat(max_tokens="ten"), "max_tokens"),
    (chat(max_tokens=-5), "max_tokens"),
    (chat(max_tokens=0), "max_tokens"),
    (chat(max_tokens=2.5), "max_tokens"),
    (chat(max_completion_tokens=0), "max_completion_tokens"),
    (chat(temperature=5), "temperature"),
    (chat(temperature=-0.1), "temperature"),
    (chat(temperature="hot"), "temperature"),
    (chat(temperature=True), "temperature"),
    (chat(top_p=1.5), "top_p"),
    (chat(presence_penalty=3), "presence_penalty"),
    (chat(frequency_penalty=-3), "frequency_penalty"),
    (chat(n=0), "n"),
    (chat(n=129), "n"),
    (chat(seed="abc"), "seed"),
    (chat(stream="yes"), "stream"),
    (chat(stop=["a", "b", "c", "d", "e"]), "stop"),
    (chat(stop=5), "stop"),
    (chat(logprobs=True, top_logprobs=21), "top_logprobs"),
    (chat(top_logprobs=3), "top_logprobs"),
    (chat(metadata={"k": 5}), "metadata"),
    (chat(logit_bias={"50256": 500}), "logit_bias"),
    (chat(service_tier="turbo"), "service_tier"),
    (chat(reasoning_effort="extreme"), "reasoning_effort"),
    (chat(user=42), "user"),
    (chat(stream_options={"include_usage": True}), "stream_options"),
    (chat(stream=True, stream_options={"include_usage": "yes"}), "stream_options"),
    (chat(tool_choice="auto"), "tool_choice"),
    (chat(tool_choice="none"), "tool_choice"),
    (chat(parallel_tool_calls=False), "parallel_tool_calls"),
    (chat(tools=[TOOL], tool_choice="sometimes"), "tool_choice"),
    (chat(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "nope"}}), "nope"),
    (chat(tools=[TOOL], tool_choice={"type": "function", "function": "days_until_weekday"}), "tool_choice"),
    (chat(tools=[TOOL], parallel_tool_calls="yes"), "parallel_tool_calls"),
    (chat(response_format="json"), "response_format"),
    (chat(response_format={"type": "yaml"}), "response_format.type"),
    (chat(response_format={"type": "json_object"}), "json"),
    (chat(response_format={"type": "json_schema", "json_schema": {"name": "bad name"}}), "json_schema.name"),
    (chat(colour="blue"), "colour"),
    (chat(functions=[{"name": "f"}]), "functions"),
    ({"messages": HI}, "model"),
    ({"model": None, "messages": HI}, "model"),
    ({"model": ["offline/stand-in"], "messages": HI}, "model"),
    ({"model": MODEL}, "messages"),
    (chat(messages=[]), "messages"),
    (chat(messages="hi"), "messages"),
    (chat(messages=[{"role": "narrator", "content": "hi"}]), "narrator"),
    (chat(messages=[{"role": ["user"], "content": "hi"}]), "role"),
    (chat(messages=[{"role": "user", "content": 5}]), "content"),
    (chat(messages=[{"role": "user", "content": []}]), "content"),
    (chat(messages=[{"role": "user", "content": [{"type": "video", "video": "x"}]}]), "content[0].type"),
    (chat(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]), "content[0].text"),
    (chat(messages=[{"role": "user", "content": "hi", "mood": "happy"}]), "mood"),
    (chat(messages=[{"role": "user", "content": "hi", "name": 3}]), "name"),
    (chat(messages=[{"role": "user", "content": "hi", "name": "Ada Lovelace"}]), "name"),
    (chat(logit_bias={"hello": 5}), "logit_bias"),
    (chat(logit_bias={"50256": 1.5}), "logit_bias"),
    (chat(stop=[]), "stop"),
    (chat(modalities=["text", "audio"]), "modalities"),
    (chat(audio={"voice": "alloy", "format": "mp3"}), "audio"),
    (chat(function_call="auto"), "function_call"),
    (chat(messages=HI + [{"role": "function", "name": "f", "content": "3"}]), "functions API"),
    (chat(tools=[TOOL], tool_choice={"type": "custom", "custom": {"name": "f"}}), "tool_choice.type"),
    (chat(tools=[with_tool(strict=True, parameters={"type": "object", "properties": {"x": {"type": "string"}}})]),
     "additionalProperties"),
    (chat(web_search_options={"search_context_size": "huge"}), "search_context_size"),
    (chat(prompt_cache_options={"ttl": "1h"}), "prompt_cache_options.ttl"),
    (chat(moderation={"policy": None}), "moderation.model"),
    (chat(messages=HI + [{"role": "tool", "content": "3"}]), "tool_call_id"),
    (chat(messages=HI + [{"role": "tool", "tool_call_id": ["c"], "content": "3"}]), "tool_call_id"),
    (chat(messages=HI + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "custom", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "3"}]), "tool_calls[0].type"),
    ([{"model": MODEL, "messages": HI}], "JSON object"),
    ("hello", "JSON object"),
    (None, "JSON object"),
]


@pytest.mark.parametrize("body, field", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_request_is_a_400_naming_the_field(body, field):
    status, answer = post(body)
    assert status == 400, answer
    error = answer["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
    assert field in error["message"], error["message"]
    assert error["code"], error


def test_error_param_gives_the_path_of_the_field():
    assert post(chat(max_tokens="ten"))[1]["error"]["param"] == "max_tokens"
    required = chat(tools=[with_tool(parameters={"type": "object", "properties": {}, "required": 5})])
    assert post(required)[1]["error"]["param"] == "tools[0].function.parameters.required"
    assert post({"messages": HI})[1]["error"]["param"] == "model"


def test_body_that_is_not_json_is_a_400():
    status, answer = post(None, raw=b"{not json")
    assert status == 400 and "not valid JSON" in answer["error"]["message"]


def test_missing_model_is_400_and_unknown_model_404():
    assert post({"messages": HI})[0] == 400
    assert post({"model": "meta/llama-3.3-70b-instruct", "messages": HI})[0] == 404


def test_embeddings_requests_are_checked_too():
    assert post([1], path="/v1/embeddings")[0] == 400
    assert post({"input": "x"}, path="/v1/embeddings")[0] == 400
    assert post({"model": "offline/embed", "input": "x", "colour": 1}, path="/v1/embeddings")[0] == 400


def test_validate_tools_lists_every_problem_of_a_tool():
    bad = [{"type": "function", "function": {"name": "bad name!", "parameters": {"type": "string"}}}]
    problems = validate_tools(bad)
    assert len(problems) == 2 and "bad name!" in problems[0] and "type 'object'" in problems[1]
    assert validate_tools([TOOL]) == [] and validate_tools(None) == []


def test_what_the_package_sends_is_accepted(client):
    """The parameters helpers.llm.client, helpers.agent.turn and the memory modules send pass validation."""
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "developer", "content": "Reply in JSON."}] + HI, temperature=0.2,
        max_completion_tokens=512, tools=[TOOL], tool_choice="auto", parallel_tool_calls=True, stream=True,
        stream_options={"include_usage": True}, response_format={"type": "json_object"}, seed=1, top_p=1,
        metadata={"lesson": "07"}, store=False, user="ada", stop=["\n\n"], n=1)
    assert list(reply)[-1].usage is not None


def test_n_gives_n_identical_choices(client):
    reply = client.chat.completions.create(model=MODEL, messages=HI, n=3)
    assert [c.index for c in reply.choices] == [0, 1, 2]
    assert len({c.message.content for c in reply.choices}) == 1
    streamed = list(client.chat.completions.create(model=MODEL, messages=HI, n=2, stream=True))
    assert {c.choices[0].index for c in streamed if c.choices} == {0, 1}


def test_stop_sequence_cuts_the_reply(client):
    full = client.chat.completions.create(model=MODEL, messages=HI).choices[0].message.content
    cut = client.chat.completions.create(model=MODEL, messages=HI, stop=[","]).choices[0]
    assert cut.message.content == full.split(",")[0] and cut.finish_reason == "stop"


# ---------------------------------------------------------------- fuzzing: never a 500, always a message

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8)
JUNK = st.recursive(SCALARS,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                max_size=3), max_leaves=8)
FIELDS = ["model", "messages", "tools", "tool_choice", "temperature", "max_tokens", "n", "stream", "stop",
          "stream_options", "response_format", "parallel_tool_calls", "top_p", "metadata", "seed"]


def _mutations():
    good_tool = st.just(TOOL)
    bad_tool = st.fixed_dictionaries({"type": st.sampled_from(["function", "custom", 3]), "function": JUNK})
    bad_schema = st.builds(lambda p: with_tool(parameters=p), JUNK | st.fixed_dictionaries(
        {"type": st.just("object"), "properties": JUNK, "required": JUNK}))
    message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system", 5]),
                                     "content": JUNK}, optional={"tool_call_id": JUNK, "tool_calls": JUNK,
                                                                 "name": JUNK})
    return st.fixed_dictionaries({}, optional={
        "model": st.just(MODEL) | JUNK, "messages": st.lists(message, max_size=3) | JUNK,
        "tools": st.lists(good_tool | bad_tool | bad_schema, max_size=3) | JUNK,
        **{name: JUNK for name in FIELDS[3:]}})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_mutations() | JUNK)
def test_random_malformed_bodies_get_a_400_with_a_message_never_a_500(body):
    status, answer = post(body)
    assert status in (200, 400, 404), answer
    if status != 200:
        assert answer["error"]["message"] and answer["error"]["type"] in ("invalid_request_error",
                                                                          "not_found_error")


# ---------------------------------------------------------------- what the spec allows is accepted (issue Part 1)

DAYS = {"type": "function", "function": {"name": "days_until_weekday", "description": "Days until a weekday.",
                                         "parameters": {"type": "object", "properties": {
                                             "weekday": {"type": "string"}, "time": {"type": "string"}},
                                             "required": ["weekday"]}}}
SEARCH = {"type": "function", "function": {"name": "search_campus_info", "description": "Search campus facts.",
                                           "parameters": {"type": "object", "properties": {
                                               "query": {"type": "string"}}, "required": ["query"]}}}
WHEN = [{"role": "user", "content": "How many days until Thursday?"}]


def calls_of(reply):
    return [(c.function.name, json.loads(c.function.arguments)) for c in reply.choices[0].message.tool_calls or []]


def test_tool_message_with_a_name_is_accepted(client):
    """The OpenAI cookbook sends the function's name on tool results; the API accepts it."""
    first = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS])
    call = first.choices[0].message.tool_calls[0]
    messages = WHEN + [first.choices[0].message.model_dump(exclude_none=True),
                       {"role": "tool", "tool_call_id": call.id, "name": call.function.name,
                        "content": json.dumps({"weekday": "Thursday", "days": 3})}]
    final = client.chat.completions.create(model=MODEL, messages=messages, tools=[DAYS])
    assert "3 days" in final.choices[0].message.content


def test_parameters_the_stand_in_does_not_implement_are_accepted_and_ignored(client):
    plain = client.chat.completions.create(model=MODEL, messages=HI).choices[0].message.content
    reply = client.chat.completions.create(
        model=MODEL, messages=HI, modalities=["text"], prompt_cache_options={"ttl": "30m", "mode": "implicit"},
        prompt_cache_key="lesson-07", prompt_cache_retention="24h", safety_identifier="learner-1", verbosity="low",
        reasoning_effort="minimal", web_search_options={"search_context_size": "low"}, metadata={"lesson": "07"},
        store=True, service_tier="flex", user="ada", seed=7, logit_bias={"50256": -100}, frequency_penalty=0.5,
        presence_penalty=-0.5, temperature=1.5, top_p=0.5,
        prediction={"type": "content", "content": "Hello"})
    assert reply.choices[0].message.content == plain and reply.service_tier == "flex"
    assert reply.usage.completion_tokens_details.rejected_prediction_tokens == 2  # "Hello": "Hell" + "o"


def test_moderation_is_accepted_and_says_it_was_not_run(client):
    reply = client.chat.completions.create(model=MODEL, messages=HI, moderation={"model": "omni-moderation-latest"})
    said = reply.model_dump()["moderation"]
    assert said["input"]["type"] == "error" and "does not do moderation" in said["input"]["message"]


def test_function_role_message_says_the_legacy_functions_api_is_not_served():
    status, answer = post(chat(messages=HI + [{"role": "function", "name": "f", "content": "3"}]))
    assert status == 400 and "legacy functions API" in answer["error"]["message"]
    assert "unknown role" not in answer["error"]["message"] and answer["error"]["param"] == "messages[1].role"


def test_what_cannot_be_honoured_is_refused_saying_so():
    for body, param in [(chat(audio={"voice": "alloy", "format": "mp3"}, modalities=["text", "audio"]), "audio"),
                        (chat(functions=[{"name": "f"}]), "functions"),
                        (chat(tools=[{"type": "custom", "custom": {"name": "f"}}]), "tools[0].type")]:
        status, answer = post(body)
        assert status == 400 and "the offline stand-in does not do" in answer["error"]["message"], answer
        assert answer["error"]["param"] == param and answer["error"]["code"].startswith("unsupported")


# ---------------------------------------------------------------- what it accepts, it honours

def test_named_tool_choice_calls_that_tool_with_its_required_arguments(client):
    named = {"type": "function", "function": {"name": "search_campus_info"}}
    assert calls_of(client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS, SEARCH],
                                                   tool_choice=named)) == [
        ("search_campus_info", {"query": "How many days until Thursday?"})]
    same = {"type": "function", "function": {"name": "days_until_weekday"}}  # the rules' own pick keeps its arguments
    reply = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS, SEARCH], tool_choice=same)
    assert calls_of(reply) == [("days_until_weekday", {"weekday": "Thursday"})]
    count = {"type": "function", "function": {"name": "count", "parameters": {"type": "object", "properties": {
        "weekday": {"type": "string"}, "hours": {"type": "integer"}}, "required": ["weekday", "hours"]}}}
    reply = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS, count],
                                           tool_choice={"type": "function", "function": {"name": "count"}})
    assert calls_of(reply) == [("count", {"weekday": "Thursday", "hours": 0})]  # the rules' value, a placeholder


def test_required_always_calls_a_tool_and_none_never(client):
    for messages in (HI, WHEN, [{"role": "user", "content": "Thanks!"}]):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=[DAYS, SEARCH],
                                               tool_choice="required")
        assert reply.choices[0].finish_reason == "tool_calls" and calls_of(reply)
        none = client.chat.completions.create(model=MODEL, messages=messages, tools=[DAYS, SEARCH],
                                              tool_choice="none")
        assert not calls_of(none) and none.choices[0].message.content


def test_allowed_tools_limits_the_choice(client):
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "search_campus_info"}}]}}
    reply = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS, SEARCH], tool_choice=choice)
    assert [name for name, _ in calls_of(reply)] == ["search_campus_info"]


def test_strict_tool_gets_every_required_field_and_nothing_else(client):
    strict = {"type": "function", "function": {"name": "days_until_weekday", "strict": True, "parameters": {
        "type": "object", "additionalProperties": False, "required": ["weekday", "time", "remind"],
        "properties": {"weekday": {"type": "string", "enum": ["Monday", "Thursday"]},
                       "time": {"type": ["string", "null"]}, "remind": {"type": "boolean"}}}}}
    reply = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[strict])
    [(name, args)] = calls_of(reply)
    assert set(args) == {"weekday", "time", "remind"} and args["weekday"] == "Thursday"
    assert isinstance(args["remind"], bool)


def test_json_modes_give_json_and_json_schema_conforms(client):
    import jsonschema

    asked = [{"role": "user", "content": "When does the AI club meet? Reply in JSON."}]
    text = client.chat.completions.create(model=MODEL, messages=asked,
                                          response_format={"type": "json_object"}).choices[0].message.content
    assert isinstance(json.loads(text), dict)
    schema = {"type": "object", "additionalProperties": False, "required": ["answer", "confidence", "tags"],
              "properties": {"answer": {"type": "string"}, "confidence": {"type": "number", "minimum": 0.5},
                             "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}
    for stream in (False, True):
        reply = client.chat.completions.create(model=MODEL, messages=asked, stream=stream, response_format={
            "type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": schema}})
        text = ("".join(c.choices[0].delta.content or "" for c in reply if c.choices) if stream
                else reply.choices[0].message.content)
        jsonschema.validate(json.loads(text), schema)


def test_logprobs_are_an_object_with_one_entry_per_token(client):
    reply = client.chat.completions.create(model=MODEL, messages=HI, logprobs=True, top_logprobs=3)
    content = reply.choices[0].logprobs.content
    assert "".join(t.token for t in content) == reply.choices[0].message.content
    assert all(t.logprob == 0.0 and len(t.top_logprobs) == 3 and t.top_logprobs[0].token == t.token for t in content)
    called = client.chat.completions.create(model=MODEL, messages=WHEN, tools=[DAYS], logprobs=True)
    assert called.choices[0].logprobs.content == []  # tool calls only: no content tokens, never None
    chunks = list(client.chat.completions.create(model=MODEL, messages=HI, logprobs=True, stream=True))
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert [t.token for t in streamed] == [t.token for t in content]


def test_embeddings_honour_base64_and_dimensions(client):
    import base64

    import numpy as np

    from helpers.retrieval.embeddings import local_embed

    full = local_embed(["the AI club"])[0]
    status, answer = post({"model": "local/all-minilm-l6-v2", "input": "the AI club", "encoding_format": "base64",
                           "dimensions": 64}, path="/v1/embeddings")
    vector = np.frombuffer(base64.b64decode(answer["data"][0]["embedding"]), dtype="<f4")
    assert status == 200 and vector.shape == (64,) and abs(np.linalg.norm(vector) - 1) < 1e-5
    assert np.allclose(vector, full[:64] / np.linalg.norm(full[:64]), atol=1e-6)
    short = client.embeddings.create(model="local/all-minilm-l6-v2", input="the AI club", dimensions=8)
    assert len(short.data[0].embedding) == 8
    status, answer = post({"model": "local/all-minilm-l6-v2", "input": "x", "dimensions": 4096}, path="/v1/embeddings")
    assert status == 400 and answer["error"]["param"] == "dimensions"


# ---------------------------------------------------------------- what the real API rejects, and how it says so

def test_message_name_must_match_the_api_pattern():
    status, answer = post(chat(messages=[{"role": "user", "content": "hi", "name": "Ada Lovelace"}]))
    assert status == 400 and answer["error"]["param"] == "messages[0].name"
    assert answer["error"]["code"] == "invalid_value" and "^[a-zA-Z0-9_-]+$" in answer["error"]["message"]
    assert post(chat(messages=[{"role": "user", "content": "hi", "name": "Ada_Lovelace-1"}]))[0] == 200


def test_logit_bias_keys_must_be_token_ids():
    status, answer = post(chat(logit_bias={"hello": 5}))
    assert status == 400 and answer["error"]["param"] == "logit_bias.hello"
    assert post(chat(logit_bias={"50256": -100, "1": 5}))[0] == 200


def test_error_bodies_carry_the_api_code_and_the_message_index():
    history = HI + [{"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "And?"},
                    {"role": "user"}]
    cases = [(chat(messages=history), "messages[3].content", "missing_required_parameter"),
             (chat(temperature="hot"), "temperature", "invalid_type"),
             (chat(n=200), "n", "integer_above_max_value"),
             (chat(service_tier="turbo"), "service_tier", "invalid_value"),
             (chat(colour="blue"), "colour", "unknown_parameter"),
             ({"messages": HI}, "model", "missing_required_parameter"),
             (chat(messages=HI + [{"role": "user", "content": "x", "mood": "happy"}]), "messages[1].mood",
              "unknown_parameter"),
             (chat(messages=HI + [{"role": "tool", "tool_call_id": "gone", "content": "3"}]), "messages[1].role",
              "invalid_value")]
    for body, param, code in cases:
        status, answer = post(body)
        assert status == 400 and (answer["error"]["param"], answer["error"]["code"]) == (param, code), answer
    status, answer = post({"model": "gpt-nope", "messages": HI})
    assert status == 404 and answer["error"]["code"] == "model_not_found" and answer["error"]["param"] == "model"


# ---------------------------------------------------------------- no 500s, no 405s

def test_deeply_nested_json_in_a_tool_result_is_answered_not_a_500():
    deep = "[" * 5000 + "]" * 5000
    call = {"id": "call_1", "type": "function", "function": {"name": "days_until_weekday", "arguments": deep}}
    messages = WHEN + [{"role": "assistant", "content": None, "tool_calls": [call]},
                       {"role": "tool", "tool_call_id": "call_1", "content": deep}]
    status, answer = post(chat(messages=messages, tools=[TOOL]))
    assert status == 200, answer
    nested_body = '{"model": "offline/stand-in", "messages": ' + "[" * 5000 + "]" * 5000 + "}"
    status, answer = post(None, raw=nested_body.encode())
    assert status == 400 and "nests" in answer["error"]["message"]


def test_a_model_can_be_retrieved_by_id(client):
    assert client.models.retrieve(MODEL).id == MODEL
    assert client.models.retrieve("local/all-minilm-l6-v2").owned_by == "offline"
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("gpt-nope")
    assert info.value.body["code"] == "model_not_found"


SCHEMA_WORDS = st.sampled_from(["type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf",
                                "allOf", "$ref", "minimum", "maximum", "minLength", "maxLength", "pattern",
                                "minItems", "maxItems", "additionalProperties", "multipleOf", "format", "x"])
SCHEMA_JUNK = st.recursive(
    SCALARS | st.sampled_from(["object", "string", "integer", "number", "array", "boolean", "null", "#", "#/$defs/a",
                               "^[a-z]+$", "date-time"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SCHEMA_WORDS | st.text(max_size=4), inner,
                                                                max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMA_JUNK, strict=st.booleans())
def test_any_schema_in_a_forced_call_or_a_json_schema_reply_is_a_200_or_a_400(schema, strict):
    """Schemas are the learner's: whatever they hold, the stand-in answers or explains, never a 500."""
    params = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    if strict:
        params["additionalProperties"] = False
    tool = {"type": "function", "function": {"name": "f", "strict": strict, "parameters": params}}
    status, answer = post(chat(tools=[tool], tool_choice="required"))
    assert status in (200, 400), answer
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "strict": strict, "schema": params}}
    status, answer = post(chat(response_format=fmt))
    assert status in (200, 400), answer

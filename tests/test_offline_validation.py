"""The stand-in validates chat requests like the published API: a malformed one is a 400 naming the field."""
import json

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.standin.server import handle, make_offline_client, validate_tools

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


@pytest.fixture(scope="module")
def client():
    return make_offline_client()


def test_what_the_package_sends_is_accepted(client):
    """The parameters helpers.client, helpers.agent_turn and the memory modules send pass validation."""
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

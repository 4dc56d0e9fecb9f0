"""The stand-in behind the real openai client: validation (HTTP 400s), streaming, usage, statelessness."""
import json

import openai
import pytest

from helpers.core import tokens

MODEL = "offline/stand-in"
TOOLS = [{"type": "function", "function": {
    "name": "days_until_weekday", "description": "Days until a weekday.",
    "parameters": {"type": "object", "properties": {"weekday": {"type": "string"}}, "required": ["weekday"]}}}]


def call(cid, name="days_until_weekday", args='{"weekday": "Thursday"}'):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def rejected(client, messages, tools=TOOLS, **kw):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=messages, tools=tools, **kw)
    assert info.value.status_code == 400
    return str(info.value)


def test_orphan_tool_result_is_rejected(client):
    msg = rejected(client, [{"role": "user", "content": "hi"},
                            {"role": "tool", "tool_call_id": "call_1", "content": "3"}])
    assert "messages with role 'tool' must be a response to a preceding message with 'tool_calls'" in msg


def test_history_starting_with_tool_message_is_rejected(client):
    msg = rejected(client, [{"role": "system", "content": "s"},
                            {"role": "tool", "tool_call_id": "call_1", "content": "3"}])
    assert "'tool'" in msg


def test_tool_call_without_result_is_rejected(client):
    msg = rejected(client, [{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": None, "tool_calls": [call("call_1")]},
                            {"role": "user", "content": "again"}])
    assert "did not have response messages" in msg and "call_1" in msg


def test_parallel_call_missing_one_result_is_rejected(client):
    msg = rejected(client, [{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": None, "tool_calls": [call("call_a"), call("call_b")]},
                            {"role": "tool", "tool_call_id": "call_a", "content": "3"}])
    assert "call_b" in msg


def test_unknown_role_is_rejected(client):
    msg = rejected(client, [{"role": "narrator", "content": "hi"}])
    assert "narrator" in msg


def test_missing_content_is_rejected(client):
    msg = rejected(client, [{"role": "user"}])
    assert "content" in msg


def test_malformed_tool_schema_is_rejected(client):
    bad = [{"type": "function", "function": {"name": "bad name!", "parameters": {"type": "string"}}}]
    msg = rejected(client, [{"role": "user", "content": "hi"}], tools=bad)
    assert "bad name!" in msg and "type 'object'" in msg


def test_required_property_must_exist(client):
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {}, "required": ["x"]}}}]
    assert "unknown properties" in rejected(client, [{"role": "user", "content": "hi"}], tools=bad)


def test_tool_choice_must_name_a_tool(client):
    msg = rejected(client, [{"role": "user", "content": "hi"}],
                   tool_choice={"type": "function", "function": {"name": "nope"}})
    assert "nope" in msg


def test_empty_messages_are_rejected(client):
    assert "non-empty" in rejected(client, [])


def test_unknown_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="meta/llama-3.3-70b-instruct",
                                       messages=[{"role": "user", "content": "hi"}])


def test_valid_tool_round_trip_is_accepted(client):
    messages = [{"role": "user", "content": "How many days until Thursday?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    tool_call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert json.loads(tool_call.function.arguments) == {"weekday": "Thursday"}
    messages += [{"role": "assistant", "content": None, "tool_calls": [call(tool_call.id)]},
                 {"role": "tool", "tool_call_id": tool_call.id,
                  "content": json.dumps({"weekday": "Thursday", "days": 3, "date": "2026-12-03"})}]
    final = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert "3 days" in final.choices[0].message.content


def test_usage_is_additive_and_matches_tokenizer(client):
    a = [{"role": "user", "content": "Hello there"}]
    b = a + [{"role": "assistant", "content": "Hi! Ask me about campus."}, {"role": "user", "content": "Thanks"}]
    ua = client.chat.completions.create(model=MODEL, messages=a).usage
    ub = client.chat.completions.create(model=MODEL, messages=b).usage
    assert ua.prompt_tokens == tokens.count_request(a)
    assert ub.prompt_tokens - ua.prompt_tokens == sum(tokens.count_message(m) for m in b[1:])
    assert ua.total_tokens == ua.prompt_tokens + ua.completion_tokens


def test_streaming_text_reassembles_to_the_plain_reply(client):
    messages = [{"role": "user", "content": "Hello!"}]
    plain = client.chat.completions.create(model=MODEL, messages=messages)
    chunks = list(client.chat.completions.create(model=MODEL, messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    assert chunks[-1].usage.prompt_tokens == plain.usage.prompt_tokens


def test_streaming_tool_calls_arrive_in_fragments_by_index(client):
    messages = [{"role": "user", "content": "How many days until Thursday or Friday?"}]
    chunks = list(client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True))
    pieces = {}
    for chunk in chunks:
        for frag in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            pieces.setdefault(frag.index, "")
            pieces[frag.index] += frag.function.arguments or ""
    assert pieces and all(json.loads(v) for v in pieces.values())
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.tool_calls) >= 3


def test_no_usage_chunk_unless_asked(client):
    chunks = list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                 stream=True))
    assert all(c.usage is None for c in chunks)


def test_deterministic(client):
    messages = [{"role": "user", "content": "When does the AI club meet?"}]
    one = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).model_dump()
    two = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).model_dump()
    assert one == two


def test_stateless_between_requests(client):
    """A follow-up sent without its history cannot be resolved: the stand-in keeps no memory."""
    tools = TOOLS + [{"type": "function", "function": {"name": "search_campus_info", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}}}]
    client.chat.completions.create(model=MODEL, tools=tools, messages=[
        {"role": "user", "content": "How many days until Thursday?"}])
    reply = client.chat.completions.create(model=MODEL, tools=tools, messages=[
        {"role": "user", "content": "How many days until that?"}]).choices[0].message
    assert not reply.tool_calls and "don't know" in reply.content


def test_max_tokens_cuts_reply_with_length_reason(client):
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}],
                                           max_tokens=5)
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens <= 5


def test_models_endpoint_lists_the_stand_in(client):
    assert MODEL in [m.id for m in client.models.list()]

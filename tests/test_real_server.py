"""A real local OpenAI-compatible server (llama-cpp-python + SmolLM2-135M) over real HTTP.

Each server quirk has two tests: the raw request fails (or is silently wrong), and the
same request through ``helpers.llm.compat`` works. The model is tiny, so tests assert on
shapes and counts, never on wording. ``tests/setup_llama.sh`` installs the server;
without it these tests skip locally and fail under CI (where setup must have run).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from datetime import date
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_server  # noqa: E402

from helpers.llm.compat import LLAMA_CPP, prepare_request  # noqa: E402
from helpers.llm.endpoint import check_endpoint  # noqa: E402
from helpers.llm.message_format import CompatError, assistant_message_to_dict  # noqa: E402

MODEL = llama_server.MODEL_ALIAS
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAY_TOOL = {"type": "function", "function": {
    "name": "days_until_weekday",
    "description": "Number of days from today until the next given weekday.",
    "parameters": {"type": "object", "properties": {"weekday": {"type": "string", "enum": WEEKDAYS}},
                   "required": ["weekday"]}}}
NOTE_TOOL = {"type": "function", "function": {
    "name": "save_note", "description": "Save a note for later.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}
SYSTEM = {"role": "system", "content": "You are the Larkspur University campus assistant. Use tools when they help."}
QUESTION = {"role": "user", "content": "How many days until Friday?"}
NAMED_WEEKDAY = {"type": "function", "function": {"name": "days_until_weekday"}}
STABLE = {"temperature": 0, "seed": 7}


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    """The real openai client; no retries, so a rejected request shows its first answer."""
    return openai.OpenAI(api_key=server.api_key, base_url=server.base_url, max_retries=0, timeout=120)


def send(client, **request):
    """Send a request as-is (the 'raw' form)."""
    return client.chat.completions.create(**{"model": MODEL, **STABLE, **request})


def send_fixed(client, profile=LLAMA_CPP, **request):
    """Send the same request through helpers.llm.compat (the 'normalised' form)."""
    return client.chat.completions.create(**prepare_request({"model": MODEL, **STABLE, **request}, profile=profile))


@pytest.fixture(scope="module")
def tool_call_message(client):
    """One assistant message with a tool call, as the openai client returned it (shared: it is read-only)."""
    response = send_fixed(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL])
    assert response.choices[0].message.tool_calls, "expected a tool call"
    return response.choices[0].message


def days_until(weekday: str, today: date = date(2026, 11, 30)) -> int:
    """The tool itself: days from a fixed Monday until the next ``weekday`` (7 when it is today)."""
    return (WEEKDAYS.index(weekday) - today.weekday() - 1) % 7 + 1


def tool_result(message, content: str) -> dict:
    return {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": content}


# ---------------------------------------------------------------- basics

def test_server_lists_the_served_model(client):
    assert [m.id for m in client.models.list()] == [MODEL]


def test_plain_question_gets_non_empty_text(client):
    response = send_fixed(client, messages=[QUESTION], max_tokens=24)
    assert response.choices[0].message.content.strip()


def test_tool_call_arrives_in_openai_format_with_enum_arguments(tool_call_message):
    call = tool_call_message.tool_calls[0]
    assert call.type == "function" and call.function.name == "days_until_weekday" and call.id
    assert json.loads(call.function.arguments)["weekday"] in WEEKDAYS


def test_full_tool_round_trip_through_normalize_messages(client):
    history = [SYSTEM, QUESTION]
    response = send_fixed(client, messages=history, tools=[WEEKDAY_TOOL])
    assert response.choices[0].finish_reason == "tool_calls"
    first = response.choices[0].message
    weekday = json.loads(first.tool_calls[0].function.arguments)["weekday"]
    history += [first, tool_result(first, json.dumps({"weekday": weekday, "days": days_until(weekday)}))]
    final = send_fixed(client, messages=history, tools=[WEEKDAY_TOOL], tool_choice="none", max_tokens=48)
    assert final.choices[0].message.content.strip() and not final.choices[0].message.tool_calls


def test_same_round_trip_without_normalisation_is_rejected(client, tool_call_message):
    first = tool_call_message
    history = [SYSTEM, QUESTION, first, tool_result(first, "4")]
    with pytest.raises(openai.InternalServerError):
        send(client, messages=history, tools=[WEEKDAY_TOOL], tool_choice="none", max_tokens=8)


# ---------------------------------------------------------------- quirk: assistant content None

def test_raw_assistant_message_object_with_content_none_is_rejected(client, tool_call_message):
    first = tool_call_message
    assert first.content is None
    with pytest.raises(openai.InternalServerError, match="validation error"):
        send(client, messages=[QUESTION, first, tool_result(first, "4")], max_tokens=4)


def test_model_dump_exclude_none_is_rejected(client, tool_call_message):
    first = tool_call_message
    dumped = first.model_dump(exclude_none=True)
    assert "content" not in dumped
    with pytest.raises(openai.InternalServerError, match="content"):
        send(client, messages=[QUESTION, dumped, tool_result(first, "4")], max_tokens=4)


def test_assistant_message_to_dict_is_accepted(client, tool_call_message):
    first = tool_call_message
    entry = assistant_message_to_dict(first)
    response = send(client, messages=[QUESTION, entry, tool_result(first, "4")], max_tokens=4)
    assert response.choices[0].message.content is not None


def test_response_carries_a_legacy_function_call_that_normalisation_drops(tool_call_message):
    first = tool_call_message
    assert first.function_call is not None and first.function_call.name.endswith(":")
    assert "function_call" not in assistant_message_to_dict(first)


def test_raw_tool_calls_none_is_rejected(client):
    with pytest.raises(openai.InternalServerError, match="validation error"):
        send(client, messages=[QUESTION, {"role": "assistant", "content": "Hi.", "tool_calls": None}, QUESTION],
             max_tokens=4)


# ---------------------------------------------------------------- quirk: tool_choice must be explicit

def test_raw_tools_without_tool_choice_are_ignored(client):
    response = send(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL], max_tokens=16)
    assert response.choices[0].message.tool_calls is None


def test_fixed_tools_without_tool_choice_are_used(tool_call_message):
    assert tool_call_message.tool_calls  # the shared fixture sends tools without tool_choice, through compat


def test_raw_tool_choice_required_fails(client):
    with pytest.raises(openai.InternalServerError):
        send(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL], tool_choice="required")


def test_fixed_tool_choice_required_with_one_tool_calls_it(client):
    response = send_fixed(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL], tool_choice="required")
    assert response.choices[0].message.tool_calls[0].function.name == "days_until_weekday"


# ---------------------------------------------------------------- quirk: what reaches the prompt

def prompt_tokens(client, fixed: bool, **request) -> int:
    response = (send_fixed if fixed else send)(client, max_tokens=1, **request)
    return response.usage.prompt_tokens


def test_raw_tool_results_never_reach_the_prompt(client, tool_call_message):
    call = assistant_message_to_dict(tool_call_message)
    short, long = ({"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": text}
                   for text in ("4", "four days " * 50))
    assert prompt_tokens(client, False, messages=[QUESTION, call, short]) == \
        prompt_tokens(client, False, messages=[QUESTION, call, long])


def test_fixed_tool_results_reach_the_prompt(client, tool_call_message):
    call = assistant_message_to_dict(tool_call_message)
    short, long = ({"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": text}
                   for text in ("4", "four days " * 50))
    assert prompt_tokens(client, True, messages=[QUESTION, call, long]) > \
        prompt_tokens(client, True, messages=[QUESTION, call, short]) + 50


def tool_with_padding(words: int, where: str) -> dict:
    """The weekday tool with ``words`` extra words in its description or in its parameter schema."""
    padding = "Counts days forward here. " * words
    function = dict(WEEKDAY_TOOL["function"])
    if where == "description":
        function["description"] = padding
    else:
        params = json.loads(json.dumps(function["parameters"]))
        params["properties"]["weekday"]["description"] = padding
        function["parameters"] = params
    return {"type": "function", "function": function}


def tool_prompt_growth(client, fixed: bool, where: str, system: bool) -> int:
    """How many prompt tokens 20 extra words in the tool definition add."""
    messages = [SYSTEM, QUESTION] if system else [QUESTION]
    small, large = (prompt_tokens(client, fixed, messages=messages, tools=[tool_with_padding(n, where)],
                                  tool_choice=NAMED_WEEKDAY) for n in (1, 6))
    return large - small


def test_raw_tool_schemas_never_reach_the_prompt_without_a_system_message(client):
    assert tool_prompt_growth(client, fixed=False, where="parameters", system=False) == 0


def test_fixed_tool_schemas_reach_the_prompt_without_a_system_message(client):
    assert tool_prompt_growth(client, fixed=True, where="parameters", system=False) >= 20


def test_raw_tool_descriptions_never_reach_the_prompt(client):
    assert tool_prompt_growth(client, fixed=False, where="description", system=True) == 0


def test_fixed_tool_descriptions_reach_the_prompt(client):
    assert tool_prompt_growth(client, fixed=True, where="description", system=True) >= 20


BARE_TOOL = {"type": "function", "function": {"name": "current_time", "description": "The time now on campus."}}


def test_raw_tool_without_parameters_is_rejected(client):
    with pytest.raises(openai.InternalServerError, match="parameters"):
        send(client, messages=[SYSTEM, QUESTION], tools=[BARE_TOOL], tool_choice="auto")


def test_fixed_tool_without_parameters_is_accepted(client):
    response = send_fixed(client, messages=[SYSTEM, QUESTION], tools=[BARE_TOOL],
                          tool_choice={"type": "function", "function": {"name": "current_time"}})
    assert json.loads(response.choices[0].message.tool_calls[0].function.arguments) == {}


def test_quotes_in_messages_are_html_escaped_into_several_tokens(client):
    quotes = prompt_tokens(client, False, messages=[{"role": "user", "content": '" ' * 30}])
    letters = prompt_tokens(client, False, messages=[{"role": "user", "content": "a " * 30}])
    assert quotes - letters >= 60  # each '"' arrives as '&#34;', several tokens instead of one


# ---------------------------------------------------------------- quirk: rejected or ignored parameters

def test_raw_developer_role_is_rejected(client):
    with pytest.raises(openai.InternalServerError, match="validation error"):
        send(client, messages=[{"role": "developer", "content": "Be brief."}, QUESTION], max_tokens=4)


def test_fixed_developer_role_is_accepted(client):
    response = send_fixed(client, messages=[{"role": "developer", "content": "Be brief."}, QUESTION], max_tokens=4)
    assert response.choices[0].message.content


def test_raw_temperature_none_is_rejected(client):
    with pytest.raises(openai.InternalServerError, match="temperature"):
        client.chat.completions.create(model=MODEL, messages=[QUESTION], temperature=None, max_tokens=4)


def test_fixed_temperature_none_is_accepted(client):
    request = prepare_request({"model": MODEL, "messages": [QUESTION], "temperature": None, "max_tokens": 4},
                              profile=LLAMA_CPP)
    assert client.chat.completions.create(**request).choices[0].message.content


def test_raw_max_completion_tokens_is_ignored(client):
    response = send(client, messages=[QUESTION], max_completion_tokens=2, stop=["\n"])
    assert response.usage.completion_tokens > 2


def test_fixed_max_completion_tokens_limits_the_reply(client):
    response = send_fixed(client, messages=[QUESTION], max_completion_tokens=2, stop=["\n"])
    assert response.usage.completion_tokens == 2 and response.choices[0].finish_reason == "length"


JSON_SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "count", "schema": {
    "type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}}}
JSON_QUESTION = {"role": "user", "content": "Answer in JSON: how many days until Friday?"}


def test_raw_json_schema_response_format_is_rejected(client):
    with pytest.raises(openai.InternalServerError, match="json_object"):
        send(client, messages=[JSON_QUESTION], response_format=JSON_SCHEMA_FORMAT, max_tokens=24)


def test_fixed_json_schema_response_format_gives_json_of_that_shape(client):
    response = send_fixed(client, messages=[JSON_QUESTION], response_format=JSON_SCHEMA_FORMAT, max_tokens=24)
    assert isinstance(json.loads(response.choices[0].message.content)["days"], int)


def test_raw_n_returns_a_single_choice(client):
    assert len(send(client, messages=[QUESTION], n=2, max_tokens=2).choices) == 1


def test_fixed_n_is_a_typed_error(client):
    with pytest.raises(CompatError, match="one choice"):
        send_fixed(client, messages=[QUESTION], n=2, max_tokens=2)


def test_raw_stream_options_include_usage_is_ignored(client):
    chunks = list(send(client, messages=[QUESTION], max_tokens=3, stream=True,
                       stream_options={"include_usage": True}))
    assert chunks and all(chunk.usage is None for chunk in chunks)


def test_raw_streaming_with_tools_returns_nothing_and_breaks_the_next_request(client):
    chunks = list(send(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL], tool_choice="auto", stream=True))
    with pytest.raises(openai.APIConnectionError):
        send(client, messages=[QUESTION], max_tokens=2)
    assert chunks == [] and send(client, messages=[QUESTION], max_tokens=2).choices[0].message.content


def test_fixed_streaming_with_tools_is_a_typed_error(client):
    with pytest.raises(CompatError, match="cannot stream"):
        send_fixed(client, messages=[SYSTEM, QUESTION], tools=[WEEKDAY_TOOL], stream=True)


# ---------------------------------------------------------------- quirk: free-text arguments

SEA_NOTE = {"role": "user", "content": "Save a note with a long poem about the sea, at least 300 words."}


SHORT_NOTE = {"role": "user", "content": "Save a note: the Larkspur library closes at 9pm on Fridays."}


def test_raw_max_tokens_does_not_bound_auto_tool_arguments(client):
    response = send(client, messages=[SYSTEM, SHORT_NOTE], tools=[NOTE_TOOL], tool_choice="auto", max_tokens=3)
    assert response.choices[0].message.tool_calls and response.usage.completion_tokens > 3


def test_raw_max_tokens_truncates_named_tool_arguments_into_invalid_json(client):
    response = send(client, messages=[SYSTEM, SEA_NOTE], tools=[NOTE_TOOL],
                    tool_choice={"type": "function", "function": {"name": "save_note"}}, max_tokens=8)
    assert response.choices[0].finish_reason == "tool_calls"
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.choices[0].message.tool_calls[0].function.arguments)


def test_fixed_free_text_arguments_are_bounded_and_parse(client):
    tight = dataclasses.replace(LLAMA_CPP, string_max_length=40)
    response = send_fixed(client, profile=tight, messages=[SYSTEM, SEA_NOTE], tools=[NOTE_TOOL],
                          tool_choice={"type": "function", "function": {"name": "save_note"}})
    text = json.loads(response.choices[0].message.tool_calls[0].function.arguments, strict=False)["text"]
    assert 0 < len(text) <= 40


# ---------------------------------------------------------------- model names and check_endpoint

def test_unknown_model_name_is_served_by_the_default_model(client):
    response = send(client, model="no-such-model", messages=[QUESTION], max_tokens=2)
    assert response.choices[0].message.content


def test_check_endpoint_reports_ok(client):
    status = check_endpoint(client, MODEL)
    assert status.ok and str(status).startswith("OK:")


def test_check_endpoint_reports_a_missing_model(client):
    status = check_endpoint(client, "no-such-model")
    assert not status.ok and status.model_found is False and MODEL in str(status)


def test_check_endpoint_reports_a_rejected_key_without_showing_it(server):
    wrong = "wrong-key-0123456789"
    status = check_endpoint(openai.OpenAI(api_key=wrong, base_url=server.base_url), MODEL)
    assert status.reachable and status.key_accepted is False and wrong not in str(status)


def test_check_endpoint_reports_an_unreachable_server():
    closed = f"http://127.0.0.1:{llama_server.free_port()}/v1"
    status = check_endpoint(openai.OpenAI(api_key="x", base_url=closed), MODEL, timeout=5)
    assert not status.reachable and "cannot reach" in str(status)


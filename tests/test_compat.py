"""Unit tests for helpers.llm.compat: per-server request fixes (pure, fast)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from helpers.llm.compat import (
    LLAMA_CPP, NIM, OFFLINE, OPENAI_COMPATIBLE, PROFILES, ServerProfile, get_profile, prepare_request,
    profile_for,
)
from helpers.llm.message_format import CompatError

from scripted import tool_call_message

TOOL = {"type": "function", "function": {
    "name": "days_until_weekday", "description": "Days from today until the next given weekday.",
    "parameters": {"type": "object", "properties": {"weekday": {"type": "string", "enum": ["Monday", "Friday"]}},
                   "required": ["weekday"]}}}
OTHER_TOOL = {"type": "function", "function": {"name": "other", "parameters": {"type": "object", "properties": {}}}}


# ---------------------------------------------------------------- profiles

def test_named_profiles_exist():
    assert {"nim", "openai-compatible", "llama.cpp", "offline"} <= set(PROFILES)


def test_get_profile_accepts_spelling_variants():
    assert get_profile("llama-cpp") is LLAMA_CPP and get_profile(" NIM ") is NIM


def test_unknown_profile_is_a_typed_error_listing_choices():
    with pytest.raises(CompatError, match="choose one of"):
        get_profile("vllm-9000")


def test_profile_for_uses_backend_name(monkeypatch):
    monkeypatch.delenv("WORKSHOP_SERVER_PROFILE", raising=False)
    assert profile_for(SimpleNamespace(backend="offline")) is OFFLINE


def test_profile_for_reads_the_setting_never_the_environment(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "llama.cpp")  # Settings is the one place that reads it
    assert profile_for(SimpleNamespace(backend="openai-compatible", server_profile="llama.cpp")) is LLAMA_CPP
    assert profile_for(SimpleNamespace(backend="openai-compatible")) is OPENAI_COMPATIBLE


# ---------------------------------------------------------------- prepare_request

def base_request(**extra) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **extra}


def test_tool_choice_auto_is_added_when_tools_are_given():
    out = prepare_request(base_request(tools=[TOOL]), profile=OPENAI_COMPATIBLE)
    assert out["tool_choice"] == "auto"


def test_explicit_tool_choice_is_kept():
    out = prepare_request(base_request(tools=[TOOL], tool_choice="none"), profile=OPENAI_COMPATIBLE)
    assert out["tool_choice"] == "none"


def test_no_tool_choice_is_added_without_tools():
    assert "tool_choice" not in prepare_request(base_request(), profile=OPENAI_COMPATIBLE)


def test_empty_tools_list_is_dropped_with_its_tool_choice():
    out = prepare_request(base_request(tools=[], tool_choice="auto"), profile=NIM)
    assert "tools" not in out and "tool_choice" not in out


def test_none_valued_parameters_are_dropped():
    out = prepare_request(base_request(temperature=None, seed=None), profile=NIM)
    assert "temperature" not in out and "seed" not in out


def test_messages_are_normalised_by_prepare_request():
    out = prepare_request({"model": "m", "messages": [tool_call_message()]}, profile=NIM)
    assert out["messages"][0]["content"] == ""


def test_llama_cpp_caps_max_tokens_when_tools_are_given():
    out = prepare_request(base_request(tools=[TOOL], max_tokens=5000), profile=LLAMA_CPP)
    assert out["max_tokens"] == LLAMA_CPP.tool_max_tokens


def test_llama_cpp_sets_a_cap_when_max_tokens_is_absent():
    assert prepare_request(base_request(tools=[TOOL]), profile=LLAMA_CPP)["max_tokens"] == LLAMA_CPP.tool_max_tokens


def test_llama_cpp_keeps_a_smaller_max_tokens():
    assert prepare_request(base_request(tools=[TOOL], max_tokens=20), profile=LLAMA_CPP)["max_tokens"] == 20


def test_generic_profile_does_not_cap_max_tokens():
    assert "max_tokens" not in prepare_request(base_request(tools=[TOOL]), profile=OPENAI_COMPATIBLE)


def test_llama_cpp_drops_unsupported_params():
    out = prepare_request(base_request(tools=[TOOL], parallel_tool_calls=False,
                                       stream_options={"include_usage": True}), profile=LLAMA_CPP)
    assert "parallel_tool_calls" not in out and "stream_options" not in out


def test_generic_profile_keeps_parallel_tool_calls_with_tools():
    out = prepare_request(base_request(tools=[TOOL], parallel_tool_calls=False), profile=OPENAI_COMPATIBLE)
    assert out["parallel_tool_calls"] is False


def test_parallel_tool_calls_without_tools_is_dropped_everywhere():
    assert "parallel_tool_calls" not in prepare_request(base_request(parallel_tool_calls=False), profile=NIM)


def test_llama_cpp_renames_max_completion_tokens():
    out = prepare_request(base_request(max_completion_tokens=7), profile=LLAMA_CPP)
    assert out["max_tokens"] == 7 and "max_completion_tokens" not in out


def test_llama_cpp_turns_developer_into_system():
    out = prepare_request({"model": "m", "messages": [{"role": "developer", "content": "d"}]}, profile=LLAMA_CPP)
    assert out["messages"][0]["role"] == "system"


def test_llama_cpp_turns_json_schema_format_into_json_object_with_schema():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    out = prepare_request(base_request(response_format=fmt), profile=LLAMA_CPP)
    assert out["response_format"] == {"type": "json_object", "schema": schema}


def test_llama_cpp_adds_a_system_message_when_tools_are_given_without_one():
    out = prepare_request(base_request(tools=[TOOL]), profile=LLAMA_CPP)
    assert out["messages"][0]["role"] == "system" and out["messages"][1] == {"role": "user", "content": "hi"}


def test_llama_cpp_keeps_an_existing_system_message():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    out = prepare_request({"model": "m", "messages": messages, "tools": [TOOL]}, profile=LLAMA_CPP)
    assert out["messages"] == messages


def test_llama_cpp_rewrites_tool_results_as_user_messages_naming_the_tool():
    messages = [{"role": "user", "content": "hi"}, tool_call_message(),
                {"role": "tool", "tool_call_id": "call_1", "content": "4"}]
    out = prepare_request({"model": "m", "messages": messages}, profile=LLAMA_CPP)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert "days_until_weekday" in out["messages"][2]["content"] and "4" in out["messages"][2]["content"]


def test_llama_cpp_required_tool_choice_with_one_tool_names_it():
    out = prepare_request(base_request(tools=[TOOL], tool_choice="required"), profile=LLAMA_CPP)
    assert out["tool_choice"] == {"type": "function", "function": {"name": "days_until_weekday"}}


def test_llama_cpp_required_tool_choice_with_several_tools_is_a_typed_error():
    with pytest.raises(CompatError, match="tool_choice='required'"):
        prepare_request(base_request(tools=[TOOL, OTHER_TOOL], tool_choice="required"), profile=LLAMA_CPP)


def test_llama_cpp_refuses_streaming_with_tools():
    with pytest.raises(CompatError, match="cannot stream"):
        prepare_request(base_request(tools=[TOOL], stream=True), profile=LLAMA_CPP)


def test_generic_profile_allows_streaming_with_tools():
    assert prepare_request(base_request(tools=[TOOL], stream=True), profile=OPENAI_COMPATIBLE)["stream"] is True


def test_offline_profile_sends_the_standard_request():
    out = prepare_request(base_request(tools=[TOOL], parallel_tool_calls=False, stream=True), profile=OFFLINE)
    assert out["tool_choice"] == "auto" and out["parallel_tool_calls"] is False and "max_tokens" not in out


def test_llama_cpp_caps_free_text_string_parameters():
    free = {"type": "function", "function": {"name": "save_note", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}
    params = prepare_request(base_request(tools=[free]), profile=LLAMA_CPP)["tools"][0]["function"]["parameters"]
    assert params["properties"]["text"]["maxLength"] == LLAMA_CPP.string_max_length
    assert params["properties"]["tags"]["items"]["maxLength"] == LLAMA_CPP.string_max_length


def test_llama_cpp_leaves_enum_strings_unbounded():
    params = prepare_request(base_request(tools=[TOOL]), profile=LLAMA_CPP)["tools"][0]["function"]["parameters"]
    assert params["properties"]["weekday"] == TOOL["function"]["parameters"]["properties"]["weekday"]


def test_generic_profile_leaves_tool_schemas_alone():
    bare = {"type": "function", "function": {"name": "now", "description": "Current time."}}
    out = prepare_request(base_request(tools=[TOOL, bare]), profile=OPENAI_COMPATIBLE)
    assert out["tools"] == [TOOL, bare]


def test_llama_cpp_copies_the_tool_description_into_parameters():
    params = prepare_request(base_request(tools=[TOOL]), profile=LLAMA_CPP)["tools"][0]["function"]["parameters"]
    assert params["description"] == TOOL["function"]["description"] and params["required"] == ["weekday"]


def test_llama_cpp_gives_a_tool_without_parameters_an_empty_schema():
    bare = {"type": "function", "function": {"name": "now"}}
    function = prepare_request(base_request(tools=[bare]), profile=LLAMA_CPP)["tools"][0]["function"]
    assert function["parameters"] == {"type": "object", "properties": {}}


def test_llama_cpp_refuses_several_choices():
    with pytest.raises(CompatError, match="one choice"):
        prepare_request(base_request(n=3), profile=LLAMA_CPP)


def test_generic_profile_keeps_n():
    assert prepare_request(base_request(n=3), profile=OPENAI_COMPATIBLE)["n"] == 3


def test_llama_cpp_tool_result_json_object_becomes_quote_free_text():
    messages = [tool_call_message(), {"role": "tool", "tool_call_id": "call_1", "content": '{"weekday": "Friday", "days": 4}'}]
    out = prepare_request({"model": "m", "messages": messages}, profile=LLAMA_CPP)
    assert out["messages"][1]["content"] == "Result of days_until_weekday: weekday: Friday, days: 4"


def test_llama_cpp_nested_tool_result_is_kept_as_json_with_look_alike_quotes():
    nested = '{"a": {"b": 1}}'
    messages = [tool_call_message(), {"role": "tool", "tool_call_id": "call_1", "content": nested}]
    out = prepare_request({"model": "m", "messages": messages}, profile=LLAMA_CPP)
    assert out["messages"][1]["content"].endswith(nested.replace('"', "\u201d"))  # '"' would arrive as '&#34;'


def test_llama_cpp_text_avoids_the_characters_its_template_html_escapes():
    messages = [{"role": "system", "content": 'Reply {"ok": "<yes|no>"}'},
                {"role": "user", "content": [{"type": "text", "text": "it's \"fine\" & <b>"}]},
                tool_call_message()]
    out = prepare_request({"model": "m", "messages": messages}, profile=LLAMA_CPP)["messages"]
    assert out[0]["content"] == "Reply {\u201dok\u201d: \u201d\u2039yes|no\u203a\u201d}"
    assert out[1]["content"][0]["text"] == "it\u2019s \u201dfine\u201d & \u2039b\u203a"
    assert out[2]["tool_calls"][0]["function"]["arguments"] == '{"weekday": "Friday"}'  # arguments stay JSON
    assert prepare_request({"model": "m", "messages": messages}, profile=OPENAI_COMPATIBLE)["messages"][0] == \
        messages[0]


def test_prepare_request_does_not_modify_its_input():
    request = base_request(tools=[TOOL], max_tokens=5000)
    snapshot = json.dumps(request, sort_keys=True)
    prepare_request(request, profile=LLAMA_CPP)
    assert json.dumps(request, sort_keys=True) == snapshot


def test_custom_profile_can_drop_a_parameter():
    custom = ServerProfile(name="custom", unsupported_params=frozenset({"seed"}))
    assert "seed" not in prepare_request(base_request(seed=1), profile=custom)


# ---------------------------------------------------------------- check_endpoint (helpers.llm.endpoint)
# Kept here because the file list for this work has no tests/test_endpoint.py; they need no server.

import httpx2  # noqa: E402
import openai  # noqa: E402

from helpers.llm.endpoint import EndpointStatus, check_endpoint  # noqa: E402

SECRET = "sk-test-0123456789abcdef"


def fake_client(handler) -> openai.OpenAI:
    return openai.OpenAI(api_key=SECRET, base_url="http://fake.test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def serving(models=("small-model",), chat_status=200, models_status=200):
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/models"):
            if models_status != 200:
                return httpx2.Response(models_status, json={"error": {"message": "nope"}})
            return httpx2.Response(200, json={"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "x"} for m in models]})
        if chat_status != 200:
            return httpx2.Response(chat_status, json={"error": {"message": f"bad key {SECRET}"}})
        return httpx2.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": json.loads(request.content)["model"],
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "O"}}]})
    return handler


def test_check_endpoint_ok():
    status = check_endpoint(fake_client(serving()), "small-model")
    assert status.ok and status.reachable and status.key_accepted and status.model_found
    assert str(status).startswith("OK:")


def test_check_endpoint_unreachable():
    def handler(request):
        raise httpx2.ConnectError("connection refused", request=request)
    status = check_endpoint(fake_client(handler), "small-model")
    assert not status.ok and not status.reachable and "cannot reach" in str(status)


def test_check_endpoint_key_rejected_on_model_list():
    status = check_endpoint(fake_client(serving(models_status=401)), "small-model")
    assert status.reachable and status.key_accepted is False and "key rejected" in str(status)


def test_check_endpoint_key_rejected_on_chat_never_shows_the_key():
    status = check_endpoint(fake_client(serving(chat_status=401)), "small-model")
    assert status.key_accepted is False and SECRET not in str(status) and SECRET not in repr(status)


def test_check_endpoint_model_missing_lists_available_models():
    status = check_endpoint(fake_client(serving(models=("a-model", "b-model"))), "small-model")
    assert status.model_found is False and "a-model" in str(status) and not status.ok


def test_check_endpoint_model_missing_found_by_chat_404_when_list_is_absent():
    status = check_endpoint(fake_client(serving(models_status=404, chat_status=404)), "small-model")
    assert status.reachable and status.model_found is False


def test_check_endpoint_server_error_is_reported_with_status_code():
    status = check_endpoint(fake_client(serving(chat_status=500)), "small-model")
    assert not status.ok and "HTTP 500" in str(status)


def test_endpoint_status_is_one_line():
    status = EndpointStatus(base_url="http://x/v1", model="m", problem="cannot reach the server")
    assert "\n" not in str(status)

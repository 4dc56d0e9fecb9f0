"""Unit tests for helpers.llm.message_format: messages in the plain OpenAI format (pure, fast)."""
from __future__ import annotations

import json

import pytest
from openai.types.chat import ChatCompletion

from helpers.llm.message_format import CompatError, assistant_message_to_dict, normalize_messages

from scripted import tool_call_message


# ---------------------------------------------------------------- normalize_messages

def test_pydantic_assistant_message_becomes_plain_dict_with_only_standard_keys():
    [out] = normalize_messages([tool_call_message(refusal=None, annotations=[], audio=None)])
    assert out == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "days_until_weekday", "arguments": '{"weekday": "Friday"}'}}]}


def test_assistant_content_none_becomes_empty_string():
    [out] = normalize_messages([{"role": "assistant", "content": None}])
    assert out["content"] == ""


def test_private_and_unknown_keys_are_dropped():
    [out] = normalize_messages([{"role": "user", "content": "hi", "_saved_at": "x", "refusal": None, "extra": 1}])
    assert out == {"role": "user", "content": "hi"}


def test_private_keys_inside_tool_calls_are_dropped():
    message = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "_latency": 3, "function": {"name": "f", "arguments": "{}", "_x": 1}}]}
    [out] = normalize_messages([message])
    assert out["tool_calls"] == [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]


def test_dict_arguments_become_a_json_string():
    message = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]}
    [out] = normalize_messages([message])
    assert json.loads(out["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
    assert out["tool_calls"][0]["type"] == "function"


def test_missing_arguments_become_empty_json_object():
    [out] = normalize_messages([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}])
    assert out["tool_calls"][0]["function"]["arguments"] == "{}"


def test_empty_tool_calls_list_is_omitted():
    [out] = normalize_messages([{"role": "assistant", "content": "done", "tool_calls": []}])
    assert "tool_calls" not in out


def test_tool_message_keeps_only_role_content_and_tool_call_id():
    [out] = normalize_messages([{"role": "tool", "tool_call_id": "c", "name": "f", "content": "4"}])
    assert out == {"role": "tool", "content": "4", "tool_call_id": "c"}


def test_tool_result_that_is_not_text_becomes_json():
    [out] = normalize_messages([{"role": "tool", "tool_call_id": "c", "content": {"days": 4}}])
    assert json.loads(out["content"]) == {"days": 4}


def test_name_is_kept_on_user_messages_when_set():
    [out] = normalize_messages([{"role": "user", "content": "hi", "name": "ada"}])
    assert out["name"] == "ada"


def test_inputs_are_not_modified():
    original = {"role": "assistant", "content": None, "_note": 1}
    normalize_messages([original])
    assert original == {"role": "assistant", "content": None, "_note": 1}


def test_normalising_twice_changes_nothing():
    once = normalize_messages([{"role": "system", "content": "s"}, tool_call_message(),
                               {"role": "tool", "tool_call_id": "call_1", "content": "4"}])
    assert normalize_messages(once) == once


def test_unknown_role_is_a_typed_error_naming_the_message():
    with pytest.raises(CompatError, match="message 1 has role 'bot'"):
        normalize_messages([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])


def test_tool_message_without_tool_call_id_is_rejected():
    with pytest.raises(CompatError, match="tool_call_id"):
        normalize_messages([{"role": "tool", "content": "4"}])


def test_tool_call_without_id_is_rejected():
    with pytest.raises(CompatError, match="no 'id'"):
        normalize_messages([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}])


def test_non_message_object_is_rejected_with_advice():
    with pytest.raises(CompatError, match="pass a dict"):
        normalize_messages(["hello"])


def test_a_single_dict_instead_of_a_list_is_rejected():
    with pytest.raises(CompatError, match="wrap it in a list"):
        normalize_messages({"role": "user", "content": "hi"})


# ---------------------------------------------------------------- assistant_message_to_dict

def test_assistant_message_to_dict_accepts_a_message_object():
    entry = assistant_message_to_dict(tool_call_message())
    assert entry["content"] == "" and entry["tool_calls"][0]["id"] == "call_1"


def test_assistant_message_to_dict_accepts_a_whole_completion():
    completion = ChatCompletion(id="x", object="chat.completion", created=0, model="m", choices=[
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi", "refusal": None}}])
    assert assistant_message_to_dict(completion) == {"role": "assistant", "content": "hi"}


def test_assistant_message_to_dict_rejects_other_roles():
    with pytest.raises(CompatError, match="expected an assistant message"):
        assistant_message_to_dict({"role": "user", "content": "hi"})

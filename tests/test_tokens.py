from helpers.core import tokens


def test_count_text_splits_words_and_punctuation():
    assert tokens.count_text("Thursday at 18:00") == 2 + 1 + 1 + 1 + 1  # thur|sday at 18 : 00


def test_request_count_is_additive_over_messages():
    a = {"role": "user", "content": "When does the AI club meet?"}
    b = {"role": "assistant", "content": "Thursdays at 18:00."}
    assert tokens.count_request([a, b]) - tokens.count_request([a]) == tokens.count_message(b)


def test_tool_calls_and_tools_are_counted():
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]}
    assert tokens.count_message(call) > tokens.count_message({"role": "assistant", "content": ""})
    tool = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert tokens.count_request([], tool) > tokens.count_request([])

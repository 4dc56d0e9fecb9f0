import json

import pytest

from helpers.agent import run_agent
from helpers.client import EndpointError
from helpers.history import find_problems
from helpers.tools import REGISTRY, Tool, _schema

from scripted import ScriptedServer, tool_call


def answer(text):
    return {"content": text}


def calls(*items):
    return {"tool_calls": [tool_call(*item) for item in items]}


def tool_results(messages):
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def test_two_tools_in_sequence_with_the_stand_in(capsys):
    result = run_agent("When does the AI club meet, and how many days is that from now?", verbose=True)
    names = [c["function"]["name"] for m in result.added for c in m.get("tool_calls") or []]
    assert names == ["search_campus_info", "days_until_weekday"]
    assert result.stopped == "answer" and "3 days" in result.answer
    assert "→ search_campus_info" in capsys.readouterr().out
    assert find_problems(result.messages) == []


def test_parallel_calls_each_get_their_result():
    server = ScriptedServer([calls(("days_until_weekday", {"weekday": "Tue"}, "a"),
                                   ("days_until_weekday", {"weekday": "Thu"}, "b")), answer("done")])
    result = run_agent("compare", **server.kwargs())
    tools = [m for m in result.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["a", "b"]
    assert [r["days"] for r in tool_results(result.messages)] == [1, 3]
    assert find_problems(result.messages) == []


@pytest.mark.parametrize("bad_call, expected", [
    (("days_until_weekday", '{"weekday": ', "c1"), "not valid JSON"),
    (("teleport", {"to": "Mars"}, "c1"), "unknown tool"),
    (("days_until_weekday", {"day": "Thu"}, "c1"), "wrong arguments"),
    (("days_until_weekday", {}, "c1"), "wrong arguments"),
    (("days_until_weekday", {"weekday": "Funday"}, "c1"), "unknown weekday"),
])
def test_bad_tool_calls_become_error_results_and_the_loop_recovers(bad_call, expected, capsys):
    server = ScriptedServer([calls(bad_call), calls(("days_until_weekday", {"weekday": "Thu"}, "c2")),
                             answer("Thursday is in 3 days.")])
    result = run_agent("How many days until Thursday?", verbose=True, **server.kwargs())
    errors = [r for r in tool_results(result.messages) if "error" in r]
    assert len(errors) == 1 and expected in errors[0]["error"]
    assert result.answer == "Thursday is in 3 days."
    assert "✗" in capsys.readouterr().out
    # the model saw the error text in its next request
    assert any(expected in m.get("content", "") for m in server.requests[1]["messages"] if m["role"] == "tool")


def test_tool_that_raises_becomes_an_error_result():
    def flaky():
        raise ConnectionError("campus API down")

    registry = dict(REGISTRY, flaky=Tool("flaky", flaky, _schema("flaky", "x", {}, [])))
    server = ScriptedServer([calls(("flaky", {}, "c1")), answer("Sorry, the campus API is down.")])
    result = run_agent("q", registry=registry, **server.kwargs())
    assert "campus API down" in tool_results(result.messages)[0]["error"]
    assert result.stopped == "answer"


def test_step_limit_ends_honestly_and_valid():
    server = ScriptedServer([calls(("get_current_time", {}, f"c{i}")) for i in range(3)])
    result = run_agent("loop forever", max_steps=3, **server.kwargs())
    assert result.stopped == "max_steps" and "stopped after 3 steps" in result.answer
    assert find_problems(result.messages) == []
    assert result.messages[-1]["role"] == "assistant"


def test_appends_to_the_given_list():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": "hello"}]
    server = ScriptedServer([answer("fine")])
    result = run_agent("how are you?", history, **server.kwargs())
    assert result.messages is history and len(history) == 5
    assert result.added == history[3:]


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_api_error_at_any_step_rolls_the_turn_back(fail_at):
    script = [calls(("days_until_weekday", {"weekday": "Thu"}, "a")),
              calls(("get_current_time", {}, "b")), answer("ok")]
    script[fail_at] = 500
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": "hello"}]
    before = [dict(m) for m in history]
    server = ScriptedServer(script)
    with pytest.raises(EndpointError, match="server error"):
        run_agent("q", history, **server.kwargs())
    assert history == before and find_problems(history) == []


def test_interrupt_inside_a_tool_rolls_the_turn_back():
    def interrupted():
        raise KeyboardInterrupt

    registry = dict(REGISTRY, stop=Tool("stop", interrupted, _schema("stop", "x", {}, [])))
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    server = ScriptedServer([calls(("get_current_time", {}, "a"), ("stop", {}, "b"))])
    with pytest.raises(KeyboardInterrupt):
        run_agent("q", history, registry=registry, **server.kwargs())
    assert len(history) == 2


def test_orphan_from_a_broken_history_is_a_real_400():
    import openai

    history = [{"role": "tool", "tool_call_id": "gone", "content": "{}"}]
    with pytest.raises(openai.BadRequestError, match="must be a response"):
        run_agent("q", history)
    assert len(history) == 1


def test_streamed_turn_matches_the_plain_turn():
    from helpers.agent import agent_turn

    question = "When does the AI club meet, and how many days is that from now?"
    plain = run_agent(question)
    turn = agent_turn(question, stream=True)
    pieces = []
    while True:
        try:
            pieces.append(next(turn))
        except StopIteration as done:
            streamed = done.value
            break
    assert "".join(pieces) == plain.answer == streamed.answer
    assert streamed.messages == plain.messages


def test_an_empty_model_reply_is_kept_as_a_valid_message():
    from helpers.agent import EMPTY_REPLY

    server = ScriptedServer([{}, {"content": "fine"}])  # content None and no tool calls
    history = []
    first = run_agent("hello", history, **server.kwargs())
    assert first.answer == EMPTY_REPLY and find_problems(history) == []
    assert run_agent("again", history, **server.kwargs()).answer == "fine"

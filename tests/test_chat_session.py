"""The chat session (helpers/chat/chat_session.py): ChatSession and SimpleSession hold a conversation, trim it to
whole turns, stream, undo, reset and snapshot."""
import pytest

from helpers.chat import history
from helpers.llm.client import EndpointError
from helpers.chat.history import split_turns
from helpers.chat.validity import find_problems
from helpers.chat.window import Window
from helpers.chat.chat_session import ChatSession, SimpleSession

from scripted import ScriptedServer, tool_call

CLASSIC = ["When does the AI club meet?", "How many days until that?",
           "And when are the faculty office hours?", "Which of those two is sooner?"]


@pytest.fixture(scope="module")
def classic():
    session = ChatSession()
    answers = [session.chat(q) for q in CLASSIC]
    return session, answers


def test_follow_ups_resolve_from_the_session(classic):
    _, answers = classic
    assert "Thursday" in answers[0] and "[club-ai]" in answers[0]
    assert "3 days" in answers[1]
    assert "Tuesday" in answers[2]
    assert "sooner" in answers[3] and answers[3].index("Tuesday") < answers[3].index("Thursday")


def test_session_list_is_valid_and_has_one_turn_per_question(classic):
    session, _ = classic
    system, turns = split_turns(session.messages)
    assert len(system) == 1 and len(turns) == 4
    assert find_problems(session.messages) == []
    assert session.turn_ids == [0, 1, 2, 3]


def test_reset_forgets():
    session = ChatSession()
    session.chat(CLASSIC[0])
    session.reset()
    assert "don't know" in session.chat(CLASSIC[1])
    assert len(split_turns(session.messages)[1]) == 1


def test_max_turns_drops_whole_oldest_turns(capsys):
    session = ChatSession(max_turns=2, verbose=True)
    for question in ["When does the AI club meet?", "And when are the faculty office hours?",
                     "Where can I print a poster?", "Which of those two is sooner?"]:
        answer = session.chat(question)
        assert find_problems(session.messages) == []
    assert "don't know" in answer  # the AI club turn scrolled out
    assert [t.turn_id for t in session.dropped] == [0]
    assert session.turn_ids == [1, 2, 3]  # the 2 remembered turns plus the newest
    assert all(t.messages[0]["role"] == "user" for t in session.dropped)
    assert "memory  dropped turn 0" in capsys.readouterr().out


def test_max_tokens_keeps_the_list_within_budget():
    session = ChatSession(max_tokens=1600)
    for question in CLASSIC * 2:
        session.chat(question)
        assert find_problems(session.messages) == []
    assert session.dropped, "a 1,600-token budget must force trimming over eight turns"
    # every request that started a turn fit the budget (tool schemas included)
    first_requests = [p for p, t, prev in zip(session.stats.prompt_tokens, session.stats.turn_of_request,
                                              [None] + session.stats.turn_of_request) if t != prev]
    assert max(first_requests) <= 1600


def test_failed_turn_is_rolled_back_and_the_session_goes_on():
    server = ScriptedServer([{"content": "hello"},
                             {"tool_calls": [tool_call("days_until_weekday", {"weekday": "Thu"}, "a")]}, 503,
                             {"content": "fine"}])
    session = ChatSession(**server.kwargs())
    session.chat("hi")
    before = session.messages
    with pytest.raises(EndpointError):
        session.chat("how many days until Thursday?")
    assert session.messages == before and find_problems(before) == []
    assert session.chat("still there?") == "fine"
    assert session.turn_ids == [0, 1]


def test_undo_removes_the_last_whole_turn(classic):
    session = ChatSession()
    for question in CLASSIC[:3]:
        session.chat(question)
    removed = session.undo()
    assert removed.question == CLASSIC[2]
    assert len(split_turns(session.messages)[1]) == 2 and find_problems(session.messages) == []
    session.chat("Where can I print a poster?")
    assert session.turn_ids == [0, 1, 3]  # ids are never reused


def test_undo_on_empty_session():
    assert ChatSession().undo() is None


def test_bad_limits_are_explained():
    with pytest.raises(ValueError, match="max_turns"):
        ChatSession(max_turns=0)
    with pytest.raises(ValueError, match="max_tokens"):
        ChatSession(max_tokens=0)


def test_stream_and_chat_give_the_same_history():
    plain, streamed = ChatSession(), ChatSession()
    for question in CLASSIC:
        answer = plain.chat(question)
        pieces = list(streamed.stream(question))
        assert len(pieces) > 1 and "".join(pieces) == answer
    assert streamed.messages == plain.messages  # tool calls rebuilt from fragments, parallel ones included
    assert streamed.stats.prompt_tokens == plain.stats.prompt_tokens  # usage arrives in streams too


def test_abandoned_stream_rolls_the_turn_back():
    session = ChatSession()
    session.chat(CLASSIC[0])
    before = session.messages
    pieces = session.stream(CLASSIC[1])
    next(pieces)
    pieces.close()
    assert session.messages == before and session.turn_ids == [0]


def test_a_failed_turn_does_not_trim_either():
    server = ScriptedServer([{"content": "one"}, {"content": "two"}, 500])
    session = ChatSession(max_turns=1, **server.kwargs())
    session.chat("first")
    session.chat("second")
    before = (session.messages, session.turn_ids, len(session.dropped))
    with pytest.raises(EndpointError):
        session.chat("third")
    assert (session.messages, session.turn_ids, len(session.dropped)) == before


@pytest.mark.parametrize("limits", [{"max_turns": 2}, {"max_tokens": 1200},
                                    {"max_turns": 3, "max_tokens": 1500}])
def test_the_session_keeps_what_notebook_07s_trimmers_keep(monkeypatch, limits):
    """Before each question, what the session's window keeps is what trim_to_turns, then trim_to_budget, keep
    of the same messages, counted at the session's own costs."""
    checked = []
    trimmed = Window.trimmed

    def spy(window, *, overhead, max_turns=None, max_tokens=None):
        after, dropped = trimmed(window, overhead=overhead, max_turns=max_turns, max_tokens=max_tokens)
        system_cost = window.tokens - sum(window.turn_tokens)  # one system message here
        costs = {id(m): cost for m, cost in zip(window.messages[window.first:],
                                                (c for turn in window.turn_costs for c in turn))}
        options = {"count": lambda m: costs.get(id(m), system_cost), "overhead": overhead}
        kept = history.trim_to_turns(window.messages, max_turns or 10**6, **options)
        if max_tokens is not None:
            kept = history.trim_to_budget(kept.messages, max_tokens, **options)
        assert after.messages == kept.messages and after.tokens + overhead == kept.tokens
        assert [d.turn_id for d in dropped] == list(window.turn_ids[:len(dropped)])
        checked.append(len(dropped))
        return after, dropped

    monkeypatch.setattr(Window, "trimmed", spy)
    session = ChatSession(**limits)
    for question in CLASSIC * 2:
        session.chat(question)
    assert len(checked) == 8 and sum(checked) > 0 and sum(checked) == len(session.dropped)
    assert find_problems(session.messages) == [] and session.turn_ids[-1] == 7


def test_a_session_without_a_system_prompt_trims_too():
    session = ChatSession("", max_turns=1)
    for question in CLASSIC[:3]:
        session.chat(question)
    assert session.turn_ids == [1, 2] and [t.turn_id for t in session.dropped] == [0]
    assert session.messages[0]["role"] == "user" and find_problems(session.messages) == []


def test_explicit_limits_override_the_snapshot():
    session = ChatSession(max_turns=3)
    session.chat(CLASSIC[0])
    resumed = ChatSession.from_snapshot(session.snapshot(), max_turns=5)
    assert resumed.max_turns == 5 and resumed.messages == session.messages


def test_snapshot_is_a_copy():
    session = ChatSession()
    session.chat("How many days until Thursday?")
    snap = session.snapshot()
    snap["messages"][1]["tool_calls"][0]["id"] = "edited"
    assert find_problems(session.messages) == []


def test_a_snapshot_with_an_invalid_list_is_refused():
    session = ChatSession()
    session.chat("How many days until Thursday?")
    snap = session.snapshot()
    del snap["messages"][2]  # the tool result
    with pytest.raises(ValueError, match="reject"):
        ChatSession.from_snapshot(snap)


def test_undo_of_a_greeting_without_a_user_message():
    session = ChatSession.from_snapshot({"version": 1, "system_prompt": "s", "messages": [
        {"role": "assistant", "content": "Welcome!"}], "turn_ids": [0], "next_id": 1})
    session.undo()
    assert session.turn_ids == [] and session.messages == [{"role": "system", "content": "s"}]


def test_one_turn_at_a_time():
    session = ChatSession()
    pieces = session.stream(CLASSIC[0])
    next(pieces)
    with pytest.raises(RuntimeError, match="in progress"):
        session.chat("When is the library open?")
    rest = "".join(pieces)
    assert rest and session.turn_ids == [0]


def test_empty_question_is_refused_without_change():
    session = ChatSession(max_turns=1)
    session.chat(CLASSIC[0])
    before = session.messages
    with pytest.raises(ValueError, match="empty"):
        session.chat("   ")
    assert session.messages == before


def _turns_and_garbage(*garbage):
    """A client whose first request gets a streamed answer and later ones the given responses."""
    import httpx2

    from test_agent import SSE, chunk, sse, streaming_client

    good = sse(chunk({"role": "assistant", "content": "hello"}), chunk(finish="stop"),
               chunk(choices=False, usage={"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21}))
    return streaming_client(httpx2.Response(200, headers=SSE, content=good), *garbage)


@pytest.mark.parametrize("limits", [{}, {"max_turns": 1}, {"max_tokens": 10_000}])
def test_a_garbage_stream_leaves_the_session_exactly_as_before(limits):
    import httpx2

    from helpers.llm.client import ResponseFormatError
    from helpers.llm.config import load_settings

    from test_agent import HTML

    html = httpx2.Response(200, headers=HTML, content=b"<html><title>Login</title></html>")
    session = ChatSession(client=_turns_and_garbage(html), settings=load_settings("offline"), **limits)
    assert "".join(session.stream("hi")) == "hello"
    before = (session.messages, session.turn_ids, list(session.turns), list(session.dropped),
              list(session.stats.prompt_tokens))
    with pytest.raises(ResponseFormatError, match="HTML page titled 'Login'"):
        list(session.stream("and then?"))
    after = (session.messages, session.turn_ids, list(session.turns), list(session.dropped),
             list(session.stats.prompt_tokens))
    assert after == before and find_problems(session.messages) == []


def test_a_stream_without_chunks_saves_no_placeholder_turn():
    import httpx2

    from helpers.llm.client import ResponseFormatError
    from helpers.llm.config import load_settings
    from test_agent import SSE

    session = ChatSession(client=_turns_and_garbage(httpx2.Response(200, headers=SSE, content=b"")),
                          settings=load_settings("offline"))
    list(session.stream("hi"))
    with pytest.raises(ResponseFormatError, match="without a single chunk"):
        list(session.stream("and then?"))
    assert [t.answer for t in session.turns] == ["hello"] and session.turn_ids == [0]


def test_the_session_runs_only_its_own_tools():
    from helpers.agent.tools import REGISTRY, Tool, function_schema

    ran = []
    registry = dict(REGISTRY, forget_everything=Tool("forget_everything", lambda: ran.append(1) or {},
                                                     function_schema("forget_everything", "x", {}, [])))
    server = ScriptedServer([{"tool_calls": [tool_call("forget_everything", {}, "a")]}, {"content": "ok"}])
    session = ChatSession(tools=["days_until_weekday"], registry=registry, **server.kwargs())
    assert session.chat("q") == "ok"
    assert not ran and "not offered" in session.messages[-2]["content"]
    assert find_problems(session.messages) == []


@pytest.mark.parametrize("max_steps", [0, -3, 1.5, "6"])
def test_bad_max_steps_is_refused_when_the_session_is_made(max_steps):
    from helpers.core.errors import ConfigError

    with pytest.raises(ConfigError, match="max_steps"):
        ChatSession(max_steps=max_steps)


@pytest.mark.parametrize("limits", [{"max_turns": 2.5}, {"max_turns": "3"}, {"max_turns": True},
                                    {"max_tokens": float("nan")}, {"max_tokens": "800"}, {"max_tokens": -1}])
def test_limits_that_are_not_whole_numbers_are_refused_by_name(limits):
    from helpers.core.errors import ConfigError

    (name, _), = limits.items()
    with pytest.raises(ConfigError, match=f"{name} must be a"):
        ChatSession(**limits)


def test_an_unknown_tool_name_is_refused_when_the_session_is_made():
    with pytest.raises(KeyError, match="teleport"):
        ChatSession(tools=["days_until_weekday", "teleport"])


@pytest.mark.parametrize("usage", [{"prompt_tokens": None}, {}, 5, {"prompt_tokens": "12"},
                                   {"prompt_tokens": -1}])
def test_an_answer_with_unusable_usage_is_kept_and_the_count_skipped(usage):
    import httpx2

    from helpers.llm.config import load_settings
    from test_agent import COMPLETION, streaming_client

    client = streaming_client(httpx2.Response(200, json=dict(COMPLETION, usage=usage)))
    session = ChatSession(client=client, settings=load_settings("offline"), max_tokens=5_000)
    assert session.chat("hello?") == "hi"
    assert session.turn_ids == [0] and session.stats.prompt_tokens == []


# ---------------------------------------------------------------- SimpleSession: the core notebook 07 builds

def test_simple_session_holds_the_conversation_and_forgets_on_reset():
    session = SimpleSession()
    answers = [session.chat(q) for q in CLASSIC]
    assert "3 days" in answers[1]
    assert "sooner" in answers[3] and answers[3].index("Tuesday") < answers[3].index("Thursday")
    assert find_problems(session.messages) == [] and len(split_turns(session.messages)[1]) == 4
    session.reset()
    assert session.messages == [{"role": "system", "content": session.system_prompt}]
    assert "don't know" in session.chat(CLASSIC[1])


def test_the_list_is_the_whole_memory_of_a_simple_session():
    told = SimpleSession()
    told.chat(CLASSIC[0])
    stranger = SimpleSession()
    stranger.messages = list(told.messages)  # never asked anything, but given the list
    assert "3 days" in stranger.chat(CLASSIC[1])


def test_simple_session_keeps_the_newest_whole_turns():
    session = SimpleSession(max_turns=2)
    for question in ["When does the AI club meet?", "And when are the faculty office hours?",
                     "Where can I print a poster?"]:
        session.chat(question)
        assert find_problems(session.messages + [{"role": "user", "content": "next"}]) == []
    system, turns = split_turns(session.messages)
    assert system[0]["content"] == session.system_prompt
    assert [turn[0]["content"] for turn in turns] == ["And when are the faculty office hours?",
                                                      "Where can I print a poster?"]
    assert "don't know" in session.chat("Which of those two is sooner?")  # the AI club turn scrolled out


def test_a_failed_simple_turn_leaves_the_list_as_it_was():
    server = ScriptedServer([{"content": "hello"},
                             {"tool_calls": [tool_call("days_until_weekday", {"weekday": "Thu"}, "a")]}, 503])
    session = SimpleSession(**server.kwargs())
    session.chat("hi")
    before = list(session.messages)
    with pytest.raises(EndpointError):
        session.chat("how many days until Thursday?")
    assert session.messages == before


def test_simple_and_chat_sessions_send_the_same_requests_with_max_turns():
    questions = ["one", "two", "three", "four"]
    sent = []
    for make in (SimpleSession, ChatSession):
        server = ScriptedServer([{"content": f"answer {q}"} for q in questions])
        session = make(max_turns=2, **server.kwargs())
        for question in questions:
            session.chat(question)
        sent.append([request["messages"] for request in server.requests])
    assert sent[0] == sent[1]
    assert [m["content"] for m in sent[0][-1] if m["role"] == "user"] == ["two", "three", "four"]

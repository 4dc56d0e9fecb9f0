"""PersistentSession (helpers/sessions/persistent.py): a turn's facts commit with the turn, or not at all; a reply
holding a lone surrogate is stored (as U+FFFD) and later turns work; ``open(..., system_prompt=X)`` resumes, and
so does ``fork()``; wrong arguments are reported as wrong arguments, never as damaged data.

Notebook 12's setup: the session store and the fact store share one SQLite file; the session's
memory is a MemoryAssembler whose ProfileMemory writes to that shared FactMemory. When a second
window saved first, the turn is refused ("Not saved: ... rolled back") - and so must be its facts.
The ``sessions`` rows run on SQLite and PostgreSQL (conftest.py).
"""
import json
import sqlite3

import pytest

from helpers.facts.writer import FactMemory
from helpers.memory.assembler import MemoryAssembler
from helpers.memory.profile import ProfileMemory
from helpers.chat.chat_session import ChatSession
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionSaveError, SessionStoreError, SQLiteSessionStore
from helpers.core.errors import ConfigError
from helpers.sessions.session_store import SessionNotFoundError

from support import RawServer


USER, SESSION = "ada", "campus"


def window(store, facts):
    """One assistant window, set up as notebook 12's CampusAssistant sets it up."""
    memory = MemoryAssembler(profile=ProfileMemory(facts=facts, user_id=USER))
    return PersistentSession.open(store, USER, SESSION, memory=memory, max_turns=6, max_tokens=1500)


def locker_values(facts):
    return [f.value for f in facts.active_facts(USER) if "locker" in f.attribute]


@pytest.fixture
def stores(tmp_path):
    path = tmp_path / "campus.db"
    store, facts = SQLiteSessionStore(path), FactMemory.open(str(path))
    yield path, store, facts
    store.close()
    facts.close()


def test_a_refused_turn_keeps_none_of_its_facts(stores):
    path, store, facts = stores
    a = window(store, facts)
    a.chat("My locker number is 4471.")                       # saved, with its fact
    assert locker_values(facts) == ["4471"]
    b = window(store, facts)
    b.chat("When does the AI club meet?")                     # the second window saves first
    with pytest.raises(SessionSaveError, match="Not saved: the turn was rolled back"):
        a.chat("My locker number is 9999.")

    assert locker_values(facts) == ["4471"]                   # 9999 never became the current fact
    assert not any(f.value == "9999" for f in facts.history(USER) + facts.conflicts(USER))
    assert "9999" not in "\n".join(a.memory.profile.lines())   # nor does the refused window show it
    audit = facts.audit(USER)                                  # explainable: only saved turns are in it
    assert not any("9999" in (row.value or "") for row in audit)
    assert [(row.outcome, row.value, row.source_version) for row in audit if row.outcome != "noop"] == \
        [("insert", "4471", 0)]
    assert all(row.reason.startswith("replay") for row in audit if row.outcome == "noop")  # b's open

    a.reload()                                                 # continue from what is stored
    answer = a.chat("What is my locker number?")
    assert "4471" in answer and "9999" not in answer
    fresh, again = FactMemory.open(str(path)), SQLiteSessionStore(path)   # after a restart
    try:
        answer = window(again, fresh).chat("What is my locker number?")
        assert "4471" in answer and "9999" not in answer
        assert locker_values(fresh) == ["4471"]
    finally:
        again.close()
        fresh.close()


def test_a_refused_streamed_turn_keeps_none_of_its_facts_either(stores):
    _, store, facts = stores
    a, b = window(store, facts), window(store, facts)
    b.chat("My locker number is 4471.")
    with pytest.raises(SessionSaveError, match="Not saved: the turn was rolled back"):
        list(a.stream("My locker number is 9999."))
    assert locker_values(facts) == ["4471"] and not a.memory.profile.pending
    assert not any("9999" in (row.value or "") for row in facts.audit(USER))


def test_a_saved_turn_writes_its_facts_and_undo_and_reset_behave_as_before(stores):
    _, store, facts = stores
    a = window(store, facts)
    a.chat("My locker number is 4471.")
    a.chat("Actually, my locker number is 9999.")
    assert locker_values(facts) == ["9999"]
    assert [f.value for f in facts.history(USER)] == ["4471"]
    a.undo()                     # a shared durable store keeps its audited history (as before)
    assert locker_values(facts) == ["9999"]
    assert a.memory.profile.statements and all(s["turn_id"] == 0 for s in a.memory.profile.statements)
    a.reset()
    assert a.memory.profile.statements == [] and a.turn_ids == []
    b = window(store, facts)     # the stored session was saved with the reset
    assert b.turn_ids == [] and b.memory.profile.statements == []


def test_a_turn_whose_facts_cannot_be_written_is_not_kept_either(stores, monkeypatch):
    _, store, facts = stores
    a = window(store, facts)
    a.chat("When does the AI club meet?")
    revision = a.revision

    def broken(*args, **kwargs):
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(facts, "write_many", broken)
    with pytest.raises(SessionSaveError, match="Not saved: the turn was rolled back"):
        a.chat("My locker number is 9999.")
    monkeypatch.undo()
    stored = store.load_state(USER, SESSION)
    assert [t["question"] for t in stored.state["turns"]] == ["When does the AI club meet?"]
    assert stored.info.revision > revision and a.revision == stored.info.revision   # saved back, in step
    assert a.turn_ids == stored.state["turn_ids"] and locker_values(facts) == []
    a.chat("My locker number is 4471.")                       # the next turn works from there
    assert locker_values(facts) == ["4471"]


def test_a_plain_chat_session_writes_its_facts_at_once():
    facts = FactMemory.open(":memory:")
    session = ChatSession(memory=MemoryAssembler(profile=ProfileMemory(facts=facts, user_id=USER)))
    session.chat("My locker number is 4471.")
    assert locker_values(facts) == ["4471"] and session.memory.profile.pending is None


def test_a_crash_between_the_two_commits_leaves_the_facts_to_the_next_open(stores, monkeypatch):
    _, store, facts = stores
    a = window(store, facts)
    a.chat("My locker number is 4471.")

    def crash():
        raise KeyboardInterrupt   # the process dies after the session's save, before the fact write

    monkeypatch.setattr(a.memory, "write_deferred", crash)
    with pytest.raises(KeyboardInterrupt):
        a.chat("Actually, my locker number is 9999.")
    assert [t["question"] for t in store.load_state(USER, SESSION).state["turns"]][-1].endswith("9999.")
    assert locker_values(facts) == ["4471"]                   # behind the saved turn, never ahead of it
    window(store, facts)                                       # the next open writes what the turn stated
    assert locker_values(facts) == ["9999"]
    assert [(r.outcome, r.value, r.source_version) for r in facts.audit(USER) if r.outcome != "noop"] == \
        [("insert", "4471", 0), ("correction", "9999", 1)]


def test_when_the_change_cannot_be_taken_back_this_copy_keeps_it_and_writes_its_facts_later(stores,
                                                                                            monkeypatch):
    _, store, facts = stores
    a = window(store, facts)
    a.chat("When does the AI club meet?")
    saves = []
    real_save = store.save

    def save_once(*args, **kwargs):
        saves.append(args)
        if len(saves) > 1:
            raise SessionStoreError("database is locked (simulated)")
        return real_save(*args, **kwargs)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(store, "save", save_once)
    monkeypatch.setattr(facts, "write_many", broken)
    with pytest.raises(SessionStoreError, match="was saved to .* but its facts could not be written") as info:
        a.chat("My locker number is 9999.")
    assert not isinstance(info.value, SessionSaveError)
    monkeypatch.undo()
    stored = store.load_state(USER, SESSION)
    assert a.turn_ids == stored.state["turn_ids"] == [0, 1] and a.revision == stored.info.revision
    assert locker_values(facts) == [] and a.memory.profile.pending
    a.chat("When is the library open?")                       # the next saved change writes them
    assert locker_values(facts) == ["9999"] and not a.memory.profile.pending


def test_a_reply_with_a_lone_surrogate_is_saved_and_later_turns_work(sessions):
    server = RawServer(["Fridays\ud800 at 6pm.", "Room 12."])
    session = PersistentSession.open(sessions, "ada", "s1", **server.kwargs())
    answer = session.chat("When does the AI club meet?")
    assert answer == "Fridays\ufffd at 6pm."
    assert session.revision == 1 and session.session.turns[0].answer == answer
    assert session.chat("Where?") == "Room 12."  # the next request carries storable text
    assert "\ud800" not in json.dumps(server.requests[-1], ensure_ascii=False)
    stored = sessions.load_state("ada", "s1")
    assert stored.info.revision == 2 and stored.state == session.snapshot()  # memory and store agree
    assert stored.state["messages"][1]["content"] == "Fridays\ufffd at 6pm."


PROMPT = "You are the Larkspur campus assistant. Answer in one sentence."


def test_reopening_with_the_same_system_prompt_resumes(sessions):
    first = PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT)
    first.chat("When does the AI club meet?")
    first.chat("How many days until that?")
    again = PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT)
    assert again.resumed and again.session.turn_ids == [0, 1] and again.session.system_prompt == PROMPT
    assert again.session.messages[0] == {"role": "system", "content": PROMPT}
    branch = again.fork(1, "branch")
    assert branch.session.turn_ids == [0] and branch.session.system_prompt == PROMPT
    assert sessions.load("ada", "s1", system_prompt=PROMPT).turn_ids == [0, 1]
    assert PersistentSession.open(sessions, "ada", "s1").session.system_prompt == PROMPT  # omitted: the stored one


def test_a_different_system_prompt_on_reopen_is_a_clear_argument_error(sessions):
    PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT).chat("When does the AI club meet?")
    with pytest.raises(ConfigError, match=r"system_prompt.*differs from the one ada/s1 was started with") as caught:
        PersistentSession.open(sessions, "ada", "s1", system_prompt="Be terse.")
    assert "damaged" not in str(caught.value) and not isinstance(caught.value, SessionStoreError)
    with pytest.raises(ConfigError, match="system_prompt"):
        ChatSession.from_snapshot(sessions.load_state("ada", "s1").state, system_prompt="Be terse.")


def test_wrong_arguments_are_not_blamed_on_the_stored_data(sessions):
    PersistentSession.open(sessions, "ada", "s1").chat("When does the AI club meet?")
    with pytest.raises(TypeError, match="colour") as caught:
        PersistentSession.open(sessions, "ada", "s1", colour="red")
    assert not isinstance(caught.value, SessionStoreError)
    with pytest.raises(TypeError, match="colour"):
        sessions.fork("ada", "s1", 1, "branch", colour="red")
    with pytest.raises(SessionNotFoundError):  # nothing was half-written by the failed fork
        sessions.load_state("ada", "branch")


def test_damaged_stored_data_is_still_reported_as_damaged(tmp_path):
    store = SQLiteSessionStore(tmp_path / "s.db")
    for session_id in ("s1", "s2"):
        PersistentSession.open(store, "ada", session_id, system_prompt=PROMPT).chat("When does the AI club meet?")
    header = json.loads(store._connection().execute("SELECT header FROM sessions WHERE session_id = 's1'"
                                                    ).fetchone()[0])
    store._connection().execute("UPDATE sessions SET header = ? WHERE session_id = 's1'",
                                (json.dumps({**header, "system_prompt": 7}),))
    with pytest.raises(SessionStoreError, match="damaged"):
        PersistentSession.open(store, "ada", "s1", system_prompt=PROMPT)
    store._connection().execute("UPDATE session_turns SET body = ? WHERE session_id = 's2'",
                                (json.dumps({"kept": [{"role": "user"}]}),))
    with pytest.raises(SessionStoreError, match="damaged"):
        PersistentSession.open(store, "ada", "s2", system_prompt=PROMPT)
    store.close()
    assert sqlite3.connect(tmp_path / "s.db").execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 2

"""The SQLite session store (helpers/sessions/session_store.py): a save writes only what changed since the stored
revision and stores exactly what a whole-snapshot save stores, in the same statements at turn 40 as at turn 5;
sessions saved before schema 3 are read and continued."""
from __future__ import annotations

import json
import random
import sqlite3

import pytest

from helpers.memory.assembler import MemoryAssembler
from helpers.chat.chat_session import ChatSession
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import MIGRATIONS, SessionStoreError, SQLiteSessionStore

from support import QUESTIONS
from test_store import NotingSession
from support import RawServer, a_session


def tables(store) -> tuple:
    """What a store (SQLite or PostgreSQL) holds for ada/s1, apart from revisions and times."""
    conn = store._connection() if isinstance(store, SQLiteSessionStore) else store._conns.get()
    session = conn.execute("SELECT header, title, turns, dropped FROM sessions WHERE user_id = 'ada' AND "
                           "session_id = 's1'").fetchall()
    turns = conn.execute("SELECT turn_id, state, question, body, digest FROM session_turns WHERE user_id = 'ada' "
                         "AND session_id = 's1' ORDER BY turn_id").fetchall()
    return session, turns


def counting_saves(monkeypatch, store) -> list[bool]:
    """True for each save that wrote only what changed, False for each whole-snapshot save."""
    kinds, real = [], store.save

    def save(*args, **kwargs):
        kinds.append(kwargs.get("changes") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "save", save)
    return kinds


@pytest.mark.parametrize("seed, kwargs, backend", [
    (1, {"max_turns": 2}, "sqlite"), (2, {"max_tokens": 700}, "sqlite"), (3, {}, "sqlite"),
    (4, {"max_turns": 1, "session_class": NotingSession}, "sqlite"), (5, {"max_turns": 2}, "postgres"),
    (6, {"max_turns": 2, "memory": "assistant"}, "sqlite"), (7, {"max_turns": 1, "memory": "assistant"}, "postgres")])
def test_saving_what_changed_stores_exactly_what_a_whole_snapshot_save_stores(tmp_path, monkeypatch, seed, kwargs,
                                                                              backend):
    rng = random.Random(seed)
    if backend == "sqlite":
        delta = SQLiteSessionStore(tmp_path / "delta.db")
    else:
        from test_postgres import pg_dsn, scratch_schema

        from helpers.sessions.session_store_pg import PostgresSessionStore

        delta = PostgresSessionStore(pg_dsn(), schema=scratch_schema(tmp_path, "d_"))
    whole = SQLiteSessionStore(tmp_path / "whole.db")
    kinds = counting_saves(monkeypatch, delta)
    asked = QUESTIONS
    if kwargs.get("memory") == "assistant":  # summary, recall and a profile, with statements to remember
        from helpers.memory.profile import ProfileMemory

        kwargs = {**kwargs, "memory": MemoryAssembler(profile=ProfileMemory(user_id="ada"))}
        asked = QUESTIONS + ["My name is Ada.", "My locker number is 4471.", "Actually my locker is 5120.", "hi"]
    session = PersistentSession.open(delta, "ada", "s1", **kwargs)
    ops = ["chat"] * 6 + ["undo", "undo", "reset", "unsaved", "fail", "reload", "load"]
    for step in range(30):
        op = rng.choice(ops) if step > 2 else "chat"
        if op == "chat":
            session.chat(rng.choice(asked))
        elif op == "undo":
            session.undo()
        elif op == "reset":
            session.reset()
        elif op == "unsaved":  # turns asked on the session itself, saved later together
            session.session.chat(rng.choice(asked))
            session.session.chat(rng.choice(asked))
            session.save()
        elif op == "fail":  # a save that fails is rolled back; the store keeps what it had
            before = tables(delta)
            with monkeypatch.context() as m:
                m.setattr(delta, "_transaction_for", lambda *a: (_ for _ in ()).throw(
                    SessionStoreError("the disk is read-only (simulated)")))
                with pytest.raises(SessionStoreError):
                    session.chat(rng.choice(asked))
            assert tables(delta) == before
        elif op == "reload":
            session.reload()
        elif op == "load":  # the whole state replaced in place (as a stored copy would)
            session.session.load_snapshot(session.snapshot())
            session.chat(rng.choice(asked))
        whole.save("ada", "s1", session.snapshot())
        assert tables(delta) == tables(whole), (step, op)
        assert delta.load_state("ada", "s1").state == session.snapshot()
    assert kinds.count(True) > kinds.count(False)  # most saves wrote only what changed
    delta.close()
    whole.close()


def test_a_save_at_turn_40_runs_the_same_statements_as_at_turn_5(tmp_path):
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", max_turns=2)
    statements: list[str] = []
    conn = store._connection()

    def traced_turn(n: int) -> list[str]:
        statements.clear()
        conn.set_trace_callback(statements.append)
        session.chat(QUESTIONS[n % len(QUESTIONS)])
        conn.set_trace_callback(None)
        return [" ".join(s.split()[:3]) for s in statements]  # the statement and its table

    for n in range(5):
        session.chat(QUESTIONS[n % len(QUESTIONS)])
    early = traced_turn(5)
    for n in range(6, 40):
        session.chat(QUESTIONS[n % len(QUESTIONS)])
    late = traced_turn(40)
    assert early == late
    assert not any("SELECT turn_id, digest" in s for s in statements)  # no turn row is read back
    inserts = [s for s in statements if s.startswith("INSERT INTO session_turns")]
    assert len(inserts) == 2  # the new turn, and the turn that trimming just dropped
    store.close()


def test_a_session_saved_before_schema_3_is_read_and_continued(tmp_path):
    """Headers written before schema version 3 list the dropped and recorded turns; they still load, and the
    next save (of what changed) writes the new header."""
    path = tmp_path / "old.db"
    store = SQLiteSessionStore(path)
    session = PersistentSession.open(store, "ada", "s1", max_turns=1)
    for question in QUESTIONS[:3]:
        session.chat(question)
    store.close()
    state = session.snapshot()
    with sqlite3.connect(path) as conn:  # the header as schema 2 wrote it
        header = json.loads(conn.execute("SELECT header FROM sessions").fetchone()[0])
        assert "dropped_ids" not in header and "record_ids" not in header
        header.update(dropped_ids=[d["turn_id"] for d in state["dropped"]],
                      record_ids=[t["turn_id"] for t in state["turns"]])
        conn.execute("UPDATE sessions SET header = ?", (json.dumps(header),))
        conn.execute("DELETE FROM session_schema WHERE version > 2")
    conn.close()
    store = SQLiteSessionStore(path)
    assert store.schema_version() == MIGRATIONS[-1][0]
    resumed = PersistentSession.open(store, "ada", "s1", max_turns=1)
    assert resumed.snapshot() == state
    resumed.chat(QUESTIONS[3])
    assert store.load_state("ada", "s1").state == resumed.snapshot()
    header = json.loads(store._connection().execute("SELECT header FROM sessions").fetchone()[0])
    assert "dropped_ids" not in header
    store.close()


def test_a_later_reply_with_a_lone_surrogate_is_stored_as_the_session_continues(tmp_path, monkeypatch):
    from support import RawServer

    server = RawServer(["Thursdays at 18:00.", "Room\ud800 12.", "Yes."])
    store = SQLiteSessionStore(tmp_path / "s.db")
    kinds = counting_saves(monkeypatch, store)
    session = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    session.chat("When does the AI club meet?")
    assert session.chat("Where?") == "Room\ufffd 12." and kinds == [False, True]  # saved as what changed
    assert store.load_state("ada", "s1").state == session.snapshot()  # memory continues from the stored copy
    session.chat("Is it open?")
    assert "\ud800" not in json.dumps(server.requests[-1], ensure_ascii=False)
    store.close()


def test_turns_out_of_the_usual_order_are_saved_whole(tmp_path):
    session = ChatSession(max_turns=1)
    for question in QUESTIONS[:3]:
        session.chat(question)
    state = session.snapshot()
    state["turns"] = state["turns"][::-1]  # records newest first: only a whole snapshot keeps that order
    odd = ChatSession.from_snapshot(state)
    assert odd.changes_since(odd.mark()) is None
    store = SQLiteSessionStore(tmp_path / "s.db")
    store.save("ada", "s1", odd)
    persistent = PersistentSession.open(store, "ada", "s1")
    persistent.chat(QUESTIONS[3])
    assert store.load_state("ada", "s1").state == persistent.snapshot()
    store.close()


def test_a_snapshot_with_lone_surrogates_is_stored_with_replacement_characters(sessions):
    state = a_session().snapshot()
    state["messages"][0]["content"] = "When\udce9 does it meet?"
    state["turns"][0]["question"] = "When\udce9 does it meet?"
    state["messages"][-1]["content"] += "\ud83d"
    assert sessions.save("ada", "s1", state) == 1
    stored = sessions.load_state("ada", "s1")
    assert stored.state["messages"][0]["content"] == "When\ufffd does it meet?"
    assert stored.state["messages"][-1]["content"].endswith("\ufffd")
    assert stored.info.title == "When\ufffd does it meet?"


def test_a_turn_with_nul_round_trips(sessions):
    question, reply = "When does the\x00 AI club meet?", "Fridays\x00 at 6pm."
    server = RawServer([reply])
    session = PersistentSession.open(sessions, "ada", "s1", **server.kwargs())
    assert session.chat(question) == reply and session.revision == 1
    stored = sessions.load_state("ada", "s1")
    assert stored.state == session.snapshot()
    assert stored.info.title == question
    assert [i.title for i in sessions.list_sessions("ada")] == [question]
    assert stored.state["turns"][0]["question"] == question and stored.state["turns"][0]["answer"] == reply
    resumed = PersistentSession.open(sessions, "ada", "s1", **RawServer(["ok"]).kwargs())
    assert resumed.session.messages[-1]["content"] == reply and resumed.chat("More?") == "ok"

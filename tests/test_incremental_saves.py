"""Saves that cost one turn (lesson 11): what changed since the stored revision, written alone, stores exactly
what a whole-snapshot save stores; the usage ledger serialises only new messages and learns the same;
``ChatSession(memory=...)`` asks its memory for nothing outside the ``Memory`` protocol."""
from __future__ import annotations

import ast
import json
import random
import sqlite3
from pathlib import Path

import pytest

from helpers.chat.ledger import UsageLedger
from helpers.memory.assembler import MemoryAssembler
from helpers.chat.chat_session import ChatSession, Memory
from helpers.chat.memory_protocol import TurnPartedMemory
from helpers.chat.snapshot import Snapshots
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import MIGRATIONS, SessionStoreError, SQLiteSessionStore
from helpers.core.tokens import approx_tokens
from test_store import NotingSession  # one definition of the plug-in stand-in

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ["When does the AI club meet?", "How many days until that?", "Where can I print a poster?",
             "And when are the faculty office hours?", "Is the library open on Sunday?"]




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


# --- a save writes what changed, and stores what a whole save stores ------------------------------------------

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
    from test_ids_and_storage import RawServer

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


def test_restore_mark_puts_back_turns_dropped_records_and_memory():
    session = NotingSession(max_turns=1)
    session.chat(QUESTIONS[0])
    session.chat(QUESTIONS[1])
    before, mark = session.snapshot(), session.mark()
    session.chat(QUESTIONS[2])
    session.undo()
    session.reset()
    assert session.snapshot_at(mark) == before
    session.restore_mark(mark)
    assert session.snapshot() == before and session.notes == before["memory"]["summary"].split(" / ")
    assert session.changes_since(mark).turns == {}  # nothing changed since


# --- the usage ledger: only new messages are serialised, and it learns the same -------------------------------

class FreshLedger(UsageLedger):
    """The ledger computing every message's key and estimate again on each request (the reference)."""

    def _known(self, messages):
        return [self.key(m) for m in messages], [self.estimate(m) for m in messages]


def replay(requests) -> list[tuple]:
    """Feed the same requests to both ledgers; what each learnt, request by request."""
    seen = []
    for ledger in (UsageLedger(), FreshLedger()):
        learnt = []
        for messages, prompt_tokens in requests:
            cost = ledger.cost(messages)
            record = ledger.record(messages, prompt_tokens)
            learnt.append((cost, record, [ledger.count(m) for m in messages], ledger.cost(messages[1:])))
        seen.append(learnt)
    return seen


def test_the_ledger_learns_the_same_from_a_real_session(monkeypatch):
    requests = []
    real = UsageLedger.record

    def capture(self, messages, prompt_tokens):
        requests.append((list(messages), prompt_tokens))
        return real(self, messages, prompt_tokens)

    monkeypatch.setattr(UsageLedger, "record", capture)
    session = ChatSession(max_tokens=900)  # trimming breaks spans; tool calls add several messages a turn
    for question in QUESTIONS * 3:
        session.chat(question)
    monkeypatch.undo()
    assert len(requests) > len(QUESTIONS) * 3 and session.dropped
    memo, fresh = replay(requests)
    assert memo == fresh


def test_the_ledger_notices_a_field_given_a_new_value_and_keeps_equal_copies_apart():
    system, question = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "ok?"}
    answer = {"role": "assistant", "content": "ok"}
    again, echo = {"role": "user", "content": "ok?"}, {"role": "assistant", "content": "ok"}
    first = [system, question]
    second = [system, question, answer, again]
    requests = [(first, 20), (second, 31)]
    memo, fresh = replay(requests)
    assert memo == fresh
    answer["content"] = "a much longer answer than before, " * 4  # changed in place after it was sent
    third = [system, question, answer, again, echo, {"role": "user", "content": "and now?"}]
    memo, fresh = replay([*requests, (third, 120)])
    assert memo == fresh
    ledger = UsageLedger()
    for messages, tokens in [*requests, (third, 120)]:
        ledger.record(messages, tokens)
    assert ledger.count(answer) != approx_tokens({"role": "assistant", "content": "ok"})


# --- ChatSession and its memory: the Memory protocol ----------------------------------------------------------

MEMBERS = {"window_turns", "attach", "forget", "build", "count", "remember", "discard", "reset", "state",
           "restore"}
PARTED = {"shared_state", "turn_state", "checkpoint", "rollback", "state_at"}  # TurnPartedMemory's additions


def test_the_memory_protocol_lists_what_chatsession_uses_and_the_assembler_has_it():
    declared = {n for n in vars(Memory) if not n.startswith("_")} | set(Memory.__annotations__)
    assert declared == MEMBERS
    assert {n for n in vars(TurnPartedMemory) if not n.startswith("_")} == PARTED
    assert isinstance(MemoryAssembler(), Memory) and isinstance(MemoryAssembler(), TurnPartedMemory)
    assert not isinstance(object(), Memory) and not isinstance(OnlyTheProtocol(), TurnPartedMemory)


def test_the_session_layer_reads_no_other_member_of_its_memory():
    used = set()
    for module in ("helpers/chat/chat_session.py", "helpers/chat/snapshot.py"):
        for node in ast.walk(ast.parse((ROOT / module).read_text())):
            if isinstance(node, ast.Attribute) and (
                    (isinstance(node.value, ast.Attribute) and node.value.attr == "memory"
                     and isinstance(node.value.value, ast.Name) and node.value.value.id == "self")
                    or (isinstance(node.value, ast.Name) and node.value.id == "memory")):
                used.add(node.attr)
    assert used and used <= MEMBERS | PARTED, used - MEMBERS - PARTED


class OnlyTheProtocol:
    """A memory with exactly the protocol's members (each forwarded to a MemoryAssembler), noting which are used."""

    __slots__ = ("_inner", "used")

    def __init__(self):
        self._inner = MemoryAssembler(window_turns=2)
        self.used: set[str] = set()

    @property
    def window_turns(self):
        self.used.add("window_turns")
        return self._inner.window_turns

    def _call(self, name, *args, **kwargs):
        self.used.add(name)
        return getattr(self._inner, name)(*args, **kwargs)

    def attach(self, client=None, settings=None):
        return self._call("attach", client, settings)

    def forget(self, turns):
        return self._call("forget", turns)

    def build(self, system_prompt, window, question, *, budget=None, tools=None):
        return self._call("build", system_prompt, window, question, budget=budget, tools=tools)

    def count(self, message):
        return self._call("count", message)

    def remember(self, turn_id, messages):
        return self._call("remember", turn_id, messages)

    def discard(self, turn_id):
        return self._call("discard", turn_id)

    def reset(self):
        return self._call("reset")

    def state(self):
        return self._call("state")

    def restore(self, state):
        return self._call("restore", state)


def test_a_session_works_with_a_memory_that_has_only_the_protocol(tmp_path):
    memory = OnlyTheProtocol()
    assert isinstance(memory, Memory)
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", memory=memory)  # a store needs nothing more either
    for question in QUESTIONS[:4]:
        session.chat(question)
    assert "".join(session.stream(QUESTIONS[1]))
    session.undo()
    copy = ChatSession.from_snapshot(session.snapshot(), memory=OnlyTheProtocol())
    assert copy.turn_ids == session.turn_ids
    session.reset()
    assert memory.used | copy.memory.used == MEMBERS  # restore: the copy's memory loaded the snapshot
    store.close()


def test_snapshot_support_lives_with_the_session_and_the_old_path_still_works():
    from helpers.chat import snapshot as old_path

    assert issubclass(ChatSession, Snapshots) and Snapshots.__module__ == "helpers.chat.snapshot"
    assert old_path.Snapshots is Snapshots and old_path.TurnRecord.__module__ == "helpers.chat.snapshot"

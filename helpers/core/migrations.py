"""Named, append-only schema migrations for a SQLite file, shared by the fact store and the session store.

A migration is ``(version, name, statements)``. ``apply_migrations`` runs the ones a file has not had yet
and records each in a table of its own (``version, name, applied_at``). PostgreSQL has its own runner in
``helpers.core.postgres`` (it adds a lock and a schema).

Each store writes its tables once, as a function of a ``Dialect``: the few words in which SQLite and
PostgreSQL differ (``SQLITE``, ``POSTGRES``). A migration is SQL that databases have already run, so its
text must never change: the tests pin every dialect's statements, and a table change is a new migration.
"""
from __future__ import annotations

import sqlite3
from typing import NamedTuple, Sequence

from helpers.core.clock import now

Migration = tuple[int, str, tuple[str, ...]]


class Dialect(NamedTuple):
    """The words a table definition needs in one database's SQL."""

    key_text: str       # a text column that is part of a key or sorted on: compared byte by byte on both
    big_int: str        # a 64-bit integer (an id, a revision, a version)
    blob: str           # bytes
    table_suffix: str   # after a table whose primary key is not a single integer
    identity: str       # an id the database hands out itself
    name: str = ""      # "sqlite" or "postgresql": for what only one of them has (FTS5, tsvector)


SQLITE = Dialect(key_text="TEXT", big_int="INTEGER", blob="BLOB", table_suffix=" WITHOUT ROWID",
                 identity="INTEGER PRIMARY KEY", name="sqlite")
POSTGRES = Dialect(key_text='TEXT COLLATE "C"', big_int="BIGINT", blob="BYTEA", table_suffix="",
                   identity="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", name="postgresql")


def apply_migrations(conn: sqlite3.Connection, table: str, migrations: Sequence[Migration]) -> list[int]:
    """Apply, inside the caller's open write transaction, every migration not yet recorded in ``table``.

    Returns the versions applied now (so a store can move existing rows in the same transaction)."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")  # a fixed name from this package, never user input
    done = {row[0] for row in conn.execute(f"SELECT version FROM {table}")}
    applied = []
    for version, name, statements in migrations:
        if version not in done:
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"INSERT INTO {table} (version, name, applied_at) VALUES (?, ?, ?)",
                         (version, name, now().isoformat()))
            applied.append(version)
    return applied

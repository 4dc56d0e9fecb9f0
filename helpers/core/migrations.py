"""Named, append-only schema migrations for a SQLite file, shared by the fact store and the session store.

A migration is ``(version, name, statements)``. ``apply_migrations`` runs the ones a file has not had yet
and records each in a table of its own (``version, name, applied_at``). PostgreSQL has its own runner in
``helpers.core.postgres`` (it adds a lock and a schema); its table definitions differ in types, so each
backend lists its own statements.
"""
from __future__ import annotations

import sqlite3
from typing import Sequence

from helpers.core.clock import now

Migration = tuple[int, str, tuple[str, ...]]


def apply_migrations(conn: sqlite3.Connection, table: str, migrations: Sequence[Migration]) -> None:
    """Apply, inside the caller's open write transaction, every migration not yet recorded in ``table``."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")  # a fixed name from this package, never user input
    done = {row[0] for row in conn.execute(f"SELECT version FROM {table}")}
    for version, name, statements in migrations:
        if version not in done:
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"INSERT INTO {table} (version, name, applied_at) VALUES (?, ?, ?)",
                         (version, name, now().isoformat()))

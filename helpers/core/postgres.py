"""What the PostgreSQL stores for sessions (notebook 11) and durable facts (notebook 10) share.

One connection per thread, named migrations applied under an advisory lock, advisory-lock ids, and
DSNs shown without their password. An *advisory lock* is a PostgreSQL lock on a number rather than on a
table or row: the database enforces nothing else, our code simply takes the lock for a key's number (a
hash of the key) before touching that key, so two writers of one key take turns.
``helpers.sessions.session_store_pg`` and ``helpers.facts.fact_store_pg`` build their stores on it. Uses psycopg 3
(``pip install "psycopg[binary]"``).

How the guarantees carry over from SQLite, where one file lock serialised every writer:

* Facts: a transaction takes ``pg_advisory_xact_lock`` on a 64-bit hash of each key (in ascending
  order, so two writers never deadlock) before anything is read, so decisions about one key are
  serialised while other keys proceed in parallel.
* Sessions: a save takes an advisory lock on ``(user_id, session_id)`` and writes the header and
  the changed turn rows in one transaction.
* Text columns use ``COLLATE "C"`` and timestamps are ISO-8601 text, so both backends sort and
  return exactly the same rows.

``schema=`` puts the tables in their own PostgreSQL schema (created if missing), so several
workshops - or tests - can share one database without seeing each other's tables.
"""
from __future__ import annotations

import hashlib
import re
import threading
from typing import Callable, Sequence

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from helpers.core.clock import now
from helpers.core.dsn import redact_dsn
from helpers.core.errors import ConfigError

SCHEMA_NAME = re.compile(r"^(?!pg_)[a-z_][a-z0-9_]{0,62}$")  # pg_ is reserved by PostgreSQL


def lock_id(kind: str, *parts: str) -> int:
    """A signed 64-bit advisory-lock id for one key (blake2b of its parts; ``kind`` keeps families apart)."""
    digest = hashlib.blake2b("\x00".join((kind, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def describe_dsn(dsn: str) -> str:
    """user@host:port/dbname for messages (never the password)."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(an unreadable DSN)"
    return (f"{parts.get('user', '')}{'@' if parts.get('user') else ''}{parts.get('host', 'localhost')}:"
            f"{parts.get('port', 5432)}/{parts.get('dbname', '')}")


class Connections:
    """One autocommit connection per thread (psycopg connections are not shared), all closed together."""

    def __init__(self, dsn: str, schema: str | None, error: type[RuntimeError], connect_timeout: int):
        if schema is not None and not SCHEMA_NAME.match(schema):
            raise error(f"schema {schema!r} must be lowercase letters, digits and _ (at most 63, not "
                        "starting with pg_), e.g. 'workshop'")
        self.dsn, self.schema, self.error = dsn, schema, error
        self.where = describe_dsn(dsn) + (f" (schema {schema})" if schema else "")
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._all: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> psycopg.Connection:
        """This thread's connection, opened (or reopened after a failure) when needed."""
        if self.closed:
            raise self.error(f"this store on {self.where} is closed, so nothing can be read or saved; open a "
                             "new one")
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._local.conn = self._connect()
        return conn

    def _connect(self) -> psycopg.Connection:
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self.connect_timeout)
            if self.schema:  # created by migrate, under its lock
                conn.execute("SELECT set_config('search_path', %s, false)", (self.schema,))
        except psycopg.Error as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            reason = redact_dsn(reason, self.dsn)  # libpq quotes the parts of a DSN it cannot parse
            raise self.error(f"could not connect to PostgreSQL at {self.where} ({reason}); check that the "
                             "server is running and the DSN is right (tests/setup_postgres.sh starts a local "
                             "one)") from None
        with self._lock:
            self._all.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection, from any thread; the store cannot be used afterwards."""
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self.closed = True


def _applied(conn: psycopg.Connection, conns: Connections, table: str,
             migrations: Sequence[tuple[int, str, tuple[str, ...]]], owned: Sequence[str]) -> set[int] | None:
    """The versions recorded in ``table`` (None: no such table yet); refuses a newer or foreign schema. Reads only."""
    latest = migrations[-1][0]
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None:
        done = {row[0] for row in conn.execute(sql.SQL("SELECT version FROM {}").format(sql.Identifier(table)))}
        if done and max(done) > latest:
            raise conns.error(f"{conns.where} was written by a newer version of the workshop ({table} "
                              f"version {max(done)}; this code knows up to {latest}); nothing was "
                              "changed - upgrade the helpers package or use another schema")
        return done
    clash = [name for name in owned if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]]
    if clash:
        raise conns.error(f"{conns.where} already has tables {', '.join(clash)} that this store did "
                          f"not create (no {table} table); nothing was changed - use another "
                          "database or schema=")
    return None


def check_schema(dsn: str, schema: str | None, error: type[RuntimeError], connect_timeout: int, table: str,
                 migrations: Sequence[tuple[int, str, tuple[str, ...]]], owned: Sequence[str]) -> None:
    """Raise ``error`` where ``migrate`` would refuse the database; reads only (creates not even the schema).

    An opener of two stores on one database runs both stores' checks before either migrates."""
    conns = Connections(dsn, schema, error, connect_timeout)
    try:
        conn = conns.get()
        with conn.transaction():
            _applied(conn, conns, table, migrations, owned)
    except psycopg.Error as err:
        raise error(f"reading the tables on {conns.where} failed ({redact_dsn(str(err).strip(), dsn)}); "
                    "nothing was changed") from None
    finally:
        conns.close()


def migrate(conns: Connections, table: str, migrations: Sequence[tuple[int, str, tuple[str, ...]]],
            owned: Sequence[str], after: Callable[[psycopg.Connection, list[int]], None] | None = None) -> None:
    """Apply missing migrations under an advisory lock; refuse newer or foreign schemas untouched.

    SQLite files use ``helpers.core.migrations.apply_migrations``; this runner also serialises processes
    that start at once, creates the ``schema=`` and refuses tables it did not create. ``after(conn,
    applied)`` runs last in the same transaction, under the lock, with the versions applied now (a store
    moves existing rows there, or adds what depends on an extension).
    """
    conn = conns.get()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("migrate", conns.schema or ""),))
        if conns.schema:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(conns.schema)))
        done = _applied(conn, conns, table, migrations, owned)
        if done is None:
            conn.execute(sql.SQL("CREATE TABLE {} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                                 "applied_at TEXT NOT NULL)").format(sql.Identifier(table)))
            done = set()
        applied = []
        for version, name, statements in migrations:
            if version not in done:
                for statement in statements:
                    conn.execute(statement)
                conn.execute(sql.SQL("INSERT INTO {} (version, name, applied_at) VALUES (%s, %s, %s)").format(
                    sql.Identifier(table)), (version, name, now().isoformat()))
                applied.append(version)
        if after is not None:
            after(conn, applied)


def schema_version(conns: Connections, table: str) -> int:
    """The highest migration recorded in ``table`` (0 before any)."""
    query = sql.SQL("SELECT MAX(version) FROM {}").format(sql.Identifier(table))
    return int(conns.get().execute(query).fetchone()[0] or 0)


def drop_schema(dsn: str, schema: str) -> None:
    """Delete a schema and everything in it (for throwaway test schemas; irreversible)."""
    if not SCHEMA_NAME.match(schema):
        raise ConfigError(f"schema {schema!r} is not a plain lowercase name")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


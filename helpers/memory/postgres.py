"""The same memory on PostgreSQL (lesson 11): sessions and durable facts for many processes and users.

``PostgresSessionStore`` implements ``helpers.memory.store.SessionStore`` and
``PostgresFactStore`` implements ``helpers.memory.facts_store.FactStore``; everything built on
those protocols (``PersistentSession``, ``FactMemory``, the chat UI, the terminal chat) runs
unchanged. Uses psycopg 3.

How the guarantees carry over from SQLite, where one file lock serialised every writer:

* Facts: ``transaction(lock_keys)`` takes ``pg_advisory_xact_lock`` on a 64-bit hash of each key
  (in ascending order, so two writers never deadlock) before ``load_keys`` reads anything, so
  decisions about one key are serialised while other keys proceed in parallel. Fact ids come
  from a sequence (``fact_ids``), fetched in small blocks; gaps are fine, ids are only unique.
* Sessions: a save takes an advisory lock on ``(user_id, session_id)`` and writes the header and
  the changed turn rows in one transaction; a load reads both in one REPEATABLE READ snapshot.
* Text columns use ``COLLATE "C"`` and timestamps are ISO-8601 text, so both backends sort and
  return exactly the same rows.

``schema=`` puts the tables in their own PostgreSQL schema (created if missing), so several
workshops - or tests - can share one database without seeing each other's tables.
"""
from __future__ import annotations

import hashlib
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict

from helpers.clock import now
from helpers.memory import facts_store
from helpers.memory.facts_store import (AuditEntry, Changes, FactStoreError, LockKey, StoredFact,
                                        collect_facts, save_changes)
from helpers.memory.store import (
    SCHEMA_TABLE, EncodedSession, SessionInfo, SessionStoreBase, SessionStoreError, StoredSession, check_ids,
    decode_state, redact_dsn,
)

_SCHEMA_NAME = re.compile(r"^(?!pg_)[a-z_][a-z0-9_]{0,62}$")  # pg_ is reserved by PostgreSQL
_ID_BLOCK = 16  # fact ids fetched from the sequence per round trip

SESSION_MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "create sessions and session_turns", (
        """CREATE TABLE sessions (
            user_id TEXT COLLATE "C" NOT NULL,
            session_id TEXT COLLATE "C" NOT NULL,
            revision BIGINT NOT NULL,
            header TEXT NOT NULL,
            title TEXT NOT NULL,
            turns INTEGER NOT NULL,
            dropped INTEGER NOT NULL,
            forked_from TEXT,
            forked_at INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (user_id, session_id))""",
        """CREATE TABLE session_turns (
            user_id TEXT COLLATE "C" NOT NULL,
            session_id TEXT COLLATE "C" NOT NULL,
            turn_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            question TEXT NOT NULL,
            body TEXT NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id),
            FOREIGN KEY (user_id, session_id) REFERENCES sessions (user_id, session_id) ON DELETE CASCADE)""",
    )),
)

FACT_MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "create facts, provenance and audit", (
        "CREATE SEQUENCE fact_ids",
        """CREATE TABLE facts (
            id BIGINT PRIMARY KEY,
            user_id TEXT COLLATE "C" NOT NULL,
            subject TEXT COLLATE "C" NOT NULL,
            attribute TEXT COLLATE "C" NOT NULL,
            slot TEXT COLLATE "C" NOT NULL,
            value TEXT NOT NULL,
            value_key TEXT NOT NULL,
            status TEXT NOT NULL,
            superseded_by BIGINT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        "CREATE INDEX facts_by_key ON facts (user_id, subject, attribute, slot)",
        """CREATE TABLE provenance (
            fact_id BIGINT NOT NULL REFERENCES facts (id) DEFERRABLE INITIALLY DEFERRED,
            source_id TEXT COLLATE "C" NOT NULL,
            source_kind TEXT NOT NULL,
            source_version BIGINT NOT NULL,
            evidence TEXT NOT NULL,
            recorded_at TEXT COLLATE "C" NOT NULL,
            withdrawn_at TEXT,
            PRIMARY KEY (fact_id, source_id))""",
        """CREATE TABLE audit (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id TEXT COLLATE "C" NOT NULL,
            subject TEXT NOT NULL,
            attribute TEXT NOT NULL,
            value TEXT NOT NULL,
            source_id TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            source_version BIGINT,
            outcome TEXT NOT NULL,
            reason TEXT NOT NULL,
            fact_id BIGINT,
            support INTEGER NOT NULL,
            decided_at TEXT NOT NULL)""",
        "CREATE INDEX audit_by_user ON audit (user_id, id)",
    )),
)


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


class _Connections:
    """One autocommit connection per thread (psycopg connections are not shared), all closed together."""

    def __init__(self, dsn: str, schema: str | None, error: type[RuntimeError], connect_timeout: int):
        if schema is not None and not _SCHEMA_NAME.match(schema):
            raise error(f"schema {schema!r} must be lowercase letters, digits and _ (at most 63, not starting "
                        "with pg_), e.g. 'workshop'")
        self.dsn, self.schema, self.error = dsn, schema, error
        self.where = describe_dsn(dsn) + (f" (schema {schema})" if schema else "")
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._all: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> psycopg.Connection:
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
            if self.schema:  # created by _migrate, under its lock
                conn.execute("SELECT set_config('search_path', %s, false)", (self.schema,))
        except psycopg.Error as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            reason = redact_dsn(reason, self.dsn)  # libpq quotes the parts of a DSN it cannot parse
            raise self.error(f"could not connect to PostgreSQL at {self.where} ({reason}); check that the server "
                             "is running and the DSN is right (tests/setup_postgres.sh starts a local one)") from None
        with self._lock:
            self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self.closed = True


def _migrate(conns: _Connections, table: str, migrations: Sequence[tuple[int, str, tuple[str, ...]]],
             owned: Sequence[str]) -> None:
    """Apply missing migrations under an advisory lock; refuse newer or foreign schemas untouched."""
    conn = conns.get()
    latest = migrations[-1][0]
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("migrate", conns.schema or ""),))
        if conns.schema:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(conns.schema)))
        exists = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None
        if exists:
            done = {row[0] for row in conn.execute(sql.SQL("SELECT version FROM {}").format(
                sql.Identifier(table)))}
            if done and max(done) > latest:
                raise conns.error(f"{conns.where} was written by a newer version of the workshop ({table} version "
                                  f"{max(done)}; this code knows up to {latest}); nothing was changed - upgrade the "
                                  "helpers package or use another schema")
        else:
            clash = [name for name in owned if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]]
            if clash:
                raise conns.error(f"{conns.where} already has tables {', '.join(clash)} that this store did not "
                                  f"create (no {table} table); nothing was changed - use another database or schema=")
            conn.execute(sql.SQL("CREATE TABLE {} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                                         "applied_at TEXT NOT NULL)").format(sql.Identifier(table)))
            done = set()
        for version, name, statements in migrations:
            if version not in done:
                for statement in statements:
                    conn.execute(statement)
                conn.execute(sql.SQL("INSERT INTO {} (version, name, applied_at) VALUES (%s, %s, %s)").format(
                    sql.Identifier(table)), (version, name, now().isoformat()))


def _version(conns: _Connections, table: str) -> int:
    query = sql.SQL("SELECT MAX(version) FROM {}").format(sql.Identifier(table))
    return int(conns.get().execute(query).fetchone()[0] or 0)


# ---------------------------------------------------------------- sessions

_INFO_COLUMNS = ("user_id, session_id, revision, turns, dropped, title, created_at, updated_at, forked_from, "
                 "forked_at")


class PostgresSessionStore(SessionStoreBase):
    """SessionStore on PostgreSQL: per-session advisory locks, one transaction per save."""

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 5):
        self._conns = _Connections(dsn, schema, SessionStoreError, connect_timeout)
        self.where = self._conns.where
        try:
            _migrate(self._conns, SCHEMA_TABLE, SESSION_MIGRATIONS, ("sessions", "session_turns"))
        except psycopg.Error as err:
            self._conns.close()
            raise SessionStoreError(f"preparing the session tables on {self.where} failed "
                                    f"({self._reason(err)}); nothing was changed - check that this user may "
                                    "create tables there") from None

    def _reason(self, err: Exception) -> str:
        """A driver error as one line, with any password removed."""
        return redact_dsn(str(err).strip(), self._conns.dsn)

    @property
    def closed(self) -> bool:
        """True after close(): nothing can be read or saved any more."""
        return self._conns.closed

    def _write(self, user_id: str, session_id: str, encoded: EncodedSession, expected_revision: int | None,
               lineage: tuple[str, int] | None = None) -> int:
        conn = self._conns.get()
        at = now().isoformat()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("session", user_id, session_id),))
                cur = conn.cursor()
                return self._write_rows(lambda sql, args: conn.execute(sql.replace("?", "%s"), args),
                                        lambda sql, rows: cur.executemany(sql.replace("?", "%s"), rows),
                                        user_id, session_id, encoded, expected_revision, lineage, at)
        except psycopg.Error as err:
            raise SessionStoreError(f"saving {user_id}/{session_id} to {self.where} failed and was rolled back "
                                    f"({self._reason(err)}); the stored session is as it was - retry") from None

    def load_state(self, user_id: str, session_id: str) -> StoredSession:
        """The stored snapshot, read in one consistent snapshot."""
        check_ids(user_id, session_id)
        conn = self._conns.get()
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                row = conn.execute(f"SELECT {_INFO_COLUMNS}, header FROM sessions WHERE user_id = %s AND "
                                   "session_id = %s", (user_id, session_id)).fetchone()
                bodies = dict(conn.execute("SELECT turn_id, body FROM session_turns WHERE user_id = %s AND "
                                           "session_id = %s", (user_id, session_id)).fetchall())
        except psycopg.Error as err:
            raise SessionStoreError(f"reading {user_id}/{session_id} from {self.where} failed "
                                    f"({self._reason(err)})") from None
        if row is None:
            raise self._not_found(user_id, session_id, self.where)
        name = f"session {user_id}/{session_id} on {self.where}"
        return StoredSession(SessionInfo(*row[:-1]), decode_state(row[-1], bodies, name))

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""
        try:
            rows = self._conns.get().execute(f"SELECT {_INFO_COLUMNS} FROM sessions WHERE user_id = %s "
                                             "ORDER BY updated_at DESC, session_id", (user_id,)).fetchall()
        except psycopg.Error as err:
            raise SessionStoreError(f"listing {user_id}'s sessions on {self.where} failed "
                                    f"({self._reason(err)})") from None
        return [SessionInfo(*row) for row in rows]

    def delete(self, user_id: str, session_id: str) -> bool:
        """Remove one session and its turns."""
        conn = self._conns.get()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("session", user_id, session_id),))
                return conn.execute("DELETE FROM sessions WHERE user_id = %s AND session_id = %s",
                                    (user_id, session_id)).rowcount > 0
        except psycopg.Error as err:
            raise SessionStoreError(f"deleting {user_id}/{session_id} on {self.where} failed and was rolled back "
                                    f"({self._reason(err)}); retry") from None

    def schema_version(self) -> int:
        """The highest session migration applied."""
        return _version(self._conns, SCHEMA_TABLE)

    def close(self) -> None:
        """Close every connection this store opened."""
        self._conns.close()

    def __enter__(self) -> "PostgresSessionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- durable facts

_LOAD_SQL = (
    "SELECT w.n, f.id, f.value, f.value_key, f.status, f.superseded_by, p.source_id, p.source_kind, "
    "p.source_version, p.withdrawn_at FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::text[]) "
    "AS w (n, user_id, subject, attribute, slot) JOIN facts f ON f.user_id = w.user_id AND f.subject = w.subject "
    "AND f.attribute = w.attribute AND f.slot = w.slot LEFT JOIN provenance p ON p.fact_id = f.id "
    "ORDER BY w.n, f.id, p.source_id")


class _PGFactTransaction:
    """FactTransaction on one PostgreSQL connection, after the advisory locks for its keys."""

    def __init__(self, conn: psycopg.Connection):
        self._conn = conn
        self._ids: list[int] = []
        self._fetched = 0

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Every fact of each key, oldest first, with provenance (only the columns decisions need)."""
        found: dict[LockKey, list[StoredFact]] = {key: [] for key in keys}
        unique = list(found)
        if not unique:
            return found
        columns = [list(range(len(unique)))] + [[key[i] for key in unique] for i in range(4)]
        collect_facts(self._conn.execute(_LOAD_SQL, columns), unique, found)
        return found

    def new_fact_id(self) -> int:
        if not self._ids:  # one id first (most writes insert one fact), then blocks
            count = _ID_BLOCK if self._fetched else 1
            self._ids = [row[0] for row in self._conn.execute(
                "SELECT nextval('fact_ids') FROM generate_series(1, %s)", (count,))]
            self._fetched += count
        return self._ids.pop(0)

    def save(self, changes: Changes) -> None:
        cur = self._conn.cursor()
        save_changes(lambda sql, rows: cur.executemany(sql.replace("?", "%s"), rows), changes)


class PostgresFactStore:
    """FactStore on PostgreSQL: per-key advisory locks, a sequence for ids, one connection per thread."""

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 5):
        self._conns = _Connections(dsn, schema, FactStoreError, connect_timeout)
        self.where = self._conns.where
        _migrate(self._conns, "schema_migrations", FACT_MIGRATIONS, ("facts", "provenance", "audit"))

    @contextmanager
    def transaction(self, lock_keys: Sequence[LockKey] = ()) -> Iterator[_PGFactTransaction]:
        """BEGIN; advisory locks on every key (ascending, so no deadlocks); yield; COMMIT."""
        conn = self._conns.get()
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            raise FactStoreError("a fact transaction is already open on this thread; finish it before starting "
                                 "another (writes do not nest)")
        locks = sorted({lock_id("fact", *key) for key in lock_keys})
        try:
            with conn.transaction():
                if locks:
                    conn.cursor().executemany("SELECT pg_advisory_xact_lock(%s)", [(h,) for h in locks])
                yield _PGFactTransaction(conn)
        except psycopg.Error as err:
            raise FactStoreError(f"a write to {self.where} failed and was rolled back ({str(err).strip()}); nothing "
                                 "from this transaction was stored - retry it") from None

    def _read(self, query: str, params: Sequence[Any]) -> list[tuple]:
        try:
            return self._conns.get().execute(query, params).fetchall()
        except psycopg.Error as err:
            raise FactStoreError(f"reading facts from {self.where} failed ({str(err).strip()})") from None

    def read_facts(self, user_id: str, statuses: Sequence[str]) -> list[StoredFact]:
        """One user's facts with the given statuses (ordered by subject, attribute, id)."""
        sql = facts_store.read_facts_sql(len(statuses)).replace("?", "%s")
        return facts_store._group(self._read(sql, (user_id, *statuses)))

    def read_audit(self, user_id: str) -> list[AuditEntry]:
        """One user's decisions, oldest first."""
        return [AuditEntry(*row) for row in self._read(facts_store.READ_AUDIT_SQL.replace("?", "%s"), (user_id,))]

    def schema_version(self) -> int:
        """The highest fact migration applied."""
        return _version(self._conns, "schema_migrations")

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        self._conns.close()


def drop_schema(dsn: str, schema: str) -> None:
    """Delete a schema and everything in it (for throwaway test schemas; irreversible)."""
    if not _SCHEMA_NAME.match(schema):
        raise SessionStoreError(f"schema {schema!r} is not a plain lowercase name")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


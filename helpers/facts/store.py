"""Where durable facts live: a small storage protocol and its SQLite implementation (lesson 10).

The store offers transactional primitives only: inside ``transaction(lock_keys)`` the writer
loads the keys it is about to decide (``load_keys``), asks for ids of facts it will insert
(``new_fact_id``) and stores the outcome with one ``save(Changes)``: new facts, status
changes, provenance operations and one audit row per decision, all in the same transaction.
Every rule about *which* change to make lives in ``helpers.facts.writer``, so another backend
(PostgreSQL, say) only implements ``FactStore`` and ``FactTransaction`` - taking a lock per key
(e.g. ``pg_advisory_xact_lock``) before ``load_keys`` - and reuses the same tests.

Tables (migration 1):

* ``facts``: one row per value episode of a key. ``slot`` is ``''`` for single-valued
  attributes and the normalised value for multi-valued ones, so the key is
  ``(user_id, subject, attribute, slot)``.
* ``provenance``: which source asserted a fact, at which version; one row per
  ``(fact_id, source_id)``. Rows are never deleted; a source that moves to another value
  is marked ``withdrawn_at``.
* ``audit``: one row per decision, written in the same transaction as the change.

``facts.superseded_by`` and ``audit.fact_id`` are plain integers, not foreign keys: SQLite
checks a parent insert against every child column, and without an extra index on each that
check scans the table (it made inserts 6x slower); the writer is the only thing that sets them.
"""
from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, fields
from itertools import islice
from typing import ContextManager, Iterator, Protocol, Sequence

from helpers.clock import now
from helpers.errors import WorkshopError

ACTIVE, SUPERSEDED, CONFLICT, INELIGIBLE = "active", "superseded", "conflict", "ineligible"
FACT_STATUSES = (ACTIVE, SUPERSEDED, CONFLICT, INELIGIBLE)
LIVE_STATUSES = (ACTIVE, CONFLICT)
SOURCE_KINDS = ("user", "tool", "assistant")
ELIGIBLE_KINDS = ("user", "tool")

LockKey = tuple[str, str, str, str]  # (user_id, subject, attribute, slot)


class FactStoreError(WorkshopError, RuntimeError):
    """The fact database could not be opened, migrated or written; the message says what to try."""


@dataclass(slots=True)
class Provenance:
    """One source's assertion of a fact: who said it, at which version, with what evidence."""

    source_id: str
    source_kind: str
    source_version: int
    evidence: str = ""
    recorded_at: str = ""
    withdrawn_at: str | None = None

    @property
    def counts(self) -> bool:
        """True if this assertion counts as support (a user or tool source, not withdrawn)."""
        return self.withdrawn_at is None and self.source_kind in ELIGIBLE_KINDS


@dataclass(slots=True)
class StoredFact:
    """A fact row with its provenance."""

    id: int
    user_id: str
    subject: str
    attribute: str
    slot: str
    value: str
    value_key: str
    status: str
    created_at: str
    updated_at: str
    superseded_by: int | None = None
    provenance: list[Provenance] = field(default_factory=list)

    @property
    def supporters(self) -> set[str]:
        """Distinct source ids whose assertion currently counts as support."""
        return {p.source_id for p in self.provenance if p.withdrawn_at is None and p.source_kind in ELIGIBLE_KINDS}

    @property
    def support(self) -> int:
        """How many independent user/tool sources back this fact right now."""
        return len(self.supporters)


@dataclass(slots=True)
class AuditEntry:
    """One decision of the writer, as stored in the audit table."""

    user_id: str
    subject: str
    attribute: str
    value: str
    source_id: str
    source_kind: str
    source_version: int | None
    outcome: str
    reason: str
    fact_id: int | None
    support: int
    decided_at: str
    id: int | None = None


@dataclass(slots=True)
class Changes:
    """Everything one write transaction stores, in the order it must be applied.

    ``new_facts`` and ``changed_facts`` hold each touched fact once, in its final state;
    ``provenance`` is an ordered list of ``("put", fact_id, Provenance)`` and
    ``("withdraw", fact_id, source_id, at)`` operations; ``audit`` has one row per decision,
    a tuple in ``AUDIT_COLUMNS`` order (the fields of ``AuditEntry`` without ``id``).
    """

    new_facts: list[StoredFact] = field(default_factory=list)
    changed_facts: list[StoredFact] = field(default_factory=list)
    provenance: list[tuple] = field(default_factory=list)
    audit: list[tuple] = field(default_factory=list)


AUDIT_COLUMNS = tuple(f.name for f in fields(AuditEntry) if f.name != "id")
READ_AUDIT_SQL = f"SELECT {', '.join(AUDIT_COLUMNS)}, id FROM audit WHERE user_id = ? ORDER BY id"


class FactTransaction(Protocol):
    """Primitives available inside one write transaction (the writer decides how to use them)."""

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Every fact of each key (all statuses, oldest first) with provenance; absent keys map to [].

        The writer changes these lists and facts in place as it decides, then calls ``save``; a
        store that keeps them between transactions (``SQLiteFactStore``'s key cache) must forget
        them when the transaction fails."""

    def new_fact_id(self) -> int:
        """A fresh fact id, unique within the store, for a fact this transaction will insert."""

    def save(self, changes: Changes) -> None:
        """Store new facts, status changes, provenance operations and audit rows (all or nothing)."""


class FactStore(Protocol):
    """A durable fact store: transactions serialised per key, plus reads for review."""

    def transaction(self, lock_keys: Sequence[LockKey] = ()) -> ContextManager[FactTransaction]:
        """A write transaction; no other transaction touching ``lock_keys`` runs at the same time."""

    def read_facts(self, user_id: str, statuses: Sequence[str]) -> list[StoredFact]:
        """One user's facts with the given statuses, with provenance."""

    def read_audit(self, user_id: str) -> list[AuditEntry]:
        """One user's audit log, oldest decision first."""

    def schema_version(self) -> int:
        """The highest migration applied to this store."""

    def close(self) -> None:
        """Release connections."""


MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "create facts, provenance and audit", (
        """CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            subject TEXT NOT NULL,
            attribute TEXT NOT NULL,
            slot TEXT NOT NULL,
            value TEXT NOT NULL,
            value_key TEXT NOT NULL,
            status TEXT NOT NULL,
            superseded_by INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        "CREATE INDEX facts_by_key ON facts (user_id, subject, attribute, slot)",
        """CREATE TABLE provenance (
            fact_id INTEGER NOT NULL REFERENCES facts(id) DEFERRABLE INITIALLY DEFERRED,
            source_id TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            source_version INTEGER NOT NULL,
            evidence TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            withdrawn_at TEXT,
            PRIMARY KEY (fact_id, source_id)) WITHOUT ROWID""",
        """CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            subject TEXT NOT NULL,
            attribute TEXT NOT NULL,
            value TEXT NOT NULL,
            source_id TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            source_version INTEGER,
            outcome TEXT NOT NULL,
            reason TEXT NOT NULL,
            fact_id INTEGER,
            support INTEGER NOT NULL,
            decided_at TEXT NOT NULL)""",
        "CREATE INDEX audit_by_user ON audit (user_id, id)",
    )),
)

_FACT_COLUMNS = ("f.id, f.user_id, f.subject, f.attribute, f.slot, f.value, f.value_key, f.status, "
                 "f.created_at, f.updated_at, f.superseded_by, p.source_id, p.source_kind, "
                 "p.source_version, p.evidence, p.recorded_at, p.withdrawn_at")
_KEYS_PER_QUERY = 64
_LOAD_SQL = (
    "WITH wanted (n, user_id, subject, attribute, slot) AS (VALUES "
    + ", ".join("(?, ?, ?, ?, ?)" for _ in range(_KEYS_PER_QUERY))
    + ") SELECT w.n, f.id, f.value, f.value_key, f.status, f.superseded_by, p.source_id, p.source_kind, "
    "p.source_version, p.withdrawn_at FROM wanted w JOIN facts f ON f.user_id = w.user_id "
    "AND f.subject = w.subject AND f.attribute = w.attribute AND f.slot = w.slot "
    "LEFT JOIN provenance p ON p.fact_id = f.id ORDER BY w.n, f.id")


def read_facts_sql(statuses: int) -> str:
    """One user's facts with ``statuses`` given statuses, with provenance (``?`` placeholders; every backend)."""
    marks = ", ".join("?" * statuses) or "NULL"
    return (f"SELECT {_FACT_COLUMNS} FROM facts f LEFT JOIN provenance p ON p.fact_id = f.id "
            f"WHERE f.user_id = ? AND f.status IN ({marks}) "
            "ORDER BY f.subject, f.attribute, f.id, p.recorded_at, p.source_id")


def _group(rows: Sequence[tuple]) -> list[StoredFact]:
    """Fold fact+provenance join rows into StoredFact objects (rows ordered by fact id)."""
    facts: dict[int, StoredFact] = {}
    for row in rows:
        fact = facts.get(row[0])
        if fact is None:
            fact = facts[row[0]] = StoredFact(*row[:11])
        if row[11] is not None:
            fact.provenance.append(Provenance(*row[11:]))
    return list(facts.values())


def collect_facts(rows, keys: Sequence, found: dict) -> None:
    """Group load rows (key index, fact columns, then one provenance per row) into StoredFacts in ``found``.

    Shared by every backend: rows come ordered by key index and fact id, as the backends' _LOAD_SQL returns them.
    """
    last: StoredFact | None = None
    for n, fact_id, value, value_key, status, superseded_by, *prov in rows:
        if last is None or last.id != fact_id:
            key = keys[n]
            last = StoredFact(fact_id, *key, value, value_key, status, "", "", superseded_by)
            found[key].append(last)
        if prov[0] is not None:
            last.provenance.append(Provenance(prov[0], prov[1], prov[2], "", "", prov[3]))


def save_changes(executemany, changes: Changes) -> None:
    """Write one batch of changes with ``executemany(sql, rows)``; SQL uses ``?`` placeholders.

    Shared by every backend (PostgreSQL passes an ``executemany`` that turns ``?`` into ``%s``).
    Provenance operations keep their order: consecutive ones of one kind go in one call.
    """
    def run(sql: str, rows: list) -> None:
        if rows:
            executemany(sql, rows)

    run("INSERT INTO facts (id, user_id, subject, attribute, slot, value, value_key, status, superseded_by, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(f.id, f.user_id, f.subject, f.attribute, f.slot, f.value, f.value_key, f.status, f.superseded_by,
          f.created_at, f.updated_at) for f in changes.new_facts])
    run("UPDATE facts SET status = ?, superseded_by = ?, updated_at = ? WHERE id = ?",
        [(f.status, f.superseded_by, f.updated_at, f.id) for f in changes.changed_facts])
    ops, start = changes.provenance, 0
    while start < len(ops):
        end = start
        while end < len(ops) and ops[end][0] == ops[start][0]:
            end += 1
        if ops[start][0] == "put":
            run("INSERT INTO provenance (fact_id, source_id, source_kind, source_version, evidence, recorded_at, "
                "withdrawn_at) VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT (fact_id, source_id) DO UPDATE SET "
                "source_kind = excluded.source_kind, source_version = excluded.source_version, "
                "evidence = excluded.evidence, withdrawn_at = NULL",
                [(fid, p.source_id, p.source_kind, p.source_version, p.evidence, p.recorded_at)
                 for _, fid, p in ops[start:end]])
        else:
            run("UPDATE provenance SET withdrawn_at = ? WHERE fact_id = ? AND source_id = ?",
                [(at, fid, source_id) for _, fid, source_id, at in ops[start:end]])
        start = end
    run(f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES ({', '.join('?' * len(AUDIT_COLUMNS))})",
        changes.audit)


class _KeyCache:
    """The committed rows of recently decided keys, kept by one connection between its transactions.

    Valid only while no other connection has committed: ``PRAGMA data_version`` (read after
    ``BEGIN IMMEDIATE``, when nobody else can commit) changes exactly when another connection
    has, and then the cache is emptied. A failed transaction empties it too, because the writer
    changes cached rows in place before saving. After each commit at most ``limit`` keys are
    kept; the oldest loaded go first. A connection's own commits do not change its
    ``data_version``, so anything that writes fact rows must go through the writer (or a new store).
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.version: int | None = None
        self.keys: dict[LockKey, list[StoredFact]] = {}
        self.next_id: int | None = None

    def begin(self, version: int) -> None:
        """Called inside BEGIN IMMEDIATE: forget everything if another connection has committed since."""
        if version != self.version:
            self.drop()
            self.version = version

    def trim(self) -> None:
        """Called after COMMIT: keep at most ``limit`` keys (a big batch may have added many)."""
        if len(self.keys) > self.limit:
            for key in list(islice(self.keys, len(self.keys) - self.limit)):
                del self.keys[key]

    def drop(self) -> None:
        self.keys.clear()
        self.next_id = self.version = None


class _SQLiteTransaction:
    """FactTransaction on one SQLite connection inside BEGIN IMMEDIATE."""

    def __init__(self, conn: sqlite3.Connection, cache: _KeyCache):
        self._conn = conn
        self._cache = cache

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Cached keys come from memory; the rest are queried, with only the columns decisions need
        (timestamps and evidence are left empty). The returned lists are the cache's own."""
        found: dict[LockKey, list[StoredFact]] = {}
        cached = self._cache.keys if self._cache.limit else {}
        missing = []
        for key in keys:
            rows = cached.get(key)
            if rows is None:
                missing.append(key)
                rows = cached[key] = []
            found[key] = rows
        for start in range(0, len(missing), _KEYS_PER_QUERY):
            chunk = missing[start:start + _KEYS_PER_QUERY]
            params: list = []
            for n, key in enumerate(chunk):
                params += (n, *key)
            params += (-1, "", "", "", "") * (_KEYS_PER_QUERY - len(chunk))
            collect_facts(self._conn.execute(_LOAD_SQL, params), chunk, found)
        return found

    def new_fact_id(self) -> int:
        cache = self._cache
        if cache.next_id is None:
            cache.next_id = self._conn.execute("SELECT COALESCE(MAX(id), 0) FROM facts").fetchone()[0]
        cache.next_id += 1
        return cache.next_id

    def save(self, changes: Changes) -> None:
        save_changes(self._conn.executemany, changes)


class SQLiteFactStore:
    """FactStore on SQLite: WAL journal, a busy timeout, BEGIN IMMEDIATE writes, one connection per thread.

    ``path`` may be ``":memory:"`` (one shared connection, for quick experiments) or a file
    path; a file store can be shared by threads and processes. Each thread's connection is
    kept until ``close()``. ``synchronous = NORMAL``: a committed write survives a killed
    process; only a power cut can lose the last few commits.

    ``cache_keys``: each connection remembers the rows of up to this many recently decided
    keys (about 0.5 KB each), so a replay or a paraphrase of a recent statement is decided
    without a query; the memory is dropped whenever another connection (another thread or
    process) has committed, or a write fails. ``0`` turns it off.
    """

    def __init__(self, path: str, *, timeout: float = 30.0, cache_keys: int = 50_000):
        self.path = str(path)
        self.timeout = timeout
        self.cache_keys = max(0, int(cache_keys))
        self._caches: dict[int, _KeyCache] = {}
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._memory = self.path == ":memory:"
        self._shared: sqlite3.Connection | None = None
        self._guard = threading.RLock() if self._memory else None
        self._closed = False
        self._migrate()

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
            if not self._memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise FactStoreError(f"{self.path} refused WAL mode (got {mode!r}); put the database on a "
                                         "local disk, not a network share")
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")  # PRAGMA takes no parameters
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -65536")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as err:
            raise FactStoreError(f"could not open the fact database {self.path}: {err}; check that the folder "
                                 "exists and is writable") from None
        with self._all_lock:
            self._all.append(conn)
            self._caches[id(conn)] = _KeyCache(self.cache_keys)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise FactStoreError("this fact store is closed; open a new one with SQLiteFactStore(path)")
        if self._memory:
            if self._shared is None:
                self._shared = self._connect()
            return self._shared
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def _migrate(self) -> None:
        with self.transaction() as _:
            conn = self._conn()
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                         "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, name, statements in MIGRATIONS:
                if version in done:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                             (version, name, now().isoformat()))

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        row = self._read("SELECT MAX(version) FROM schema_migrations", ())
        return int(row[0][0] or 0)

    @contextmanager
    def transaction(self, lock_keys: Sequence[LockKey] = ()) -> Iterator[_SQLiteTransaction]:
        """BEGIN IMMEDIATE ... COMMIT; SQLite's write lock covers every key, so ``lock_keys`` is not needed."""
        conn = self._conn()
        with self._guard or nullcontext():
            if conn.in_transaction:
                raise FactStoreError("a fact transaction is already open on this thread; finish it before "
                                     "starting another (writes do not nest)")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise FactStoreError(f"could not start a write on {self.path} within {self.timeout}s ({err}); "
                                     "another process holds the write lock - retry, or raise timeout") from None
            cache = self._caches[id(conn)]
            try:
                cache.begin(conn.execute("PRAGMA data_version").fetchone()[0])
                yield _SQLiteTransaction(conn, cache)
                conn.execute("COMMIT")
                cache.trim()
            except sqlite3.Error as err:
                cache.drop()
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise FactStoreError(f"a write to {self.path} failed and was rolled back ({err}); nothing from "
                                     "this transaction was stored - retry it") from None
            except BaseException:
                cache.drop()
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _read(self, sql: str, params: tuple) -> list[tuple]:
        conn = self._conn()
        with self._guard or nullcontext():
            return conn.execute(sql, params).fetchall()

    def read_facts(self, user_id: str, statuses: Sequence[str]) -> list[StoredFact]:
        """One user's facts with the given statuses (ordered by subject, attribute, id)."""
        return _group(self._read(read_facts_sql(len(statuses)), (user_id, *statuses)))

    def read_audit(self, user_id: str) -> list[AuditEntry]:
        """One user's decisions, oldest first."""
        return [AuditEntry(*row) for row in self._read(READ_AUDIT_SQL, (user_id,))]

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._caches.clear()
        self._closed = True

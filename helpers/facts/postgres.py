"""Durable facts on PostgreSQL (notebook 10): ``PostgresFactStore`` implements ``FactStore``.

``FactMemory`` runs on it unchanged. ``transaction(lock_keys)`` takes ``pg_advisory_xact_lock`` on each
key (ascending, so two writers never deadlock) before ``load_keys`` reads anything, so decisions about one
key are serialised while other keys proceed in parallel. Fact ids come from a sequence (``fact_ids``),
fetched in small blocks; gaps are fine, ids are only unique. The table definitions repeat the SQLite ones
in ``helpers.facts.store`` with PostgreSQL's types: the dialects differ, so each keeps its own.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import psycopg
from psycopg import pq

from helpers.facts import store as facts_store
from helpers.facts.store import (AuditEntry, Changes, FactStoreError, LockKey, StoredFact, collect_facts,
                                 save_changes)
from helpers.postgres import Connections, lock_id, migrate, schema_version

_ID_BLOCK = 16  # fact ids fetched from the sequence per round trip

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
        self._conns = Connections(dsn, schema, FactStoreError, connect_timeout)
        self.where = self._conns.where
        migrate(self._conns, "schema_migrations", FACT_MIGRATIONS, ("facts", "provenance", "audit"))

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
        return schema_version(self._conns, "schema_migrations")

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        self._conns.close()

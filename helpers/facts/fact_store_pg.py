"""Durable facts on PostgreSQL (notebook 10): ``PostgresFactStore`` implements ``FactStore``.

``FactMemory`` runs on it unchanged. ``transaction(lock_keys)`` first takes one lock per key - a
PostgreSQL "advisory" lock, a lock on a number (a hash of the key) that only our code agrees to respect -
in ascending order, so two writers never wait for each other in a circle. Decisions about one key are
therefore made one at a time, while other keys proceed in parallel. Fact ids come from a sequence
(``fact_ids``), fetched in small blocks; gaps are fine, ids are only unique.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import psycopg
from psycopg import pq

from helpers.facts.fact_store import (OWNED_TABLES, READ_AUDIT_SQL, REJECTED_VERSIONS_SQL, SCHEMA_TABLE,
                                      SELECT_FACTS, AuditEntry, Changes, FactStoreError, LockKey, StoredFact,
                                      fact_migrations, facts_by_key, facts_from_rows, forget_fact_rows,
                                      forget_user_rows, read_facts_sql, save_changes, version_after)
from helpers.core.migrations import POSTGRES
from helpers.core.postgres import Connections, check_schema, lock_id, migrate, schema_version

_ID_BLOCK = 16  # fact ids fetched from the sequence per round trip

# The tables of helpers.facts.fact_store in PostgreSQL's dialect: BIGINT ids from a sequence, COLLATE "C" so
# text sorts byte by byte as in SQLite, and no WITHOUT ROWID (a SQLite storage option).
FACT_MIGRATIONS = fact_migrations(POSTGRES, first=("CREATE SEQUENCE fact_ids",))

# The next version of a source in one statement: the row's lock makes two callers take turns. The CASE keeps
# the arithmetic in range: at the largest BIGINT it gives a value version_after refuses.
_RESERVE_SQL = ("INSERT INTO source_versions AS v (user_id, source_id, last_version) VALUES (%s, %s, %s) "
                "ON CONFLICT (user_id, source_id) DO UPDATE SET last_version = CASE "
                "WHEN v.last_version >= 9223372036854775807 THEN v.last_version "
                "WHEN v.last_version + 1 > excluded.last_version THEN v.last_version + 1 "
                "ELSE excluded.last_version END "
                "RETURNING last_version, xmax <> 0")

# The keys to load arrive as four parallel arrays (user ids, subjects, attributes, slots).
_LOAD_SQL = (f"{SELECT_FACTS} WHERE (f.user_id, f.subject, f.attribute, f.slot) IN "
             "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])) "
             "ORDER BY f.id, p.recorded_at, p.source_id")


class _PGFactTransaction:
    """FactTransaction on one PostgreSQL connection, after the locks on its keys."""

    def __init__(self, conn: psycopg.Connection):
        self._conn = conn
        self._ids: list[int] = []
        self._fetched = 0

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Every fact of each key, oldest first, with provenance (one query for all keys)."""
        if not keys:
            return {}
        columns = [[key[i] for key in keys] for i in range(4)]
        return facts_by_key(keys, self._conn.execute(_LOAD_SQL, columns).fetchall())

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

    def execute(self, sql: str, params: Sequence = ()) -> psycopg.Cursor:
        """One statement inside this transaction (``?`` placeholders, as every backend writes them)."""
        return self._conn.execute(sql.replace("?", "%s"), params)


class PostgresFactStore:
    """FactStore on PostgreSQL: a lock per key, a sequence for ids, one connection per thread."""

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 5):
        self._conns = Connections(dsn, schema, FactStoreError, connect_timeout)
        self.where = self._conns.where
        migrate(self._conns, SCHEMA_TABLE, FACT_MIGRATIONS, OWNED_TABLES)

    @staticmethod
    def check_database(dsn: str, *, schema: str | None = None, connect_timeout: int = 5) -> None:
        """Raise FactStoreError where opening would refuse the database; reads only, creates nothing
        (``open_stores`` runs it with ``PostgresSessionStore.check_database`` before opening either store)."""
        check_schema(dsn, schema, FactStoreError, connect_timeout, SCHEMA_TABLE, FACT_MIGRATIONS, OWNED_TABLES)

    @contextmanager
    def transaction(self, lock_keys: Sequence[LockKey] = ()) -> Iterator[_PGFactTransaction]:
        """BEGIN; lock every key (ascending, so two writers never wait for each other in a circle); COMMIT."""
        conn = self._conns.get()
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            raise FactStoreError("a fact transaction is already open on this thread; finish it before "
                                 "starting another (writes do not nest)")
        locks = sorted({lock_id("fact", *key) for key in lock_keys})
        try:
            with conn.transaction():
                if locks:
                    conn.cursor().executemany("SELECT pg_advisory_xact_lock(%s)", [(h,) for h in locks])
                yield _PGFactTransaction(conn)
        except psycopg.Error as err:
            raise FactStoreError(f"a write to {self.where} failed and was rolled back ({str(err).strip()}); "
                                 "nothing from this transaction was stored - retry it") from None

    def _read(self, query: str, params: Sequence[Any]) -> list[tuple]:
        try:
            return self._conns.get().execute(query, params).fetchall()
        except psycopg.Error as err:
            raise FactStoreError(f"reading facts from {self.where} failed ({str(err).strip()})") from None

    def read_facts(self, user_id: str, statuses: Sequence[str]) -> list[StoredFact]:
        """One user's facts with the given statuses (ordered by subject, attribute, id)."""
        sql = read_facts_sql(len(statuses)).replace("?", "%s")
        return facts_from_rows(self._read(sql, (user_id, *statuses)))

    def read_audit(self, user_id: str) -> list[AuditEntry]:
        """One user's decisions, oldest first."""
        return [AuditEntry(*row) for row in self._read(READ_AUDIT_SQL.replace("?", "%s"), (user_id,))]

    def reserve_version(self, user_id: str, source_id: str, at_least: int = 0) -> int:
        """The next version of this source (``FactStore.reserve_version``), committed before returning: one
        upsert whose row lock makes concurrent callers take turns, so no two get the same number."""
        version_after(None, at_least)  # the argument's check
        conn = self._conns.get()
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            raise FactStoreError("a fact transaction is open on this thread; reserve versions before or after it")
        try:
            with conn.transaction():
                last, existed = conn.execute(_RESERVE_SQL, (user_id, source_id, at_least)).fetchone()
                if existed and last == 9223372036854775807:
                    version_after(last, at_least)  # raises: no higher version can be stored
        except psycopg.Error as err:
            raise FactStoreError(f"reserving a fact version on {self.where} failed ({str(err).strip()}); "
                                 "nothing was changed - retry") from None
        return last

    def rejected_versions(self, user_id: str, source_id: str) -> set[int]:
        """The versions of this source audited as ``rejected``."""
        return {row[0] for row in self._read(REJECTED_VERSIONS_SQL.replace("?", "%s"), (user_id, source_id))}

    def forget(self, user_id: str, fact_ids: Sequence[int], *, source_id: str, reason: str, at: str,
               texts: Sequence[str] = (), restore: Sequence[int] = (),
               hide_attribute: bool = True) -> list[AuditEntry]:
        """Delete these facts, audited as deletions (``forget_fact_rows``), under their keys' locks."""
        facts = [f for f in self.read_facts(user_id, ("active", "superseded", "conflict", "ineligible"))
                 if f.id in set(fact_ids)]
        keys = [(f.user_id, f.subject, f.attribute, f.slot) for f in facts]
        with self.transaction(keys) as txn:
            return forget_fact_rows(txn.execute, user_id, fact_ids, source_id=source_id, reason=reason, at=at,
                                    texts=texts, restore=restore, hide_attribute=hide_attribute)

    def forget_user(self, user_id: str) -> int:
        """Delete every row of ``user_id`` (``forget_user_rows``); returns how many rows went."""
        with self.transaction() as txn:
            return forget_user_rows(txn.execute, user_id)

    def schema_version(self) -> int:
        """The highest fact migration applied."""
        return schema_version(self._conns, SCHEMA_TABLE)

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        self._conns.close()

"""Where durable facts live: a small storage protocol and its SQLite implementation (notebook 10).

The store offers transactional primitives only: inside ``transaction(lock_keys)`` the writer
loads the keys it is about to decide (``load_keys``), asks for ids of facts it will insert
(``new_fact_id``) and stores the outcome with one ``save(Changes)``: new facts, status
changes, provenance operations and one audit row per decision, all in the same transaction.
``WorkingSet`` collects those changes while the writer decides. Every rule about *which*
change to make lives in ``helpers.facts.writer``, so another backend (``helpers.facts.fact_store_pg``)
only implements ``FactStore`` and ``FactTransaction`` - making sure two transactions never
decide the same key at once - and reuses the same tests.

Tables (migration 1):

* ``facts``: one row per value episode of a key. ``slot`` is ``''`` for single-valued
  attributes and the normalised value for multi-valued ones, so the key is
  ``(user_id, subject, attribute, slot)``.
* ``provenance``: which source asserted a fact, at which version; one row per
  ``(fact_id, source_id)``. Rows are never deleted; a source that moves to another value
  is marked ``withdrawn_at``.
* ``audit``: one row per decision, written in the same transaction as the change.

Table of migration 2:

* ``source_versions``: per ``(user_id, source_id)`` the highest version handed out or recorded
  (``last_version``). ``reserve_version`` hands out the next one atomically, and every saved decision
  raises it to its own version, so a version reserved later is always higher than every version the
  source has recorded - in any session, branch or process. It starts from the highest version already in
  ``provenance`` and ``audit`` (rejected candidates changed nothing and do not count).

``facts.superseded_by`` and ``audit.fact_id`` are plain integers, not foreign keys: SQLite
checks a parent insert against every child column, and without an extra index on each that
check scans the table (it made inserts 6x slower); the writer is the only thing that sets them.

``SQLiteFactStore`` writes only to a file that is ours (``check_schema``): a new or empty one, one
with the fact store's ``schema_migrations``, or one holding only the session store's tables
(``helpers.sessions.session_store``; notebook 12 keeps sessions and facts in one file). A file that is not
SQLite, holds someone else's tables, or has a newer fact schema is refused with a ``FactStoreError``
naming it, and left untouched - it is inspected before anything, even WAL mode, is set.
"""
from __future__ import annotations

import sqlite3
import threading
import json
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ContextManager, Iterator, Protocol, Sequence

from helpers.core.errors import WorkshopError
from helpers.core.migrations import SQLITE, Dialect, Migration, apply_migrations

ACTIVE, SUPERSEDED, CONFLICT, INELIGIBLE = "active", "superseded", "conflict", "ineligible"
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
    recorded_at: str = ""  # when the source last stated it (its newest version; a restatement refreshes it)
    withdrawn_at: str | None = None


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
        return {p.source_id for p in self.provenance
                if p.withdrawn_at is None and p.source_kind in ELIGIBLE_KINDS}

    @property
    def support(self) -> int:
        """How many independent user/tool sources back this fact right now."""
        return len(self.supporters)


@dataclass(slots=True)
class Statement:
    """Who stated which value of which attribute: what a checked candidate (``helpers.facts.schema``) and the
    audit entry of its decision both begin with."""

    user_id: str
    subject: str
    attribute: str
    value: str
    source_id: str
    source_kind: str


@dataclass(slots=True)
class AuditEntry(Statement):
    """One decision of the writer, as stored in the audit table (its columns: the statement's, then these)."""

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
    ``("withdraw", fact_id, source_id, at)`` operations; ``audit`` has one entry per decision.
    """

    new_facts: list[StoredFact] = field(default_factory=list)
    changed_facts: list[StoredFact] = field(default_factory=list)
    provenance: list[tuple] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)


AUDIT_COLUMNS = tuple(f.name for f in fields(AuditEntry) if f.name != "id")
READ_AUDIT_SQL = f"SELECT {', '.join(AUDIT_COLUMNS)}, id FROM audit WHERE user_id = ? ORDER BY id"


class FactTransaction(Protocol):
    """Primitives available inside one write transaction (the writer decides how to use them)."""

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Every fact of each key (all statuses, oldest first) with provenance; absent keys map to []."""

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

    def reserve_version(self, user_id: str, source_id: str, at_least: int = 0) -> int:
        """The next version of this source for this user, stored before returning (see ``source_versions``).

        It is ``at_least`` or, when that is not higher, one more than the highest version handed out or
        recorded for the source; two callers never get the same number."""

    def rejected_versions(self, user_id: str, source_id: str) -> set[int]:
        """The versions of this source whose candidates were audited as ``rejected`` (malformed)."""

    def close(self) -> None:
        """Release connections."""


def fact_migrations(d: Dialect, first: tuple[str, ...] = ()) -> tuple[Migration, ...]:
    """The fact tables in dialect ``d``: ``SQLITE`` here, ``POSTGRES`` in ``helpers.facts.fact_store_pg`` (whose
    ids come from a sequence it creates ``first``). Applied migrations never change (tests pin each dialect's
    text); a table change is a new migration."""
    return (
        (1, "create facts, provenance and audit", (
            *first,
            f"""CREATE TABLE facts (
            id {d.big_int} PRIMARY KEY,
            user_id {d.key_text} NOT NULL,
            subject {d.key_text} NOT NULL,
            attribute {d.key_text} NOT NULL,
            slot {d.key_text} NOT NULL,
            value TEXT NOT NULL,
            value_key TEXT NOT NULL,
            status TEXT NOT NULL,
            superseded_by {d.big_int},
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
            "CREATE INDEX facts_by_key ON facts (user_id, subject, attribute, slot)",
            f"""CREATE TABLE provenance (
            fact_id {d.big_int} NOT NULL REFERENCES facts(id) DEFERRABLE INITIALLY DEFERRED,
            source_id {d.key_text} NOT NULL,
            source_kind TEXT NOT NULL,
            source_version {d.big_int} NOT NULL,
            evidence TEXT NOT NULL,
            recorded_at {d.key_text} NOT NULL,
            withdrawn_at TEXT,
            PRIMARY KEY (fact_id, source_id)){d.table_suffix}""",
            f"""CREATE TABLE audit (
            id {d.identity},
            user_id {d.key_text} NOT NULL,
            subject TEXT NOT NULL,
            attribute TEXT NOT NULL,
            value TEXT NOT NULL,
            source_id TEXT NOT NULL,
            source_kind TEXT NOT NULL,
            source_version {d.big_int},
            outcome TEXT NOT NULL,
            reason TEXT NOT NULL,
            fact_id {d.big_int},
            support INTEGER NOT NULL,
            decided_at TEXT NOT NULL)""",
            "CREATE INDEX audit_by_user ON audit (user_id, id)",
        )),
        (2, "create source_versions", (
            f"""CREATE TABLE source_versions (
            user_id {d.key_text} NOT NULL,
            source_id {d.key_text} NOT NULL,
            last_version {d.big_int} NOT NULL,
            PRIMARY KEY (user_id, source_id)){d.table_suffix}""",
            """INSERT INTO source_versions (user_id, source_id, last_version)
            SELECT user_id, source_id, MAX(version) FROM (
                SELECT f.user_id AS user_id, p.source_id AS source_id, p.source_version AS version
                    FROM provenance p JOIN facts f ON f.id = p.fact_id
                UNION ALL
                SELECT user_id, source_id, source_version FROM audit
                    WHERE source_version IS NOT NULL AND outcome <> 'rejected') AS recorded
            GROUP BY user_id, source_id""",
        )),
    )


MIGRATIONS = fact_migrations(SQLITE)  # this module's dialect: INTEGER ids, WITHOUT ROWID, SQLite's text order

SCHEMA_TABLE = "schema_migrations"  # which MIGRATIONS a file has had: (version, name, applied_at)
_SCHEMA_COLUMNS = ["version", "name", "applied_at"]
# Every table the fact store creates (MIGRATIONS and SCHEMA_TABLE): a file holding only these is the workshop's,
# and another of its stores may share it (the session store reads this to accept such a file).
OWNED_TABLES = ("facts", "provenance", "audit", "source_versions")  # what MIGRATIONS create, in that order
FACT_STORE_TABLES = frozenset({SCHEMA_TABLE, *OWNED_TABLES})
# The workshop's other stores that may keep their tables in a fact store's file (notebook 12 keeps sessions and
# facts in one), each recognised by its own schema table: schema table -> every table that store creates. Each
# store registers its own (``share_file_with``; the session store does when ``helpers.sessions.session_store`` is
# imported), so its table names are written once, in its own module, and this layer imports none of them.
SHARED_FILE_TABLES: dict[str, frozenset[str]] = {}


def share_file_with(schema_table: str, tables: frozenset[str]) -> None:
    """Let a fact store's file also hold ``tables``, the whole set of another workshop store, marked by its
    ``schema_table`` (one of ``tables``)."""
    if schema_table not in tables or tables & FACT_STORE_TABLES:
        raise ValueError(f"{schema_table!r} must be one of the tables {sorted(tables)}, none of them the fact store's")
    SHARED_FILE_TABLES[schema_table] = frozenset(tables)


def check_schema(conn: sqlite3.Connection, path: str) -> None:
    """Raise FactStoreError unless the database on ``conn`` is ours to migrate and write; reads only.

    Ours: no tables yet; a ``schema_migrations`` table laid out like ours that records only our
    migrations (by version and name) - refused if it records a newer version than this code knows;
    or only the tables of another workshop store registered with ``share_file_with`` (the session store's,
    with its ``session_schema`` table).
    """
    names = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}

    def foreign(what: str) -> FactStoreError:
        return FactStoreError(f"{path} is a SQLite database of something else ({what}); it was left untouched "
                              "- pass another path (facts share a file only with the workshop's session store)")

    if SCHEMA_TABLE in names:
        columns = [row[0] for row in conn.execute("SELECT name FROM pragma_table_info(?)", (SCHEMA_TABLE,))]
        if columns != _SCHEMA_COLUMNS:
            raise foreign(f"its {SCHEMA_TABLE} table has columns {', '.join(columns)}, not the fact store's")
        recorded = dict(conn.execute(f"SELECT version, name FROM {SCHEMA_TABLE} ORDER BY version").fetchall())
        ours = {version: name for version, name, _ in MIGRATIONS}
        latest = MIGRATIONS[-1][0]
        strangers = [(v, n) for v, n in recorded.items()
                     if not isinstance(v, int) or (v <= latest and ours.get(v) != n)]
        if strangers:
            raise foreign(f"its {SCHEMA_TABLE} table records migrations the fact store never made, such as "
                          f"{strangers[0][0]!r} {strangers[0][1]!r}")
        newest = max(recorded, default=0)
        if newest > latest:
            raise FactStoreError(f"{path} was written by a newer version of the workshop (fact schema {newest}; "
                                 f"this code knows up to {latest}); it was left untouched - upgrade the helpers "
                                 "package (pip install -U ...) or pass another path")
        if recorded:
            return
        names.discard(SCHEMA_TABLE)  # laid out like ours but empty: ours only if nothing else is there
    for schema_table, tables in SHARED_FILE_TABLES.items():
        if schema_table in names:
            names -= tables
    if names:
        shown = sorted(names)
        raise foreign(f"tables: {', '.join(shown[:5])}{', ...' if len(shown) > 5 else ''}; "
                      f"no {SCHEMA_TABLE} table of the fact store")


_FACT_COLUMNS = ("f.id, f.user_id, f.subject, f.attribute, f.slot, f.value, f.value_key, f.status, "
                 "f.created_at, f.updated_at, f.superseded_by, p.source_id, p.source_kind, "
                 "p.source_version, p.evidence, p.recorded_at, p.withdrawn_at")
SELECT_FACTS = f"SELECT {_FACT_COLUMNS} FROM facts f LEFT JOIN provenance p ON p.fact_id = f.id"
_PROVENANCE_ORDER = "f.id, p.recorded_at, p.source_id"  # a fact's rows stay together, oldest fact first


def read_facts_sql(statuses: int) -> str:
    """One user's facts with ``statuses`` statuses, with provenance (``?`` placeholders; every backend)."""
    marks = ", ".join("?" * statuses) or "NULL"
    return (f"{SELECT_FACTS} WHERE f.user_id = ? AND f.status IN ({marks}) "
            f"ORDER BY f.subject, f.attribute, {_PROVENANCE_ORDER}")


# The keys to load arrive as one JSON array of [user_id, subject, attribute, slot] (one parameter, any count).
_LOAD_SQL = (f"{SELECT_FACTS} WHERE (f.user_id, f.subject, f.attribute, f.slot) IN (SELECT "
             "json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), "
             f"json_extract(value, '$[3]') FROM json_each(?)) ORDER BY {_PROVENANCE_ORDER}")


def facts_from_rows(rows: Sequence[tuple]) -> list[StoredFact]:
    """Fold fact+provenance join rows (a fact's rows together) into StoredFact objects; every backend."""
    facts: dict[int, StoredFact] = {}
    for row in rows:
        fact = facts.get(row[0])
        if fact is None:
            fact = facts[row[0]] = StoredFact(*row[:11])
        if row[11] is not None:
            fact.provenance.append(Provenance(*row[11:]))
    return list(facts.values())


def facts_by_key(keys: Sequence[LockKey], rows: Sequence[tuple]) -> dict[LockKey, list[StoredFact]]:
    """``load_keys``'s answer from its rows: every key's facts, oldest first ([] for a key with none)."""
    found: dict[LockKey, list[StoredFact]] = {key: [] for key in keys}
    for fact in facts_from_rows(rows):
        found[(fact.user_id, fact.subject, fact.attribute, fact.slot)].append(fact)
    return found


# A saved decision raises its source's counter to its own version (never lowers it); every backend.
RAISE_VERSION_SQL = ("INSERT INTO source_versions (user_id, source_id, last_version) VALUES (?, ?, ?) "
                     "ON CONFLICT (user_id, source_id) DO UPDATE SET last_version = excluded.last_version "
                     "WHERE excluded.last_version > source_versions.last_version")
REJECTED_VERSIONS_SQL = ("SELECT DISTINCT source_version FROM audit WHERE user_id = ? AND source_id = ? "
                         "AND outcome = 'rejected' AND source_version IS NOT NULL")


def version_after(last: int | None, at_least: int) -> int:
    """The version ``reserve_version`` hands out after ``last`` (None: none yet), or FactStoreError."""
    if isinstance(at_least, bool) or not isinstance(at_least, int) or at_least < 0:
        raise FactStoreError(f"at_least must be a whole number of 0 or more (got {at_least!r})")
    version = at_least if last is None else max(last + 1, at_least)
    if version > 2**63 - 1:
        raise FactStoreError("this source has used every version up to 2**63 - 1; no higher one can be stored "
                             "- write its statements under another source id")
    return version


def versions_saved(changes: Changes) -> list[tuple[str, str, int]]:
    """(user_id, source_id, highest version) of the decisions in ``changes``, rejected ones left out."""
    highest: dict[tuple[str, str], int] = {}
    for e in changes.audit:
        if e.source_version is not None and e.outcome != "rejected":
            key = (e.user_id, e.source_id)
            highest[key] = max(highest.get(key, e.source_version), e.source_version)
    return [(user_id, source_id, version) for (user_id, source_id), version in highest.items()]


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
            run("INSERT INTO provenance (fact_id, source_id, source_kind, source_version, evidence, "
                "recorded_at, withdrawn_at) VALUES (?, ?, ?, ?, ?, ?, NULL) "
                "ON CONFLICT (fact_id, source_id) DO UPDATE SET source_kind = excluded.source_kind, "
                "source_version = excluded.source_version, evidence = excluded.evidence, "
                "recorded_at = excluded.recorded_at, withdrawn_at = NULL",
                [(fid, p.source_id, p.source_kind, p.source_version, p.evidence, p.recorded_at)
                 for _, fid, p in ops[start:end]])
        else:
            run("UPDATE provenance SET withdrawn_at = ? WHERE fact_id = ? AND source_id = ?",
                [(at, fid, source_id) for _, fid, source_id, at in ops[start:end]])
        start = end
    run(f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES ({', '.join('?' * len(AUDIT_COLUMNS))})",
        [(e.user_id, e.subject, e.attribute, e.value, e.source_id, e.source_kind, e.source_version, e.outcome,
          e.reason, e.fact_id, e.support, e.decided_at) for e in changes.audit])  # AUDIT_COLUMNS, in order
    run(RAISE_VERSION_SQL, versions_saved(changes))


FORGOTTEN = "[forgotten]"  # what stands where a forgotten text stood, in every row that quoted it
FORGOTTEN_OUTCOME = "forgotten"  # the audit outcome of a deletion (its row names the fact, never its value)
# How one user's rows are found in each table of OWNED_TABLES (default: its user_id column), children first;
# ``forget_user_rows`` deletes from every table listed there, so a table a later migration adds is covered
# once it is in OWNED_TABLES (tests/test_forget.py checks that every table is reached).
USER_ROWS = {"provenance": "fact_id IN (SELECT id FROM facts WHERE user_id = ?)"}


def forget_fact_rows(execute, user_id: str, fact_ids: Sequence[int], *, source_id: str, reason: str, at: str,
                     texts: Sequence[str] = (), restore: Sequence[int] = (),
                     hide_attribute: bool = True) -> list[AuditEntry]:
    """Delete facts ``fact_ids`` of ``user_id`` (with their provenance) inside a write transaction whose
    ``execute(sql, params)`` takes ``?`` placeholders; every backend.

    Their values, and ``texts`` (the sentences that stated them), are replaced by ``FORGOTTEN`` in every
    audit row and every remaining evidence of this user, so no row quotes them any more; the audit keeps
    that a decision was made, and gains one ``forgotten`` row per deleted fact (its value ``FORGOTTEN``).
    ``restore`` lists facts to make active again (the one an undone instruction had superseded). With
    ``hide_attribute`` the facts' attribute names are replaced too, in the audit rows of their attributes and in
    the new rows (an open domain's label can hold what was said: "sister maya's birthday").
    Returns the new audit rows."""
    ids = sorted({int(i) for i in fact_ids})
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = execute(f"SELECT id, subject, attribute, value FROM facts WHERE user_id = ? AND id IN ({marks})",
                   (user_id, *ids)).fetchall()
    found = [row[0] for row in rows]
    if not found:
        return []
    marks = ", ".join("?" * len(found))
    execute(f"DELETE FROM provenance WHERE fact_id IN ({marks})", tuple(found))
    execute(f"DELETE FROM facts WHERE id IN ({marks})", tuple(found))
    execute(f"UPDATE facts SET superseded_by = NULL WHERE user_id = ? AND superseded_by IN ({marks})",
            (user_id, *found))
    for fact_id in restore:
        execute("UPDATE facts SET status = ?, superseded_by = NULL, updated_at = ? WHERE user_id = ? AND id = ?",
                (ACTIVE, at, user_id, int(fact_id)))
    scrubbed = sorted({t for t in [*(row[3] for row in rows), *texts] if t and t != FORGOTTEN}, key=len,
                      reverse=True)  # longest first: a sentence goes before a value inside it
    for text in scrubbed:
        execute("UPDATE audit SET value = REPLACE(value, ?, ?), reason = REPLACE(reason, ?, ?) WHERE user_id = ?",
                (text, FORGOTTEN, text, FORGOTTEN, user_id))
        execute("UPDATE provenance SET evidence = REPLACE(evidence, ?, ?) WHERE fact_id IN "
                "(SELECT id FROM facts WHERE user_id = ?)", (text, FORGOTTEN, user_id))
    if hide_attribute:
        for attribute in sorted({row[2] for row in rows}):
            execute("UPDATE audit SET attribute = ? WHERE user_id = ? AND attribute = ?",
                    (FORGOTTEN, user_id, attribute))
    entries = [AuditEntry(user_id, subject, FORGOTTEN if hide_attribute else attribute, FORGOTTEN, source_id,
                          "user", None, FORGOTTEN_OUTCOME, reason, fact_id, 0, at)
               for fact_id, subject, attribute, _ in rows]
    for e in entries:
        execute(f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES ({', '.join('?' * len(AUDIT_COLUMNS))})",
                (e.user_id, e.subject, e.attribute, e.value, e.source_id, e.source_kind, e.source_version,
                 e.outcome, e.reason, e.fact_id, e.support, e.decided_at))
    return entries


def forget_user_rows(execute, user_id: str) -> int:
    """Delete every row of ``user_id`` in every table the fact store owns (``OWNED_TABLES``, found by
    ``USER_ROWS``), inside a write transaction; returns how many rows went. Nothing of the user is left,
    not even an audit row."""
    ordered = [t for t in OWNED_TABLES if t in USER_ROWS] + [t for t in OWNED_TABLES if t not in USER_ROWS]
    gone = 0
    for table in ordered:  # names from OWNED_TABLES, never from input
        cursor = execute(f"DELETE FROM {table} WHERE {USER_ROWS.get(table, 'user_id = ?')}", (user_id,))
        gone += max(cursor.rowcount, 0)
    return gone


class WorkingSet:
    """The keys of one transaction, loaded once; decisions change them here, then one save() stores it all."""

    def __init__(self, txn: FactTransaction, keys: Sequence[LockKey], at: str):
        self.txn, self.at = txn, at
        self.rows = txn.load_keys(keys)
        self.changes = Changes()
        self._touched: set[int] = set()

    def insert(self, key: LockKey, value: str, value_key: str, status: str, prov: Provenance) -> StoredFact:
        """A new fact for ``key`` with ``prov`` as its first provenance."""
        fact = StoredFact(self.txn.new_fact_id(), *key, value, value_key, status, self.at, self.at)
        self.rows[key].append(fact)
        self.changes.new_facts.append(fact)
        self._touched.add(fact.id)
        self.record_source(fact, prov)
        return fact

    def set_status(self, fact: StoredFact, status: str, superseded_by: int | None = None) -> None:
        """Change a fact's status (and what superseded it)."""
        fact.status, fact.superseded_by, fact.updated_at = status, superseded_by, self.at
        if fact.id not in self._touched:
            self._touched.add(fact.id)
            self.changes.changed_facts.append(fact)

    def record_source(self, fact: StoredFact, prov: Provenance) -> None:
        """Record that ``prov``'s source states this fact (replacing that source's earlier record on it)."""
        fact.provenance = [p for p in fact.provenance if p.source_id != prov.source_id] + [prov]
        self.changes.provenance.append(("put", fact.id, prov))

    def withdraw(self, fact: StoredFact, source_id: str) -> None:
        """The source no longer backs this fact (it moved to another value); its record stays."""
        for prov in fact.provenance:
            if prov.source_id == source_id:
                prov.withdrawn_at = self.at
        self.changes.provenance.append(("withdraw", fact.id, source_id, self.at))


class _SQLiteTransaction:
    """FactTransaction on one SQLite connection inside BEGIN IMMEDIATE."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._last_id: int | None = None

    def load_keys(self, keys: Sequence[LockKey]) -> dict[LockKey, list[StoredFact]]:
        """Every fact of each key, oldest first, with provenance (one query for all keys)."""
        if not keys:
            return {}
        return facts_by_key(keys, self._conn.execute(_LOAD_SQL, (json.dumps(keys),)).fetchall())

    def new_fact_id(self) -> int:
        """The next id after the largest stored (safe: BEGIN IMMEDIATE keeps other writers out)."""
        if self._last_id is None:
            self._last_id = self._conn.execute("SELECT COALESCE(MAX(id), 0) FROM facts").fetchone()[0]
        self._last_id += 1
        return self._last_id

    def save(self, changes: Changes) -> None:
        save_changes(self._conn.executemany, changes)

    def execute(self, sql: str, params: Sequence = ()) -> sqlite3.Cursor:
        """One statement inside this transaction (``?`` placeholders): what deletions use."""
        return self._conn.execute(sql, params)

    def reserve_version(self, user_id: str, source_id: str, at_least: int = 0) -> int:
        """The next version of the source (``FactStore.reserve_version``), inside this write transaction."""
        row = self._conn.execute("SELECT last_version FROM source_versions WHERE user_id = ? AND source_id = ?",
                                 (user_id, source_id)).fetchone()
        version = version_after(None if row is None else row[0], at_least)
        self._conn.execute("INSERT INTO source_versions (user_id, source_id, last_version) VALUES (?, ?, ?) "
                           "ON CONFLICT (user_id, source_id) DO UPDATE SET last_version = excluded.last_version",
                           (user_id, source_id, version))
        return version


class SQLiteFactStore:
    """FactStore on SQLite, safe for several threads and processes writing one file (see ``_connect``).

    ``path`` may be ``":memory:"`` (one shared connection, for quick experiments) or a file
    path; each thread gets its own connection, kept until ``close()``. A committed write
    survives a killed process; only a power cut can lose the last few commits.

    Opening refuses (``FactStoreError``, file untouched) a file that is not SQLite, holds someone
    else's tables, or has a newer fact schema (``check_schema``); the session store's tables may
    share the file.
    """

    def __init__(self, path: str, *, timeout: float = 30.0):
        self.path = str(path)
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._memory = self.path == ":memory:"
        self._shared: sqlite3.Connection | None = None
        self._guard = threading.RLock() if self._memory else None
        self._closed = False
        try:
            if not self._memory:
                self._look_before_writing()
            with self.transaction() as _:
                conn = self._conn()
                check_schema(conn, self.path)  # again under the write lock: another process may have changed it
                apply_migrations(conn, SCHEMA_TABLE, MIGRATIONS)
        except BaseException:
            self.close()
            raise

    def _look_before_writing(self) -> None:
        """Refuse a file that is not ours before any connection changes it (``check_file``)."""
        self.check_file(self.path, timeout=self.timeout)

    @staticmethod
    def check_file(path: str | Path, *, timeout: float = 30.0) -> None:
        """Raise FactStoreError if opening would refuse ``path``; reads only, so the file stays as it is.

        Opening runs it before any connection changes the file (WAL mode rewrites the header), and
        ``open_stores`` runs it with ``SQLiteSessionStore.check_file`` before opening either store on a shared
        file. The file is read through SQLite only, never with ``open()``: closing any other handle on a database
        file drops every lock this process holds on it (POSIX), so a session store open on the same file
        would lose its shared lock, and another process closing last would delete the -wal and -shm files
        still in use here.
        """
        shown = str(path)
        path = Path(shown)
        try:
            if not path.is_file() or path.stat().st_size == 0:
                return  # nothing to protect yet (a bad folder is reported when connecting)
        except OSError as err:
            raise FactStoreError(f"{shown} cannot be read ({err.strerror or err}); check the permissions of "
                                 "the file and its folder, or pass another path") from None
        try:
            conn = sqlite3.connect(shown, timeout=timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise FactStoreError(f"could not open the fact database {shown}: {err}; check the path and "
                                 "its permissions") from None
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as err:
            conn.close()
            if "not a database" in str(err):
                raise FactStoreError(f"{shown} is not a SQLite database (another kind of file, or corrupt); "
                                     "it was left untouched - pass another path, or move that file away") from None
            raise FactStoreError(f"{shown} could not be read as a fact database ({err}); it was left "
                                 "untouched - check the file, or pass another path") from None
        try:
            check_schema(conn, shown)
        except sqlite3.Error as err:
            raise FactStoreError(f"{shown} could not be read as a fact database ({err}); it was left "
                                 "untouched - check the file, or pass another path") from None
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        """A connection set up so threads and processes can share the file (each setting says why)."""
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
            if not self._memory:  # WAL: a write goes to a log file first, so readers never wait for it
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise FactStoreError(f"{self.path} refused WAL mode (got {mode!r}); put the database on "
                                         "a local disk, not a network share")
            # a write that finds the file locked by another writer waits up to ``timeout`` instead of failing
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")  # PRAGMA takes no parameters
            conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: a killed process loses no commit
            conn.execute("PRAGMA cache_size = -65536")  # keep up to 64 MB of the file's pages in memory
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as err:
            raise FactStoreError(f"could not open the fact database {self.path}: {err}; check that the "
                                 "folder exists and is writable") from None
        with self._all_lock:
            self._all.append(conn)
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

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        row = self._read(f"SELECT MAX(version) FROM {SCHEMA_TABLE}", ())
        return int(row[0][0] or 0)

    @contextmanager
    def transaction(self, lock_keys: Sequence[LockKey] = ()) -> Iterator[_SQLiteTransaction]:
        """BEGIN IMMEDIATE ... COMMIT; SQLite's one write lock covers every key (``lock_keys`` is unused)."""
        conn = self._conn()
        with self._guard or nullcontext():
            if conn.in_transaction:
                raise FactStoreError("a fact transaction is already open on this thread; finish it before "
                                     "starting another (writes do not nest)")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise FactStoreError(f"could not start a write on {self.path} within {self.timeout}s "
                                     f"({err}); another process holds the write lock - retry, or raise "
                                     "timeout") from None
            try:
                yield _SQLiteTransaction(conn)
                conn.execute("COMMIT")
            except sqlite3.Error as err:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise FactStoreError(f"a write to {self.path} failed and was rolled back ({err}); nothing "
                                     "from this transaction was stored - retry it") from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _read(self, sql: str, params: tuple) -> list[tuple]:
        conn = self._conn()
        with self._guard or nullcontext():
            return conn.execute(sql, params).fetchall()

    def read_facts(self, user_id: str, statuses: Sequence[str]) -> list[StoredFact]:
        """One user's facts with the given statuses (ordered by subject, attribute, id)."""
        return facts_from_rows(self._read(read_facts_sql(len(statuses)), (user_id, *statuses)))

    def read_audit(self, user_id: str) -> list[AuditEntry]:
        """One user's decisions, oldest first."""
        return [AuditEntry(*row) for row in self._read(READ_AUDIT_SQL, (user_id,))]

    def reserve_version(self, user_id: str, source_id: str, at_least: int = 0) -> int:
        """The next version of this source (``FactStore.reserve_version``): one write transaction, so
        threads and processes sharing the file never get the same number."""
        with self.transaction() as txn:
            return txn.reserve_version(user_id, source_id, at_least)

    def rejected_versions(self, user_id: str, source_id: str) -> set[int]:
        """The versions of this source audited as ``rejected``."""
        return {row[0] for row in self._read(REJECTED_VERSIONS_SQL, (user_id, source_id))}

    def forget(self, user_id: str, fact_ids: Sequence[int], *, source_id: str, reason: str, at: str,
               texts: Sequence[str] = (), restore: Sequence[int] = (),
               hide_attribute: bool = True) -> list[AuditEntry]:
        """Delete these facts, audited as deletions (``forget_fact_rows``), in one write transaction."""
        with self.transaction() as txn:
            return forget_fact_rows(txn.execute, user_id, fact_ids, source_id=source_id, reason=reason, at=at,
                                    texts=texts, restore=restore, hide_attribute=hide_attribute)

    def forget_user(self, user_id: str) -> int:
        """Delete every row of ``user_id`` (``forget_user_rows``); returns how many rows went."""
        with self.transaction() as txn:
            return forget_user_rows(txn.execute, user_id)

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._closed = True

"""Sessions on PostgreSQL (notebook 11): ``PostgresSessionStore`` implements ``SessionStore``.

Everything built on the protocol (``PersistentSession``, the chat UI, the terminal chat) runs unchanged.
A save takes an advisory lock on ``(user_id, session_id)`` and writes the header, the changed turn
rows and the recall vectors not stored yet (float32 bytes in a BYTEA) in one transaction; a load reads
them in one REPEATABLE READ snapshot. When the database has pgvector (``CREATE EXTENSION vector``; the
store creates it when it may), each recall piece also goes into a ``vector`` column with an HNSW index
per vector size, and recall is searched there (``helpers.sessions.recall_search``); without it the
search loads the user's vectors into Python and says so once. The tables and the SQL of a save, a load and a listing are written once,
in ``helpers.sessions.store_sql``: here in PostgreSQL's dialect (``POSTGRES``: its types, and ``COLLATE "C"``
so both backends sort alike).

PostgreSQL text cannot hold NUL, which SQLite stores. The turn JSON escapes it (``\\u0000``); the two
plain-text columns that may hold it, ``sessions.title`` and ``session_turns.question``, are written
through ``to_pg_text`` and read back through ``from_pg_text``, a reversible escape, so both backends
return the same text. User and session ids never hold NUL (``helpers.core.ids`` refuses it).
"""
from __future__ import annotations

import dataclasses
import re

import psycopg

from helpers.core.clock import now
from helpers.core.dsn import redact_dsn
from helpers.core.postgres import Connections, check_schema, lock_id, migrate, schema_version
from helpers.core.migrations import POSTGRES
from helpers.sessions.store_sql import (DELETE_SQL, INFO_COLUMNS, LIST_SQL, LOAD_SQL, SCHEMA_TABLE,
                                        SESSION_TABLES, SessionStoreBase, session_migrations)
from helpers.sessions.encoding import EncodedChanges, EncodedSession
from helpers.sessions.pgvector import fill_vector_column, hnsw_index_sql, pgvector_type, vector_text
from helpers.sessions.recall_rows import PIECE_COLUMNS, backfill
from helpers.sessions.protocol import SessionInfo, SessionStoreError, StoredSession, check_ids, check_user_id

SESSION_MIGRATIONS = session_migrations(POSTGRES)  # the tables, written once in store_sql for both backends

_TITLE = INFO_COLUMNS.split(", ").index("title")

# The escape for NUL in text columns: a Unicode noncharacter, itself escaped by doubling, so the
# mapping is reversible. Text without NUL or this character (all rows written before) is stored as it is.
PG_ESCAPE = "\ufdd0"
_PG_ESCAPED = re.compile("\ufdd0(.)", re.DOTALL)


def to_pg_text(text: str) -> str:
    """``text`` as a PostgreSQL text column can hold it: NUL -> U+FDD0 '0', U+FDD0 -> U+FDD0 U+FDD0."""
    if "\x00" not in text and PG_ESCAPE not in text:
        return text
    return text.replace(PG_ESCAPE, PG_ESCAPE * 2).replace("\x00", PG_ESCAPE + "0")


def from_pg_text(text: str) -> str:
    """The inverse of ``to_pg_text`` (a U+FDD0 not followed by '0' or U+FDD0 is left as it is)."""
    if PG_ESCAPE not in text:
        return text
    return _PG_ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else
                           m.group(1) if m.group(1) == PG_ESCAPE else m.group(0), text)


def _pg(sql: str) -> str:
    """Shared SQL (``store_sql``: ``?`` placeholders, no literal ``?``) with psycopg's ``%s`` placeholders."""
    return sql.replace("?", "%s")


def _info(row: tuple) -> SessionInfo:
    """A listing row (``INFO_COLUMNS``) as a SessionInfo, its title unescaped."""
    values = list(row)
    values[_TITLE] = from_pg_text(values[_TITLE])
    return SessionInfo(*values)


def _pg_encoded(encoded: EncodedSession | EncodedChanges) -> EncodedSession | EncodedChanges:
    """``encoded`` with its title and each turn's question escaped for PostgreSQL text (see ``to_pg_text``)."""
    rows = [(turn_id, state, to_pg_text(question), body, digest)
            for turn_id, state, question, body, digest in encoded.rows]
    if isinstance(encoded, EncodedChanges):
        return dataclasses.replace(encoded, rows=rows)
    return dataclasses.replace(encoded, title=to_pg_text(encoded.title), rows=rows)


class PostgresSessionStore(SessionStoreBase):
    """SessionStore on PostgreSQL: per-session advisory locks, one transaction per save."""

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 5):
        self._conns = Connections(dsn, schema, SessionStoreError, connect_timeout)
        self.where = self._conns.where
        self.vector_type: str | None = None  # pgvector's type, schema-qualified, when this database has it
        self._indexed: set[int] = set()  # vector sizes that have their HNSW index
        self._wanted: set[int] = set()  # vector sizes this store wrote that may still lack one
        try:
            migrate(self._conns, SCHEMA_TABLE, SESSION_MIGRATIONS, SESSION_TABLES, after=self._after_migrate)
        except psycopg.Error as err:
            self._conns.close()
            raise SessionStoreError(f"preparing the session tables on {self.where} failed "
                                    f"({self._reason(err)}); nothing was changed - check that this user may "
                                    "create tables there") from None

    # -- recall searched in the database (helpers.sessions.recall_search)
    def _after_migrate(self, conn: psycopg.Connection, applied: list[int]) -> None:
        """Under the migration lock: derive the search rows of vectors stored before migration 5, and, when
        the database has pgvector, give recall_pieces its ``vector`` column (filled from the float32 bytes
        already stored: nothing is embedded again) and an HNSW index per vector size."""
        execute = lambda q, args=(): conn.execute(_pg(q), args)  # noqa: E731
        cur = conn.cursor()
        executemany = lambda q, rows: cur.executemany(_pg(q), rows)  # noqa: E731
        self.vector_type = pgvector_type(conn)
        if self.vector_type is not None:
            conn.execute(f"ALTER TABLE recall_pieces ADD COLUMN IF NOT EXISTS embedding {self.vector_type}")
            conn.execute("CREATE INDEX IF NOT EXISTS recall_pieces_unindexed ON recall_pieces (user_id) "
                         "WHERE embedding IS NULL")  # finds rows a store without pgvector wrote, at no cost
        if 5 in applied:
            backfill(execute, executemany, self._insert_pieces)
        if self.vector_type is not None:
            fill_vector_column(conn, self.vector_type)
            self._indexed = {int(name.rsplit("_", 1)[1]) for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()").fetchall()
                if re.fullmatch(r"recall_pieces_hnsw_\d+", name)}
            sizes = conn.execute("SELECT DISTINCT dim FROM recall_pieces").fetchall() if 5 in applied else \
                conn.execute("SELECT dim FROM recall_pieces LIMIT 1").fetchall()  # one read, not a scan
            for (dim,) in sizes:
                self._index_size(conn.execute, int(dim))

    def _index_size(self, execute, dim: int) -> None:
        """Create the HNSW index (cosine) of vectors of ``dim`` numbers, once (under a lock: processes race).

        Only where the transaction has not touched recall_pieces yet (opening, or a save's first statement):
        CREATE INDEX waits for every writer of the table, so a writer that waited here for the creator's
        lock while holding its own row locks on the table would deadlock with it."""
        if dim in self._indexed or self.vector_type is None:
            return
        exists = "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = %s"
        name = f"recall_pieces_hnsw_{int(dim)}"
        if execute(exists, (name,)).fetchone() is None:
            execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("recall hnsw", self._conns.schema or "", str(dim)),))
            execute(hnsw_index_sql(self.vector_type, dim), ())
        self._indexed.add(dim)

    def _insert_pieces(self, executemany, rows: list[tuple]) -> None:
        """Write piece rows (``recall_rows.PIECE_COLUMNS``), with pgvector's column when the database has it.

        A vector size without its HNSW index yet gets one at the start of this store's next save."""
        if self.vector_type is None:
            executemany(f"INSERT INTO recall_pieces ({PIECE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            return
        self._wanted.update(int(row[7]) for row in rows if int(row[7]) not in self._indexed)
        executemany(f"INSERT INTO recall_pieces ({PIECE_COLUMNS}, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    f"?::{self.vector_type})", [(*row, vector_text(row[8])) for row in rows])

    @staticmethod
    def check_database(dsn: str, *, schema: str | None = None, connect_timeout: int = 5) -> None:
        """Raise SessionStoreError where opening would refuse the database; reads only, creates nothing
        (``open_stores`` runs it with ``PostgresFactStore.check_database`` before opening either store)."""
        check_schema(dsn, schema, SessionStoreError, connect_timeout, SCHEMA_TABLE, SESSION_MIGRATIONS, SESSION_TABLES)

    def _reason(self, err: Exception) -> str:
        """A driver error as one line, with any password removed."""
        return redact_dsn(str(err).strip(), self._conns.dsn)

    @property
    def closed(self) -> bool:
        """True after close(): nothing can be read or saved any more."""
        return self._conns.closed

    def _write(self, user_id: str, session_id: str, encoded: EncodedSession, expected_revision: int | None,
               lineage: tuple[str, int] | None = None) -> int:
        return super()._write(user_id, session_id, _pg_encoded(encoded), expected_revision, lineage)

    def _write_changes(self, execute, executemany, user_id: str, session_id: str, encoded: EncodedChanges,
                       expected_revision: int, at: str) -> int:
        return super()._write_changes(execute, executemany, user_id, session_id, _pg_encoded(encoded),
                                      expected_revision, at)

    def _title_from(self, question: str) -> str:
        """The title for a stored (escaped) first question: its first 80 characters, escaped again."""
        return to_pg_text(from_pg_text(question)[:80])

    def _transaction_for(self, user_id: str, session_id: str, work) -> int:
        """Run one save's writes (``SessionStoreBase``) under the session's advisory lock, in one transaction."""
        conn = self._conns.get()
        at = now().isoformat()
        try:
            with conn.transaction():
                for dim in sorted(self._wanted - self._indexed):  # before anything touches recall_pieces
                    self._index_size(conn.execute, dim)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("session", user_id, session_id),))
                cur = conn.cursor()
                return work(lambda sql, args: conn.execute(_pg(sql), args),
                            lambda sql, rows: cur.executemany(_pg(sql), rows), at)
        except psycopg.Error as err:
            raise SessionStoreError(f"saving {user_id}/{session_id} to {self.where} failed "
                                    f"and was rolled back ({self._reason(err)}); "
                                    "the stored session is as it was - retry") from None

    def load_state(self, user_id: str, session_id: str) -> StoredSession:
        """The stored snapshot, read in one consistent snapshot."""
        user_id, session_id = check_ids(user_id, session_id)
        conn = self._conns.get()
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                rows, turn_rows, vectors = (conn.execute(_pg(sql), (user_id, session_id)).fetchall()
                                            for sql in LOAD_SQL)
        except psycopg.Error as err:
            raise SessionStoreError(f"reading {user_id}/{session_id} from {self.where} failed "
                                    f"({self._reason(err)})") from None
        if not rows:
            raise self._not_found(user_id, session_id, self.where)
        return self._stored(_info(rows[0][:-1]), rows[0][-1], turn_rows, vectors,
                            f"session {user_id}/{session_id} on {self.where}")

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""
        user_id = check_user_id(user_id)
        try:
            rows = self._conns.get().execute(_pg(LIST_SQL), (user_id,)).fetchall()
        except psycopg.Error as err:
            raise SessionStoreError(f"listing {user_id}'s sessions on {self.where} failed "
                                    f"({self._reason(err)})") from None
        return [_info(row) for row in rows]

    def delete(self, user_id: str, session_id: str) -> bool:
        """Remove one session and its turns."""
        user_id, session_id = check_ids(user_id, session_id)
        conn = self._conns.get()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("session", user_id, session_id),))
                return conn.execute(_pg(DELETE_SQL), (user_id, session_id)).rowcount > 0
        except psycopg.Error as err:
            raise SessionStoreError(f"deleting {user_id}/{session_id} on {self.where} failed "
                                    f"and was rolled back ({self._reason(err)}); retry") from None

    def schema_version(self) -> int:
        """The highest session migration applied."""
        return schema_version(self._conns, SCHEMA_TABLE)

    def close(self) -> None:
        """Close every connection this store opened."""
        self._conns.close()

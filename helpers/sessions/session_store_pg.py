"""Sessions on PostgreSQL (notebook 11): ``PostgresSessionStore`` implements ``SessionStore``.

Everything built on the protocol (``PersistentSession``, the chat UI, the terminal chat) runs unchanged.
A save takes an advisory lock on ``(user_id, session_id)`` and writes the header, the changed turn
rows and the recall vectors not stored yet (float32 bytes in a BYTEA) in one transaction; a load reads
them in one REPEATABLE READ snapshot. The table definitions repeat the SQLite ones in
``helpers.sessions.session_store`` with PostgreSQL's types and ``COLLATE "C"`` (so both backends sort alike):
the dialects differ, so each keeps its own.

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
from helpers.core.postgres import Connections, lock_id, migrate, schema_version
from helpers.sessions.store_sql import SCHEMA_TABLE, SessionStoreBase
from helpers.sessions.encoding import VECTOR_COLUMNS, EncodedChanges, EncodedSession, altered_turns, decode_state
from helpers.sessions.protocol import SessionInfo, SessionStoreError, StoredSession, check_ids, check_user_id

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
    (2, "store recall vectors beside the turns", (
        """CREATE TABLE recall_vectors (
            user_id TEXT COLLATE "C" NOT NULL,
            session_id TEXT COLLATE "C" NOT NULL,
            turn_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            source TEXT NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id),
            FOREIGN KEY (user_id, session_id, turn_id) REFERENCES session_turns (user_id, session_id, turn_id)
                ON DELETE CASCADE)""",
    )),
    (3, "headers stop listing dropped and recorded turns: the turn rows say it, so a save writes only what changed",
     ()),  # no table changes: older code must not read these headers, so it is refused as a newer schema
    (4, "turn rows carry what the memory keeps of each turn; the header keeps only the memory's shared part",
     ()),  # no table changes: older code would lose the per-turn memory, so it is refused as a newer schema
)



OWNED_TABLES = ("sessions", "session_turns", "recall_vectors")
_INFO_COLUMNS = ("user_id, session_id, revision, turns, dropped, title, created_at, updated_at, forked_from, "
                 "forked_at")
_TITLE = _INFO_COLUMNS.split(", ").index("title")

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


def _info(row: tuple) -> SessionInfo:
    """A listing row (``_INFO_COLUMNS``) as a SessionInfo, its title unescaped."""
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
        try:
            migrate(self._conns, SCHEMA_TABLE, SESSION_MIGRATIONS, OWNED_TABLES)
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
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("session", user_id, session_id),))
                cur = conn.cursor()
                return work(lambda sql, args: conn.execute(sql.replace("?", "%s"), args),
                            lambda sql, rows: cur.executemany(sql.replace("?", "%s"), rows), at)
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
                row = conn.execute(f"SELECT {_INFO_COLUMNS}, header FROM sessions WHERE user_id = %s AND "
                                   "session_id = %s", (user_id, session_id)).fetchone()
                turn_rows = conn.execute("SELECT turn_id, body, digest FROM session_turns WHERE user_id = %s "
                                         "AND session_id = %s", (user_id, session_id)).fetchall()
                vectors = conn.execute(f"SELECT {VECTOR_COLUMNS} FROM recall_vectors WHERE user_id = %s AND "
                                       "session_id = %s", (user_id, session_id)).fetchall()
        except psycopg.Error as err:
            raise SessionStoreError(f"reading {user_id}/{session_id} from {self.where} failed "
                                    f"({self._reason(err)})") from None
        if row is None:
            raise self._not_found(user_id, session_id, self.where)
        name = f"session {user_id}/{session_id} on {self.where}"
        bodies = {turn_id: body for turn_id, body, _ in turn_rows}
        state = decode_state(row[-1], bodies, name)
        altered = altered_turns(bodies, {turn_id: digest for turn_id, _, digest in turn_rows})
        return StoredSession(_info(row[:-1]), state, tuple(vectors), altered)

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""
        user_id = check_user_id(user_id)
        try:
            rows = self._conns.get().execute(f"SELECT {_INFO_COLUMNS} FROM sessions WHERE user_id = %s "
                                             "ORDER BY updated_at DESC, session_id", (user_id,)).fetchall()
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
                return conn.execute("DELETE FROM sessions WHERE user_id = %s AND session_id = %s",
                                    (user_id, session_id)).rowcount > 0
        except psycopg.Error as err:
            raise SessionStoreError(f"deleting {user_id}/{session_id} on {self.where} failed "
                                    f"and was rolled back ({self._reason(err)}); retry") from None

    def schema_version(self) -> int:
        """The highest session migration applied."""
        return schema_version(self._conns, SCHEMA_TABLE)

    def close(self) -> None:
        """Close every connection this store opened."""
        self._conns.close()

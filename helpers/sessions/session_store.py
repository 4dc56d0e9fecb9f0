"""Saved conversations on SQLite (lesson 11): ``SQLiteSessionStore``, and every name of the session stores.

A session is stored under ``(user_id, session_id)`` from its ``ChatSession.snapshot()``, in these tables:

* ``sessions``: one row per conversation: a JSON header (system prompt, limits, the window's turn ids,
  ``next_id``, the snapshot's ``memory`` field with any summary or profile), a ``revision`` that grows
  by one per save, counts for listing, and where a fork came from.
* ``session_turns``: one row per turn (kept in memory, dropped by trimming, or only a ``TurnRecord``),
  with a digest of its JSON. A save after a turn writes what changed since the stored revision
  (``ChatSession.changes_since``): that turn's row, the row of a turn trimming just dropped, the header;
  an undo deletes its turn's row. Header and rows change in one transaction, so a process killed
  mid-save leaves the session exactly as the last committed save left it.
* ``recall_vectors``: the recall index's embeddings (``RecallIndex.export_vectors``), one row per
  turn: the embedding model's name, the vector size ``dim``, a digest of the embedded pieces and
  the pieces' vectors as float32 bytes. A save adds the rows of turns embedded since the last save
  in the same transaction as the turn rows; an undone turn's row goes with its turn row. A load
  hands them back to the session's recall index (``import_stored_vectors``), so the first recall
  after a restart embeds nothing that was already embedded; vectors of another model, or of pieces
  that changed, are ignored and embedded again. The header JSON never carries vectors.
* ``recall_pieces`` and ``recall_lines``: the same vectors one row per piece, and each side of a turn with
  its words under an FTS5 index (``recall_lines_fts``), written with the vectors, so that
  ``helpers.sessions.recall_search`` searches a user's every session in the file (BM25 by FTS5's
  ``bm25()``, the embedding brute force over that user's rows).

The session stores are split by job; this module keeps ``from helpers.sessions.session_store import X`` working
for all of them:

* ``helpers.sessions.protocol``: the ``SessionStore`` protocol, its errors, ``SessionInfo``/``StoredSession``
  and the id checks;
* ``helpers.sessions.encoding``: a snapshot (or what changed since the stored revision) as rows, and back;
  recall vectors as rows; text any database can hold (``storable_text``);
* ``helpers.sessions.store_sql``: the tables (in each backend's dialect) and the SQL of a save, ``load``,
  ``fork`` and ``restore``, shared by both backends;
* ``helpers.core.dsn``: ``redact_dsn``, which keeps database passwords out of messages;
* here: the SQLite backend and its migrations. ``helpers.sessions.session_store_pg`` has the PostgreSQL one
  (the same schema, for deployments with many processes); ``PersistentSession``
  (``helpers.sessions.persistent``) saves itself after every turn, undo and reset, and a change whose
  save fails is rolled back in memory as well (``SessionSaveError``), so memory and store never disagree.
  ``fork(user, session, at_turn, new_id)`` stores a new session holding the turns with id < ``at_turn``.

Ids follow the one rule in ``helpers.core.ids`` (NFKC, surrounding whitespace removed, case kept). Reopening
with ``system_prompt=`` works when it equals the stored prompt, and raises ConfigError when it differs
(a saved conversation keeps its prompt). A SQLite file may also hold the durable fact store
(``helpers.facts.fact_store``): its tables are recognised and left alone. Any other file - not SQLite,
SQLite with someone else's tables, or a newer schema version - is refused with an error naming it,
and never written to.
"""
from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from helpers.core.clock import now
from helpers.core.dsn import redact_dsn
from helpers.core.ids import MAX_ID_CHARS
from helpers.core.migrations import SQLITE, apply_migrations
from helpers.facts.fact_store import FACT_STORE_TABLES, share_file_with  # the fact store's own tables
from helpers.sessions.store_sql import (DELETE_SQL, LIST_SQL, LOAD_SQL, SCHEMA_TABLE, SESSION_TABLES,
                                        SQLITE_SEARCH_TABLES, SessionStoreBase, check_fork, restore,
                                        session_migrations)
from helpers.sessions.recall_rows import backfill
from helpers.sessions.encoding import (VECTOR_COLUMNS, EncodedChanges, EncodedSession, decode_state, encode_changes,
                                       encode_state, encode_vectors, has_lone_surrogates, import_stored_vectors,
                                       pieces_digest, recall_index, storable_text)
from helpers.sessions.protocol import (ForkError, SessionConflictError, SessionDamagedError, SessionInfo, SessionNotFoundError,
                                       SessionSaveError, SessionStore, SessionStoreError, StoredSession, check_ids,
                                       check_user_id)

__all__ = [  # what notebooks, tests and the other modules import from here
    "MAX_ID_CHARS", "MIGRATIONS", "SCHEMA_TABLE", "SESSION_STORE_TABLES", "VECTOR_COLUMNS", "EncodedChanges",
    "EncodedSession", "ForkError", "SQLiteSessionStore", "SessionConflictError", "SessionDamagedError",
    "SessionInfo", "SessionNotFoundError", "SessionSaveError", "SessionStore", "SessionStoreBase", "SessionStoreError",
    "StoredSession", "check_fork", "check_ids", "check_user_id", "decode_state", "encode_changes",
    "encode_state", "encode_vectors", "has_lone_surrogates", "import_stored_vectors", "pieces_digest",
    "recall_index", "redact_dsn", "restore", "storable_text",
]

# Every table this store creates (MIGRATIONS and SCHEMA_TABLE). A fact store's file may hold them too: the
# fact store learns them here, since it may not import this layer.
SESSION_STORE_TABLES = frozenset({SCHEMA_TABLE, *SESSION_TABLES, *SQLITE_SEARCH_TABLES})
share_file_with(SCHEMA_TABLE, SESSION_STORE_TABLES)
# SQLite result codes that mean "you may not write here", not "the file is damaged".
_NOT_WRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")

MIGRATIONS = session_migrations(SQLITE)  # the tables, written once in store_sql for both backends


# ---------------------------------------------------------------- SQLite

def _is_sqlite(path: Path) -> bool:
    """True when SQLite can read ``path`` as a database (the file is not changed)."""
    try:
        conn = sqlite3.connect(str(path))  # connecting and reading write nothing
    except sqlite3.Error:
        return True  # not readable: let the connection report why
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return True
    except sqlite3.DatabaseError as err:
        return "not a database" not in str(err)
    finally:
        conn.close()


def _inspect_path(shown: str) -> bool:
    """Refuse, before SQLite sees it, a path that is a folder, under a file, or a file of another kind.

    True when a database file is there to inspect (False: nothing yet, and its folder is usable).
    """
    path = Path(shown)
    try:
        if path.is_dir():
            raise SessionStoreError(f"{shown} is a folder; pass a database file path such as "
                                    f"{path / 'sessions.db'}")
        if path.exists() and path.stat().st_size > 0:
            # Read through SQLite, never open(): closing another handle on a database file drops every lock
            # this process holds on it (POSIX), and a store already open here would lose its shared lock.
            if not _is_sqlite(path):
                raise SessionStoreError(f"{shown} is not a SQLite database "
                                        "(another kind of file, or corrupt); "
                                        "it was left untouched - pass another path, or move that file away")
            return True
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise SessionStoreError(f"cannot use {shown}: {blocker} is a file, not a folder; pass a path "
                                    "inside a folder")
        if not path.parent.is_dir():
            raise SessionStoreError(f"the folder {path.parent} does not exist; "
                                    "create it or pass another path")
        return False
    except OSError as err:
        raise SessionStoreError(f"{shown} cannot be read ({err.strerror or err}); "
                                "check the permissions of the file and its folder, "
                                "or pass another path") from None


def _inspected(shown: str, timeout: float) -> sqlite3.Connection:
    """A connection to ``shown`` after ``_check_schema`` accepted it (nothing written; errors explained)."""
    try:
        conn = sqlite3.connect(shown, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as err:
        if getattr(err, "sqlite_errorname", "").startswith(_NOT_WRITABLE):
            raise SessionStoreError(_not_writable(shown, err)) from None
        raise SessionStoreError(f"could not open {shown}: {err}; "
                                "check the path and its permissions") from None
    try:
        _check_schema(conn, shown)
    except sqlite3.DatabaseError as err:
        conn.close()
        raise _refusal(shown, err) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _refusal(shown: str, err: sqlite3.DatabaseError) -> SessionStoreError:
    """The error for a database SQLite could not read or prepare (nothing was changed)."""
    code = getattr(err, "sqlite_errorname", "")
    if code.startswith(_NOT_WRITABLE):
        return SessionStoreError(_not_writable(shown, err))
    if code.startswith(_DAMAGED):
        return SessionStoreError(f"{shown} could not be read as a session database ({err}); "
                                 "it is probably corrupt and was left untouched "
                                 "- restore a backup or pass another path")
    return SessionStoreError(f"{shown} could not be opened as a session database ({err}); "
                             "it was left untouched - check the disk and the path, "
                             "or pass another path")


def _not_writable(shown: str, err: sqlite3.Error) -> str:
    folder = Path(shown).parent
    return (f"{shown} cannot be written ({err}); "
            f"this process may not write to the file or to its folder {folder} "
            "(SQLite keeps -wal and -shm files next to it) - fix the permissions, "
            "or pass a path in a writable folder; nothing was changed")


def _check_schema(conn: sqlite3.Connection, shown: str) -> None:
    """Refuse a newer session schema, or a database of something else (reads only)."""
    tables = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}
    if SCHEMA_TABLE in tables:
        version = conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()[0] or 0
        if version > MIGRATIONS[-1][0]:
            raise SessionStoreError(
                f"{shown} was written by a newer version of the workshop "
                f"(session schema {version}; this code knows up to {MIGRATIONS[-1][0]}); "
                "it was left untouched - upgrade the helpers package "
                "(pip install -U ...) or pass another path")
        return
    foreign = sorted(tables - FACT_STORE_TABLES)  # a file holding only facts may also hold sessions
    if foreign:
        shown_tables = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise SessionStoreError(f"{shown} is a SQLite database of something else "
                                f"(tables: {shown_tables}; no {SCHEMA_TABLE} table); "
                                "it was left untouched - pass another path")


class SQLiteSessionStore(SessionStoreBase):
    """SessionStore in one SQLite file: WAL journal, busy timeout, BEGIN IMMEDIATE writes.

    Safe for several threads (one connection, serialised) and several processes (SQLite's
    file lock). The file may be shared with ``SQLiteFactStore``.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0):
        self.path = str(path)
        self.timeout = timeout
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._open()

    def _purge_deleted_words(self, execute) -> None:
        """FTS5 keeps a deleted line's words in its index pages until they are merged: merge them now, so the
        index holds no word of a turn that was rewritten ("forget X") or of a deleted session ("forget me").
        The cost is the index's size, paid only by a save that dropped stale recall rows and by a delete.
        (Freed pages are zeroed only with SQLite's ``secure_delete``; the WAL keeps them until a checkpoint.)"""
        execute("INSERT INTO recall_lines_fts (recall_lines_fts) VALUES ('optimize')")

    # -- opening: inspect first, change nothing unless the file is ours
    @staticmethod
    def check_file(path: str | Path, *, timeout: float = 30.0) -> None:
        """Raise SessionStoreError if opening would refuse ``path``; reads only, so the file stays as it is.

        Nothing is created either: a missing or empty file passes (once its folder is usable). ``open_stores``
        runs this and ``SQLiteFactStore.check_file`` before opening either store on a shared file.
        """
        shown = str(path)
        if _inspect_path(shown):
            _inspected(shown, timeout).close()

    def _open(self) -> None:
        _inspect_path(self.path)
        conn = _inspected(self.path, self.timeout)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise SessionStoreError(f"{self.path} refused WAL mode (got {mode!r}); "
                                        "put it on a local disk")
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")  # PRAGMA takes no parameters
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._conn = conn
            self._migrate()
        except sqlite3.DatabaseError as err:
            conn.close()
            self._conn = None
            raise _refusal(self.path, err) from None
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _migrate(self) -> None:
        with self._transaction() as conn:
            if 5 in apply_migrations(conn, SCHEMA_TABLE, MIGRATIONS):  # vectors stored before: their search rows
                backfill(conn.execute, conn.executemany)

    # -- plumbing
    @property
    def closed(self) -> bool:
        """True after close(): nothing can be read or saved any more."""
        return self._conn is None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionStoreError(f"the session store on {self.path} is closed, "
                                    "so nothing can be read or saved; "
                                    "open a new SQLiteSessionStore on that file")
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                if getattr(err, "sqlite_errorname", "").startswith(_NOT_WRITABLE):
                    raise SessionStoreError(_not_writable(self.path, err)) from None
                raise SessionStoreError(f"could not start a write on {self.path} "
                                        f"within {self.timeout}s ({err}); "
                                        "another process holds the write lock - retry, "
                                        "or raise timeout") from None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.DatabaseError as err:
                raise SessionStoreError(f"reading {self.path} failed ({err}); "
                                        "the file may be damaged") from None

    # -- the protocol
    def _transaction_for(self, user_id: str, session_id: str, work) -> int:
        """Run one save's writes (``SessionStoreBase``) in a BEGIN IMMEDIATE transaction; errors explained."""
        at = now().isoformat()
        try:
            with self._transaction() as conn:
                return work(conn.execute, conn.executemany, at)
        except sqlite3.DatabaseError as err:
            if getattr(err, "sqlite_errorname", "").startswith(_NOT_WRITABLE):
                raise SessionStoreError(f"saving {user_id}/{session_id} failed: "
                                        + _not_writable(self.path, err)) from None
            raise SessionStoreError(f"saving {user_id}/{session_id} to {self.path} failed "
                                    f"and was rolled back ({err}); "
                                    "the stored session is as it was - retry") from None

    def load_state(self, user_id: str, session_id: str) -> StoredSession:
        """The stored snapshot of one session, exactly as saved."""
        user_id, session_id = check_ids(user_id, session_id)
        with self._lock:  # one read transaction: a writer in another process cannot commit in between
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                rows, turn_rows, vectors = (conn.execute(sql, (user_id, session_id)).fetchall() for sql in LOAD_SQL)
            except sqlite3.DatabaseError as err:
                raise SessionStoreError(f"reading {self.path} failed ({err}); "
                                        "the file may be damaged") from None
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        if not rows:
            raise self._not_found(user_id, session_id, self.path)
        return self._stored(SessionInfo(*rows[0][:-1]), rows[0][-1], turn_rows, vectors,
                            f"session {user_id}/{session_id} in {self.path}")

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""
        user_id = check_user_id(user_id)
        rows = self._read(LIST_SQL, (user_id,))
        return [SessionInfo(*row) for row in rows]

    def delete(self, user_id: str, session_id: str) -> bool:
        """Remove one session and its turns."""
        user_id, session_id = check_ids(user_id, session_id)
        try:
            with self._transaction() as conn:
                deleted = conn.execute(DELETE_SQL, (user_id, session_id)).rowcount > 0
                if deleted:
                    self._purge_deleted_words(conn.execute)  # its recall lines' words leave the index too
                return deleted
        except sqlite3.DatabaseError as err:
            raise SessionStoreError(f"deleting {user_id}/{session_id} from {self.path} failed "
                                    f"and was rolled back ({err}); retry") from None

    def schema_version(self) -> int:
        """The highest session-schema migration applied to this file."""
        return int(self._read(f"SELECT MAX(version) FROM {SCHEMA_TABLE}", ())[0][0] or 0)

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

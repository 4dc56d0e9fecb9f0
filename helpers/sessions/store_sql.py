"""What the SQLite and PostgreSQL session stores share (lesson 11): the tables, the writes of a save, load, fork.

A backend (``helpers.sessions.session_store`` on SQLite, ``helpers.sessions.session_store_pg`` on PostgreSQL)
supplies a transaction (``_transaction_for``), ``load_state`` and its error messages; the tables
(``session_migrations``, in the backend's ``Dialect``) and the SQL of a save, a load and a listing are
written once, here, with ``?`` placeholders. Both kinds of save run in one transaction, so a
process killed mid-save leaves the session exactly as the last committed save left it:

* ``save(user, session, snapshot)`` stores a whole snapshot: the header row, and only the turn rows
  whose digest changed (rows of turns no longer in the snapshot are deleted);
* ``save(user, session, session, expected_revision=r, changes=c)`` stores what changed since revision
  ``r`` (``ChatSession.changes_since``): the header, the changed turn rows, and deletes the rows of
  undone turns - it reads nothing but the revision, so its cost does not grow with the history.

Both check the revision first (``SessionConflictError`` when another writer saved since), and add
the recall vectors of turns embedded since the last save; an undone turn's vectors go with its row.
With the vectors go the rows a search reads in the database (``helpers.sessions.recall_rows``: one per
piece, one per side of a turn with its words under a full-text index; migration 5 derives them for
vectors stored before it), which ``helpers.sessions.recall_search`` searches.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from helpers.core.ids import check_id
from helpers.core.migrations import Dialect, Migration
from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import SnapshotChanges, SnapshotError, resume_arguments
from helpers.sessions.encoding import (VECTOR_COLUMNS, EncodedChanges, EncodedSession, VectorRow, altered_turns,
                                       check_unaltered, damaged, decode_state, encode_changes, encode_state,
                                       import_stored_vectors, pieces_digest)
from helpers.sessions.recall_rows import recall_part, write_recall_rows
from helpers.sessions.protocol import (ForkError, SessionConflictError, SessionInfo, SessionNotFoundError,
                                       SessionIdError, SessionStoreError, StoredSession, check_ids)

SCHEMA_TABLE = "session_schema"  # the migrations table, on both backends
# What session_migrations create, each keyed by user_id first (a user's rows are found in every one of them).
SESSION_TABLES = ("sessions", "session_turns", "recall_vectors", "recall_pieces", "recall_lines")
# SQLite only: the FTS5 index of recall_lines and the tables FTS5 keeps for it (no user_id: kept in step with
# recall_lines by triggers, so deleting a user's recall_lines rows deletes their words here too).
SQLITE_SEARCH_TABLES = ("recall_lines_fts", "recall_lines_fts_data", "recall_lines_fts_idx",
                        "recall_lines_fts_docsize", "recall_lines_fts_config")


def _search_tables(d: Dialect, session_key: str) -> tuple[str, ...]:
    """Migration 5's statements: the recall rows a search reads in the database (``helpers.sessions.recall_rows``).

    ``IF NOT EXISTS`` throughout: a database whose migration table was rolled back by hand keeps its tables, and
    the rows are derived again from the vectors (the data step replaces them)."""
    turn_key = "FOREIGN KEY (user_id, session_id, turn_id) REFERENCES recall_vectors (user_id, session_id, turn_id)"
    pieces = f"""CREATE TABLE IF NOT EXISTS recall_pieces (
            {session_key}
            turn_id INTEGER NOT NULL,
            piece INTEGER NOT NULL,
            side INTEGER NOT NULL,
            answer INTEGER NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector {d.blob} NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id, piece),
            {turn_key}
                ON DELETE CASCADE){d.table_suffix}"""
    if d.name == "sqlite":  # FTS5 over an external-content table, kept in step by triggers
        return (pieces, f"""CREATE TABLE IF NOT EXISTS recall_lines (
            line_id INTEGER PRIMARY KEY,
            {session_key}
            turn_id INTEGER NOT NULL,
            side INTEGER NOT NULL,
            quote TEXT NOT NULL,
            words TEXT NOT NULL,
            UNIQUE (user_id, session_id, turn_id, side),
            {turn_key}
                ON DELETE CASCADE)""",
                "CREATE VIRTUAL TABLE IF NOT EXISTS recall_lines_fts USING fts5(words, content='recall_lines', "
                "content_rowid='line_id')",
                "CREATE TRIGGER IF NOT EXISTS recall_lines_added AFTER INSERT ON recall_lines BEGIN "
                "INSERT INTO recall_lines_fts (rowid, words) VALUES (new.line_id, new.words); END",
                "CREATE TRIGGER IF NOT EXISTS recall_lines_deleted AFTER DELETE ON recall_lines BEGIN "
                "INSERT INTO recall_lines_fts (recall_lines_fts, rowid, words) VALUES ('delete', old.line_id, "
                "old.words); END")
    return (pieces, f"""CREATE TABLE IF NOT EXISTS recall_lines (
            {session_key}
            turn_id INTEGER NOT NULL,
            side INTEGER NOT NULL,
            quote TEXT NOT NULL,
            words TEXT NOT NULL,
            words_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', words)) STORED,
            PRIMARY KEY (user_id, session_id, turn_id, side),
            {turn_key}
                ON DELETE CASCADE)""",
            "CREATE INDEX IF NOT EXISTS recall_lines_words ON recall_lines USING gin (words_tsv)")


def session_migrations(d: Dialect) -> tuple[Migration, ...]:
    """The session tables in dialect ``d`` (``SQLITE`` for ``session_store``, ``POSTGRES`` for ``session_store_pg``).

    Applied migrations never change (tests pin each dialect's text); a table change is a new migration."""
    session_key = f"user_id {d.key_text} NOT NULL,\n            session_id {d.key_text} NOT NULL,"  # every table's
    return (
        (1, "create sessions and session_turns", (
            f"""CREATE TABLE sessions (
            {session_key}
            revision {d.big_int} NOT NULL,
            header TEXT NOT NULL,
            title TEXT NOT NULL,
            turns INTEGER NOT NULL,
            dropped INTEGER NOT NULL,
            forked_from TEXT,
            forked_at INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (user_id, session_id))""",
            f"""CREATE TABLE session_turns (
            {session_key}
            turn_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            question TEXT NOT NULL,
            body TEXT NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id),
            FOREIGN KEY (user_id, session_id) REFERENCES sessions (user_id, session_id) ON DELETE CASCADE)""",
        )),
        (2, "store recall vectors beside the turns", (
            f"""CREATE TABLE recall_vectors (
            {session_key}
            turn_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            source TEXT NOT NULL,
            vector {d.blob} NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id),
            FOREIGN KEY (user_id, session_id, turn_id) REFERENCES session_turns (user_id, session_id, turn_id)
                ON DELETE CASCADE)""",
        )),
        (3, "headers stop listing dropped and recorded turns: the turn rows say it, so a save writes only what "
            "changed", ()),  # no table changes: older code must not read these headers, so it is refused as newer
        (4, "turn rows carry what the memory keeps of each turn; the header keeps only the memory's shared part",
         ()),  # no table changes: older code would lose the per-turn memory, so it is refused as a newer schema
        (5, "recall pieces and lines searched in the database: one row per embedded piece, one per side of a "
            "turn with its words under a full-text index", _search_tables(d, session_key)),
    )


# What a load reads, in one read transaction, and what a listing reads (``?`` placeholders; every backend).
INFO_COLUMNS = ("user_id, session_id, revision, turns, dropped, title, created_at, updated_at, forked_from, "
                "forked_at")
LOAD_SQL = (f"SELECT {INFO_COLUMNS}, header FROM sessions WHERE user_id = ? AND session_id = ?",
            "SELECT turn_id, body, digest FROM session_turns WHERE user_id = ? AND session_id = ?",
            f"SELECT {VECTOR_COLUMNS} FROM recall_vectors WHERE user_id = ? AND session_id = ?")
LIST_SQL = f"SELECT {INFO_COLUMNS} FROM sessions WHERE user_id = ? ORDER BY updated_at DESC, session_id"
DELETE_SQL = "DELETE FROM sessions WHERE user_id = ? AND session_id = ?"

Work = Callable[[Callable, Callable, str], int]  # (execute, executemany, timestamp) -> new revision


def check_fork(state: dict, at_turn: int) -> None:
    """Raise ForkError unless the session can branch before ``at_turn``.

    Any turn id from just after the newest dropped turn up to ``next_id`` works. Forking at or
    before a dropped turn is refused: its content may already be folded into a summary.
    """
    ids, next_id = list(state["turn_ids"]), int(state["next_id"])
    dropped_ids = [d["turn_id"] for d in state.get("dropped") or []]
    if type(at_turn) is not int or not 0 <= at_turn <= next_id:
        raise ForkError(f"cannot fork at turn {at_turn!r}: choose a turn id from 0 to {next_id} "
                        f"(turns in memory: {ids})")
    if dropped_ids and at_turn <= max(dropped_ids):
        raise ForkError(f"cannot fork at turn {at_turn}: turns {dropped_ids} were already trimmed "
                        f"out of memory (a summary may cover them); "
                        f"fork at turn {max(dropped_ids) + 1} or later")


def _settings_problem(state: dict) -> str | None:
    """What is wrong with the stored system prompt and limits (None when a session can be built from them)."""
    prompt = state.get("system_prompt")
    if "system_prompt" not in state or not (prompt is None or isinstance(prompt, str)):
        return f"its system prompt is {prompt!r:.60}, not text"
    for key in ("max_turns", "max_tokens"):
        value = state.get(key)
        if value is not None and not (type(value) is int and value >= 1):
            return f"{key!r} in its header is {value!r:.40}, not a whole number from 1 (or null)"
    return None


def restore(stored: StoredSession, session_class: type[ChatSession], session_kwargs: dict) -> ChatSession:
    """A ``session_class`` continuing the stored snapshot (``session_kwargs``: client, tools, memory=...).

    Stored data that does not fit raises SessionStoreError naming the session; the caller's own
    arguments are never blamed on the data: an unknown argument raises the constructor's TypeError,
    and a ``system_prompt`` other than the stored one raises ConfigError (``resume_arguments``). Nor is
    a bug: only ``load_snapshot``'s SnapshotError (data it cannot read) is reported as damaged data.
    """
    name = f"session {stored.info.user_id}/{stored.info.session_id}"
    version = stored.state.get("version")
    if version != 1:
        raise SessionStoreError(f"{name} is stored in snapshot format {version!r}, "
                                "and this code reads format 1; "
                                "it was not loaded - if a newer helpers package saved it, upgrade this one "
                                "(pip install -U ...); "
                                "otherwise the row was changed by hand: restore a backup")
    problem = _settings_problem(stored.state)
    if problem:
        raise damaged(name, problem)
    prompt, kwargs = resume_arguments(stored.state, session_kwargs,
                                      f"{stored.info.user_id}/{stored.info.session_id}")
    session = session_class(prompt, **kwargs)  # a wrong argument is the caller's error: raised as it is
    try:  # only decoding the stored turns and memory state can mean damaged data
        session.load_snapshot(stored.state, catch_up=False)
    except SnapshotError as err:
        raise SessionStoreError(f"{name} could not be restored as a {session_class.__name__} ({err}); "
                                "its stored data is damaged (restore a backup), or its memory state needs "
                                "the memory= (or session class) it was created with (open it with that)") from err
    check_unaltered(stored.altered, name)  # before any memory reads the turns again
    import_stored_vectors(session, stored.vectors)
    session.catch_up_memory()
    return session


_UPSERT_TURNS = ("INSERT INTO session_turns (user_id, session_id, turn_id, state, question, body, digest) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, session_id, turn_id) DO UPDATE SET "
                 "state = excluded.state, question = excluded.question, body = excluded.body, "
                 "digest = excluded.digest")
_DELETE_TURN = "DELETE FROM session_turns WHERE user_id = ? AND session_id = ? AND turn_id = ?"


class SessionStoreBase:
    """``save``, ``load`` and ``fork`` on top of a backend's transaction and ``load_state``;
    ``with store:`` closes it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def load_state(self, user_id: str, session_id: str) -> StoredSession:  # pragma: no cover - abstract
        raise NotImplementedError

    def _transaction_for(self, user_id: str, session_id: str, work: Work) -> int:  # pragma: no cover - abstract
        """Run ``work(execute, executemany, now)`` in one write transaction on this session (errors explained)."""
        raise NotImplementedError

    def _title_from(self, question: str) -> str:
        """The title column for a session whose first question, as stored, is ``question``."""
        return question[:80]

    # -- the writes of a save
    def _write(self, user_id: str, session_id: str, encoded: EncodedSession, expected_revision: int | None,
               lineage: tuple[str, int] | None = None) -> int:
        return self._transaction_for(user_id, session_id, lambda execute, executemany, at: self._write_rows(
            execute, executemany, user_id, session_id, encoded, expected_revision, lineage, at))

    def _revision(self, execute, user_id: str, session_id: str, expected_revision: int | None) -> tuple | None:
        """The stored (revision, title) row, after checking the revision this save expects."""
        row = execute("SELECT revision, title FROM sessions WHERE user_id = ? AND session_id = ?",
                      (user_id, session_id)).fetchone()
        stored = row[0] if row else 0
        if expected_revision is not None and stored != expected_revision:
            raise self._conflict(user_id, session_id, stored, expected_revision)
        return row

    def _write_rows(self, execute, executemany, user_id: str, session_id: str, encoded: EncodedSession,
                    expected_revision: int | None, lineage: tuple[str, int] | None, at: str) -> int:
        """The rows of a whole-snapshot save: the header row and only the turn rows whose digest changed."""
        row = self._revision(execute, user_id, session_id, expected_revision)
        stored = row[0] if row else 0
        if row is None:
            execute("INSERT INTO sessions (user_id, session_id, revision, header, title, turns, dropped, "
                    "forked_from, forked_at, created_at, updated_at) "
                    "VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (user_id, session_id, encoded.header, encoded.title, encoded.turns, encoded.dropped,
                     *(lineage or (None, None)), at, at))
        else:
            execute("UPDATE sessions SET revision = ?, header = ?, title = ?, turns = ?, dropped = ?, "
                    "updated_at = ? WHERE user_id = ? AND session_id = ?",
                    (stored + 1, encoded.header, encoded.title, encoded.turns, encoded.dropped, at,
                     user_id, session_id))
        have = dict(execute("SELECT turn_id, digest FROM session_turns WHERE user_id = ? AND session_id = ?",
                            (user_id, session_id)).fetchall())
        wanted = {r[0] for r in encoded.rows}
        gone = [(user_id, session_id, t) for t in have if t not in wanted]
        if gone:
            executemany(_DELETE_TURN, gone)
        changed = [(user_id, session_id, *r) for r in encoded.rows if have.get(r[0]) != r[4]]
        if changed:
            executemany(_UPSERT_TURNS, changed)
            self._drop_stale_recall(execute, user_id, session_id, [r[2:] for r in changed if r[2] in have])
        if encoded.vectors:
            self._write_vectors(execute, executemany, user_id, session_id, encoded.vectors, wanted)
        return stored + 1

    def _write_changes(self, execute, executemany, user_id: str, session_id: str, encoded: EncodedChanges,
                       expected_revision: int, at: str) -> int:
        """The rows of a save of what changed: reads only the revision (and the title, after an undo)."""
        row = self._revision(execute, user_id, session_id, expected_revision)
        if encoded.gone:
            executemany(_DELETE_TURN, [(user_id, session_id, t) for t in encoded.gone])
        if encoded.rows:
            executemany(_UPSERT_TURNS, [(user_id, session_id, *r) for r in encoded.rows])
        title = row[1]
        if encoded.gone or (not title and encoded.rows):  # the first question may have changed
            first = execute("SELECT question FROM session_turns WHERE user_id = ? AND session_id = ? AND "
                            "question <> '' ORDER BY turn_id LIMIT 1", (user_id, session_id)).fetchone()
            title = self._title_from(first[0]) if first else ""
        execute("UPDATE sessions SET revision = ?, header = ?, title = ?, turns = ?, dropped = ?, updated_at = ? "
                "WHERE user_id = ? AND session_id = ?",
                (row[0] + 1, encoded.header, title, encoded.turns, encoded.dropped, at, user_id, session_id))
        if encoded.vectors:
            self._write_vectors(execute, executemany, user_id, session_id, encoded.vectors, None)
        return row[0] + 1

    def _drop_stale_recall(self, execute, user_id: str, session_id: str, rows: Sequence[tuple]) -> None:
        """Delete the stored recall rows (vectors, pieces, lines) of rewritten turns whose pieces changed since
        they were embedded: a turn read again (after "forget X", an edit) is embedded at its next search, and
        until then no search of the database may find the words it no longer holds. ``rows`` are turn rows
        (turn id first, body fourth)."""
        fresh = {}
        for row in rows:
            part = recall_part(row[3])
            fresh[row[0]] = pieces_digest(part["texts"]) if part is not None else None
        if not fresh:
            return
        stale: list[int] = []
        ids = sorted(fresh)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            stale += [turn_id for turn_id, source in execute(
                "SELECT turn_id, source FROM recall_vectors WHERE user_id = ? AND session_id = ? AND turn_id IN ("
                + ", ".join("?" * len(chunk)) + ")", (user_id, session_id, *chunk)).fetchall()
                if source != fresh[turn_id]]
        for start in range(0, len(stale), 500):
            chunk = stale[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for table in ("recall_lines", "recall_pieces", "recall_vectors"):  # fixed names
                execute(f"DELETE FROM {table} WHERE user_id = ? AND session_id = ? AND turn_id IN ({marks})",
                        (user_id, session_id, *chunk))
        if stale:
            self._purge_deleted_words(execute)

    def _purge_deleted_words(self, execute) -> None:
        """Make deleted recall lines' words unreadable in the full-text index too (a backend whose index keeps
        them after a delete overrides this)."""

    def _write_vectors(self, execute, executemany, user_id: str, session_id: str, vectors: list[VectorRow],
                       wanted: set[int] | None) -> None:
        """Store the vectors of turns not stored yet (or stored from another model, other pieces or damaged).

        Only turns whose rows exist get vectors (``wanted``; None reads those of ``vectors`` alone, and
        writes them without comparing: a save of what changed hands over only vectors not stored yet).
        Rows of turns that are gone were deleted with their turn rows (ON DELETE CASCADE).
        """
        have: dict[int, tuple] = {}
        if wanted is None:  # a save of what changed: only these turns' rows are read (the vectors are new)
            ids = sorted({row[0] for row in vectors})
            wanted = set()
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                wanted.update(row[0] for row in execute(
                    "SELECT turn_id FROM session_turns WHERE user_id = ? AND session_id = ? AND turn_id IN ("
                    + ", ".join("?" * len(chunk)) + ")", (user_id, session_id, *chunk)).fetchall())
        else:
            have = {row[0]: tuple(row[1:]) for row in execute(
                "SELECT turn_id, model, source, length(vector) FROM recall_vectors WHERE user_id = ? AND "
                "session_id = ?", (user_id, session_id)).fetchall()}
        new = [(user_id, session_id, *row) for row in vectors
               if row[0] in wanted and have.get(row[0]) != (row[1], row[3], len(row[4]))]
        if new:
            executemany("INSERT INTO recall_vectors (user_id, session_id, turn_id, model, dim, source, "
                        "vector) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, session_id, turn_id) "
                        "DO UPDATE SET model = excluded.model, dim = excluded.dim, source = excluded.source, "
                        "vector = excluded.vector", new)
            # the same vectors, one row per piece, and each side's words: what a search reads in the database
            write_recall_rows(execute, executemany, user_id, session_id,
                              {row[2]: (row[3], row[4], row[6]) for row in new}, self._insert_pieces)

    _insert_pieces = None  # a backend that stores more per piece (pgvector's column) writes the piece rows itself

    # -- the protocol
    def save(self, user_id: str, session_id: str, session: ChatSession | dict, *,
             expected_revision: int | None = None, changes: SnapshotChanges | None = None) -> int:
        """Store the snapshot atomically; with ``expected_revision`` refuse if someone else saved since.

        With ``changes`` (``session.changes_since(mark)``, against the mark taken when revision
        ``expected_revision`` was saved or loaded) only those rows are written: the cost of a turn, not
        of the history. ``session`` then supplies only the recall vectors.
        """
        user_id, session_id = check_ids(user_id, session_id)
        if changes is None:
            return self._write(user_id, session_id, encode_state(session), expected_revision)
        if type(expected_revision) is not int or expected_revision < 1:
            raise SessionStoreError(f"save(changes=...) continues a stored revision (got expected_revision="
                                    f"{expected_revision!r}); save the whole session for its first save")
        encoded = encode_changes(changes, None if isinstance(session, dict) else session)
        return self._transaction_for(user_id, session_id, lambda execute, executemany, at: self._write_changes(
            execute, executemany, user_id, session_id, encoded, expected_revision, at))

    def load(self, user_id: str, session_id: str, *, session_class: type[ChatSession] = ChatSession,
             **session_kwargs: Any) -> ChatSession:
        """A live session continuing the stored one."""
        return restore(self.load_state(user_id, session_id), session_class, session_kwargs)

    def fork(self, user_id: str, session_id: str, at_turn: int, new_session_id: str, *,
             session_class: type[ChatSession] = ChatSession, **session_kwargs: Any) -> SessionInfo:
        """Start ``new_session_id`` from the turns with id < ``at_turn``; the original is untouched.

        The branch is the stored session with its newest turns undone one by one (``undo()``),
        so memory plug-ins forget what those turns added and turn ids are never reused. A session
        with summary/profile state needs the ``session_class`` or a fresh ``memory=`` like the one
        it was created with; refuses to overwrite an existing session.
        """
        user_id, new_session_id = check_ids(user_id, new_session_id)
        session_id = check_id(session_id, "session_id", SessionIdError)
        stored = self.load_state(user_id, session_id)
        state = stored.state
        session = restore(stored, session_class, session_kwargs)  # first: it explains a damaged snapshot
        check_fork(state, at_turn)
        carried = getattr(session, "_carried_memory", lambda: None)() is not None  # kept, but not understood
        if state.get("memory") and (carried or not session.memory_state()):
            raise ForkError(f"session {user_id}/{session_id} has summary/profile state that a plain "
                            f"{session_class.__name__} cannot carry; "
                            "pass memory=<a new MemoryAssembler configured as before> (or its session_class) "
                            "so the branch keeps it")
        while session.turn_ids and session.turn_ids[-1] >= at_turn:
            session.undo()
        try:
            self._write(user_id, new_session_id, encode_state(session), 0, (session_id, at_turn))
        except SessionConflictError:
            raise ForkError(f"session {user_id}/{new_session_id} already exists; "
                            "choose another new_session_id or delete it first") from None
        return self.load_state(user_id, new_session_id).info

    def _stored(self, info: SessionInfo, header: str, turn_rows: list[tuple], vectors: list[tuple],
                name: str) -> StoredSession:
        """A load's rows (``LOAD_SQL``) as the StoredSession; ``name`` says which session, where, in errors."""
        bodies = {turn_id: body for turn_id, body, _ in turn_rows}
        state = decode_state(header, bodies, name)
        altered = altered_turns(bodies, {turn_id: digest for turn_id, _, digest in turn_rows})
        return StoredSession(info, state, tuple(vectors), altered)

    def _not_found(self, user_id: str, session_id: str, where: str) -> SessionNotFoundError:
        known = [s.session_id for s in self.list_sessions(user_id)]  # type: ignore[attr-defined]
        hint = (f"saved sessions of {user_id!r}: {', '.join(known[:8])}" if known
                else f"{user_id!r} has none yet")
        return SessionNotFoundError(f"no session {session_id!r} for user {user_id!r} in {where} ({hint})")

    def _conflict(self, user_id: str, session_id: str, stored: int, expected: int) -> SessionConflictError:
        if expected == 0:
            return SessionConflictError(f"session {user_id}/{session_id} already exists (revision {stored}); "
                                        "open it to continue it, or pick another session id")
        return SessionConflictError(
            f"session {user_id}/{session_id} was saved by another writer since this copy was loaded (stored "
            f"revision {stored}, this copy expected {expected}); nothing was written - "
            "reopen the session and redo the turn")

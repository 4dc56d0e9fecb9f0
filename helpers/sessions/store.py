"""Saved conversations (lesson 11): a small ``SessionStore`` protocol, its SQLite implementation,
and ``PersistentSession``, a ChatSession that saves itself after every completed turn.

A session is stored under ``(user_id, session_id)`` from its ``ChatSession.snapshot()``:

* ``sessions``: one row per conversation: a JSON header (system prompt, limits, turn ids,
  ``next_id``, the snapshot's ``memory`` field with any summary or profile), a ``revision``
  that grows by one per save, counts for listing, and where a fork came from.
* ``session_turns``: one row per turn (kept in memory, dropped by trimming, or only a
  ``TurnRecord``), with a digest of its JSON. A save after a turn inserts that turn's row and
  rewrites only rows whose digest changed (a turn that trimming just dropped); rows of undone
  turns are deleted. Header and rows change in one transaction, so a process killed mid-save
  leaves the session exactly as the last committed save left it.
* ``recall_vectors``: the recall index's embeddings (``RecallIndex.export_vectors``), one row per
  turn: the embedding model's name, the vector size ``dim``, a digest of the embedded pieces and
  the pieces' vectors as float32 bytes. A save adds the rows of turns embedded since the last save
  in the same transaction as the turn rows; an undone turn's row goes with its turn row. A load
  hands them back to the session's recall index (``import_stored_vectors``), so the first recall
  after a restart embeds nothing that was already embedded; vectors of another model, or of pieces
  that changed, are ignored and embedded again. The header JSON never carries vectors.

``PersistentSession.undo()`` and ``reset()`` save too; a change whose save fails is rolled back in
memory as well (``SessionSaveError``), so memory and store never disagree.
``fork(user, session, at_turn, new_id)`` stores a new session holding the turns with id < ``at_turn``
(the original with its newest turns undone), so a conversation can branch from an earlier point
without touching the original.

Ids follow the one rule in ``helpers.ids`` (the fact stores use it too): NFKC, surrounding whitespace
removed, case kept; an empty, overlong, NUL- or lone-surrogate-holding id raises SessionStoreError.
Text is stored as given, NUL included, except lone surrogates, which become U+FFFD (``storable_text``).
Reopening with ``system_prompt=`` works when it equals the stored prompt, and raises ConfigError when
it differs (a saved conversation keeps its prompt); other arguments are checked by the session class.

The same schema lives in ``helpers.sessions.postgres`` for deployments with many processes.
A SQLite file may also hold the durable fact store (``helpers.facts.store``): its tables
are recognised and left alone. Any other file - not SQLite, SQLite with someone else's tables,
or a newer schema version - is refused with an error naming it, and never written to.
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

from helpers.clock import now
from helpers.errors import WorkshopError
from helpers.history import split_turns
from helpers.ids import MAX_ID_CHARS, check_id
from helpers.memory.recall_index import RecallWarning
from helpers.migrations import apply_migrations
from helpers.session import ChatSession
from helpers.sessions.snapshot import resume_arguments

SCHEMA_TABLE = "session_schema"
# Tables the durable fact store (lesson 10) creates; a file holding only these may also hold sessions.
FACT_STORE_TABLES = frozenset({"schema_migrations", "facts", "provenance", "audit"})
# SQLite result codes that mean "you may not write here", not "the file is damaged".
_NOT_WRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")

MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "create sessions and session_turns", (
        """CREATE TABLE sessions (
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
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
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
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
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            turn_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            source TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (user_id, session_id, turn_id),
            FOREIGN KEY (user_id, session_id, turn_id) REFERENCES session_turns (user_id, session_id, turn_id)
                ON DELETE CASCADE)""",
    )),
)


class SessionStoreError(WorkshopError, RuntimeError):
    """The session store could not open, read or write; the message says what to do next."""


class SessionNotFoundError(SessionStoreError):
    """No session is stored under this user id and session id."""


class SessionConflictError(SessionStoreError):
    """Another writer saved this session since it was loaded; reload it and redo the turn."""


class SessionSaveError(SessionStoreError):
    """A turn, undo or reset could not be saved; it was rolled back in memory, so memory matches the store."""


class ForkError(SessionStoreError):
    """fork() was asked for a turn it cannot branch from."""


@dataclass(frozen=True)
class SessionInfo:
    """What a listing shows about one stored session."""

    user_id: str
    session_id: str
    revision: int
    turns: int
    dropped: int
    title: str
    created_at: str
    updated_at: str
    forked_from: str | None = None
    forked_at: int | None = None


@dataclass(frozen=True)
class StoredSession:
    """A loaded session: its snapshot state plus the listing facts (revision, lineage)."""

    info: SessionInfo
    state: dict
    vectors: tuple[tuple, ...] = ()  # stored recall vectors: (turn_id, model, dim, source, vector bytes)


@dataclass(frozen=True)
class EncodedSession:
    """A snapshot split into a header and one row per turn: (turn_id, state, question, body, digest).

    ``vectors`` holds the recall index's embeddings as (turn_id, model, dim, source, bytes) rows.
    """

    header: str
    rows: list[tuple[int, str, str, str, str]]
    title: str
    turns: int
    dropped: int
    vectors: list[tuple[int, str, int, str, bytes]] | None = None


class SessionStore(Protocol):
    """Where conversations live between runs, keyed by user id and session id."""

    def save(self, user_id: str, session_id: str, session: ChatSession | dict, *,
             expected_revision: int | None = None) -> int:
        """Store the session's snapshot in one transaction; returns the new revision."""

    def load_state(self, user_id: str, session_id: str) -> StoredSession:
        """The stored snapshot and its listing facts (SessionNotFoundError if absent)."""

    def load(self, user_id: str, session_id: str, *, session_class: type[ChatSession] = ChatSession,
             **session_kwargs: Any) -> ChatSession:
        """A live session continuing the stored one (client, tools... from ``session_kwargs``)."""

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""

    def delete(self, user_id: str, session_id: str) -> bool:
        """Remove a session and its turns; False when there was nothing to remove."""

    def fork(self, user_id: str, session_id: str, at_turn: int, new_session_id: str, *,
             session_class: type[ChatSession] = ChatSession, **session_kwargs: Any) -> SessionInfo:
        """A new session holding the turns before ``at_turn``; the original is untouched."""

    def schema_version(self) -> int:
        """The highest migration applied."""

    @property
    def closed(self) -> bool:
        """True once close() was called (every read or save then raises SessionStoreError)."""

    def close(self) -> None:
        """Release connections."""


# ---------------------------------------------------------------- secrets in messages

_URL_PASSWORD = re.compile(r"(\w+://[^\s:/@\"']*):([^\s@\"']*)@")
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[^\s&\"']+)", re.IGNORECASE)


def redact_dsn(text: str, dsn: str | None = None) -> str:
    """``text`` with every database password replaced by ``***`` (URL and ``password=`` forms).

    With ``dsn``, the passwords found in it are also removed wherever they appear in ``text``
    (libpq quotes pieces of a DSN it cannot parse).
    """
    secrets = set()
    if dsn:
        secrets |= {m.group(2) for m in _URL_PASSWORD.finditer(dsn)}
        secrets |= {m.group(2).strip("'\"") for m in _KEY_PASSWORD.finditer(dsn)}
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:***@", str(text))
    text = _KEY_PASSWORD.sub(lambda m: f"{m.group(1)}***", text)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:  # shorter ones would blank out ordinary words
            text = text.replace(secret, "***")
    return text


# ---------------------------------------------------------------- snapshot <-> rows

def check_ids(user_id: str, session_id: str) -> tuple[str, str]:
    """The ids as every store keys them (``helpers.ids``: NFKC, surrounding whitespace removed, case kept).

    Raises SessionStoreError for an id no store accepts: not a string, empty, over ``MAX_ID_CHARS``
    once normalised, or holding a NUL character or a lone surrogate. The fact stores key user ids by
    the same rule, so an id names the same user in both.
    """
    return check_id(user_id, "user_id", SessionStoreError), check_id(session_id, "session_id", SessionStoreError)


def check_user_id(user_id: str) -> str:
    """``user_id`` as every store keys it (see ``check_ids``)."""
    return check_id(user_id, "user_id", SessionStoreError)


def _state_of(session: ChatSession | dict) -> dict:
    state = session.snapshot() if hasattr(session, "snapshot") else session
    if not isinstance(state, dict) or not isinstance(state.get("messages"), list) \
            or not isinstance(state.get("turn_ids"), list):
        raise SessionStoreError("save() needs a ChatSession or its snapshot() dict "
                                "(with 'messages' and 'turn_ids')")
    return state


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` with each lone surrogate (half of a broken UTF-16 pair, not valid Unicode) replaced by U+FFFD.

    No database, and no UTF-8 request body, can hold a lone surrogate; a reply that holds one
    (a server's broken escape) is stored - and continued - with the replacement character.
    """
    return _LONE_SURROGATE.sub("\ufffd", text)


def has_lone_surrogates(value: Any) -> bool:
    """True when a string anywhere in ``value`` (JSON-ready data such as a snapshot) holds a lone surrogate."""
    return _LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False, default=str)) is not None


def _dumps(value: Any) -> str:
    """Compact JSON that any database can store: lone surrogates (only ever inside strings) become U+FFFD."""
    return storable_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def encode_state(session: ChatSession | dict) -> EncodedSession:
    """Split a snapshot into a header and per-turn rows (raises SessionStoreError if it is inconsistent).

    Text is stored as it is (NUL included) except lone surrogates, which become U+FFFD (``storable_text``).
    """
    state = _state_of(session)
    lead, chunks = split_turns(state["messages"])
    ids = list(state["turn_ids"])
    if len(chunks) != len(ids):
        raise SessionStoreError(f"snapshot is inconsistent: {len(chunks)} turns in 'messages' but "
                                f"{len(ids)} turn ids; take a fresh session.snapshot()")
    bodies: dict[int, dict] = {}

    def put(turn_id: Any, slot: str, value: Any) -> None:
        if type(turn_id) is not int:
            raise SessionStoreError(f"snapshot turn id {turn_id!r} is not an integer")
        body = bodies.setdefault(turn_id, {})
        if slot in body:
            raise SessionStoreError(f"snapshot is inconsistent: turn {turn_id} appears twice as {slot!r}")
        body[slot] = value

    for turn_id, chunk in zip(ids, chunks, strict=True):
        put(turn_id, "kept", chunk)
    dropped = state.get("dropped") or []
    for item in dropped:
        put(item["turn_id"], "dropped", {"messages": item["messages"], "tokens": item["tokens"]})
        if "kept" in bodies[item["turn_id"]]:
            raise SessionStoreError(f"snapshot is inconsistent: turn {item['turn_id']} "
                                    "is both kept and dropped")
    records = state.get("turns") or []
    for record in records:
        put(record["turn_id"], "record", record)
    header = {k: v for k, v in state.items() if k not in ("messages", "turns", "dropped")}
    header.update(lead=lead, dropped_ids=[d["turn_id"] for d in dropped],
                  record_ids=[r["turn_id"] for r in records])
    rows = []
    for turn_id in sorted(bodies):
        body = bodies[turn_id]
        text = _dumps(body)
        kind = "kept" if "kept" in body else "dropped" if "dropped" in body else "record"
        first = (body.get("kept") or (body.get("dropped") or {}).get("messages") or [{}])[0]
        question = body["record"]["question"] if "record" in body else str(first.get("content") or "")
        question = storable_text(str(question)[:500])
        rows.append((turn_id, kind, question, text, hashlib.sha256(text.encode()).hexdigest()))
    title = next((r[2] for r in rows if r[2]), "")[:80]
    vectors = encode_vectors(session) if not isinstance(session, dict) else None
    return EncodedSession(_dumps(header), rows, title, len(ids), len(dropped), vectors)


# ---------------------------------------------------------------- recall vectors <-> rows

def recall_index(session: Any) -> Any:
    """The session's recall index (``session.memory.recall``), or None when it has none."""
    return getattr(getattr(session, "memory", None), "recall", None)


def pieces_digest(pieces: Sequence[str]) -> str:
    """A digest of the texts a turn's vectors were embedded from (a stored vector fits only these)."""
    return hashlib.sha256(_dumps(list(pieces)).encode()).hexdigest()


def encode_vectors(session: Any) -> list[tuple[int, str, int, str, bytes]] | None:
    """Recall vectors as (turn_id, model, dim, source digest, float32 bytes) rows; None without an index."""
    index = recall_index(session)
    if index is None:
        return None
    if len(index.pending) == len(index):
        return []  # nothing embedded yet
    model, vectors = index.export_vectors()
    return [(turn_id, model, int(matrix.shape[1]), pieces_digest(index.texts[turn_id]),
             np.ascontiguousarray(matrix, dtype="<f4").tobytes())
            for turn_id, matrix in sorted(vectors.items()) if turn_id in index.texts]


def import_stored_vectors(session: Any, rows: Sequence[tuple]) -> int:
    """Hand stored vector rows to the session's recall index; returns how many turns it took.

    Rows of another embedding model, or whose pieces changed since they were embedded, are left
    out (those turns are embedded again at the next search); a damaged row is reported with a
    RecallWarning and left out too.
    """
    index = recall_index(session)
    if index is None or not rows:
        return 0
    by_model: dict[str, dict[int, np.ndarray]] = {}
    for turn_id, model, dim, source, blob in rows:
        pieces = index.texts.get(turn_id)
        if pieces is None or source != pieces_digest(pieces):
            continue
        blob = bytes(blob)
        if dim < 1 or not blob or len(blob) % (4 * dim):
            warnings.warn(f"the stored recall vectors of turn {turn_id} are damaged ({len(blob)} bytes for "
                          f"vectors of {dim} numbers); they were ignored and the turn will be embedded again",
                          RecallWarning, stacklevel=2)
            continue
        by_model.setdefault(model, {})[turn_id] = np.frombuffer(blob, dtype="<f4").reshape(-1, dim)
    return sum(index.import_vectors(model, vectors) for model, vectors in by_model.items())


def _damaged(name: str, what: str) -> SessionStoreError:
    return SessionStoreError(f"{name} is damaged in the database: {what}; it was not loaded "
                             "- restore the database from a backup, or delete that session")


def _parse(name: str, where: str, text: Any, kind: type) -> Any:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as err:
        raise _damaged(name, f"its {where} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise _damaged(name, f"its {where} is a JSON {type(value).__name__}, not a {kind.__name__}")
    return value


def _check_list(name: str, state: dict, key: str, item: type) -> list:
    value = state.get(key)
    if not isinstance(value, list) or not all(type(v) is item for v in value):
        raise _damaged(name, f"{key!r} in its header is {value!r:.80}, not a list of {item.__name__}")
    return value


def decode_state(header: str, bodies: dict[int, str], name: str = "the stored session") -> dict:
    """Rebuild the exact snapshot from a header and ``{turn_id: body}`` (inverse of ``encode_state``).

    Rows that are not what ``encode_state`` wrote (bad JSON, wrong types, missing keys) raise a
    SessionStoreError naming ``name`` and what is wrong.
    """
    state = _parse(name, "header", header, dict)
    parsed = {turn_id: _parse(name, f"turn {turn_id}", body, dict) for turn_id, body in bodies.items()}
    for key in ("lead", "turn_ids", "dropped_ids", "record_ids"):
        _check_list(name, state, key, dict if key == "lead" else int)

    def part(turn_id: int, slot: str, kind: type) -> Any:
        value = parsed.get(turn_id, {}).get(slot)
        if not isinstance(value, kind):
            problem = "is missing" if value is None else f"is a {type(value).__name__}, not a {kind.__name__}"
            raise _damaged(name, f"the {slot!r} data of turn {turn_id} {problem}")
        return value

    messages = list(state.pop("lead"))
    for turn_id in state["turn_ids"]:
        messages += part(turn_id, "kept", list)
    dropped = [{"turn_id": i, **part(i, "dropped", dict)} for i in state.pop("dropped_ids")]
    records = [part(i, "record", dict) for i in state.pop("record_ids")]
    state.update(messages=messages, turns=records, dropped=dropped)
    return state


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
    and a ``system_prompt`` other than the stored one raises ConfigError (``resume_arguments``).
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
        raise _damaged(name, problem)
    prompt, kwargs = resume_arguments(stored.state, session_kwargs,
                                      f"{stored.info.user_id}/{stored.info.session_id}")
    session = session_class(prompt, **kwargs)  # a wrong argument is the caller's error: raised as it is
    try:  # only decoding the stored turns and memory state can mean damaged data
        session.load_snapshot(stored.state)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        detail = f"{type(err).__name__}: {err}" if isinstance(err, KeyError) else str(err)
        raise SessionStoreError(f"{name} could not be restored as a {session_class.__name__} ({detail}); "
                                "its stored data is damaged, or its memory state needs the memory= "
                                "(or session class) it was created with - restore a backup, "
                                "or delete the session") from None
    import_stored_vectors(session, stored.vectors)
    return session


# ---------------------------------------------------------------- shared behaviour

class SessionStoreBase:
    """``load`` and ``fork`` on top of a backend's ``load_state`` and ``_write``; ``with store:`` closes it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def load_state(self, user_id: str, session_id: str) -> StoredSession:  # pragma: no cover - abstract
        raise NotImplementedError

    def _write(self, user_id: str, session_id: str, encoded: EncodedSession, expected_revision: int | None,
               lineage: tuple[str, int] | None = None) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _write_rows(self, execute, executemany, user_id: str, session_id: str, encoded: EncodedSession,
                    expected_revision: int | None, lineage: tuple[str, int] | None, at: str) -> int:
        """The rows of one save, inside the backend's transaction; SQL uses ``?`` placeholders.

        Writes the header row and only the turn rows whose digest changed; returns the new revision.
        """
        row = execute("SELECT revision FROM sessions WHERE user_id = ? AND session_id = ?",
                      (user_id, session_id)).fetchone()
        stored = row[0] if row else 0
        if expected_revision is not None and stored != expected_revision:
            raise self._conflict(user_id, session_id, stored, expected_revision)
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
            executemany("DELETE FROM session_turns WHERE user_id = ? AND session_id = ? AND turn_id = ?",
                        gone)
        changed = [(user_id, session_id, *r) for r in encoded.rows if have.get(r[0]) != r[4]]
        if changed:
            executemany("INSERT INTO session_turns "
                        "(user_id, session_id, turn_id, state, question, body, digest) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (user_id, session_id, turn_id) DO UPDATE SET "
                        "state = excluded.state, question = excluded.question, body = excluded.body, "
                        "digest = excluded.digest", changed)
        if encoded.vectors:
            self._write_vectors(execute, executemany, user_id, session_id, encoded, wanted)
        return stored + 1

    def _write_vectors(self, execute, executemany, user_id: str, session_id: str, encoded: EncodedSession,
                       wanted: set[int]) -> None:
        """Store the vectors of turns not stored yet (or stored from another model, other pieces or damaged).

        Rows of turns that are gone were deleted with their turn rows (ON DELETE CASCADE).
        """
        have = {row[0]: tuple(row[1:]) for row in execute(
            "SELECT turn_id, model, source, length(vector) FROM recall_vectors WHERE user_id = ? AND "
            "session_id = ?", (user_id, session_id)).fetchall()}
        new = [(user_id, session_id, *row) for row in encoded.vectors or ()
               if row[0] in wanted and have.get(row[0]) != (row[1], row[3], len(row[4]))]
        if new:
            executemany("INSERT INTO recall_vectors (user_id, session_id, turn_id, model, dim, source, "
                        "vector) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, session_id, turn_id) "
                        "DO UPDATE SET model = excluded.model, dim = excluded.dim, source = excluded.source, "
                        "vector = excluded.vector", new)

    def save(self, user_id: str, session_id: str, session: ChatSession | dict, *,
             expected_revision: int | None = None) -> int:
        """Store the snapshot atomically; with ``expected_revision`` refuse if someone else saved since."""
        user_id, session_id = check_ids(user_id, session_id)
        return self._write(user_id, session_id, encode_state(session), expected_revision)

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
        session_id = check_id(session_id, "session_id", SessionStoreError)
        stored = self.load_state(user_id, session_id)
        state = stored.state
        session = restore(stored, session_class, session_kwargs)  # first: it explains a damaged snapshot
        check_fork(state, at_turn)
        if state.get("memory") and not session.memory_state():
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


# ---------------------------------------------------------------- SQLite

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

    # -- opening: inspect first, change nothing unless the file is ours
    def _open(self) -> None:
        path = Path(self.path)
        try:
            self._check_path(path)
        except OSError as err:
            raise SessionStoreError(f"{self.path} cannot be read ({err.strerror or err}); "
                                    "check the permissions of the file and its folder, "
                                    "or pass another path") from None
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as err:
            if getattr(err, "sqlite_errorname", "").startswith(_NOT_WRITABLE):
                raise SessionStoreError(self._not_writable(err)) from None
            raise SessionStoreError(f"could not open {self.path}: {err}; "
                                    "check the path and its permissions") from None
        try:
            self._check_schema(conn)
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
            code = getattr(err, "sqlite_errorname", "")
            if code.startswith(_NOT_WRITABLE):
                raise SessionStoreError(self._not_writable(err)) from None
            if code.startswith(_DAMAGED):
                raise SessionStoreError(f"{self.path} could not be read as a session database ({err}); "
                                        "it is probably corrupt and was left untouched "
                                        "- restore a backup or pass another path") from None
            raise SessionStoreError(f"{self.path} could not be opened as a session database ({err}); "
                                    "it was left untouched - check the disk and the path, "
                                    "or pass another path") from None
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _check_path(self, path: Path) -> None:
        """Refuse, before SQLite sees it, a path that is a folder, under a file, or a file of another kind."""
        if path.is_dir():
            raise SessionStoreError(f"{self.path} is a folder; pass a database file path such as "
                                    f"{path / 'sessions.db'}")
        if path.exists() and path.stat().st_size > 0:
            with open(path, "rb") as handle:
                head = handle.read(16)
            if head != b"SQLite format 3\x00":
                raise SessionStoreError(f"{self.path} is not a SQLite database "
                                        "(another kind of file, or corrupt); "
                                        "it was left untouched - pass another path, or move that file away")
            return
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise SessionStoreError(f"cannot use {self.path}: {blocker} is a file, not a folder; pass a path "
                                    "inside a folder")
        if not path.parent.is_dir():
            raise SessionStoreError(f"the folder {path.parent} does not exist; "
                                    "create it or pass another path")

    def _not_writable(self, err: sqlite3.Error) -> str:
        folder = Path(self.path).parent
        return (f"{self.path} cannot be written ({err}); "
                f"this process may not write to the file or to its folder {folder} "
                "(SQLite keeps -wal and -shm files next to it) - fix the permissions, "
                "or pass a path in a writable folder; nothing was changed")

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}
        if SCHEMA_TABLE in tables:
            version = conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()[0] or 0
            if version > MIGRATIONS[-1][0]:
                raise SessionStoreError(
                    f"{self.path} was written by a newer version of the workshop "
                    f"(session schema {version}; this code knows up to {MIGRATIONS[-1][0]}); "
                    "it was left untouched - upgrade the helpers package "
                    "(pip install -U ...) or pass another path")
            return
        foreign = sorted(tables - FACT_STORE_TABLES)
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise SessionStoreError(f"{self.path} is a SQLite database of something else "
                                    f"(tables: {shown}; no {SCHEMA_TABLE} table); "
                                    "it was left untouched - pass another path")

    def _migrate(self) -> None:
        with self._transaction() as conn:
            apply_migrations(conn, SCHEMA_TABLE, MIGRATIONS)

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
                    raise SessionStoreError(self._not_writable(err)) from None
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
    def _write(self, user_id: str, session_id: str, encoded: EncodedSession, expected_revision: int | None,
               lineage: tuple[str, int] | None = None) -> int:
        at = now().isoformat()
        try:
            with self._transaction() as conn:
                return self._write_rows(conn.execute, conn.executemany, user_id, session_id, encoded,
                                        expected_revision, lineage, at)
        except sqlite3.DatabaseError as err:
            if getattr(err, "sqlite_errorname", "").startswith(_NOT_WRITABLE):
                raise SessionStoreError(f"saving {user_id}/{session_id} failed: "
                                        + self._not_writable(err)) from None
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
                rows = conn.execute(f"SELECT {_INFO_COLUMNS}, header FROM sessions WHERE user_id = ? AND "
                                    "session_id = ?", (user_id, session_id)).fetchall()
                bodies = dict(conn.execute("SELECT turn_id, body FROM session_turns WHERE user_id = ? AND "
                                           "session_id = ?", (user_id, session_id)).fetchall())
                vectors = conn.execute(f"SELECT {VECTOR_COLUMNS} FROM recall_vectors WHERE user_id = ? AND "
                                       "session_id = ?", (user_id, session_id)).fetchall()
            except sqlite3.DatabaseError as err:
                raise SessionStoreError(f"reading {self.path} failed ({err}); "
                                        "the file may be damaged") from None
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        if not rows:
            raise self._not_found(user_id, session_id, self.path)
        name = f"session {user_id}/{session_id} in {self.path}"
        state = decode_state(rows[0][-1], bodies, name)
        return StoredSession(SessionInfo(*rows[0][:-1]), state, tuple(vectors))

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """One user's sessions, most recently saved first."""
        user_id = check_user_id(user_id)
        rows = self._read(f"SELECT {_INFO_COLUMNS} FROM sessions WHERE user_id = ? "
                          "ORDER BY updated_at DESC, session_id", (user_id,))
        return [SessionInfo(*row) for row in rows]

    def delete(self, user_id: str, session_id: str) -> bool:
        """Remove one session and its turns."""
        user_id, session_id = check_ids(user_id, session_id)
        try:
            with self._transaction() as conn:
                return conn.execute("DELETE FROM sessions WHERE user_id = ? AND session_id = ?",
                                    (user_id, session_id)).rowcount > 0
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


_INFO_COLUMNS = ("user_id, session_id, revision, turns, dropped, title, created_at, updated_at, forked_from, "
                 "forked_at")
VECTOR_COLUMNS = "turn_id, model, dim, source, vector"  # the order StoredSession.vectors rows use

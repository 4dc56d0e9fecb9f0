"""What every session store offers (lesson 11): the ``SessionStore`` protocol, its errors, and the ids it keys by.

``helpers.sessions.session_store`` implements it on SQLite and ``helpers.sessions.session_store_pg`` on PostgreSQL;
``PersistentSession``, the chat window and the terminal chat are written against this protocol only.

Ids follow the one rule in ``helpers.core.ids`` (the fact stores use it too): NFKC, surrounding whitespace
removed, case kept; an empty, overlong, NUL- or lone-surrogate-holding id raises SessionIdError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from helpers.core.errors import WorkshopError
from helpers.core.ids import InvalidIdError, check_id
from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import SnapshotChanges


class SessionStoreError(WorkshopError, RuntimeError):
    """The session store could not open, read or write; the message says what to do next."""


class SessionIdError(InvalidIdError, SessionStoreError):
    """A user or session id no store accepts: an ``InvalidIdError`` (a ``ValueError``: the argument is wrong), and a
    ``SessionStoreError`` as it was before, so an older ``except SessionStoreError`` still catches it."""


class SessionNotFoundError(SessionStoreError):
    """No session is stored under this user id and session id."""


class SessionDamagedError(SessionStoreError):
    """A stored session is not what a store wrote (bad JSON, wrong types, a row changed after it was saved);
    the message names the session and what is wrong. It was not loaded."""


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
    altered: tuple[int, ...] = ()  # turn rows whose body no longer matches their saved digest (see restore)


class SessionStore(Protocol):
    """Where conversations live between runs, keyed by user id and session id."""

    def save(self, user_id: str, session_id: str, session: ChatSession | dict, *,
             expected_revision: int | None = None, changes: SnapshotChanges | None = None) -> int:
        """Store the session in one transaction; returns the new revision.

        With ``changes`` (``session.changes_since(mark)``, the mark taken when ``expected_revision`` was
        saved or loaded) only what changed is written; otherwise the whole snapshot of ``session``."""

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


def check_ids(user_id: str, session_id: str) -> tuple[str, str]:
    """The ids as every store keys them (``helpers.core.ids``: NFKC, surrounding whitespace removed, case kept).

    Raises SessionIdError (an InvalidIdError and a SessionStoreError) for an id no store accepts: not a
    string, empty, over ``MAX_ID_CHARS`` once normalised, or holding a NUL character or a lone surrogate. The fact stores key user ids by
    the same rule, so an id names the same user in both.
    """
    return check_id(user_id, "user_id", SessionIdError), check_id(session_id, "session_id", SessionIdError)


def check_user_id(user_id: str) -> str:
    """``user_id`` as every store keys it (see ``check_ids``)."""
    return check_id(user_id, "user_id", SessionIdError)

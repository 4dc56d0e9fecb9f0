"""A session that saves itself: every completed turn, undo and reset goes to a SessionStore.

``PersistentSession.open(store, user_id, session_id)`` resumes a stored conversation or
starts a new one; it works the same on SQLite (``helpers.memory.store``) and PostgreSQL
(``helpers.memory.postgres``).
"""
from __future__ import annotations

from typing import Any, Iterator

from helpers.memory.store import (ForkError, SessionNotFoundError, SessionStore, SessionStoreError, check_ids,
                                  restore)
from helpers.session import ChatSession, TurnRecord


class PersistentSession:
    """A ChatSession bound to a store: every completed turn, undo and reset is saved before returning.

    A turn that raises saves nothing (ChatSession already rolled it back), so the store always
    holds the session as of its last complete turn. Saves carry the revision this copy was loaded
    at: if another process saved the same session meanwhile, ``SessionConflictError`` is raised
    instead of overwriting its turns.
    """

    def __init__(self, store: SessionStore, user_id: str, session_id: str, session: ChatSession | None = None,
                 *, revision: int = 0, session_kwargs: dict | None = None):
        check_ids(user_id, session_id)
        self.store, self.user_id, self.session_id = store, user_id, session_id
        self.session_kwargs = dict(session_kwargs or {})
        self.session = session if session is not None else ChatSession(**self.session_kwargs)
        self.revision = revision

    @classmethod
    def open(cls, store: SessionStore, user_id: str, session_id: str, *,
             session_class: type[ChatSession] = ChatSession, **session_kwargs: Any) -> "PersistentSession":
        """Resume the stored session, or start a new one (stored from its first turn on)."""
        try:
            stored = store.load_state(user_id, session_id)
        except SessionNotFoundError:
            return cls(store, user_id, session_id, session_class(**session_kwargs), session_kwargs=session_kwargs)
        session = restore(stored, session_class, session_kwargs)
        return cls(store, user_id, session_id, session, revision=stored.info.revision, session_kwargs=session_kwargs)

    @property
    def resumed(self) -> bool:
        """True when this copy continues a session that was already stored."""
        return self.revision > 0

    def save(self) -> int:
        """Store the current state now; returns the new revision."""
        self.revision = self.store.save(self.user_id, self.session_id, self.session,
                                        expected_revision=self.revision)
        return self.revision

    def chat(self, text: str) -> str:
        """Ask one question; the completed turn is saved before the answer is returned."""
        answer = self.session.chat(text)
        self.save()
        return answer

    def stream(self, text: str) -> Iterator[str]:
        """Yield the answer in pieces (needs ``ChatSession.stream``); saved once the turn completes."""
        stream = getattr(self.session, "stream", None)
        if stream is None:
            raise SessionStoreError(f"{type(self.session).__name__} has no stream(); use chat(text)")
        answer = yield from stream(text)
        self.save()
        return answer

    def undo(self) -> TurnRecord | None:
        """Remove the newest turn and save; returns what it was (None when there was nothing)."""
        before = self.session.turn_ids
        removed = self.session.undo()
        if self.session.turn_ids != before:
            self.save()
        return removed

    def reset(self) -> None:
        """Forget the whole conversation, in memory and in the store (the session id stays)."""
        self.session.reset()
        self.save()

    def fork(self, at_turn: int, new_session_id: str, **session_kwargs: Any) -> "PersistentSession":
        """A new stored session from the turns before ``at_turn`` (this one is untouched).

        ``session_kwargs`` default to the ones this session was opened with; a ``memory=`` object
        cannot be shared between two sessions, so pass a fresh one for the branch.
        """
        kwargs = session_kwargs or self.session_kwargs
        if kwargs.get("memory") is not None and kwargs["memory"] is getattr(self.session, "memory", None):
            raise ForkError("the branch needs its own memory: pass memory=<a new MemoryAssembler configured like "
                            "this session's> to fork()")
        if self.revision == 0:
            self.save()
        self.store.fork(self.user_id, self.session_id, at_turn, new_session_id, session_class=type(self.session),
                        **kwargs)
        return PersistentSession.open(self.store, self.user_id, new_session_id, session_class=type(self.session),
                                      **kwargs)

    def __getattr__(self, name: str) -> Any:  # messages, turn_ids, dropped, turns, snapshot, show ...
        if name == "session":
            raise AttributeError(name)
        return getattr(self.session, name)

    def __repr__(self) -> str:
        return (f"PersistentSession(user_id={self.user_id!r}, session_id={self.session_id!r}, "
                f"turns={len(self.session.turn_ids)}, revision={self.revision})")

"""A session that saves itself: every completed turn, undo and reset goes to a SessionStore.

``PersistentSession.open(store, user_id, session_id)`` resumes a stored conversation or
starts a new one; it works the same on SQLite (``helpers.sessions.session_store``) and PostgreSQL
(``helpers.sessions.session_store_pg``).

A save costs the new turn, not the history: the session remembers where it stood at the stored
revision (``ChatSession.mark``), and each save writes only what changed since
(``ChatSession.changes_since``, ``SessionStore.save(..., changes=...)``): the new turn's row, the row of a turn
trimming just dropped, the header. A failed change is rolled back to a mark taken before it
(``restore_mark``), so nothing copies the whole conversation on the way. The first save, and any
change the session cannot describe turn by turn (a reset, a reloaded snapshot), store the whole
snapshot instead.
"""
from __future__ import annotations

from typing import Any, Iterator

from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import SnapshotError, SnapshotMark, TurnRecord
from helpers.sessions.store_sql import restore
from helpers.sessions.encoding import (check_unaltered, has_lone_surrogates, import_stored_vectors, recall_index,
                                       storable_text)
from helpers.sessions.conversation import NO_FACT_STORE, Conversation, ForwardsToSession, memory_report
from helpers.sessions.protocol import (ForkError, SessionConflictError, SessionNotFoundError, SessionSaveError,
                                       SessionStore, SessionStoreError, StoredSession, check_ids)


class PersistentSession(ForwardsToSession, Conversation):
    """A ChatSession bound to a store: every completed turn, undo and reset is saved before returning.

    It is a ``Conversation`` (``helpers.sessions.conversation``), the interface both front ends use, and
    forwards to its ChatSession only members named one by one: what every conversation reads from its session
    (``ForwardsToSession``: ``turns``, ``messages``, ``snapshot()``...) and the few named below.

    Memory and store never disagree:

    * a turn that raises saves nothing (ChatSession already rolled it back);
    * a change whose save fails is rolled back in memory (messages, turn ids, memory state) and
      ``SessionSaveError`` ("Not saved: ...") is raised, so the next turn starts from what is stored;
    * saves carry the revision this copy was loaded at. If another writer saved the session since,
      the stored copy is re-read: if it still holds what this copy started from (the other save
      changed nothing), the save is retried once; otherwise the change is rolled back rather than
      overwrite the other writer's turns (``reload()`` continues from them);
    * a turn's facts commit with the turn, or not at all. The memory holds the facts a turn states
      (``defer_writes``: the profile's statements for the fact store) and writes them in one
      fact-store transaction only once the save has committed; a refused change drops them with
      the rest of the rollback. If that write fails, the change is saved back out of the store (the
      session returns to ``before``) and ``SessionSaveError`` is raised, so neither is kept.

    The two stores commit one after the other, not together: a crash between the session's save
    and the fact write leaves the turn saved and its facts unwritten. They are not lost - the
    saved snapshot carries the turn's statements, and the next ``open``/``reload`` of the session
    (or this copy's next saved change) writes them - but until then the fact store lags the turn.
    It never holds a fact from a turn that was not saved. Opening and reloading write only such
    statements, ones the fact store has not recorded: a restart after a clean save writes nothing,
    so the audit holds decisions, never replays.
    """

    def __init__(self, store: SessionStore, user_id: str, session_id: str, session: ChatSession | None = None,
                 *, revision: int = 0, session_kwargs: dict | None = None):
        self.store = store
        self.user_id, self.session_id = check_ids(user_id, session_id)  # the ids as every store keys them
        self.session_kwargs = dict(session_kwargs or {})
        self.session = session if session is not None else ChatSession(**self.session_kwargs)
        self.revision = revision
        self._synced: SnapshotMark | None = None  # where the session stood at the stored revision, if known
        self._saved_lossy: bool | None = None  # the last save held lone surrogates (None: not known)
        defer = getattr(getattr(self.session, "memory", None), "defer_writes", None)
        if defer is not None:  # a turn's facts are written once the turn is saved (see _commit)
            defer()

    @classmethod
    def open(cls, store: SessionStore, user_id: str, session_id: str, *,
             session_class: type[ChatSession] = ChatSession, **session_kwargs: Any) -> "PersistentSession":
        """Resume the stored session, or start a new one (stored from its first turn on)."""
        try:
            stored = store.load_state(user_id, session_id)
        except SessionNotFoundError:
            return cls(store, user_id, session_id, session_class(**session_kwargs),
                       session_kwargs=session_kwargs)
        session = restore(stored, session_class, session_kwargs)
        opened = cls(store, user_id, session_id, session, revision=stored.info.revision,
                     session_kwargs=session_kwargs)
        opened._synced = _synced_mark(session, stored.state)  # the session is what the store holds
        return opened

    @property
    def resumed(self) -> bool:
        """True when this copy continues a session that was already stored."""
        return self.revision > 0

    @property
    def closed(self) -> bool:
        """True when the store was closed: this session can neither save nor reload."""
        return bool(getattr(self.store, "closed", False))

    @property
    def name(self) -> str:
        """``user_id/session_id``, as messages show it."""
        return f"{self.user_id}/{self.session_id}"

    def save(self) -> int:
        """Store the current state now (what changed since the stored revision); returns the new revision.

        The whole snapshot is stored instead for a first save, and when the session cannot tell what
        changed (``changes_since`` returned None)."""
        self._saved_lossy = None
        changes = None
        if self.revision > 0 and self._synced is not None:
            changes = self.session.changes_since(self._synced)
        extra = {} if changes is None else {"changes": changes}
        index = recall_index(self.session)
        rows = index.rows if index is not None else 0  # the vectors this save writes (if not stored before)
        self.revision = self.store.save(self.user_id, self.session_id, self.session,
                                        expected_revision=self.revision, **extra)
        self._synced = self.session.mark(memory=False)
        if index is not None:  # the next save of what changed writes only vectors embedded after these
            index.vectors_saved(rows)
        if changes is not None:  # what was written held lone surrogates (stored as U+FFFD)?
            self._saved_lossy = has_lone_surrogates([changes.fields, changes.lead, changes.turns])
        return self.revision

    def reload(self) -> None:
        """Continue from the stored session (e.g. after another writer saved it); drops unsaved changes."""
        stored = self.store.load_state(self.user_id, self.session_id)
        before = self.session.snapshot()
        try:
            self.session.load_snapshot(stored.state, catch_up=False)
            check_unaltered(stored.altered, f"session {self.name}")
        except SnapshotError as err:  # the stored data cannot be read
            self.session.load_snapshot(before, catch_up=False)
            raise SessionStoreError(f"{self.name} could not be reloaded ({err}); this copy was left "
                                    "as it was - reopen it with PersistentSession.open") from err
        except BaseException:  # a damaged row, or a bug: raised as it is, with this copy left as it was
            self.session.load_snapshot(before, catch_up=False)
            raise
        import_stored_vectors(self.session, stored.vectors)  # recall need not embed the stored turns again
        self.session.catch_up_memory()  # turns another writer added without this memory
        self.revision = stored.info.revision
        self._synced = _synced_mark(self.session, stored.state)

    def _check_open(self, action: str) -> None:
        if self.closed:
            raise SessionStoreError(f"the session store is closed, so {self.name} cannot be saved; "
                                    f"nothing was {action} - open the store again and reopen the session")

    def _stored(self) -> tuple[StoredSession | None, bool]:
        """What the store holds now (None when it cannot tell), and whether the session is gone from it."""
        try:
            return self.store.load_state(self.user_id, self.session_id), False
        except SessionNotFoundError:
            return None, True
        except SessionStoreError:
            return None, False

    def _commit(self, before: SnapshotMark, what: str) -> bool | None:
        """Save the change made since ``before``, then write the facts it stated (all or nothing).

        Returns whether the save held lone surrogates (None: not known)."""
        lossy = self._save_change(before, what)
        self._write_facts(before, what)
        return lossy

    def _write_facts(self, before: SnapshotMark, what: str) -> None:
        """Write the facts the memory held for the saved change; if that fails, save ``before`` back.

        Success: the change and its facts are both kept. Failure: the change is taken back out of
        the store and this copy returns to ``before`` (SessionSaveError), so neither is kept. Should
        that save fail too, this copy keeps the change, as the store does, and its held facts are
        written with the next saved change or the next open/reload (SessionStoreError says so).
        """
        write = getattr(getattr(self.session, "memory", None), "write_deferred", None)
        if write is None:
            return
        try:
            write()
            return
        except Exception as err:  # any failure of the fact store: the change must not stay without them
            failure = err
        try:
            self.revision = self.store.save(self.user_id, self.session_id, self.session.snapshot_at(before),
                                            expected_revision=self.revision)
        except SessionStoreError as err:
            raise SessionStoreError(
                f"{what.capitalize()} was saved to {self.name}, but its facts could not be written "
                f"({failure}) and it could not be taken back out of the store ({err}); this copy keeps "
                "it as the store does, and its facts are written with the next saved change (or when "
                "the session is opened or reloaded)") from failure
        self.session.restore_mark(before)  # drops the held facts; writes nothing to the fact store
        self._synced = self.session.mark(memory=False)
        raise SessionSaveError(f"Not saved: {what} was rolled back because its facts could not be written "
                               f"({failure}); {self.name} is back to its last saved state - fix that, then "
                               "try again") from failure

    def _save_change(self, before: SnapshotMark, what: str) -> bool | None:
        """Save the change made since ``before``; if that fails, roll it back and raise SessionSaveError.

        Returns whether the save held lone surrogates (None: not known)."""
        try:
            self.save()
            return self._saved_lossy
        except SessionStoreError as err:
            failure = err
        after = self.session.snapshot()  # only a failed save compares whole snapshots
        stored, gone = self._stored()
        if stored is not None and stored.state == after and stored.info.revision > self.revision:
            self.revision = stored.info.revision  # the save did commit; only its reply was lost
            self._synced = self.session.mark(memory=False)
            return None
        if isinstance(failure, SessionConflictError) and stored is not None \
                and stored.state == self.session.snapshot_at(before):
            try:  # the other writer changed nothing this copy relies on: retry once at its revision
                self.revision = self.store.save(self.user_id, self.session_id, self.session,
                                                expected_revision=stored.info.revision)
                self._synced = self.session.mark(memory=False)
                return None
            except SessionStoreError as err:
                failure = err
        self.session.restore_mark(before)
        if isinstance(failure, SessionConflictError) and gone:
            cause = "another writer deleted it since this copy loaded it"
            todo = "open it again with PersistentSession.open to start it anew"
        elif isinstance(failure, SessionConflictError):
            cause = "another writer saved it since this copy loaded it, and its turns are kept"
            todo = "call reload() (in the terminal chat: /reload) to continue from them, then try again"
        else:
            cause, todo = str(failure), "fix that, then try again"
        raise SessionSaveError(f"Not saved: {what} was rolled back because {self.name} could not be saved "
                               f"({cause}); this copy is back to its last saved state - {todo}") from failure

    def chat(self, text: str) -> str:
        """Ask one question; the completed turn is saved before the answer is returned."""
        self._check_open("asked")
        before = self.session.mark()
        answer = self.session.chat(text)
        return self._as_stored(answer, self._commit(before, "the turn"))

    def _as_stored(self, answer: str, lossy: bool | None) -> str:
        """The saved turn's answer as stored; memory continues from the stored copy if the turn held lone surrogates.

        A lone surrogate (a server's broken escape) cannot be stored or sent in a later request; the
        store keeps it as U+FFFD (``storable_text``), and reloading makes this copy hold the same.
        """
        if lossy or (lossy is None and has_lone_surrogates(self.session.snapshot())):
            self.reload()
        return storable_text(answer) if isinstance(answer, str) else answer

    def stream(self, text: str) -> Iterator[str]:
        """Yield the answer in pieces (needs ``ChatSession.stream``); saved once the turn completes."""
        stream = getattr(self.session, "stream", None)
        if stream is None:
            raise SessionStoreError(f"{type(self.session).__name__} has no stream(); use chat(text)")
        self._check_open("asked")
        before = self.session.mark()
        answer = yield from stream(text)
        return self._as_stored(answer, self._commit(before, "the turn"))

    def undo(self) -> TurnRecord | None:
        """Remove the newest turn and save; returns what it was (None when there was nothing)."""
        self._check_open("undone")
        before = self.session.mark()
        removed = self.session.undo()
        if self.session.turn_ids != before.turn_ids:
            self._commit(before, "the undo")
        return removed

    def reset(self) -> None:
        """Forget the whole conversation, in memory and in the store (the session id stays)."""
        self._check_open("reset")
        before = self.session.mark()
        self.session.reset()
        self._commit(before, "the reset")

    def fork(self, at_turn: int, new_session_id: str, **session_kwargs: Any) -> "PersistentSession":
        """A new stored session from the turns before ``at_turn`` (this one is untouched).

        ``session_kwargs`` default to the ones this session was opened with; a ``memory=`` object
        cannot be shared between two sessions, so pass a fresh one for the branch.
        """
        kwargs = session_kwargs or self.session_kwargs
        if kwargs.get("memory") is not None and kwargs["memory"] is getattr(self.session, "memory", None):
            raise ForkError("the branch needs its own memory: "
                            "pass memory=<a new MemoryAssembler configured like this session's> to fork()")
        if self.revision == 0:
            self.save()
        self.store.fork(self.user_id, self.session_id, at_turn, new_session_id,
                        session_class=type(self.session), **kwargs)
        return PersistentSession.open(self.store, self.user_id, new_session_id,
                                      session_class=type(self.session), **kwargs)

    # -- what callers read of the conversation (each forwarded to the ChatSession by name; nothing else is):
    # turns, turn_ids, dropped, messages, memory, snapshot() and memory_state() from ForwardsToSession, and these
    @property
    def stats(self) -> Any:
        """Token and request counts of the session: ``ChatSession.stats``."""
        return self.session.stats

    @property
    def settings(self) -> Any:
        """The settings the session's requests use: ``ChatSession.settings``."""
        return self.session.settings

    @property
    def max_turns(self) -> int | None:
        """How many newest turns the session sends whole: ``ChatSession.max_turns``."""
        return self.session.max_turns

    @property
    def system_prompt(self) -> str:
        """The session's system prompt: ``ChatSession.system_prompt``."""
        return self.session.system_prompt

    @property
    def rebuilt_turns(self) -> list[int]:
        """The turns whose memory parts were read again on opening: ``ChatSession.rebuilt_turns``."""
        return self.session.rebuilt_turns

    # -- the rest of a front end's Conversation (helpers.sessions.conversation)
    @property
    def facts(self) -> None:
        """A PersistentSession holds no fact memory of its own (an ``Assistant`` does): None."""
        return None

    def ask(self, text: str) -> str:
        """``chat(text)``: one question, saved before the answer is returned (the front ends' verb)."""
        return self.chat(text)

    def memory_report(self, *, facts: bool = True) -> str:
        """What the session remembers (``helpers.sessions.conversation.memory_report``); it keeps no facts."""
        return memory_report(self.memory, state=self.memory_state())

    def audit_report(self) -> str:
        """A PersistentSession keeps no fact store of its own, so there is no audit to show."""
        return NO_FACT_STORE

    def close(self) -> None:
        """Nothing to release: the store is the caller's (``store.close()``); ``closed`` follows it."""

    def __repr__(self) -> str:
        return (f"PersistentSession(user_id={self.user_id!r}, session_id={self.session_id!r}, "
                f"turns={len(self.session.turn_ids)}, revision={self.revision})")


def _synced_mark(session: ChatSession, stored: dict) -> SnapshotMark | None:
    """The mark saves of what changed start from, or None when the next save must store the whole snapshot.

    A session stored before memories kept one part per turn holds its whole memory state in the header
    (no ``"turns"``). Its rows carry no parts, so writing only what changed would leave the older turns'
    parts out: the first save stores everything once, and saves of what changed follow. The same holds
    when the memory read again turns another writer added without it (``rebuilt_turns``).
    """
    memory = stored.get("memory")
    if isinstance(memory, dict) and memory and "turns" not in memory and \
            callable(getattr(getattr(session, "memory", None), "turn_state", None)):
        return None
    if getattr(session, "rebuilt_turns", None):  # turns read again: their rows get their parts in one whole save
        return None
    return session.mark(memory=False)

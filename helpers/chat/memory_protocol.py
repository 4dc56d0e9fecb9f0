"""What ``ChatSession(memory=...)`` asks of its memory (notebook 07's session; notebooks 08-09 fill it in).

``Memory`` lists every method and attribute ``ChatSession`` uses on the object passed as
``memory=``, and nothing else: the session layer depends on this protocol, not on
``helpers.memory``. ``helpers.memory.assembler.MemoryAssembler`` (a rolling summary, recall and a
profile under one budget) is the workshop's implementation; anything with these members works.

The order a turn calls them in: ``forget`` (turns that just left the window), ``build`` (the request
that starts the turn), ``count`` (a message's tokens, for the statistics), then ``remember`` (the
finished turn). ``discard`` follows an undo, ``reset`` a reset, ``state``/``restore`` make and
load snapshots (and roll a failed turn back), ``attach`` hands over the session's client.

``TurnPartedMemory`` adds what lets a long conversation save in the time of one turn: ``state()`` keeps
what the memory knows of each turn under ``"turns"`` (``{str(turn_id): part}``), ``turn_state`` and
``shared_state`` read one turn's part and the rest, and ``checkpoint``/``rollback``/``state_at`` take a
failed turn back without copying the history. The promise behind it: a turn's part is set by
``remember`` and removed by ``discard`` (``reset`` and ``restore`` replace everything), so a store
writes a part only with its turn's row. A memory without these methods still works: the session
copies and saves its whole state.

Other optional extras, looked up with ``getattr`` where they are used and so not declared here:
``defer_writes``/``write_deferred`` (``helpers.sessions.persistent``: facts written once the turn is
saved), ``recall`` (``helpers.sessions``: the recall index whose vectors are stored) and
``catch_up(kept, dropped)`` (``Snapshots.catch_up_memory``: turns another writer added without this
memory, listed under ``"unread"`` in the stored state by ``CarriedMemory``, read when the session loads).
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence, runtime_checkable


@runtime_checkable
class Memory(Protocol):
    """The memory a ``ChatSession`` assembles its requests with (see the module)."""

    window_turns: int  # the sliding window a session keeps when it has no max_turns

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use the session's client and settings (for summaries, embeddings) unless given others."""

    def forget(self, turns: Sequence[Any]) -> Iterable[str]:
        """Turns that left the window (``DroppedTurn``s); returns lines to show in verbose mode."""

    def build(self, system_prompt: str | None, window: Sequence[tuple[int, Sequence[dict]]], question: str, *,
              budget: int | None = None, tools: list | None = None) -> Any:
        """The request that starts the next turn: an object with ``messages`` (without the question)
        and ``report`` (``report.total`` tokens, ``report.lines()`` to show)."""

    def count(self, message: dict) -> int:
        """The tokens one message costs."""

    def remember(self, turn_id: int, messages: Sequence[dict]) -> Iterable[str]:
        """A finished turn kept under ``turn_id``; returns lines to show in verbose mode."""

    def discard(self, turn_id: int) -> None:
        """Forget what ``remember`` kept of a turn (it was undone)."""

    def reset(self) -> None:
        """Forget the conversation."""

    def state(self) -> dict:
        """JSON-ready state for a snapshot."""

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``."""


@runtime_checkable
class TurnPartedMemory(Memory, Protocol):
    """A ``Memory`` whose state is a small shared part plus one part per turn (see the module)."""

    def shared_state(self) -> dict:
        """``state()`` with ``"turns"`` empty: what does not belong to one turn (a summary, pins)."""

    def turn_state(self, turn_id: int) -> Any:
        """What the memory keeps of one turn (``state()["turns"][str(turn_id)]``), or None."""

    def checkpoint(self) -> Any:
        """Where the memory stands now, without copying any turn's part (parts are never changed in place)."""

    def rollback(self, point: Any) -> None:
        """Back to ``checkpoint``."""

    def state_at(self, point: Any) -> dict:
        """The ``state()`` the memory had at ``checkpoint``."""


class CarriedMemory:
    """A stored memory state that a session without a memory (``memory=None``) carries through its saves.

    Any writer can continue any session: a plain ``ChatSession`` that continues a conversation another
    writer's memory kept (the assistant's summary, recall entries and profile statements) must not drop
    them. It keeps that state as it was read - the shared part and each turn's part (``"turns"``, when
    the state has them; a state saved before turns had parts is kept whole) - and saves it back
    unchanged, except that an undone turn's part goes with its turn, a reset forgets it all, and each
    turn this session adds is listed under ``"unread"``: turns the memory has not seen, which a session
    with that memory rebuilds when it opens (``MemoryAssembler.catch_up``).

    It has the state-keeping half of ``TurnPartedMemory`` (parts are never changed in place, so a
    checkpoint copies no part).
    """

    def __init__(self, state: dict):
        state = dict(state)
        turns = state.pop("turns", None)
        self.parted = isinstance(turns, dict)  # False: a state saved whole, kept whole
        self.parts: dict[str, Any] = dict(turns) if self.parted else {}
        unread = state.pop("unread", None) or []
        self.unread: list[int] = sorted({int(i) for i in unread}) if isinstance(unread, list) else []
        self.shared = state

    def saw_turn(self, turn_id: int) -> None:
        """A turn this session added (the memory did not see it)."""
        if turn_id not in self.unread:
            self.unread.append(turn_id)

    def discard(self, turn_id: int) -> None:
        """An undone turn: its part, if any, goes with it."""
        self.parts.pop(str(turn_id), None)
        self.unread = [i for i in self.unread if i != turn_id]

    def shared_state(self) -> dict:
        state = {**self.shared, "turns": {}} if self.parted else dict(self.shared)
        if self.unread:
            state["unread"] = list(self.unread)
        return state

    def turn_state(self, turn_id: int) -> Any:
        return self.parts.get(str(turn_id)) if self.parted else None

    def state(self) -> dict:
        state = self.shared_state()
        if self.parted:
            state["turns"] = dict(self.parts)
        return state

    def checkpoint(self) -> tuple:
        return dict(self.parts), list(self.unread)

    def rollback(self, point: tuple) -> None:
        parts, unread = point
        self.parts, self.unread = dict(parts), list(unread)

    def state_at(self, point: tuple) -> dict:
        now = self.parts, self.unread
        self.rollback(point)
        try:
            return self.state()
        finally:
            self.parts, self.unread = now

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
saved) and ``recall`` (``helpers.sessions``: the recall index whose vectors are stored).
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

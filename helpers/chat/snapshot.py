"""A ChatSession as plain data, and what changed since a moment (notebook 07's session; used from notebook 11).

``ChatSession`` (``helpers.chat.chat_session``) takes its save-and-resume methods from ``Snapshots``:
``snapshot()`` is everything needed to continue the conversation later, as JSON-ready data;
``ChatSession.from_snapshot(data)`` continues it in a new session, and ``load_snapshot(data)`` in
place. This module lives beside the session because it reads the session's own fields (its window,
its dropped turns, its turn records); ``helpers.sessions`` (notebook 11) stores what it returns.

A store that saves after every turn should not pay for the whole history on every save. Three
methods make a save cost the new turn instead:

* ``mark()`` notes where the session stands, in time proportional to the window: the window
  itself (a value), the next turn id, and how far the lists of dropped turns and turn records
  reach (a count and the last item, which later turns only append after);
* ``changes_since(mark)`` is what changed since, as plain data: the small fields of the snapshot
  (system prompt, limits, window ids, next id, memory state) and, for each turn that is new,
  left the window, or was undone, its parts now (``SnapshotChanges``). It returns None when it
  cannot tell (the lists were replaced, or a loaded snapshot keeps its turns in an unusual order):
  the caller then saves the whole snapshot;
* ``restore_mark(mark)`` puts the session back where it stood (a change whose save failed), and
  ``snapshot_at(mark)`` is the full snapshot it had then (only failure paths need it).

The memory's state (``helpers.chat.memory_protocol``) is handled the same way when the memory can: its
``shared_state()`` (a summary, pins: small) goes with the fields, and each changed turn carries
``turn_state(turn_id)``, what the memory keeps of that turn (its recall entry, its profile
statements), so nothing in a save grows with the history. A mark keeps the memory's
``checkpoint()``, not a copy of its state. A memory without these methods is copied and saved whole.

They rely on what the session's own operations do: a turn appends to the window, the dropped
turns and the records; trimming moves the oldest kept turns to the dropped ones; undo removes the
newest kept turn; reset and ``load_snapshot`` replace the lists. Changing those lists in place in
another way is not supported (``snapshot()`` and a full save still are).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from helpers.core.errors import ConfigError, WorkshopError
from helpers.chat.history import DroppedTurn, HistoryError, system_end
from helpers.chat.memory_protocol import CarriedMemory
from helpers.chat.validity import find_problems
from helpers.chat.window import Window


class SnapshotError(WorkshopError, ValueError):
    """Snapshot data a session cannot continue from (another version, inconsistent or malformed fields, a
    memory state its memory cannot read), or a mark that cannot bring the session back."""


@dataclass(frozen=True)
class _CarriedPoint:
    """A checkpoint of a carried memory state (``CarriedMemory``): the object and where it stood."""

    carried: CarriedMemory
    point: tuple


def _named(error: BaseException) -> str:
    """``KeyError: 'next_id'``: an error reading snapshot data, with its type (a KeyError's text is just the key)."""
    return f"{type(error).__name__}: {error}"


@dataclass
class TurnRecord:
    """What happened to one turn: its id, the question, and the answer."""

    turn_id: int
    question: str
    answer: str
    steps: int


def resume_arguments(state: dict, kwargs: dict, name: str = "this conversation") -> tuple[str | None, dict]:
    """The stored system prompt and the constructor arguments that continue ``state`` (``kwargs`` win).

    A conversation keeps the system prompt it was started with: ``system_prompt`` in ``kwargs`` is
    accepted when it equals the stored one (so the arguments that started a session also reopen
    it) and raises ConfigError when it differs. ``max_turns`` and ``max_tokens`` given here override
    the stored limits; every other argument goes to the constructor unchanged.
    """
    kwargs = dict(kwargs)
    prompt = state["system_prompt"]
    if "system_prompt" in kwargs:
        given = kwargs.pop("system_prompt")
        if given != prompt:
            raise ConfigError(f"system_prompt={given!r:.60} differs from the one {name} was started with "
                              f"({prompt!r:.60}); a saved conversation keeps its system prompt - omit "
                              "system_prompt= to continue it, or start a new session id for the new prompt")
    kwargs.setdefault("max_turns", state.get("max_turns"))  # an explicit value overrides the stored one
    kwargs.setdefault("max_tokens", state.get("max_tokens"))
    return prompt, kwargs


@dataclass(frozen=True, eq=False)
class SnapshotMark:
    """Where a session stood (``Snapshots.mark``): enough to tell what changed since, and to go back."""

    window: Window
    next_id: int
    dropped: list  # the session's list of dropped turns at the time (the list object itself)
    dropped_count: int
    dropped_last: Any  # dropped[dropped_count - 1]: later changes only append after it
    records: list  # the session's list of TurnRecords at the time
    records_cut: int  # records before this index belong to turns older than the window: no change touches them
    records_last: Any  # records[records_cut - 1]
    records_tail: tuple  # records[records_cut:] at the time: the window's turns, which undo may remove
    memory: Any  # memory_checkpoint() (None: not kept, so the mark cannot restore)
    plain: bool  # the turns were in the order the session's own operations keep (see _in_plain_order)

    @property
    def turn_ids(self) -> list[int]:
        """Ids of the turns that were in memory, oldest first."""
        return list(self.window.turn_ids)


@dataclass(frozen=True)
class SnapshotChanges:
    """What changed since a mark, as plain data: a snapshot of only the turns that changed.

    ``fields`` holds every snapshot field except ``messages``, ``turns`` and ``dropped`` (all small:
    the window's ids, the next id, the memory state...). ``turns`` maps each changed turn id to its
    parts now, named as in a snapshot: ``"kept"`` (its messages, in the window) or ``"dropped"``
    (``{"messages", "tokens"}``), and ``"record"`` (its TurnRecord as a dict); ``{}`` means the turn
    is gone (undone or reset). ``lead`` is the messages before the first turn (none in a ChatSession).
    """

    fields: dict
    lead: list
    turns: dict[int, dict]
    kept: int  # turns in the window
    dropped: int  # dropped turns in all


def _prefix_intact(items: list, count: int, last: Any) -> bool:
    """True when ``items`` still starts with the ``count`` items it had when ``last`` was its last one.

    The session's operations only append to these lists or remove their newest items, so the item
    at ``count - 1`` being the same object means nothing before it moved.
    """
    return len(items) >= count and (count == 0 or items[count - 1] is last)


def _in_plain_order(kept: tuple, dropped: list, records: list, next_id: int) -> bool:
    """True for turns in the order a session's own operations keep them: ids are whole numbers below
    ``next_id``, ascending in each list, and every dropped turn (and every record of a turn that is
    not kept) older than the oldest kept turn."""
    dropped_ids = [d.turn_id for d in dropped]
    record_ids = [r.turn_id for r in records]
    every = [*kept, *dropped_ids, *record_ids]
    if not all(type(i) is int for i in every) or max(every, default=-1) >= next_id:
        return False
    oldest_kept = kept[0] if kept else next_id
    kept_set = set(kept)
    return (all(a < b for ids in (kept, dropped_ids, record_ids) for a, b in zip(ids, ids[1:]))
            and all(i < oldest_kept for i in dropped_ids)
            and all(i < oldest_kept or i in kept_set for i in record_ids))


def _same_messages(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class Snapshots:
    """The save-and-resume half of ``ChatSession``: plain data out, a continuing session back in."""

    def snapshot(self) -> dict:
        """Everything needed to resume this conversation later, as plain JSON-ready data."""
        return self._snapshot_of(self._window, self._next_id, self.turns, self.dropped, self.memory_state())

    def _snapshot_of(self, window: Window, next_id: int, records: list, dropped: list, memory: dict) -> dict:
        return {
            "version": 1,
            "system_prompt": self.system_prompt,
            "max_turns": self.max_turns,
            "max_tokens": self.max_tokens,
            "messages": copy.deepcopy(window.messages[window.first:]),
            "turn_ids": list(window.turn_ids),
            "next_id": next_id,
            "turns": [vars(t).copy() for t in records],
            "dropped": [{"turn_id": d.turn_id, "messages": copy.deepcopy(d.messages), "tokens": d.tokens}
                        for d in dropped],
            "memory": memory,
        }

    def memory_state(self) -> dict:
        """Extra memory (summaries, profile) that subclasses or memory plug-ins add to snapshots.

        A session without a memory returns the stored memory state it carries (``CarriedMemory``), if
        any. A subclass that overrides this (and ``restore_memory_state``) without a ``memory=`` gets
        the whole-state defaults of the four methods below."""
        if self.memory is not None:
            return self.memory.state()
        carried = self._carried_memory()
        return carried.state() if carried is not None else {}

    def restore_memory_state(self, state: dict) -> None:
        """Counterpart of ``memory_state``: a session without a memory carries the state through its saves."""
        if self.memory is not None:
            self.memory.restore(state)
        else:
            self._carried = CarriedMemory(state) if state else None

    def _carried_memory(self) -> CarriedMemory | None:
        """The stored memory state this session (without a memory of its own) carries, or None."""
        return getattr(self, "_carried", None) if self.memory is None else None

    def _carried_turn(self, turn_id: int) -> None:
        """A turn this session added without a memory: the carried state notes that its memory never saw it."""
        carried = self._carried_memory()
        if carried is not None:
            carried.saw_turn(turn_id)

    def _carried_discard(self, turn_id: int) -> None:
        """An undone turn of a session without a memory: its carried part goes with it."""
        carried = self._carried_memory()
        if carried is not None:
            carried.discard(turn_id)

    def _memory_can(self, method: str) -> bool:
        return self.memory is not None and callable(getattr(self.memory, method, None))

    def memory_checkpoint(self) -> Any:
        """Where the memory stands, to go back to (``memory_rollback``): its ``checkpoint()``, else a copy
        of its whole state."""
        if self._memory_can("checkpoint"):
            return self.memory.checkpoint()
        carried = self._carried_memory()
        if carried is not None:
            return _CarriedPoint(carried, carried.checkpoint())
        return copy.deepcopy(self.memory_state())

    def memory_rollback(self, point: Any) -> None:
        """Counterpart of ``memory_checkpoint``."""
        if self._memory_can("rollback"):
            self.memory.rollback(point)
        elif isinstance(point, _CarriedPoint):
            self._carried = point.carried
            point.carried.rollback(point.point)
        else:
            self.restore_memory_state(copy.deepcopy(point))

    def memory_state_at(self, point: Any) -> dict:
        """The ``memory_state()`` the session had at ``point`` (a ``memory_checkpoint``)."""
        if self._memory_can("state_at"):
            return self.memory.state_at(point)
        if isinstance(point, _CarriedPoint):
            return point.carried.state_at(point.point)
        return copy.deepcopy(point)

    def _memory_shared(self) -> dict:
        """The memory state without any turn's part (all of it, for a memory that has no parts)."""
        if self._memory_can("shared_state"):
            return self.memory.shared_state()
        carried = self._carried_memory()
        return carried.shared_state() if carried is not None else self.memory_state()

    def _memory_of_turn(self, turn_id: int) -> Any:
        """What the memory keeps of one turn (None: nothing, or a memory that keeps no parts)."""
        if self._memory_can("turn_state"):
            return self.memory.turn_state(turn_id)
        carried = self._carried_memory()
        return carried.turn_state(turn_id) if carried is not None else None

    def catch_up_memory(self) -> list[int]:
        """Give the memory the turns another writer added without it (``"unread"`` in the loaded state).

        A memory with ``catch_up`` (``MemoryAssembler``) reads them as if they had just finished
        (indexed for recall, their statements read, dropped ones queued for the summary); returns
        their ids, also kept in ``rebuilt_turns`` (a store then saves the whole snapshot once, so their
        rows get their parts). A memory without it restores what it has, and those turns stay as they are."""
        wanted, self._unread = set(getattr(self, "_unread", ())), []
        catch_up = getattr(self.memory, "catch_up", None)
        if self.memory is None or not wanted or not callable(catch_up):
            return []
        kept = [(i, list(m)) for i, m in self._window.turns() if i in wanted]
        dropped = [(d.turn_id, list(d.messages)) for d in self.dropped if d.turn_id in wanted]
        if kept or dropped:
            for event in catch_up(kept, dropped) or ():
                if getattr(self, "verbose", False):
                    print(f"memory  {event}")
            self._rebuilt = sorted(i for i, _ in [*kept, *dropped])
        return list(self._rebuilt)

    @property
    def rebuilt_turns(self) -> list[int]:
        """Ids of the turns the memory read again when this state was loaded (see ``catch_up_memory``)."""
        return list(getattr(self, "_rebuilt", ()))

    @classmethod
    def from_snapshot(cls, state: dict, **kwargs):
        """A session continuing from ``snapshot()`` data (client, tools and verbosity from ``kwargs``).

        ``system_prompt`` may be passed only with the snapshot's own value (see ``resume_arguments``).
        """
        if state.get("version") != 1:
            raise SnapshotError(f"unsupported session snapshot version {state.get('version')!r}; expected 1")
        prompt, kwargs = resume_arguments(state, kwargs)
        session = cls(prompt, **kwargs)
        session.load_snapshot(state)
        return session

    def load_snapshot(self, state: dict, *, catch_up: bool = True) -> None:
        """Continue from ``snapshot()`` data in place (client, tools, limits and usage ledger stay).

        Data that does not fit raises SnapshotError; only reading the data is guarded, so an error in
        the session's own code surfaces as itself. Turns another writer added without this session's
        memory are then given to the memory (``catch_up_memory``; ``catch_up=False``: the caller does
        that once it has checked the data further).
        """
        try:  # reading the fields: a missing key or a value of the wrong type is the data's fault
            messages, turn_ids = copy.deepcopy(list(state["messages"])), state["turn_ids"]
            next_id = int(state["next_id"])
            turns = [TurnRecord(**t) for t in state.get("turns", [])]
            dropped = [DroppedTurn(d["turn_id"], copy.deepcopy(d["messages"]), d["tokens"])
                       for d in state.get("dropped", [])]
            memory = copy.deepcopy(state.get("memory") or {})
        except (KeyError, TypeError, ValueError) as error:
            raise SnapshotError(f"session snapshot is malformed: {_named(error)}") from error
        if not isinstance(memory, dict):
            raise SnapshotError(f"session snapshot's memory state is a {type(memory).__name__}, not a dict")
        try:
            window = self._new_window(messages, turn_ids)
        except HistoryError as error:
            raise SnapshotError("session snapshot is inconsistent: turn_ids do not match the messages") from error
        problems = find_problems(window.messages) if messages else []
        if problems:
            raise SnapshotError("session snapshot holds a message list a server would reject: "
                                + "; ".join(problems))
        self._window, self._next_id = window, next_id
        self.turns, self.dropped = turns, dropped
        self._plain_order = _in_plain_order(window.turn_ids, self.dropped, self.turns, self._next_id)
        # The memory reads its own part: data its reader cannot use (or the state of another kind of memory)
        # is reported as such, chained to the error so a bug in the reader still shows where it is.
        try:
            self.restore_memory_state(memory)
        except (KeyError, TypeError, ValueError) as error:
            raise SnapshotError(f"session snapshot's memory state does not fit this session's memory: "
                                f"{_named(error)}") from error
        unread = state["memory"].get("unread") if self.memory is not None and memory else None
        self._unread = [i for i in unread if type(i) is int] if isinstance(unread, list) else []
        self._rebuilt: list[int] = []
        if catch_up:
            self.catch_up_memory()

    # ------------------------------------------------------------ what changed since a moment
    def mark(self, *, memory: bool = True) -> SnapshotMark:
        """Where the session stands now (see the module): for ``changes_since``, ``restore_mark`` and
        ``snapshot_at``. Costs the window, plus the memory's checkpoint unless ``memory=False``."""
        window, records = self._window, self.turns
        oldest = window.turn_ids[0] if window.turn_ids else self._next_id
        cut = len(records)
        while cut and isinstance(records[cut - 1].turn_id, int) and records[cut - 1].turn_id >= oldest:
            cut -= 1
        return SnapshotMark(window, self._next_id, self.dropped, len(self.dropped),
                            self.dropped[-1] if self.dropped else None, records, cut,
                            records[cut - 1] if cut else None, tuple(records[cut:]),
                            self.memory_checkpoint() if memory else None,
                            getattr(self, "_plain_order", True))

    def changes_since(self, mark: SnapshotMark) -> SnapshotChanges | None:
        """What changed since ``mark``, or None when only a full snapshot can say (see the module)."""
        window, dropped, records = self._window, self.dropped, self.turns
        if not (mark.plain and getattr(self, "_plain_order", True)):
            return None
        if system_end(window.messages) != window.first:  # messages before the first turn: not a window's
            return None
        if not (_prefix_intact(dropped, mark.dropped_count, mark.dropped_last)
                and _prefix_intact(records, mark.records_cut, mark.records_last)):
            return None
        before = dict(mark.window.turns())
        new_from = mark.next_id
        parts: dict[int, dict] = {turn_id: {} for turn_id in before}  # turns no longer anywhere: gone

        def slot(turn_id: Any, name: str) -> dict | None:
            """The parts of a turn this change may touch, or None (the change cannot be told apart)."""
            if not (turn_id in before or (type(turn_id) is int and turn_id >= new_from)):
                return None
            body = parts.setdefault(turn_id, {})
            return None if name in body or (name != "record" and body) else body

        for turn_id, messages in window.turns():
            body = slot(turn_id, "kept")
            if body is None:
                return None
            body["kept"] = messages
        for item in dropped[mark.dropped_count:]:
            body = slot(item.turn_id, "dropped")
            if body is None:
                return None
            body["dropped"] = {"messages": item.messages, "tokens": item.tokens}
        now_records = {}
        for record in records[mark.records_cut:]:
            body = slot(record.turn_id, "record")
            if body is None:
                return None
            body["record"] = vars(record).copy()
            now_records[record.turn_id] = record
        before_records = {r.turn_id: r for r in mark.records_tail}
        changed = {}
        for turn_id, body in parts.items():
            unchanged = (turn_id in before and "kept" in body and _same_messages(body["kept"], before[turn_id])
                         and now_records.get(turn_id) is before_records.get(turn_id))
            if not unchanged and (body or turn_id in before):
                changed[turn_id] = copy.deepcopy(body)
                part = self._memory_of_turn(turn_id) if body else None
                if part is not None:  # the row is written whole: what the memory keeps of the turn goes too
                    changed[turn_id]["memory"] = copy.deepcopy(part)
        fields = {"version": 1, "system_prompt": self.system_prompt, "max_turns": self.max_turns,
                  "max_tokens": self.max_tokens, "turn_ids": list(window.turn_ids), "next_id": self._next_id,
                  "memory": self._memory_shared()}
        return SnapshotChanges(fields, [], changed, len(window.turn_ids), len(dropped))

    def _check_mark(self, mark: SnapshotMark) -> None:
        if mark.memory is None or not (_prefix_intact(mark.dropped, mark.dropped_count, mark.dropped_last)
                                       and _prefix_intact(mark.records, mark.records_cut, mark.records_last)):
            raise SnapshotError("this mark cannot bring the session back: it was taken with memory=False, or the "
                                "session's turn lists were changed in place since; use snapshot()/load_snapshot()")

    def snapshot_at(self, mark: SnapshotMark) -> dict:
        """The full ``snapshot()`` the session had at ``mark`` (the session itself is not changed)."""
        self._check_mark(mark)
        records = [*mark.records[:mark.records_cut], *mark.records_tail]
        return self._snapshot_of(mark.window, mark.next_id, records, mark.dropped[:mark.dropped_count],
                                 self.memory_state_at(mark.memory))

    def restore_mark(self, mark: SnapshotMark) -> None:
        """Put the session back where it stood at ``mark`` (window, turn ids, dropped turns, records, memory)."""
        self._check_mark(mark)
        del mark.dropped[mark.dropped_count:]
        del mark.records[mark.records_cut:]
        mark.records.extend(mark.records_tail)
        self.dropped, self.turns = mark.dropped, mark.records
        self._window, self._next_id, self._plain_order = mark.window, mark.next_id, mark.plain
        self.memory_rollback(mark.memory)

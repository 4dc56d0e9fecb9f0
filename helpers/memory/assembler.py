"""One context assembler (lessons 08-09): every memory strategy under one token budget.

The module opens with the core notebook 09 builds: ``fit_window`` (the newest whole turns
that fit), ``assemble_context`` (the budget split) and ``mark_superseded`` (an old value is
quoted only with a note naming its replacement). ``MemoryAssembler`` (the state a session
keeps) follows. The shares, the block fitters and the report types are in
``helpers.memory.budget``.

``assemble_context`` builds the request that starts a turn, in this order:

1. **fixed costs** -- request overhead, tool schemas, a ``reserve`` for the turn's later
   steps -- plus the system prompt and the new question. Always sent; if they alone
   exceed the budget, ``ContextBudgetError`` (nothing is sent).
2. What is left (the *room*) is shared out, block by block, in this order:
   - **profile** (system message) -- up to ``shares.profile`` of the room (10 %);
     stale facts, then the least important keys, are left out first;
   - **summary** (system message ``Summary of earlier turns (turns a-b): ...``) -- up to
     ``shares.summary`` (10 %); the oldest lines go first, pinned facts never (they may
     borrow from the window's part);
   - **the newest turns** -- up to the window's own share, ``shares.window`` (what the three
     blocks' shares leave: 30 %), the newest *whole* turns that fit, newest first, stopping at
     the first that does not (no gaps, never half a turn);
   - **recalled turns** (one system message of quoted turns, laid out by day: ``On 2023-05-08:``
     over that day's turns) -- ``shares.recall`` (50 %) and every share the blocks above left
     unused, chosen best match first until it is full (``MemoryAssembler.build`` asks recall for
     as many turns as that can hold, not a fixed k, and searches every turn but those the window's
     own share sends: a turn of the session's window that did not fit can still be recalled);
   - **the window** -- it grows, still whole turns and no gaps, into whatever recall left; a turn
     it then sends is taken out of the recall block (``unquote_sent``), and the window may grow
     into what that frees: no turn is sent twice.
   So an unused share goes to recall first (a long conversation has more to recall than its
   window holds), and what recall cannot use goes to the window. An empty assistant reply
   (no text, no tool calls) is not sent; its turn is, and the report names it.

The result is never over budget (by ``count``, default ``helpers.core.tokens.count_message``:
exact for the offline stand-in, a cautious estimate elsewhere), always passes
``find_problems``, and comes with a ``ContextReport`` of what was included and dropped.

``MemoryAssembler`` holds the state behind the blocks -- a rolling summary, a recall
index, a profile -- and is what ``ChatSession(memory=...)`` calls: ``forget`` (turns
left the window), ``build`` (assemble this request), ``remember`` (a turn finished).
A failing summariser or embedding request degrades to the plain window with a one-line
warning; raw turns are never lost.

An old value appears in the context only marked as superseded. The profile reads the fact
store, which knows every correction; ``mark_superseded`` adds to each quoted ``[turn N]`` line
(recalled turns and summary lines) that still holds a value replaced after turn N a note
``(superseded at turn M: <attribute> is now "<value>")``, and the profile line of a corrected
fact names the value it superseded. Profile lines that share a word with the question come
first, then the rest by similarity of meaning to the question (the recall index's embeddings),
so the fact asked about is the last one a tight budget leaves out.

No block can be given a line by what a user (or a tool, or a model) wrote: ``MemoryAssembler.build``
passes every profile line through ``one_line``, the summary and every recalled turn through
``safe_lines`` (only ``\\n`` ends a line; every other line break or control character is
escaped), and gives ``mark_superseded`` facts whose labels and values are one line each.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import replace
from typing import Any, Sequence

from datetime import datetime

from helpers.core import clock
from helpers.core.errors import ConfigError, WorkshopError
from helpers.core import tokens
from helpers.chat.history import HistoryError, keep_newest
from helpers.memory.budget import (DEFAULT_SHARES, Assembly, ContextReport, Count, Part, Shares, fact_text,
                                   fit_profile, fit_recall, fit_summary, fixed_parts, relevant_first)
from helpers.memory.profile import ProfileMemory
from helpers.memory.recall import Recalled, speaker_names, turn_parts
from helpers.memory.recall_index import MAX_K, RecallIndex
from helpers.memory.summary import RollingSummary, Summariser, SummaryError, SummaryWarning
from helpers.core.context_format import quote_text  # the superseded note's values stand between double quotes
from helpers.core.context_format import format_turn_ids, one_line, safe_lines, turn_day
from helpers.chat.validity import find_problems

DEFAULT_WINDOW_TURNS = 6
MIN_QUOTE_TOKENS = 16  # the fewest tokens one recalled quote costs (its turn tag, role and a few words)


def fit_window(window: Sequence[tuple[int, Sequence[dict]]], left: int | None,
               count: Count) -> tuple[list[dict], Part]:
    """The newest whole turns that fit ``left``, stopping at the first that does not (no gaps).

    ``keep_newest`` (notebook 07) decides; none may be kept, since the question is sent apart.
    """
    turns = list(window)
    kept, tokens = keep_newest(reversed(turns), lambda turn: sum(map(count, turn[1])), room=left,
                               keep_one=False)
    kept.reverse()  # oldest first, as they are sent
    older = turns[:len(turns) - len(kept)]
    part = Part("window", tokens, left, [turn_id for turn_id, _ in kept], [turn_id for turn_id, _ in older])
    return [message for _, turn in kept for message in turn], part


def assemble_context(system_prompt: str | None, window: Sequence[tuple[int, Sequence[dict]]],
                     question: str, *, budget: int | None = None, fixed: int = tokens.REPLY_PRIMING,
                     count: Count = tokens.count_message, shares: Shares = DEFAULT_SHARES,
                     profile_lines: Sequence[str] = (), summary: RollingSummary | None = None,
                     recalled: Sequence[Recalled] = ()) -> Assembly:
    """The request for ``question`` under ``budget``, built in the documented order (see the module)."""
    system_msg, question_msg, head, tail = fixed_parts(system_prompt, question, budget, fixed, count)
    room = None if budget is None else budget - sum(p.tokens for p in head + tail)  # what the blocks share
    notes: list[str] = []
    window = without_empty_replies(window, notes)  # an empty assistant reply says nothing: not sent

    def cap(share: float) -> int | None:  # a block may use at most its share of the room
        return None if room is None else int(room * share)

    def left_after(left: int | None, part: Part) -> int | None:  # the room still unused after a block
        return None if left is None else left - part.tokens

    profile_msg, profile_part = fit_profile(profile_lines, cap(shares.profile), count)
    left = left_after(room, profile_part)
    summary_msg, summary_part = fit_summary(summary, cap(shares.summary), left, count, notes)
    left = left_after(left, summary_part)
    _, newest = fit_window(window, cap(shares.window), count)  # the newest turns that fit the window's share
    left = left_after(left, newest)
    recall_msg, recall_part = fit_recall(recalled, left, left, count)  # recall may use every share still unused
    left = left_after(left, recall_part)
    window_room = None if left is None else left + newest.tokens  # the window's share and what recall left
    window_msgs, window_part = fit_window(window, window_room, count)
    while set(recall_part.included) & set(window_part.included):  # a turn the window sends is not quoted too
        freed = recall_part.tokens
        recall_msg, recall_part = unquote_sent(recalled, recall_part, window_part.included, count)
        window_room = None if window_room is None else window_room + freed - recall_part.tokens
        window_msgs, window_part = fit_window(window, window_room, count)  # and it may grow into what that freed

    blocks = [m for m in (profile_msg, summary_msg, recall_msg) if m is not None]
    messages = system_msg + blocks + window_msgs
    problems = find_problems(messages + [question_msg])
    if problems:  # whole turns are always valid; checked so that a bug can never reach a server
        raise HistoryError.invalid(problems, what=sent_turns(messages, system_msg + blocks, window_part))
    parts = head + [profile_part, summary_part, recall_part, window_part] + tail
    return Assembly(messages, question_msg, ContextReport(budget, parts, notes))


def unquote_sent(recalled: Sequence[Recalled], part: Part, sent: Sequence[int],
                 count: Count) -> tuple[dict | None, Part]:
    """The recall block again without the turns in ``sent`` (the window sends them whole): the other quotes it
    held, laid out as before (they fit: a block of fewer quotes costs no more). What it left out stays left out."""
    gone = set(sent)
    kept = [r for r in recalled if r.turn_id in part.included and r.turn_id not in gone]
    message, refit = fit_recall(kept, None, None, count)
    refit.cap, refit.dropped = part.cap, list(part.dropped)
    return message, refit


def without_empty_replies(window: Sequence[tuple[int, Sequence[dict]]],
                          notes: list[str]) -> list[tuple[int, Sequence[dict]]]:
    """The window with every empty assistant reply (no text, no tool calls) left out of what is sent.

    A model may answer with nothing; the turn stays whole (its user message is sent), the empty reply is
    not (a strict server refuses an assistant message with neither content nor tool calls). ``notes``
    names the turns."""
    out, quiet = [], []
    for turn_id, messages in window:
        kept = [m for m in messages if not _empty_reply(m)]
        if len(kept) < len(messages):
            quiet.append(turn_id)
        out.append((turn_id, kept if len(kept) < len(messages) else messages))
    if quiet:
        notes.append(f"the empty assistant reply of {format_turn_ids(quiet)} was not sent")
    return out


def _empty_reply(message: Any) -> bool:
    return (isinstance(message, dict) and message.get("role") == "assistant" and not message.get("tool_calls")
            and message.get("content") in (None, "") and "function_call" not in message)


def sent_turns(messages: Sequence[dict], before: Sequence[dict], window_part: Part) -> str:
    """What a refused request held, naming the window's turns (a problem names a message by its index)."""
    if not window_part.included:
        return "the message list"
    return (f"the message list (messages {len(before)}-{len(messages) - 1} are the window's "
            f"{format_turn_ids(window_part.included)}; message {len(messages)} the question)")


_TURN_LINE = re.compile(r"^\[turn (\d+)[,\]]")  # a quote or summary line's tag (dated or not)


def mark_superseded(text: str, pairs: Sequence[tuple[Any, Any]]) -> str:
    """Add a superseded note to each ``[turn N]`` line quoting a value that a later turn replaced.

    ``pairs`` are (old, current) facts with ``value``, ``turn_id`` and ``label``
    (``ProfileMemory.superseded()``).
    """
    if not pairs:
        return text
    out = []
    for line in text.split("\n"):
        match = _TURN_LINE.match(line)
        if match:
            said, lowered = int(match.group(1)), line.lower()
            for old, current in pairs:
                if (said < current.turn_id and old.value.lower() in lowered
                        and f'is now "{current.value.lower()}"' not in lowered):
                    note = f'{current.label} is now "{current.value}"'
                    line += f" (superseded at turn {current.turn_id}: {note})"
        out.append(line)
    return "\n".join(out)


def _one_line_fact(fact: Any) -> Any:
    """A profile fact whose key, topic and value are each one line without double quotes (``quote_text``), for
    a superseded note: ``helpers.core.context_format.read_superseded_notes`` reads back exactly what it says."""
    return replace(fact, key=quote_text(fact.key), topic=quote_text(fact.topic), value=quote_text(fact.value))



class MemoryStateError(WorkshopError, ValueError):
    """Stored memory state that this memory cannot read (the session store reports it, naming the session)."""

class MemoryAssembler:
    """A rolling summary, recall of older turns and a profile, assembled under one budget per request.

    Pass ``summariser=False`` / ``recall=False`` / ``profile=False`` to switch a strategy off
    (all off: the plain window). ``keep`` lists facts every summary must preserve.
    ``window_turns`` is the sliding window a session uses when it has no ``max_turns``.
    It has every member of ``helpers.chat.chat_session.Memory``, the protocol ``ChatSession(memory=...)`` is written
    against (``tests/test_memory_protocol.py`` checks both).
    """

    def __init__(self, *, summariser: Summariser | bool = True, recall: RecallIndex | bool = True,
                 profile: ProfileMemory | bool = True, keep: Sequence[str] = (),
                 shares: Shares = DEFAULT_SHARES, count: Count = tokens.count_message,
                 window_turns: int = DEFAULT_WINDOW_TURNS, reserve: int = 0,
                 client: Any = None, settings: Any = None):
        # (``x or None`` would be wrong here: an empty RecallIndex or ProfileMemory is falsy)
        self.summariser = Summariser() if summariser is True else \
            (None if summariser is False else summariser)
        self.recall = RecallIndex() if recall is True else (None if recall is False else recall)
        self.profile = ProfileMemory() if profile is True else (None if profile is False else profile)
        self.keep = list(keep)
        self.shares, self.count, self.window_turns, self.reserve = shares, count, window_turns, reserve
        self.summary = RollingSummary()
        self.pending: list[tuple[int, list[dict]]] = []  # dropped turns not summarised yet
        self.times: dict[int, str] = {}  # turn id -> when it was said (ISO 8601 with offset; ``remember``)
        self.last_assembly: Assembly | None = None  # the latest request built (messages and report)
        self.last_inputs: dict = {}  # what that request was built from: window, blocks, fixed costs
        self.attach(client, settings)

    @property
    def last_report(self) -> ContextReport | None:
        """The report of the latest request built."""
        return self.last_assembly.report if self.last_assembly is not None else None

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Give every part this client/settings unless it already has its own."""
        for part in (self.summariser, self.recall, self.profile):
            if part is not None:
                part.attach(client, settings)

    def pin(self, fact: str) -> None:
        """A fact every later summary must contain word for word."""
        if fact.strip() and fact not in self.keep:
            self.keep.append(fact)

    # -- the three hooks a session calls
    def forget(self, turns: Sequence[Any]) -> list[str]:
        """Turns that left the window: fold them into the summary (kept as pending if that fails)."""
        self.pending += [(int(t.turn_id), list(t.messages)) if hasattr(t, "turn_id")
                         else (int(t[0]), list(t[1])) for t in turns]
        if self.summariser is None:
            self.pending = []
            return []
        if not self.pending:
            return []
        ids = [i for i, _ in self.pending]
        try:
            update = self.summariser.summarise(self.summary, self.pending, self.keep, times=self.times)
        except SummaryError as exc:
            warnings.warn(f"summary not updated, using the plain window: {exc}", SummaryWarning, stacklevel=2)
            return [f"summary failed; {format_turn_ids(ids)} kept raw for the next attempt"]
        self.summary, self.pending = update.summary, []
        retry = " (re-asked once for pinned facts)" if update.attempts > 1 else ""
        return [f"summarised {format_turn_ids(ids)} into the running summary{retry}"]

    def remember(self, turn_id: int, messages: Sequence[dict], created_at: Any = None) -> list[str]:
        """A finished turn: index it for recall and extract profile facts from the user's words.

        ``created_at`` is when the turn was said (a datetime with its offset, or ISO 8601 text): the clock's
        ``now()`` unless given, as when importing an old conversation. Recall quotes are dated with it and the
        profile records it, so staleness counts from the turn's own time."""
        at = _turn_time(created_at)
        self.times[int(turn_id)] = at
        events = []
        if self.recall is not None and not self.recall.add(turn_id, messages, at=at):
            events.append(f"turn {turn_id} states nothing to recall (a question or small talk): not indexed")
        if self.profile is not None:
            user, answer, _ = turn_parts(messages)
            speaker = speaker_names(messages)[0] or None  # another named speaker's turn states no attribute
            update = self.profile.update(turn_id, user, answer, at=at, speaker=speaker)
            events += [f"profile {f.key}/{f.topic} = {f.value!r} (turn {turn_id})" for f in update.added]
            events += [f"profile {s['key']}/{s['topic']} = {s['value']!r} (turn {turn_id}; written once the "
                       "turn is saved)" for s in getattr(update, "deferred", ())]
            events += [f"profile rejected: {r}" for r in update.rejected]
        return events

    def build(self, system_prompt: str | None, window: Sequence[tuple[int, Sequence[dict]]], question: str, *,
              budget: int | None = None, tools: list | None = None) -> Assembly:
        """The request that starts the next turn (see ``assemble_context``)."""
        recalled: list[Recalled] = []
        caught: list[str] = []
        if self.recall is not None and isinstance(question, str) and question.strip():
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                room = self._room(system_prompt, question, budget, tools)
                k = self._recall_k(room)
                recalled = self.recall.search(question, exclude=self._sent_newest(window, room), **(
                    {"k": k} if k is not None else {}))
            caught = [str(w.message) for w in seen]
            for warning in seen:  # pass them on (one line each), and keep them in the report
                warnings.warn(str(warning.message), warning.category, stacklevel=2)
        fixed = tokens.REPLY_PRIMING + tokens.count_tools(tools) + self.reserve
        pairs = [tuple(_one_line_fact(f) for f in pair)  # every block line stays one line (see the module)
                 for pair in (self.profile.superseded() if self.profile is not None else [])]
        recalled = [replace(r, text=mark_superseded(safe_lines(r.text), pairs)) for r in recalled]
        summary = None
        if self.summariser is not None:
            summary = replace(self.summary, text=mark_superseded(self.summary.lines_text(), pairs))
        profile_lines = [one_line(line) for line in self.profile.lines()] if self.profile is not None else []
        if profile_lines and isinstance(question, str):
            similar = self.recall.similarity(question, [fact_text(x) for x in profile_lines]) \
                if self.recall is not None else None
            profile_lines = relevant_first(profile_lines, question, similar)
        self.last_inputs = dict(system_prompt=system_prompt, window=list(window), question=question,
                                fixed=fixed, profile_lines=list(profile_lines), summary=summary,
                                recalled=list(recalled))
        assembly = assemble_context(
            system_prompt, window, question, budget=budget, fixed=fixed, count=self.count, shares=self.shares,
            profile_lines=profile_lines, summary=summary, recalled=recalled)
        assembly.report.warnings += caught
        if self.pending:
            waiting = format_turn_ids([i for i, _ in self.pending])
            assembly.report.warnings.append(f"{waiting} not summarised yet")
        self.last_assembly = assembly
        return assembly

    def _room(self, system_prompt: str | None, question: str, budget: int | None, tools: list | None) -> int | None:
        """What the blocks of this request share (``assemble_context``'s room): the budget less the fixed
        costs, the system prompt and the question; None without a budget."""
        if budget is None:
            return None
        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        fixed = tokens.REPLY_PRIMING + tokens.count_tools(tools) + self.reserve
        return budget - fixed - sum(map(self.count, system)) - self.count({"role": "user", "content": question})

    def _recall_k(self, room: int | None) -> int | None:
        """How many turns to ask recall for: enough to fill the recall block's share of this room
        (``fit_recall`` then takes them, best first, until the share is full); the index's ``k`` without a
        budget (None: a recall object without a ``k`` is asked with its own default)."""
        if room is None or not isinstance(getattr(self.recall, "k", None), int):
            return None
        share = max(0, int(room * (1 - self.shares.window)))  # recall may use every share but the window's
        return max(self.recall.k, min(MAX_K, share // MIN_QUOTE_TOKENS + 1))

    def _sent_newest(self, window: Sequence[tuple[int, Sequence[dict]]], room: int | None) -> list[int]:
        """The window's turns its own share sends whatever recall brings (``assemble_context``): recall
        searches every other turn, so a turn of the session's window that does not fit is not lost."""
        if room is None or room < 0:
            return [turn_id for turn_id, _ in window]
        fits = fit_window(without_empty_replies(window, []), int(room * self.shares.window), self.count)
        return fits[1].included

    # -- a saved session's facts: written once its save has committed (PersistentSession)
    def defer_writes(self) -> None:
        """Hold each turn's profile facts until ``write_deferred`` (``ProfileMemory.defer_writes``)."""
        if self.profile is not None and hasattr(self.profile, "defer_writes"):
            self.profile.defer_writes()

    def write_deferred(self) -> list:
        """Write the held facts in one fact-store transaction; returns the store's decisions."""
        write = getattr(self.profile, "write_deferred", None)
        return write() if write is not None else []

    def drop_deferred(self) -> None:
        """Forget the held facts unwritten (their turn was not saved)."""
        drop = getattr(self.profile, "drop_deferred", None)
        if drop is not None:
            drop()

    # -- undo, reset, snapshots
    def discard(self, turn_id: int) -> None:
        """Forget what ``remember`` stored for a turn (after an undo)."""
        self.times.pop(int(turn_id), None)
        if self.recall is not None:
            self.recall.discard(turn_id)
        if self.profile is not None:
            self.profile.discard(turn_id)

    def reset(self) -> None:
        """Forget the conversation (pinned facts stay: they are configuration)."""
        self.summary, self.pending, self.times = RollingSummary(), [], {}
        if self.recall is not None:
            self.recall.restore({})
        if self.profile is not None:
            self.profile.restore({})

    # -- snapshots: a small shared part, and one part per turn (see ``helpers.chat.memory_protocol``)
    def shared_state(self) -> dict:
        """The state without any turn's part: summary, turns waiting for it, pins (``"turns"`` left empty)."""
        return {"summary": self.summary.to_dict(), "pending": [[i, list(m)] for i, m in self.pending],
                "keep": list(self.keep), "recall": {} if self.recall is not None else None,
                "profile": {"user_id": self.profile.user_id} if self.profile is not None else None,
                "turns": {}}

    def turn_state(self, turn_id: int) -> dict | None:
        """What recall and the profile keep of one turn (set by ``remember``, removed by ``discard``), or None."""
        part = {"at": self.times[turn_id]} if turn_id in self.times else {}
        if self.recall is not None and (recall := self.recall.turn_state(turn_id)) is not None:
            part["recall"] = recall
        if self.profile is not None and (profile := self.profile.turn_state(turn_id)) is not None:
            part["profile"] = profile
        return part or None

    def state(self) -> dict:
        """JSON-ready state for ``ChatSession.snapshot()``: ``shared_state`` and every turn's part."""
        state = self.shared_state()
        ids = set(self.times)
        if self.recall is not None:
            ids.update(self.recall.texts, self.recall.skipped)
        if self.profile is not None:
            ids.update(s["turn_id"] for s in [*self.profile.statements, *(self.profile.pending or ())])
        state["turns"] = {str(i): part for i in sorted(ids) if (part := self.turn_state(i)) is not None}
        return state

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state`` (also reads states saved before turns had parts of their own)."""
        state = state or {}
        if not isinstance(state.get("summary") or {}, dict):
            raise MemoryStateError(f"the memory's summary is a {type(state['summary']).__name__}, not a dict")
        self.summary = RollingSummary.from_dict(state.get("summary"))
        self.pending = [(int(i), list(m)) for i, m in state.get("pending", [])]
        keep = state.get("keep", self.keep)
        if not isinstance(keep, list) or not all(isinstance(fact, str) for fact in keep):
            raise MemoryStateError(f"the memory's pinned facts are {keep!r:.40}, not a list of texts")
        self.keep = list(keep)
        recall, profile = state.get("recall"), state.get("profile")
        self.times = {}
        if "turns" in state:  # each turn's part back into the recall index's and the profile's own states
            recall, profile, self.times = _split_turns(state["turns"], recall, profile)
        if self.recall is not None:
            self.recall.restore(recall)
        if self.profile is not None:
            self.profile.restore(profile)

    def catch_up(self, kept: Sequence[tuple[int, Sequence[dict]]],
                 dropped: Sequence[tuple[int, Sequence[dict]]] = ()) -> list[str]:
        """Turns another writer added without this memory (a plain session, another window): read them now.

        Each is remembered as if it had just finished (indexed for recall, its statements read for the
        profile), in turn order; a dropped one that no summary covers waits for the next summary
        (``pending``). A turn this memory already keeps a part of is left as it is. Returns the lines to
        show in verbose mode."""
        events: list[str] = []
        covered = set(self.summary.turn_ids) | {i for i, _ in self.pending}
        dropped_ids = {i for i, _ in dropped}
        for turn_id, messages in sorted([*kept, *dropped], key=lambda turn: turn[0]):
            if self.turn_state(turn_id) is None:
                events += self.remember(turn_id, messages)
            if turn_id in dropped_ids and turn_id not in covered and self.summariser is not None:
                self.pending.append((turn_id, list(messages)))
        self.pending.sort(key=lambda turn: turn[0])
        return events

    def checkpoint(self) -> tuple:
        """Where the memory stands now, for ``rollback`` and ``state_at``; copies the shared part only."""
        return (RollingSummary.from_dict(self.summary.to_dict()), [(i, list(m)) for i, m in self.pending],
                list(self.keep), self.recall.checkpoint() if self.recall is not None else None,
                self.profile.checkpoint() if self.profile is not None else None, dict(self.times))

    def rollback(self, point: tuple) -> None:
        """Back to ``checkpoint`` (a failed turn or save): what the turns since added is forgotten."""
        summary, pending, keep, recall, profile, times = point
        self.summary, self.pending, self.keep, self.times = summary, list(pending), list(keep), dict(times)
        if self.recall is not None:
            self.recall.rollback(recall)
        if self.profile is not None:
            self.profile.rollback(profile)

    def state_at(self, point: tuple) -> dict:
        """The ``state()`` the memory had at ``checkpoint`` (the memory itself is not changed)."""
        summary, pending, keep, recall, profile, times = point
        turns: dict[int, dict] = {i: {"at": at} for i, at in times.items()}
        if recall is not None:
            for i, part in RecallIndex.parts_at(recall).items():
                turns.setdefault(i, {})["recall"] = part
        if profile is not None:
            for statement in [*profile[0], *(profile[1] or ())]:
                turns.setdefault(statement["turn_id"], {}).setdefault("profile", []).append(dict(statement))
        return {"summary": summary.to_dict(), "pending": [[i, list(m)] for i, m in pending], "keep": list(keep),
                "recall": {} if recall is not None else None,
                "profile": {"user_id": self.profile.user_id} if profile is not None else None,
                "turns": {str(i): turns[i] for i in sorted(turns)}}


def _turn_time(created_at: Any) -> str:
    """A turn's time as ISO 8601 text with an offset: ``created_at`` checked, or the clock's now."""
    if created_at is None:
        return clock.now().isoformat()
    if isinstance(created_at, str):
        try:
            created_at = datetime.fromisoformat(created_at.strip())
        except ValueError:
            raise ConfigError(f"created_at={created_at!r:.40} is not an ISO 8601 time") from None
    if not isinstance(created_at, datetime):
        raise ConfigError(f"created_at must be a datetime or ISO 8601 text (got {type(created_at).__name__})")
    if created_at.tzinfo is None:
        raise ConfigError(f"created_at={created_at.isoformat()} needs a UTC offset (a time zone)")
    return created_at.isoformat()


def _split_turns(turns: Any, recall: Any, profile: Any) -> tuple[dict, dict, dict[int, str]]:
    """The recall index's and the profile's whole states, and each turn's time, from per-turn parts
    (``MemoryAssembler.state``).

    A part that is not what ``turn_state`` writes raises ValueError naming its turn (the session reports
    the stored data as damaged)."""
    if not isinstance(turns, dict):
        raise MemoryStateError(f"the memory's turn parts are a {type(turns).__name__}, not a dict")
    recall_state = {"quotes": {}, "texts": {}, "skipped": [], "answers": {}, "assistant": {}}
    statements, times = [], {}
    for key in sorted(turns, key=_turn_key):
        part = turns[key]
        if not isinstance(part, dict):
            raise MemoryStateError(f"the memory part of turn {key} is a {type(part).__name__}, not a dict")
        if "at" in part:
            at = part["at"]
            if not isinstance(at, str) or turn_day(at) is None:
                raise MemoryStateError(f"the memory part of turn {key} says it was said at {at!r:.40}")
            times[int(key)] = at
        found = part.get("recall")
        if found is not None and not isinstance(found, dict):
            raise MemoryStateError(f"the recall part of turn {key} is a {type(found).__name__}, not a dict")
        if found is not None and found.get("skipped"):
            recall_state["skipped"].append(int(key))
        elif found is not None:
            quote, texts = found.get("quote"), found.get("texts")
            if not isinstance(quote, str) or not isinstance(texts, list) \
                    or not all(isinstance(t, str) for t in texts):
                raise MemoryStateError(f"the recall part of turn {key} has no quote and texts")
            answers = found.get("answers", 0)
            if type(answers) is not int or not 0 <= answers <= len(texts):
                raise MemoryStateError(f"the recall part of turn {key} counts {answers!r:.20} answer pieces")
            said = found.get("assistant", 0)
            if type(said) is not int or not 0 <= said <= len(texts) - answers:
                raise MemoryStateError(f"the recall part of turn {key} counts {said!r:.20} assistant pieces")
            recall_state["quotes"][key], recall_state["texts"][key] = quote, list(texts)
            if answers:
                recall_state["answers"][key] = answers
            if said:
                recall_state["assistant"][key] = said
        said = part.get("profile", [])
        if not isinstance(said, list) or not all(isinstance(s, dict) for s in said):
            raise MemoryStateError(f"the profile part of turn {key} is not a list of statements")
        statements += [dict(s) for s in said]
    if profile is not None and not isinstance(profile, dict):
        raise MemoryStateError(f"the memory's profile state is a {type(profile).__name__}, not a dict")
    return recall_state, {**(profile or {}), "statements": statements}, times


def _turn_key(key: Any) -> int:
    """A ``"turns"`` key as the turn id it names (ValueError for anything else)."""
    if not isinstance(key, str) or not key.lstrip("-").isdigit():
        raise MemoryStateError(f"the memory names turn {key!r:.20}, not a whole number")
    return int(key)

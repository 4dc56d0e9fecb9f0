"""One context assembler (lessons 08-09): every memory strategy under one token budget.

The module opens with the core notebook 09 builds: ``fit_window`` (the newest whole turns
that fit), ``assemble_context`` (the budget split) and ``mark_superseded`` (an old value is
quoted only with a note naming its replacement). The block fitters, the report and
``MemoryAssembler`` (the state a session keeps) follow.

``assemble_context`` builds the request that starts a turn, in this order:

1. **fixed costs** -- request overhead, tool schemas, a ``reserve`` for the turn's later
   steps -- plus the system prompt and the new question. Always sent; if they alone
   exceed the budget, ``ContextBudgetError`` (nothing is sent).
2. What is left (the *room*) is shared out, block by block, in this order:
   - **profile** (system message) -- up to ``shares.profile`` of the room (15 %);
     stale facts, then the least important keys, are left out first;
   - **summary** (system message ``Summary of earlier turns (turns a-b): ...``) -- up to
     ``shares.summary`` (20 %); the oldest lines go first, pinned facts never (they may
     borrow from the window's part);
   - **recalled turns** (one system message of quoted turns) -- up to ``shares.recall``
     (25 %), best match first;
   - **the window** -- everything still unused: the newest *whole* turns that fit, newest
     first, stopping at the first that does not (no gaps, never half a turn).
   A block's unused share goes to the window, not to the next block.

The result is never over budget (by ``count``, default ``helpers.tokens.count_message``:
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
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from helpers import tokens
from helpers.errors import EmptyMessageError, WorkshopError
from helpers.history import HistoryError, find_problems
from helpers.memory.profile import PROFILE_HEADER, ProfileMemory
from helpers.memory.recall import RECALL_HEADER, RecallIndex, Recalled, turn_parts
from helpers.memory.summary import (RollingSummary, Summariser, SummaryError, SummaryWarning, format_turn_ids,
                                    trim_summary_lines)

DEFAULT_WINDOW_TURNS = 6
Count = Callable[[dict], int]


class ContextBudgetError(WorkshopError, ValueError):
    """The system prompt, the question and the fixed costs alone do not fit the budget."""


@dataclass(frozen=True)
class Shares:
    """Fractions of the room (budget minus fixed costs, system prompt and question) each block may use."""

    profile: float = 0.15
    summary: float = 0.20
    recall: float = 0.25

    def __post_init__(self) -> None:
        values = (self.profile, self.summary, self.recall)
        if any(not 0 <= v <= 1 for v in values) or sum(values) > 1:
            raise ValueError(f"shares must each be between 0 and 1 and add up to at most 1 (got {values}); "
                             "the window gets the rest")


DEFAULT_SHARES = Shares()


def fit_window(window: Sequence[tuple[int, Sequence[dict]]], left: int | None,
               count: Count) -> tuple[list[dict], Part]:
    """The newest whole turns that fit ``left``, stopping at the first that does not (no gaps)."""
    part, kept = Part("window", 0, left), []
    for turn_id, turn in reversed(list(window)):
        cost = sum(count(m) for m in turn)
        if part.dropped or (left is not None and part.tokens + cost > left):
            part.dropped.insert(0, turn_id)
            continue
        kept[:0] = list(turn)
        part.tokens += cost
        part.included.insert(0, turn_id)
    return kept, part


def assemble_context(system_prompt: str | None, window: Sequence[tuple[int, Sequence[dict]]],
                     question: str, *, budget: int | None = None, fixed: int = tokens.REPLY_PRIMING,
                     count: Count = tokens.count_message, shares: Shares = DEFAULT_SHARES,
                     profile_lines: Sequence[str] = (), summary: RollingSummary | None = None,
                     recalled: Sequence[Recalled] = ()) -> Assembly:
    """The request for ``question`` under ``budget``, built in the documented order (see the module)."""
    system_msg, question_msg, head, tail = fixed_parts(system_prompt, question, budget, fixed, count)
    room = None if budget is None else budget - sum(p.tokens for p in head + tail)  # what the blocks share
    notes: list[str] = []

    def cap(share: float) -> int | None:  # a block may use at most its share of the room
        return None if room is None else int(room * share)

    def left_after(left: int | None, part: Part) -> int | None:  # the room still unused after a block
        return None if left is None else left - part.tokens

    profile_msg, profile_part = fit_profile(profile_lines, cap(shares.profile), count)
    left = left_after(room, profile_part)
    summary_msg, summary_part = fit_summary(summary, cap(shares.summary), left, count, notes)
    left = left_after(left, summary_part)
    recall_msg, recall_part = fit_recall(recalled, cap(shares.recall), left, count)
    left = left_after(left, recall_part)
    window_msgs, window_part = fit_window(window, left, count)  # the window gets everything still unused

    blocks = [m for m in (profile_msg, summary_msg, recall_msg) if m is not None]
    messages = system_msg + blocks + window_msgs
    problems = find_problems(messages + [question_msg])
    if problems:  # whole turns are always valid; checked so that a bug can never reach a server
        raise HistoryError.invalid(problems)
    parts = head + [profile_part, summary_part, recall_part, window_part] + tail
    return Assembly(messages, question_msg, ContextReport(budget, parts, notes))


_TURN_LINE = re.compile(r"^\[turn (\d+)\]")


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


@dataclass
class Part:
    """One part of an assembled request: its tokens, its cap, what it included and dropped."""

    kind: str
    tokens: int
    cap: int | None = None
    included: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    note: str = ""


@dataclass
class ContextReport:
    """What went into a request and what was left out, in budget order."""

    budget: int | None
    parts: list[Part]
    warnings: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Tokens of the whole request (by the assembler's count)."""
        return sum(p.tokens for p in self.parts)

    def part(self, kind: str) -> Part | None:
        """The part called ``kind`` (fixed, system, profile, summary, recall, window, question)."""
        return next((p for p in self.parts if p.kind == kind), None)

    def ids(self, kind: str, dropped: bool = False) -> list:
        """Included (or dropped) items of one part; empty when the part is absent."""
        part = self.part(kind)
        return [] if part is None else list(part.dropped if dropped else part.included)

    def lines(self) -> list[str]:
        """The report as short text lines."""
        used = f"used {self.total:,}"
        head = f"budget {self.budget:,} tokens, {used}" if self.budget else f"no budget, {used}"
        out = [head]
        for p in self.parts:
            cap = f"≤{p.cap:,}" if p.cap is not None else ""
            what = ""
            if p.kind in ("window", "recall") and (p.included or p.dropped):
                what = format_turn_ids(p.included) if p.included else "nothing"
                what += f"; left out {format_turn_ids(p.dropped)}" if p.dropped else ""
            elif p.kind == "profile" and (p.included or p.dropped):
                what = f"{len(p.included)} fact{'s' if len(p.included) != 1 else ''}" + (
                    f", {len(p.dropped)} left out" if p.dropped else "")
            elif p.kind == "summary" and p.included:
                what = format_turn_ids(p.included)
            note = "; ".join(x for x in (what, p.note) if x)
            out.append(f"  {p.kind:<9}{cap:>7} {p.tokens:>6,}  {note}".rstrip())
        return out + [f"  warning: {w}" for w in self.warnings]

    def show(self) -> None:
        """Print ``lines()``."""
        print("\n".join(self.lines()))


@dataclass
class Assembly:
    """The messages to send before the question (``run_agent`` appends it) and the report."""

    messages: list[dict]
    question: dict
    report: ContextReport

    @property
    def request(self) -> list[dict]:
        """The full first request: messages plus the question."""
        return self.messages + [self.question]


_STOP_WORDS = frozenset("a an and are did do does i i'm is it me my of on the to was what what's when where "
                        "which who why how you your again tell remind say said".split())


def fact_text(line: str) -> str:
    """A profile line as the user would say it: ``- locker: 4471 (turn 3)`` -> ``my locker is 4471``."""
    label, _, value = (line[2:] if line.startswith("- ") else line).split(" (turn ", 1)[0].partition(": ")
    return f"my {label.replace('/', ' ')} is {value}" if value else label


def relevant_first(lines: Sequence[str], question: str, scores: Sequence[float] | None = None) -> list[str]:
    """Profile lines whose label shares a word with the question first, then by ``scores`` (similarity).

    Without scores, lines that share no word keep their order (the sort is stable).
    """
    wanted = set(re.findall(r"[a-z0-9']+", question.lower())) - _STOP_WORDS

    def hits(line: str) -> int:
        label = line[2:].split(":", 1)[0]
        return len(wanted & set(re.findall(r"[a-z0-9']+", label.lower())))

    score = dict(zip(lines, scores)) if scores is not None else {}
    return sorted(lines, key=lambda line: (-hits(line), -score.get(line, 0.0)))


def _system(header: str, lines: Sequence[str]) -> dict:
    return {"role": "system", "content": header + "\n" + "\n".join(lines)}


def fit_profile(lines: Sequence[str], cap: int | None, count: Count) -> tuple[dict | None, Part]:
    """The profile block within ``cap``: stale facts go first, then the least important (last) ones."""
    part, lines = Part("profile", 0, cap), list(lines)
    while lines and cap is not None and count(_system(PROFILE_HEADER, lines)) > cap:
        stale = [i for i, line in enumerate(lines) if "possibly outdated" in line]
        part.dropped.insert(0, lines.pop(stale[-1] if stale else -1))
    if not lines:
        return None, part
    message = _system(PROFILE_HEADER, lines)
    part.tokens, part.included = count(message), lines
    return message, part


def fit_summary(summary: RollingSummary | None, cap: int | None, left: int | None, count: Count,
                 notes: list[str]) -> tuple[dict | None, Part]:
    """The summary block within ``cap``: oldest lines go first; pinned lines may borrow up to ``left``."""
    part = Part("summary", 0, cap)
    if summary is None or not summary.text:
        return None, part
    header, text, cut = summary.header(), summary.text, 0
    if left is not None:
        limit = min(cap, left)
        text, cut = trim_summary_lines(text, lambda t: count(_system(header, [t])) <= limit)
    message: dict | None = _system(header, [text]) if text.strip() else None
    if message is None:
        notes.append("no line of the summary fits its share; the summary was left out")
    elif left is not None and count(message) > cap:  # only pinned lines are left, and they are over the share
        if count(message) <= left:
            part.note = "over its share to keep pinned facts"
        else:
            message = None
            notes.append("the summary's pinned facts do not fit this budget; the summary was left out")
    if message is None:
        part.dropped = list(summary.turn_ids)
        return None, part
    part.tokens, part.included = count(message), list(summary.turn_ids)
    if cut:
        trimmed = f"{cut} oldest line{'s' if cut > 1 else ''} trimmed"
        part.note = "; ".join(x for x in (part.note, trimmed) if x)
    return message, part


def fit_recall(recalled: Sequence[Recalled], cap: int | None, left: int | None,
                count: Count) -> tuple[dict | None, Part]:
    """The recall block: best match first, skipping any turn that would overflow the share."""
    part = Part("recall", 0, cap)
    limit = None if left is None else min(cap, left)
    chosen: list[Recalled] = []
    for item in recalled:
        if limit is None or count(_system(RECALL_HEADER, [r.text for r in chosen + [item]])) <= limit:
            chosen.append(item)
        else:
            part.dropped.append(item.turn_id)
    if not chosen:
        return None, part
    message = _system(RECALL_HEADER, [r.text for r in chosen])
    part.tokens, part.included = count(message), [r.turn_id for r in chosen]
    return message, part


def fixed_parts(system_prompt: str | None, question: str, budget: int | None, fixed: int,
                count: Count) -> tuple[list[dict], dict, list[Part], list[Part]]:
    """The messages and parts always sent (system prompt, question, fixed costs), checked against a budget."""
    if not isinstance(question, str) or not question.strip():
        raise EmptyMessageError("the message is empty; type a question (nothing was sent and the session is "
                                "unchanged)")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ValueError(f"budget must be a positive whole number of tokens or None (got {budget!r})")
    system_msg = [{"role": "system", "content": system_prompt}] if system_prompt else []
    question_msg = {"role": "user", "content": question}
    head = [Part("fixed", fixed), Part("system", sum(map(count, system_msg)))]
    tail = [Part("question", count(question_msg))]
    mandatory = sum(p.tokens for p in head + tail)
    if budget is not None and mandatory > budget:
        raise ContextBudgetError(
            f"the system prompt, the question and fixed costs (tools, overhead) need {mandatory:,} tokens "
            f"but the budget is {budget:,}; raise the budget or shorten the question (nothing was sent)")
    return system_msg, question_msg, head, tail


class MemoryAssembler:
    """A rolling summary, recall of older turns and a profile, assembled under one budget per request.

    Pass ``summariser=False`` / ``recall=False`` / ``profile=False`` to switch a strategy off
    (all off: the plain window). ``keep`` lists facts every summary must preserve.
    ``window_turns`` is the sliding window a session uses when it has no ``max_turns``.
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
            update = self.summariser.summarise(self.summary, self.pending, self.keep)
        except SummaryError as exc:
            warnings.warn(f"summary not updated, using the plain window: {exc}", SummaryWarning, stacklevel=2)
            return [f"summary failed; {format_turn_ids(ids)} kept raw for the next attempt"]
        self.summary, self.pending = update.summary, []
        retry = " (re-asked once for pinned facts)" if update.attempts > 1 else ""
        return [f"summarised {format_turn_ids(ids)} into the running summary{retry}"]

    def remember(self, turn_id: int, messages: Sequence[dict]) -> list[str]:
        """A finished turn: index it for recall and extract profile facts from the user's words."""
        events = []
        if self.recall is not None and not self.recall.add(turn_id, messages):
            events.append(f"turn {turn_id} states nothing to recall (a question or small talk): not indexed")
        if self.profile is not None:
            user, answer, _ = turn_parts(messages)
            update = self.profile.update(turn_id, user, answer)
            events += [f"profile {f.key}/{f.topic} = {f.value!r} (turn {turn_id})" for f in update.added]
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
                recalled = self.recall.search(question, exclude=[i for i, _ in window])
            caught = [str(w.message) for w in seen]
            for warning in seen:  # pass them on (one line each), and keep them in the report
                warnings.warn(str(warning.message), warning.category, stacklevel=2)
        fixed = tokens.REPLY_PRIMING + tokens.count_tools(tools) + self.reserve
        pairs = self.profile.superseded() if self.profile is not None else []
        recalled = [replace(r, text=mark_superseded(r.text, pairs)) for r in recalled]
        summary = None
        if self.summariser is not None:
            summary = replace(self.summary, text=mark_superseded(self.summary.text, pairs))
        profile_lines = self.profile.lines() if self.profile is not None else []
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

    # -- undo, reset, snapshots
    def discard(self, turn_id: int) -> None:
        """Forget what ``remember`` stored for a turn (after an undo)."""
        if self.recall is not None:
            self.recall.discard(turn_id)
        if self.profile is not None:
            self.profile.discard(turn_id)

    def reset(self) -> None:
        """Forget the conversation (pinned facts stay: they are configuration)."""
        self.summary, self.pending = RollingSummary(), []
        if self.recall is not None:
            self.recall.restore({})
        if self.profile is not None:
            self.profile.restore({})

    def state(self) -> dict:
        """JSON-ready state for ``ChatSession.snapshot()``."""
        return {"summary": self.summary.to_dict(), "pending": [[i, m] for i, m in self.pending],
                "keep": self.keep,
                "recall": self.recall.state() if self.recall is not None else None,
                "profile": self.profile.state() if self.profile is not None else None}

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``."""
        state = state or {}
        self.summary = RollingSummary.from_dict(state.get("summary"))
        self.pending = [(int(i), list(m)) for i, m in state.get("pending", [])]
        self.keep = list(state.get("keep", self.keep))
        if self.recall is not None:
            self.recall.restore(state.get("recall"))
        if self.profile is not None:
            self.profile.restore(state.get("profile"))

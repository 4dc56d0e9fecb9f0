"""One token budget, shared out (lesson 09): the shares, the block fitters and the report.

``assemble_context`` (``helpers.memory.assembler``) builds a request from these parts:

- ``fixed_parts``: the system prompt, the question and the fixed costs (request overhead, tool
  schemas, a reserve), always sent; ``ContextBudgetError`` when they alone exceed the budget;
- ``Shares``: the fraction of the room (what is left) each block may use at most;
- the block fitters, each keeping its block within a cap and returning it with a ``Part`` for the
  report: ``fit_profile`` leaves out stale facts first, then the least important;
  ``fit_summary`` its oldest lines (pinned lines may borrow from the window's part);
  ``fit_recall`` the turns that would overflow, best match first (the block lays them out by day);
- ``relevant_first`` orders the profile so the fact asked about is the last one a tight budget
  leaves out: lines that share a word with the question, then by similarity of meaning;
- ``ContextReport`` (a ``Part`` per block, in budget order) says what was included and dropped;
  ``Assembly`` is the messages, the question and the report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from helpers.core.context_format import arrange_by_day, quote_day, read_fact_line
from helpers.core.errors import ConfigError, EmptyMessageError, WorkshopError
from helpers.memory.profile import PROFILE_HEADER
from helpers.memory.recall import RECALL_HEADER, Recalled
from helpers.memory.summary import RollingSummary, trim_summary_lines
from helpers.core.context_format import format_turn_ids

Count = Callable[[dict], int]  # the tokens one message costs


class ContextBudgetError(WorkshopError, ValueError):
    """The system prompt, the question and the fixed costs alone do not fit the budget."""


@dataclass(frozen=True)
class Shares:
    """Fractions of the room (budget minus fixed costs, system prompt and question) each block may use."""

    profile: float = 0.10
    summary: float = 0.10
    recall: float = 0.50  # and every share the others leave (see ``assemble_context``)

    def __post_init__(self) -> None:
        values = (self.profile, self.summary, self.recall)
        if any(not 0 <= v <= 1 for v in values) or sum(values) > 1:
            raise ConfigError(f"shares must each be between 0 and 1 and add up to at most 1 (got {values}); "
                             "the window gets the rest")

    @property
    def window(self) -> float:
        """The newest turns' own share: what the three blocks' shares leave (30 % by default)."""
        return round(1 - self.profile - self.summary - self.recall, 9)


DEFAULT_SHARES = Shares()


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


def fixed_parts(system_prompt: str | None, question: str, budget: int | None, fixed: int,
                count: Count) -> tuple[list[dict], dict, list[Part], list[Part]]:
    """The messages and parts always sent (system prompt, question, fixed costs), checked against a budget."""
    if not isinstance(question, str) or not question.strip():
        raise EmptyMessageError("the message is empty; type a question (nothing was sent and the session is "
                                "unchanged)")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ConfigError(f"budget must be a positive whole number of tokens or None (got {budget!r})")
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
    text, cut = summary.text, 0
    if left is not None:
        limit = min(cap, left)
        text, cut = trim_summary_lines(text, lambda t: count(_system(summary.header(t), [t])) <= limit)
    message: dict | None = _system(summary.header(text), [text]) if text.strip() else None
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
    """The recall block: best match first, skipping any turn that would overflow the share, until it is full.

    The chosen turns are laid out by day (``arrange_by_day``: oldest day first, each day's heading once, turn
    order within a day). Each quote's cost is counted as it is offered (its lines, less its day's heading if
    that day is already in), so filling a block of many quotes costs at most two counts per quote; the block
    is counted whole at the end and its weakest turns are left out if the sum was short."""
    part = Part("recall", 0, cap)
    limit = None if left is None else min(cap, left)
    chosen: list[Recalled] = []
    days: set[str | None] = set()
    used = empty = count(_system(RECALL_HEADER, []))

    def cost(lines: Sequence[str]) -> int:  # what these lines add to the block (exact when counts add up)
        return count(_system(RECALL_HEADER, lines)) - empty

    for item in recalled:
        day, lines = quote_day(item.text), arrange_by_day([item.text])
        extra = cost(lines) - (cost(lines[:1]) if day is not None and day in days else 0)
        if limit is None or used + extra <= limit:
            chosen.append(item)
            days.add(day)
            used += extra
        else:
            part.dropped.append(item.turn_id)
    while chosen and limit is not None and count(_block(chosen)) > limit:
        part.dropped.insert(0, chosen.pop().turn_id)
    if not chosen:
        return None, part
    message = _block(chosen)
    part.tokens, part.included = count(message), [r.turn_id for r in chosen]
    return message, part


def _block(chosen: Sequence[Recalled]) -> dict:
    return _system(RECALL_HEADER, arrange_by_day([r.text for r in chosen]))


_STOP_WORDS = frozenset("a an and are did do does i i'm is it me my of on the to was what what's when where "
                        "which who why how you your again tell remind say said".split())


def fact_text(line: str) -> str:
    """A profile line as the user would say it: ``- locker: 4471 (turn 3)`` -> ``my locker is 4471``."""
    fact = read_fact_line(line)  # helpers.core.context_format: the fact line's one reader
    if fact is not None:
        return f"my {fact.label.replace('/', ' ')} is {fact.value}"
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

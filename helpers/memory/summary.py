"""A rolling summary of the turns a session's window has dropped (lesson 08).

The module opens with the core notebook 08 builds: ``summary_request`` writes the
summariser's request (the previous summary, the facts to keep, the dropped turns, each
line tagged ``[turn N]``) and ``fold`` sends it and returns the new running summary, which
covers the previous summary's turns and the dropped ones. ``Summariser.summarise`` (used
whenever turns leave a session's window) calls ``fold`` and adds the rest below. The
summary is sent as its own system message, ``Summary of earlier turns (turns 0-5): ...``,
never disguised as something the user said.

Pinned ("keep") facts -- numbers, names, stated preferences and constraints -- must
survive: after each reply, every pinned fact is looked for in the summary. If one is
missing the summariser is asked once more, naming what it left out; if it is still
missing, the fact is appended verbatim on a ``Pinned:`` line and a ``SummaryWarning``
says so.

The summariser's model is separate from the agent's: ``model=`` wins, then the
settings' ``summary_model`` (``WORKSHOP_SUMMARY_MODEL``), then the settings' chat model. Any
failure raises ``SummaryError``; ``helpers.memory.assembler`` turns that into a one-line
warning and keeps the raw turns for the next attempt.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from helpers.llm.client import chat, get_settings
from helpers.core.errors import ConfigError, WorkshopError, WorkshopWarning
from helpers.core.context_format import (EMPTY_MESSAGE, escape_body, PINNED_PREFIX, SUMMARY_HEADER, one_line,  # noqa: F401
                                    read_day_heading, read_pinned_line, safe_lines, turn_day, write_day_heading,
                                    write_pinned_line, write_summary_header, cited_turns,
                                    write_turn_line)  # the formats' owner (SUMMARY_HEADER: re-exported)
from helpers.core.text import shorten
from helpers.core.tokens import content_text

SUMMARY_MODEL_ENV = "WORKSHOP_SUMMARY_MODEL"
DEFAULT_MAX_WORDS = 80  # about 150 tokens: fits the summary share of a ~1,800-token budget with tools
MAX_DAY_PARTS = 30  # a summary kept by day keeps this many parts: the newest days', and one part rolled up from the rest
SUMMARISER_PROMPT = (
    "You are a conversation summariser for a campus assistant. Fold the TURNS into the PREVIOUS SUMMARY and "
    "reply with the new summary only, in at most the WORD LIMIT. Keep what the user said about themselves "
    "(names, numbers, goals, preferences, constraints) and the answers they were given; cite turn ids like "
    "[turn 4]. Every fact listed under KEEP (and MISSING, if present) must appear word for word. "
    "Never invent anything that is not in the turns."
)


def summary_request(previous: str, turn_lines: Sequence[str], keep: Sequence[str], max_words: int,
                    missing: Sequence[str] = (), draft: str = "") -> list[dict]:
    """The summariser's request: its instructions, the previous summary, the facts to keep, the turns."""
    # Bodies are escaped (a line of a summary or a turn that reads as a header stays in its section) and
    # each fact is one line, so nothing the user or a model wrote can open a section of its own.
    lines = [f"WORD LIMIT: {max_words}", "PREVIOUS SUMMARY:", escape_body(previous or "(none)")]
    lines += ["KEEP:"] + [f"- {one_line(fact)}" for fact in keep]
    if missing:  # a second attempt: show the draft and name what it left out
        lines += ["DRAFT:", escape_body(draft), "MISSING (your draft left these out; include each word for word):"]
        lines += [f"- {one_line(fact)}" for fact in missing]
    lines += ["TURNS:"] + [escape_body(line) for line in turn_lines]
    return [{"role": "system", "content": SUMMARISER_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def fold(previous: "RollingSummary", turns: Sequence[tuple[int, Sequence[dict]]], ask: Callable,
         keep: Sequence[str] = (), max_words: int = DEFAULT_MAX_WORDS,
         max_turn_chars: int = 600, times: Mapping[int, str] | None = None) -> "RollingSummary":
    """Fold dropped turns into the running summary with one request; the result covers both.

    ``times`` (turn id -> when it was said) dates each turn's lines: ``[turn 4, 2023-05-08] user: ...``."""
    times = times or {}
    lines = [line for turn_id, messages in turns
             for line in render_turn(turn_id, messages, max_turn_chars, at=times.get(turn_id))]
    text = ask(summary_request(previous.text, lines, keep, max_words))  # ask: messages -> the reply's text
    covered = sorted(set(previous.turn_ids) | {turn_id for turn_id, _ in turns})
    return RollingSummary(text, covered)


class SummaryError(WorkshopError, RuntimeError):
    """The summariser could not produce a summary; the session keeps the raw turns and uses its window."""


class SummaryWarning(WorkshopWarning):
    """The summary needed help: pinned facts were appended verbatim, or summarising failed."""


def summary_model(settings: Any) -> str:
    """The summariser's model: the settings' ``summary_model`` (WORKSHOP_SUMMARY_MODEL), else their chat model."""
    chosen = str(getattr(settings, "summary_model", "") or "").strip()
    if not chosen:
        return settings.chat_model
    if getattr(settings, "backend", None) == "offline" and not chosen.startswith("offline"):
        return settings.chat_model  # like WORKSHOP_CHAT_MODEL: the stand-in serves only its own model
    return chosen


def _flat(text: Any, limit: int) -> str:
    return one_line(shorten(text or "", limit))


def render_turn(turn_id: int, messages: Sequence[dict], max_chars: int = 600, at: Any = None) -> list[str]:
    """One turn as ``[turn N] role: text`` lines (tool calls and results shortened) for a summariser; ``at``
    (when the turn was said) dates the tag: ``[turn N, 2023-05-08] ...``."""
    lines, names = [], {}
    for message in messages:
        role = message.get("role")
        content = content_text(message.get("content"))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            names[call.get("id")] = function.get("name", "tool")
            arguments = _flat(function.get("arguments"), 120)
            lines.append(write_turn_line(turn_id, "tool call", f"{function.get('name')}({arguments})", at))
        if role == "tool":
            lines.append(write_turn_line(turn_id, f"tool {names.get(message.get('tool_call_id'), 'result')}",
                                         _flat(content, 200), at))
        elif role in ("user", "assistant") and (content or role == "user"):
            lines.append(write_turn_line(turn_id, role, _flat(content, max_chars) or EMPTY_MESSAGE, at))
    return lines


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .;")


def missing_facts(summary_text: str, keep: Sequence[str]) -> list[str]:
    """The pinned facts that do not appear in the summary (case- and spacing-insensitive)."""
    have = _normal(summary_text)
    return [fact for fact in keep if _normal(fact) and _normal(fact) not in have]


@dataclass
class RollingSummary:
    """The running summary text and the ids of the turns it covers."""

    text: str = ""
    turn_ids: list[int] = field(default_factory=list)

    def header(self, text: str | None = None) -> str:
        """``Summary of earlier turns (turns 0-5):``; when the lines of ``text`` (default: the summary's) cite
        only some of those turns, the header says so: ``(made from turns 0-207; its lines cite turns 201,
        204, 207)`` -- a summary never claims turns it holds nothing of."""
        return write_summary_header(self.turn_ids, cited_turns(self.text if text is None else text))

    def lines_text(self) -> str:
        """The summary's text as it is shown: only ``\\n`` ends a line, any other line break is escaped."""
        return safe_lines(self.text)

    def block(self) -> dict | None:
        """The system message that carries the summary (None while there is nothing to summarise)."""
        if not self.text:
            return None
        return {"role": "system", "content": self.header() + "\n" + self.lines_text()}

    def to_dict(self) -> dict:
        """JSON-ready state; the covered turns as ``[first, last]`` runs, so a saved summary stays small."""
        runs: list[list[int]] = []
        for turn_id in self.turn_ids:
            if runs and turn_id == runs[-1][1] + 1:
                runs[-1][1] = turn_id
            else:
                runs.append([turn_id, turn_id])
        return {"text": self.text, "turn_runs": runs}

    @classmethod
    def from_dict(cls, data: dict | None) -> "RollingSummary":
        """Counterpart of ``to_dict`` (also reads the list of every id that older saves hold)."""
        data = data or {}
        ids = [int(i) for i in data.get("turn_ids", [])]
        for first, last in data.get("turn_runs", []):
            ids.extend(range(int(first), int(last) + 1))
        return cls(str(data.get("text", "")), ids)


@dataclass
class SummaryUpdate:
    """What one summarise call produced: the new summary, how many requests, and any fallback."""

    summary: RollingSummary
    attempts: int
    appended: list[str] = field(default_factory=list)  # pinned facts appended verbatim after the re-ask


class Summariser:
    """Folds dropped turns into a rolling summary with a (possibly different) model."""

    def __init__(self, *, client: Any = None, settings: Any = None, model: str | None = None,
                 max_words: int = DEFAULT_MAX_WORDS, max_turn_chars: int = 600):
        if not isinstance(max_words, int) or max_words < 10:
            raise ConfigError(f"max_words must be a whole number >= 10 (got {max_words!r})")
        self.client, self.settings, self.model = client, settings, model
        self.max_words, self.max_turn_chars = max_words, max_turn_chars
        self.requests = 0

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use this client/settings unless others were given explicitly."""
        self.client = self.client if self.client is not None else client
        self.settings = self.settings if self.settings is not None else settings

    def max_reply_tokens(self) -> int:
        """The bound on one summariser reply: the word limit (about 1.5 tokens a word), pinned facts, a margin."""
        return 3 * self.max_words + 100

    def model_name(self) -> str:
        """The model the summariser asks."""
        return self.model or summary_model(self.settings or get_settings())

    def prompt(self, previous: RollingSummary, turns: Sequence[tuple[int, Sequence[dict]]],
               keep: Sequence[str] = (), missing: Sequence[str] = (), draft: str = "",
               times: Mapping[int, str] | None = None) -> list[dict]:
        """The request: previous summary, pinned facts, the turns (and, on a re-ask, what was missing)."""
        times = times or {}
        lines = [line for turn_id, messages in turns
                 for line in render_turn(turn_id, messages, self.max_turn_chars, at=times.get(turn_id))]
        return summary_request(previous.text, lines, keep, self.max_words, missing, draft)

    def _ask(self, messages: list[dict]) -> str:
        self.requests += 1
        try:
            response = chat(messages, client=self.client, settings=self.settings, model=self.model_name(),
                            max_tokens=self.max_reply_tokens())
            text = (response.choices[0].message.content or "").strip()
        except Exception as exc:  # any API, network or parsing failure: the caller falls back to the window
            raise SummaryError(f"the summariser request failed ({type(exc).__name__}: {_flat(exc, 200)}); "
                               "the raw turns are kept and summarised on the next turn") from exc
        if not text:
            raise SummaryError("the summariser replied with an empty summary; the raw turns are kept and "
                               "summarised on the next turn")
        return text

    def summarise(self, previous: RollingSummary, turns: Sequence[tuple[int, Sequence[dict]]],
                  keep: Sequence[str] = (), times: Mapping[int, str] | None = None) -> SummaryUpdate:
        """A new summary covering ``previous`` plus ``turns``; pinned ``keep`` facts are checked. ``times``
        (turn id -> when it was said) dates the turns' lines, so the summary can give dates.

        While every turn is of one day, this is one ``fold`` (notebook 08's core). Once the turns span days,
        the summary is kept by day: each day's part, under its heading (``On 2023-05-08 (made from turns
        0-17):``), is folded only with that day's turns, in at most the word limit, so a long history keeps a
        part for every day instead of one part squeezed over all of them. A pinned fact already in another
        day's part is not asked for again; the ``Pinned:`` line stays one, at the end. Past ``MAX_DAY_PARTS``
        parts, the oldest days are rolled up into one part spanning them (``_roll_up``: a summary of their parts,
        one level up), so the state stays bounded and the oldest days keep a part (a budget shows the newest few
        first; recall finds the exact older turns)."""
        turns = [(int(i), list(m)) for i, m in turns]
        if not turns:
            return SummaryUpdate(previous, 0)
        keep = [fact for fact in keep if str(fact).strip()]
        times = times or {}
        parts, pinned = day_parts(previous, times)
        groups: dict[str | None, list[tuple[int, list]]] = {}
        for turn_id, messages in turns:
            groups.setdefault(turn_day(times.get(turn_id)), []).append((turn_id, messages))
        days = {part.first for part in parts} | {part.last for part in parts} | set(groups)
        if len(parts) <= 1 and len(days) <= 1 and not any(part.heading for part in parts):
            return self._fold_checked(previous, turns, keep, times)  # one day: the summary as notebook 08 builds it
        attempts, appended = 0, []
        for day, group in groups.items():
            part = next((p for p in parts if p.first == day and p.last == day), None)
            if part is None:
                part = DayPart(day, day, [], [])
                parts.append(part)
            elsewhere = _normal(" ".join(["\n".join(p.lines) for p in parts if p is not part] + pinned))
            wanted = [fact for fact in keep if _normal(fact) not in elsewhere]
            update = self._fold_checked(RollingSummary("\n".join(part.lines), list(part.turn_ids)), group, wanted,
                                        times)
            attempts, appended = attempts + update.attempts, appended + update.appended
            part.lines = [line for line in safe_lines(update.summary.text).split("\n")
                          if line.strip() and read_pinned_line(line) is None]
            pinned += [item for item in _pinned_items(update.summary.text) if item not in pinned]
            part.turn_ids = update.summary.turn_ids
        parts.sort(key=lambda p: (p.first is not None, p.first or "", p.last or ""))
        if len(parts) > MAX_DAY_PARTS:  # the state stays bounded: the oldest days become one part, a level up
            old = [p for p in parts if p.first is not None][:len(parts) - MAX_DAY_PARTS + 1]
            rest = [p for p in parts if all(p is not o for o in old)]
            elsewhere = _normal(" ".join(["\n".join(p.lines) for p in rest] + pinned))
            rolled, update = self._roll_up(old, times, [fact for fact in keep if _normal(fact) not in elsewhere])
            attempts, appended = attempts + update.attempts, appended + update.appended
            pinned += [item for item in _pinned_items(update.summary.text) if item not in pinned]
            parts = [p for p in rest if p.first is None] + [rolled] + [p for p in rest if p.first is not None]
        lines = [line for p in parts for line in [write_day_heading(p.first, p.last, p.turn_ids)] + p.lines]
        if pinned:
            lines.append(write_pinned_line(pinned))
        covered = sorted(set(previous.turn_ids) | {turn_id for turn_id, _ in turns})
        return SummaryUpdate(RollingSummary("\n".join(lines), covered), attempts, appended)

    def _roll_up(self, parts: Sequence["DayPart"], times: Mapping[int, str],
                 keep: Sequence[str]) -> tuple["DayPart", SummaryUpdate]:
        """The oldest dated day parts as one part spanning their days (``From 2023-05-08 to 2023-06-20 (made from
        turns 0-140):``): their lines folded, as a previous summary with no new turns, into the word limit
        (``_fold_checked``: a pinned fact only these parts held, ``keep``, is checked as in any fold)."""
        ids = sorted({turn_id for part in parts for turn_id in part.turn_ids})
        lines = "\n".join(line for part in parts for line in part.lines)
        update = self._fold_checked(RollingSummary(lines, ids), [], keep, times)
        kept = [line for line in safe_lines(update.summary.text).split("\n")
                if line.strip() and read_pinned_line(line) is None]
        days = [day for part in parts for day in (part.first, part.last) if day is not None]
        return DayPart(min(days), max(days), ids, kept), update

    def _fold_checked(self, previous: RollingSummary, turns: Sequence[tuple[int, Sequence[dict]]],
                      keep: Sequence[str], times: Mapping[int, str]) -> SummaryUpdate:
        """One ``fold``, then the pinned facts checked: asked once more for the missing ones, then appended."""
        folded = fold(previous, turns, self._ask, keep, self.max_words, self.max_turn_chars, times)
        text, ids = folded.text, folded.turn_ids
        attempts, appended = 1, []
        missing = missing_facts(text, keep)
        if missing:
            text = self._ask(self.prompt(previous, turns, keep, missing, text, times))
            attempts = 2
            appended = missing_facts(text, keep)
            if appended:
                pinned = _pinned_items(text)
                text = _strip_pinned_line(text) + "\n" + write_pinned_line(
                    pinned + [one_line(f) for f in appended if one_line(f) not in pinned])  # one line, always
                warnings.warn(f"the summariser left out pinned facts twice, so they were appended verbatim: "
                              f"{'; '.join(appended)}", SummaryWarning, stacklevel=3)
        return SummaryUpdate(RollingSummary(text, ids), attempts, appended)


@dataclass
class DayPart:
    """One day's part of a summary kept by day: its days (one, or a range for a part made before the summary
    was kept by day; None when its turns had no time), the turns it was made from, and its lines."""

    first: str | None
    last: str | None
    turn_ids: list[int]
    lines: list[str]
    heading: bool = True  # False: a summary made before it spanned days (no heading yet)


def day_parts(summary: RollingSummary, times: Mapping[int, Any] | None = None) -> tuple[list[DayPart], list[str]]:
    """A summary's day parts and its pinned items. A summary without headings is one part, dated by its turns'
    ``times`` (a range when they span days)."""
    parts: list[DayPart] = []
    pinned: list[str] = []
    loose: list[str] = []
    for line in safe_lines(summary.text).split("\n") if summary.text else []:
        heading, items = read_day_heading(line), read_pinned_line(line)
        if items is not None:
            pinned += [item for item in items if item not in pinned]
        elif heading is not None:
            parts.append(DayPart(heading[0], heading[1], heading[2], []))
        elif line.strip():
            (parts[-1].lines if parts else loose).append(line)
    if loose or (summary.turn_ids and not parts):
        days = sorted(d for d in (turn_day((times or {}).get(i)) for i in summary.turn_ids) if d)
        ids = sorted(set(summary.turn_ids) - {i for p in parts for i in p.turn_ids})
        parts.insert(0, DayPart(days[0] if days else None, days[-1] if days else None, ids, loose, heading=False))
    return parts, pinned


def _pinned_items(text: str) -> list[str]:
    for line in safe_lines(text).split("\n"):
        items = read_pinned_line(line)
        if items is not None:
            return items
    return []


def _strip_pinned_line(text: str) -> str:  # only "\n" ends a line (safe_lines): no separator becomes one
    return "\n".join(line for line in safe_lines(text).split("\n") if not line.startswith(PINNED_PREFIX)).strip()


def trim_summary_lines(text: str, fits) -> tuple[str, int]:
    """Drop the oldest lines (never a ``Pinned:`` line) until ``fits(text)``; returns (text, dropped). A day's
    heading goes with the last line of its part (a heading is never left over nothing), and is not counted.

    How many to drop is found by bisection (a summary kept by day may hold hundreds of lines, and each ``fits``
    counts a whole block): fewer lines never need more room, so the fewest dropped lines that fit are found in
    about log2(lines) calls, the same lines dropping them one at a time would leave."""
    lines = text.splitlines()
    heading = [read_day_heading(line) is not None for line in lines]  # read once: each call below is a lookup
    content = [not h and not line.startswith(PINNED_PREFIX) for line, h in zip(lines, heading)]
    droppable = [n for n, keep in enumerate(content) if keep]

    def without(count: int) -> str:
        gone = set(droppable[:count])
        kept = [n for n in range(len(lines)) if n not in gone]
        return "\n".join(lines[n] for i, n in enumerate(kept)  # a heading stays only over a line of its part
                         if not heading[n] or (i + 1 < len(kept) and content[kept[i + 1]]))

    if fits(without(0)) or not droppable:
        return without(0), 0
    low, high = 0, len(droppable)  # without(low) does not fit; the answer is in (low, high]
    if not fits(without(high)):
        return without(high), high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(without(middle)) else (middle, high)
    return without(high), high

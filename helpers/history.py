"""Chat histories as turns, and trimming that forgets only whole turns (notebook 07).

Everything here is pure (plain OpenAI-format message dicts in, new lists out, no
I/O). A *turn* is one user message plus every assistant/tool message up to the
next user message; trimming only ever drops whole turns, so a tool call is never
separated from its result and the list sent to the server stays valid.

- ``split_turns`` / ``turn_spans`` / ``turns_newest_first``: the turns, or where each starts and ends.
- ``trim_to_turns`` / ``trim_to_budget``: keep the system part, pinned turns and the
  newest whole turns that fit. They walk back from the newest message and check only
  what they keep (``helpers.validity.find_problems``), so a trim costs O(kept turns),
  however long the history.
- ``check_limits`` / ``pinned_spans`` / ``trim_result``: the bookkeeping both trimmers share:
  refuse bad limits, find pinned turns, assemble and check the result.

A session trims its own window with ``helpers.window``, which keeps what these keep.

Costs default to ``helpers.tokens.approx_tokens``, an estimate; ``helpers.ledger.UsageLedger``
learns the exact ones from the ``usage.prompt_tokens`` the server reports.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any, Callable, Collection, Hashable, Iterator, Sequence

from helpers.errors import WorkshopError
from helpers.tokens import REPLY_PRIMING, approx_tokens
from helpers.validity import SYSTEM_ROLES, find_problems, scan, word_problems

TokenCounter = Callable[[dict], int]


class HistoryError(WorkshopError, ValueError):
    """A message list or a trimming request that cannot be handled as asked."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = list(problems)

    @classmethod
    def invalid(cls, problems: Sequence[str]) -> "HistoryError":
        """The error for a list that find_problems rejects."""
        shown = "; ".join(problems[:5]) + (f"; ... ({len(problems) - 5} more)" if len(problems) > 5 else "")
        return cls(f"the message list is invalid, so it was not trimmed: {shown}. Fix these messages "
                   "(helpers.validity.find_problems lists them all) and try again.", problems)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


# ----------------------------------------------------------------------------- turns and validity


def system_end(messages: Sequence[dict]) -> int:
    """How many system/developer messages open the list: the system part every trim keeps."""
    first = 0
    while first < len(messages) and _role(messages[first]) in SYSTEM_ROLES:
        first += 1
    return first


def starts_turn(message: Any) -> bool:
    """True for a message that starts a turn: a user message."""
    return type(message) is dict and message.get("role") == "user"


def turn_spans(messages: Sequence[dict]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every turn after the system part, oldest first (``messages[start:end]``)."""
    start = system_end(messages)
    for i in range(start + 1, len(messages)):
        if starts_turn(messages[i]):
            yield start, i
            start = i
    if start < len(messages):
        yield start, len(messages)


def turns_newest_first(messages: Sequence[dict]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every turn, newest first, found walking back: taking k turns reads only k turns."""
    first, end = system_end(messages), len(messages)
    for i in range(end - 1, first - 1, -1):
        if i == first or starts_turn(messages[i]):
            yield i, end
            end = i


def split_turns(messages: Sequence[dict]) -> tuple[list[dict], list[list[dict]]]:
    """Split into (leading system/developer messages, turns); each turn starts at a user message.

    Non-system messages before the first user message (say an assistant greeting)
    form a "preamble" turn of their own at index 0, so they can be trimmed like any
    other turn. System messages after the first non-system message stay inside
    the turn they appear in.
    """
    return list(messages[: system_end(messages)]), [list(messages[s:e]) for s, e in turn_spans(messages)]


# ----------------------------------------------------------------------------- pure trimming


@dataclass
class DroppedTurn:
    """A whole turn that trimming left out: its id, its messages and what they cost."""

    turn_id: Hashable
    messages: list[dict]
    tokens: int


class TrimResult:
    """What trimming kept: ``messages`` to send, their total ``tokens``, and ``over_budget``.

    ``over_budget`` is True only when system + pinned + newest turn alone exceed the budget.
    ``kept`` (ids of the kept turns, oldest first) and ``dropped`` (a ``DroppedTurn`` per
    left-out turn) are worked out when first read: numbering turns means counting every
    turn of the history, O(history), while the trim itself costs O(kept turns). They are
    read from the list that was trimmed, so read them before changing that list.
    """

    def __init__(self, messages: list[dict], tokens: int, over_budget: bool, *, source: Sequence[dict],
                 spans: list[tuple[int, int]], turn_ids: Sequence[Hashable] | None, count: TokenCounter):
        self.messages, self.tokens, self.over_budget = messages, tokens, over_budget
        self._source, self._spans, self._turn_ids, self._count = source, spans, turn_ids, count

    @cached_property
    def kept(self) -> list[Hashable]:
        """Ids of the kept turns, oldest first."""
        return self._numbered[0]

    @cached_property
    def dropped(self) -> list[DroppedTurn]:
        """The turns left out, oldest first, with their messages and token counts."""
        return self._numbered[1]

    @cached_property
    def _numbered(self) -> tuple[list[Hashable], list[DroppedTurn]]:
        source, kept_starts = self._source, {start for start, _ in self._spans}
        spans = list(turn_spans(source))
        ids = _checked_ids(self._turn_ids, len(spans))
        kept = [ids[t] for t, (start, _) in enumerate(spans) if start in kept_starts]
        dropped = [DroppedTurn(ids[t], list(source[start:end]), sum(map(self._count, source[start:end])))
                   for t, (start, end) in enumerate(spans) if start not in kept_starts]
        return kept, dropped

    def __repr__(self) -> str:
        return (f"TrimResult({len(self.messages)} messages, {len(self._spans)} turns kept, "
                f"tokens={self.tokens}, over_budget={self.over_budget})")


def _checked_ids(turn_ids: Sequence[Hashable] | None, n_turns: int) -> Sequence[Hashable]:
    if turn_ids is None:
        return range(n_turns)
    ids = list(turn_ids)
    if len(ids) != n_turns:
        raise HistoryError(f"turn_ids has {len(ids)} ids but the history has {n_turns} turns; "
                           "pass one id per turn (see split_turns) or leave turn_ids out")
    if len(set(ids)) != len(ids):
        raise HistoryError("turn_ids contains duplicates; give every turn its own id")
    return ids


def pinned_spans(messages: Sequence[dict], turn_ids: Sequence[Hashable] | None,
                 pinned: Collection[Hashable]) -> dict[int, int]:
    """start -> end of every pinned turn, found walking forward to the last of them."""
    pinned = set(pinned)
    if turn_ids is None:
        wanted = pinned  # a turn's default id is its position (pinned is our own copy here)
    else:
        wanted = {turn_ids.index(turn_id) for turn_id in pinned if turn_id in turn_ids}
    spans: dict[int, int] = {}
    for position, (start, end) in enumerate(turn_spans(messages) if wanted else ()):
        if position in wanted:
            spans[start] = end
            wanted.discard(position)
            if not wanted:
                break
    return spans


def trim_result(messages: Sequence[dict], kept: dict[int, int], tokens: int, over_budget: bool,
                turn_ids: Sequence[Hashable] | None, count: TokenCounter) -> TrimResult:
    """The system part plus the kept turns in their original order, checked like a strict server would."""
    spans = sorted(kept.items())
    first = system_end(messages)
    out = list(messages[:first])
    for start, end in spans:
        out += messages[start:end]
    problems = scan(out)
    if problems or not out:
        where = list(range(first)) + [i for start, end in spans for i in range(start, end)]
        raise HistoryError.invalid(word_problems(problems, where.__getitem__) or find_problems(out))
    return TrimResult(out, tokens, over_budget, source=messages, spans=spans, turn_ids=turn_ids, count=count)


def check_limits(*, messages: Any = (), max_turns: Any = 1, max_tokens: Any = 0) -> None:
    """Refuse a limit that is not a whole number in range, or messages that are not a list."""
    if not isinstance(max_turns, int) or max_turns < 1:
        raise HistoryError(f"max_turns must be a whole number >= 1 (got {max_turns!r}); the newest turn is "
                           "always kept")
    if not isinstance(max_tokens, int) or max_tokens < 0:
        raise HistoryError(f"max_tokens must be a whole number >= 0 (got {max_tokens!r})")
    if not isinstance(messages, (list, tuple)):
        raise HistoryError.invalid(find_problems(messages))


def trim_to_turns(messages: Sequence[dict], max_turns: int, *, turn_ids: Sequence[Hashable] | None = None,
                  pinned: Collection[Hashable] = (), count: TokenCounter = approx_tokens,
                  overhead: int = REPLY_PRIMING) -> TrimResult:
    """Keep the system part, the newest ``max_turns`` turns and any older pinned turns.

    Pinned turns inside the newest ``max_turns`` count toward it; older pinned turns
    are kept in addition. ``max_turns`` must be at least 1: the newest turn is always kept.
    """
    check_limits(messages=messages, max_turns=max_turns)
    kept = pinned_spans(messages, turn_ids, pinned)  # start -> end of each turn to keep
    kept.update(islice(turns_newest_first(messages), max_turns))
    tokens = overhead + sum(map(count, messages[: system_end(messages)]))
    tokens += sum(sum(map(count, messages[start:end])) for start, end in kept.items())
    return trim_result(messages, kept, tokens, False, turn_ids, count)


def trim_to_budget(messages: Sequence[dict], max_tokens: int, *, count: TokenCounter = approx_tokens,
                   turn_ids: Sequence[Hashable] | None = None, pinned: Collection[Hashable] = (),
                   overhead: int = REPLY_PRIMING) -> TrimResult:
    """Keep the system part, pinned turns and the newest whole turns whose total fits ``max_tokens``.

    The total is ``overhead`` (a fixed per-request cost) plus ``count`` of every kept
    message. The system part, pinned turns and the newest turn are always kept; if
    they alone exceed the budget the result has ``over_budget=True`` and nothing else.
    Otherwise the total never exceeds ``max_tokens``. Kept turns are always a
    contiguous newest run plus older pinned turns: no gaps are punched into the middle.
    """
    check_limits(messages=messages, max_tokens=max_tokens)
    first = system_end(messages)
    kept = pinned_spans(messages, turn_ids, pinned)  # start -> end of each turn to keep
    tokens = overhead + sum(map(count, messages[:first]))
    tokens += sum(sum(map(count, messages[start:end])) for start, end in kept.items())
    end, cost = len(messages), 0  # the turn being read is messages[i:end]; cost adds up its messages
    for i in range(len(messages) - 1, first - 1, -1):  # walk back from the newest message
        message = messages[i]
        cost += count(message)
        if i > first and not (type(message) is dict and message.get("role") == "user"):  # not starts_turn
            continue
        if i not in kept:  # a whole turn: keep it if it fits (the newest one whatever it costs)
            if end < len(messages) and tokens + cost > max_tokens:
                break
            kept[i] = end
            tokens += cost
        end, cost = i, 0
    # Older turns join only while the total fits, so it is over only if the newest turn put it over.
    return trim_result(messages, kept, tokens, tokens > max_tokens, turn_ids, count)

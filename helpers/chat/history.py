"""Chat histories as turns, and trimming that forgets only whole turns (notebook 07).

Everything here is pure: plain OpenAI-format message dicts in, new lists out, no I/O. A *turn*
is one user message plus every assistant/tool message up to the next user message. Trimming
only ever drops whole turns, so a tool call is never separated from its result and the list sent
to the server stays valid.

The module is the core notebook 07 builds, in its order:

- ``system_end`` / ``starts_turn`` / ``turns_newest_first`` / ``split_turns``: where the turns are,
  found walking back from the newest message (taking k turns reads only k turns).
- ``keep_newest``: the newest whole turns that fit a turn limit and a token budget, stopping at
  the first that does not. It is the one place this rule is written: ``trim_to_turns`` and
  ``trim_to_budget`` here, a session's window (``helpers.chat.window``), notebook 07's
  ``SimpleSession`` (through ``trim_to_turns``) and the context assembler's window
  (``helpers.memory.assembler.fit_window``) all call it. ``tests/test_history.py``
  checks it against a brute-force search, and every caller against it, on generated conversations.
- ``trim_to_turns`` / ``trim_to_budget``: the system part plus the newest whole turns that
  ``keep_newest`` keeps, checked as a strict server would check them (``helpers.chat.validity``); a
  trim costs O(kept turns), however long the history.

After it, ``DroppedTurn``: what a session (``helpers.chat.chat_session``) keeps of a turn it dropped.

Costs default to ``helpers.core.tokens.approx_tokens``, an estimate; ``helpers.chat.ledger.UsageLedger``
learns the exact ones from the ``usage.prompt_tokens`` the server reports.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Iterable, Iterator, Sequence, TypeVar

from helpers.core.errors import WorkshopError
from helpers.core.tokens import REPLY_PRIMING, approx_tokens
from helpers.chat.validity import find_problems

# ----------------------------------------------------------------------------- turns (notebook 07)


def system_end(messages: Sequence[dict]) -> int:
    """How many system/developer messages open the list: the system part every trim keeps."""
    first = 0
    while first < len(messages) and isinstance(messages[first], dict) and \
            messages[first].get("role") in ("system", "developer"):
        first += 1
    return first


def starts_turn(message: dict) -> bool:
    """True for a message that starts a turn: a user message."""
    return isinstance(message, dict) and message.get("role") == "user"


def turns_newest_first(messages: Sequence[dict]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every turn, newest first, found walking back: taking k turns reads only k turns."""
    first, end = system_end(messages), len(messages)
    for i in range(end - 1, first - 1, -1):
        if i == first or starts_turn(messages[i]):
            yield i, end
            end = i


def split_turns(messages: Sequence[dict]) -> tuple[list[dict], list[list[dict]]]:
    """(the system part, the turns oldest first); each turn starts at a user message.

    Messages before the first user message (say an assistant greeting) form a turn of their own.
    """
    turns = [list(messages[start:end]) for start, end in turns_newest_first(messages)]
    return list(messages[:system_end(messages)]), turns[::-1]


# ----------------------------------------------------------------------------- the newest that fit (notebook 07)

T = TypeVar("T")


def keep_newest(turns: Iterable[T], cost: Callable[[T], int], *, room: int | None = None,
                max_turns: int | None = None, keep_one: bool = True) -> tuple[list[T], int]:
    """The newest turns that fit, newest first, and what they cost together.

    ``turns`` come newest first. Each is kept while no more than ``max_turns`` are kept and the
    total ``cost`` stays within ``room``; the first that does not fit ends it, so no gap is left
    and no older turn is read. With ``keep_one`` the newest turn is kept whatever the limits.
    """
    kept, total = [], 0
    for turn in turns:
        forced = keep_one and not kept  # the newest turn, when it stays whatever the limits
        if not forced and max_turns is not None and len(kept) >= max_turns:
            break
        tokens = cost(turn)
        if not forced and room is not None and total + tokens > room:
            break  # the first turn that does not fit ends it: never skip it to keep an older one
        kept.append(turn)
        total += tokens
    return kept, total


# ----------------------------------------------------------------------------- trimming (notebook 07)

TokenCounter = Callable[[dict], int]  # what one message costs, in tokens


class HistoryError(WorkshopError, ValueError):
    """A message list or a trimming request that cannot be handled as asked; ``problems`` says what."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = list(problems)

    @classmethod
    def invalid(cls, problems: Sequence[str], what: str = "the message list") -> "HistoryError":
        """The error for a list that find_problems rejects."""
        shown = "; ".join(problems[:5]) + (f"; ... ({len(problems) - 5} more)" if len(problems) > 5 else "")
        return cls(f"{what} is invalid: {shown}. Fix these messages (helpers.chat.validity.find_problems lists "
                   "them all) and try again.", problems)


@dataclass
class TrimResult:
    """What a trim kept: the ``messages`` to send and what sending them costs (``tokens``).

    ``cut`` is where the kept turns start in the list that was trimmed: the turns between its
    system part and ``cut`` were dropped. ``over_budget`` is True when the system part and the
    newest turn alone are over the budget (they are kept all the same).
    """

    messages: list[dict]
    tokens: int
    cut: int
    over_budget: bool = False


def trim_to_turns(messages: Sequence[dict], max_turns: int, *, count: TokenCounter = approx_tokens,
                  overhead: int = REPLY_PRIMING) -> TrimResult:
    """Keep the system part and the newest ``max_turns`` whole turns (at least 1: the newest always stays)."""
    if not isinstance(max_turns, int) or max_turns < 1:
        raise HistoryError(f"max_turns must be a whole number >= 1 (got {max_turns!r}); the newest turn is "
                           "always kept")
    return keep_whole_turns(messages, count, overhead, max_turns=max_turns)


def trim_to_budget(messages: Sequence[dict], max_tokens: int, *, count: TokenCounter = approx_tokens,
                   overhead: int = REPLY_PRIMING) -> TrimResult:
    """Keep the system part and the newest whole turns whose total fits ``max_tokens``.

    The total is ``overhead`` (a fixed cost of every request) plus ``count`` of every kept message.
    The newest turn is kept whatever it costs; if it does not fit, ``over_budget`` is True.
    """
    if not isinstance(max_tokens, int) or max_tokens < 0:
        raise HistoryError(f"max_tokens must be a whole number >= 0 (got {max_tokens!r})")
    return keep_whole_turns(messages, count, overhead, max_tokens=max_tokens)


def keep_whole_turns(messages: Sequence[dict], count: TokenCounter, overhead: int, *,
                     max_turns: int | None = None, max_tokens: int | None = None) -> TrimResult:
    """The system part and the newest whole turns within both limits, checked as a strict server would."""
    if not isinstance(messages, (list, tuple)):
        raise HistoryError.invalid(find_problems(messages))
    first = system_end(messages)
    fixed = overhead + sum(map(count, messages[:first]))  # sent with every request, whatever is kept

    def turn_cost(span: tuple[int, int]) -> int:
        start, end = span
        return sum(map(count, messages[start:end]))

    room = None if max_tokens is None else max_tokens - fixed
    spans, tokens = keep_newest(turns_newest_first(messages), turn_cost, room=room, max_turns=max_turns)
    cut = spans[-1][0] if spans else len(messages)
    kept = list(messages[:first]) + list(messages[cut:])
    problems = find_problems(kept)  # only what is kept: a broken turn that was dropped does not matter
    if problems:
        raise HistoryError.invalid(problems, "what the trim keeps (numbered from its own start)")
    return TrimResult(kept, fixed + tokens, cut, max_tokens is not None and fixed + tokens > max_tokens)


# ----------------------------------------------------------------------------- a turn a session dropped


@dataclass
class DroppedTurn:
    """A whole turn that trimming left out: its id, its messages and what they cost."""

    turn_id: Hashable
    messages: list[dict]
    tokens: int

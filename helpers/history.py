"""Chat histories as turns: validity checks, turn-safe trimming, token accounting.

Everything here is pure (plain OpenAI-format message dicts in, new lists out, no
I/O). A *turn* is one user message plus every assistant/tool message up to the
next user message; trimming only ever drops whole turns, so a tool call is never
separated from its result and the list sent to the server stays valid.

- ``find_problems`` / ``split_turns``: what a strict server would reject; the turns.
- ``turn_spans`` / ``turns_newest_first``: where each turn starts and ends, oldest or newest first.
- ``trim_to_turns`` / ``trim_to_budget``: keep the system part, pinned turns and the
  newest whole turns that fit. They walk back from the newest message and check only
  what they keep, so a trim costs O(kept turns), however long the history.
- ``check_limits`` / ``pinned_spans`` / ``trim_result``: the bookkeeping both trimmers (and
  ``helpers.fast_trim``) share: refuse bad limits, find pinned turns, assemble and check the result.
- ``approx_tokens``: estimate before sending (``helpers.ledger.UsageLedger`` learns the
  exact costs from the ``usage.prompt_tokens`` the server reports afterwards).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Any, Callable, Collection, Hashable, Iterable, Iterator, Sequence

from helpers.errors import WorkshopError
from helpers.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING

VALID_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
SYSTEM_ROLES = frozenset({"system", "developer"})
ORPHAN_PHRASE = "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
IMAGE_TOKENS = 85  # rough cost of a non-text content part

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
                   "(helpers.history.find_problems lists them all) and try again.", problems)


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


class _Ref(int):
    """A message index mentioned inside a problem's text (re-numbered when rendering)."""


Problem = tuple  # (absolute index, role label, parts: tuple[str | _Ref, ...])


def _missing(missing: list[str]) -> tuple:
    return ("an assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'; the following tool_call_ids did not have response messages: "
            f"{', '.join(missing)}",)


class _Checker:
    """Incremental validity checker: feed messages one at a time, O(size of the message) each."""

    __slots__ = ("problems", "count", "seen_conversation", "calls", "calls_index", "answered", "group_open")

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.count = 0  # absolute index of the next message
        self.seen_conversation = False  # any non-system message yet?
        self.calls: dict[str, int] = {}  # ids asked for by the nearest assistant message with tool_calls
        self.calls_index = -1
        self.answered: dict[str, int] = {}  # call id -> absolute index of its tool result
        self.group_open = False  # nothing but tool results since that assistant message

    def _add(self, index: int, who: str, *parts: Any) -> None:
        self.problems.append((index, who, parts))

    def pending(self) -> list[Problem]:
        """Problems that exist only because the list ends here (unanswered tool calls)."""
        if self.group_open:
            missing = [cid for cid in self.calls if cid not in self.answered]
            if missing:
                return [(self.calls_index, "assistant", _missing(missing))]
        return []

    def _close_group(self) -> None:
        if self.group_open:
            self.problems.extend(self.pending())
            self.group_open = False

    def feed(self, message: Any) -> None:
        i = self.count
        self.count += 1
        if not isinstance(message, dict):
            self._close_group()
            self.seen_conversation = True
            kind = type(message).__name__
            self._add(i, kind, f"is of type {kind}, not a dict like {{'role': 'user', 'content': '...'}}")
            return
        role = message.get("role")
        who = str(role) if role is not None else "no role"
        if role == "tool":
            self._feed_tool(i, message)
            return
        self._close_group()
        if role not in VALID_ROLES:
            self.seen_conversation = True
            self._add(i, who, f"unknown role {role!r}; use one of system, developer, user, assistant, tool")
            return
        if role not in SYSTEM_ROLES:
            self.seen_conversation = True
        content = message.get("content")
        tool_calls = message.get("tool_calls") if role == "assistant" else None
        if content is not None and not isinstance(content, (str, list)):
            self._add(i, who, f"content is of type {type(content).__name__}; use a string or a list of "
                      "content parts")
        elif role != "assistant":
            if content is None:
                self._add(i, who, "has no content; give it a string (or a list of content parts)")
        elif tool_calls is None and (content is None or content == ""):
            self._add(i, who, "has no content and no tool_calls; an assistant message needs one of them")
        if tool_calls is not None:
            self._feed_calls(i, tool_calls)

    def feed_many(self, messages: Iterable[Any]) -> None:
        """Feed several messages; well-formed common messages take a short path with the same outcome."""
        feed, calls, answered = self.feed, self.calls, self.answered
        for message in messages:
            if type(message) is dict:
                role, content = message.get("role"), message.get("content")
                if self.group_open and role != "tool" and len(answered) == len(calls):
                    self.group_open = False  # every call was answered: the group closes with no problem
                if self.group_open:
                    if role == "tool" and type(content) is str:
                        cid = message.get("tool_call_id")
                        if cid in calls and cid not in answered and type(cid) is str:
                            answered[cid] = self.count
                            self.count += 1
                            continue
                elif role == "user" or role == "assistant":
                    tool_calls = message.get("tool_calls") if role == "assistant" else None
                    if tool_calls is None:
                        if type(content) is str and (content or role == "user"):
                            self.seen_conversation = True
                            self.count += 1
                            continue
                    elif content is None or type(content) is str:
                        self.seen_conversation = True
                        self.count += 1
                        self._feed_calls(self.count - 1, tool_calls)
                        calls, answered = self.calls, self.answered
                        continue
            feed(message)
            calls, answered = self.calls, self.answered

    def _feed_calls(self, i: int, tool_calls: Any) -> None:
        calls: dict[str, int] = {}
        if not isinstance(tool_calls, list) or not tool_calls:
            self._add(i, "assistant", "tool_calls must be a non-empty list; remove the key if there are no "
                      "calls")
        else:
            for k, call in enumerate(tool_calls):
                if not isinstance(call, dict):
                    self._add(i, "assistant", f"tool_calls[{k}] is of type {type(call).__name__}, not a dict")
                    continue
                cid = call.get("id")
                if not isinstance(cid, str) or not cid:
                    self._add(i, "assistant", f"tool_calls[{k}] has no id; every tool call needs a string id")
                elif cid in calls:
                    self._add(i, "assistant", f"tool_calls[{k}] repeats id {cid!r}; tool call ids must be "
                              "unique")
                else:
                    calls[cid] = k
                function = call.get("function")
                name = function.get("name") if isinstance(function, dict) else None
                if not isinstance(name, str) or not name:
                    self._add(i, "assistant", f"tool_calls[{k}] has no function.name; name the tool being "
                              "called")
                elif not isinstance(function.get("arguments"), str):
                    kind = type(function.get("arguments")).__name__
                    self._add(i, "assistant", f"tool_calls[{k}] ({name}) arguments are of type {kind}, not a "
                              "string; pass json.dumps(arguments)")
        self.calls, self.calls_index, self.answered, self.group_open = calls, i, {}, True

    def _feed_tool(self, i: int, message: dict) -> None:
        content = message.get("content")
        if content is None:
            self._add(i, "tool", "has no content; put the tool's result (a string) in it")
        elif not isinstance(content, (str, list)):
            self._add(i, "tool", f"content is of type {type(content).__name__}; tool results must be strings")
        cid = message.get("tool_call_id")
        if not self.seen_conversation:
            self.seen_conversation = True
            self._add(i, "tool", "the history starts with a tool message (after the system part); "
                      + ORPHAN_PHRASE)
        elif not isinstance(cid, str) or not cid:
            self._add(i, "tool", f"has no tool_call_id; {ORPHAN_PHRASE}, so give the id of the call it "
                      "answers")
        elif cid not in self.calls:
            if self.calls_index >= 0:
                self._add(i, "tool", f"orphan tool result for {cid!r}: the nearest preceding assistant "
                          "message with tool_calls (message ", _Ref(self.calls_index),
                          f") asked for {sorted(self.calls)}; " + ORPHAN_PHRASE)
            else:
                self._add(i, "tool", f"orphan tool result for {cid!r}: no assistant message with tool_calls "
                          f"comes before it; {ORPHAN_PHRASE}")
        elif cid in self.answered:
            self._add(i, "tool", f"answers tool call {cid!r} a second time (first answer: message ",
                      _Ref(self.answered[cid]), "); keep one result per call")
        elif not self.group_open:
            self._add(i, "tool", f"out of order: the result for {cid!r} comes after a non-tool message, "
                      "but tool results must come directly after the assistant message that asked for them "
                      "(message ",
                      _Ref(self.calls_index), f"); {ORPHAN_PHRASE}")
        else:
            self.answered[cid] = i


def _render(problems: Iterable[Problem], where: Callable[[int], int] = int) -> list[str]:
    out = []
    for index, who, parts in sorted(problems, key=lambda p: p[0]):
        text = "".join(str(where(p)) if isinstance(p, _Ref) else p for p in parts)
        out.append(f"message {where(index)} ({who}): {text}")
    return out


def find_problems(messages: Sequence[dict]) -> list[str]:
    """Human-readable problems, each naming its message index; empty iff a strict server would accept."""
    if not isinstance(messages, (list, tuple)):
        return [f"messages is of type {type(messages).__name__}; pass a list of message dicts"]
    if not messages:
        return ["the message list is empty; add at least one user message"]
    checker = _Checker()
    checker.feed_many(messages)
    return _render(checker.problems + checker.pending())


# ----------------------------------------------------------------------------- token estimates


def _text_chars(content: Any) -> tuple[int, int]:
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return len(content), 0
    if isinstance(content, list):
        chars = images = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                chars += len(part["text"])
            else:
                images += 1
        return chars, images
    return len(str(content)), 0


def approx_tokens(message: dict) -> int:
    """Cheap token estimate for one message: ~characters/4 plus framing, tool calls included."""
    if not isinstance(message, dict):
        return MESSAGE_OVERHEAD + (len(str(message)) + 3) // 4
    chars, images = _text_chars(message.get("content"))
    chars += len(str(message.get("role", "")))
    for key in ("name", "tool_call_id"):
        if isinstance(message.get(key), str):
            chars += len(message[key])
    extra = 0
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            chars += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
        extra += 3
    return MESSAGE_OVERHEAD + extra + images * IMAGE_TOKENS + (chars + 3) // 4


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
    checker = _Checker()
    checker.feed_many(out)
    problems = checker.problems + checker.pending()
    if problems or not out:
        where = list(range(first)) + [i for start, end in spans for i in range(start, end)]
        raise HistoryError.invalid(_render(problems, where.__getitem__) or find_problems(out))
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
    kept = pinned_spans(messages, turn_ids, pinned)  # start -> end of each turn to keep
    tokens = overhead + sum(map(count, messages[: system_end(messages)]))
    tokens += sum(sum(map(count, messages[start:end])) for start, end in kept.items())
    turns = turns_newest_first(messages)
    for start, end in islice(turns, 1):  # the newest turn, kept whatever it costs
        if start not in kept:
            kept[start] = end
            tokens += sum(map(count, messages[start:end]))
    over_budget = tokens > max_tokens
    for start, end in turns:  # then older turns, newest first, while they fit
        if start in kept:
            continue
        cost = sum(map(count, messages[start:end]))
        if tokens + cost > max_tokens:
            break
        kept[start] = end
        tokens += cost
    return trim_result(messages, kept, tokens, over_budget, turn_ids, count)

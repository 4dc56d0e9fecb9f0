"""A faster twin of the pure trimmers in ``helpers.history``: the same results from tighter loops.

Read ``helpers.history.trim_to_turns`` / ``trim_to_budget`` to learn how trimming works;
these two do the same walk back from the newest message, with two shortcuts:

- ``trim_to_budget`` counts each message once in a single backward loop that also
  finds the turn boundaries, instead of slicing every turn and summing it;
- the kept list is checked by ``plainly_valid``, a quick test that accepts only lists of
  plain, well-formed messages. Anything it does not accept goes to the full checker, so
  the result, and the error for an invalid list, are always the readable version's.

``benchmarks/trim_benchmark.py`` measures the gain; ``tests/test_history_properties.py``
keeps both versions equal over generated conversations, valid and broken.
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Collection, Hashable, Sequence

from helpers.history import (
    TokenCounter,
    TrimResult,
    approx_tokens,
    check_limits,
    pinned_spans,
    system_end,
    trim_result,
    turns_newest_first,
)
from helpers.tokens import REPLY_PRIMING

_PLAIN_ROLES = ("user", "system", "developer")  # a tuple: compared with ==, so an unhashable role is no error


def plainly_valid(messages: Sequence[Any]) -> bool:
    """True only if ``find_problems(messages)`` is empty; False means "ask find_problems", not "invalid"."""
    unanswered: set | None = None  # ids of the newest tool calls still waiting, while their results may come
    for message in messages:
        if type(message) is not dict:
            return False
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not unanswered or call_id not in unanswered or type(content) is not str:
                return False
            unanswered.discard(call_id)
            continue
        if unanswered:  # a non-tool message while calls are still unanswered
            return False
        unanswered = None
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls is None:
                if type(content) is not str or not content:
                    return False
            elif content is not None and type(content) is not str:
                return False
            else:
                unanswered = _call_ids(calls)
                if unanswered is None:
                    return False
        elif role not in _PLAIN_ROLES or type(content) is not str:
            return False
    return bool(messages) and not unanswered


def _call_ids(calls: Any) -> set | None:
    """The ids of a well-formed, non-empty tool_calls list; None if anything in it is unusual."""
    if type(calls) is not list or not calls:
        return None
    ids = set()
    for call in calls:
        if type(call) is not dict:
            return None
        call_id, function = call.get("id"), call.get("function")
        if type(call_id) is not str or not call_id or call_id in ids or type(function) is not dict:
            return None
        name = function.get("name")
        if type(name) is not str or not name or type(function.get("arguments")) is not str:
            return None
        ids.add(call_id)
    return ids


def _result(messages: Sequence[dict], kept: dict[int, int], tokens: int, over_budget: bool,
            turn_ids: Sequence[Hashable] | None, count: TokenCounter) -> TrimResult:
    spans = sorted(kept.items())
    out = list(messages[: system_end(messages)])
    for start, end in spans:
        out += messages[start:end]
    if not plainly_valid(out):  # the full checker decides, and words the error
        return trim_result(messages, kept, tokens, over_budget, turn_ids, count)
    return TrimResult(out, tokens, over_budget, source=messages, spans=spans, turn_ids=turn_ids, count=count)


def trim_to_turns(messages: Sequence[dict], max_turns: int, *, turn_ids: Sequence[Hashable] | None = None,
                  pinned: Collection[Hashable] = (), count: TokenCounter = approx_tokens,
                  overhead: int = REPLY_PRIMING) -> TrimResult:
    """Same as ``helpers.history.trim_to_turns``, faster."""
    check_limits(messages=messages, max_turns=max_turns)
    kept = pinned_spans(messages, turn_ids, pinned)
    kept.update(islice(turns_newest_first(messages), max_turns))
    tokens = overhead + sum(map(count, messages[: system_end(messages)]))
    for start, end in kept.items():
        tokens += sum(map(count, messages[start:end]))
    return _result(messages, kept, tokens, False, turn_ids, count)


def trim_to_budget(messages: Sequence[dict], max_tokens: int, *, count: TokenCounter = approx_tokens,
                   turn_ids: Sequence[Hashable] | None = None, pinned: Collection[Hashable] = (),
                   overhead: int = REPLY_PRIMING) -> TrimResult:
    """Same as ``helpers.history.trim_to_budget``, faster."""
    check_limits(messages=messages, max_tokens=max_tokens)
    first = system_end(messages)
    kept = pinned_spans(messages, turn_ids, pinned)
    tokens = overhead + sum(map(count, messages[:first]))
    for start, end in kept.items():
        tokens += sum(map(count, messages[start:end]))
    over_budget = None  # decided once the newest turn is in
    end, cost = len(messages), 0
    for i in range(end - 1, first - 1, -1):  # one walk back: count each message, close a turn at its start
        message = messages[i]
        cost += count(message)
        if i != first and (type(message) is not dict or message.get("role") != "user"):
            continue
        if i not in kept:
            if over_budget is not None and tokens + cost > max_tokens:
                break
            kept[i] = end
            tokens += cost
        if over_budget is None:
            over_budget = tokens > max_tokens
        end, cost = i, 0
    if over_budget is None:  # no turns at all: only the system part
        over_budget = tokens > max_tokens
    return _result(messages, kept, tokens, over_budget, turn_ids, count)

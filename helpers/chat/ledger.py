"""The usage ledger: exact token costs learnt from what the server reports.

Every chat completion reports ``usage.prompt_tokens``, the server's own count of the
message list it was sent. For an additive tokenizer, the difference between two
consecutive requests is the exact cost of the messages appended in between. The
ledger keeps those exact figures so a session can trim to a token budget exactly for
everything already sent and estimate only what the server has not seen yet.

A report that cannot be a count of the request is not learnt from (see ``plausible_floor``): some
servers report 0, or only the tokens that missed their prompt cache. Believed, such a count would
make every message look almost free and so switch a token budget off; the ledger keeps estimating
instead, and warns once.

A request repeats the previous one and adds a few messages, so the ledger remembers each message's key
(its canonical JSON) and estimate by identity, for the messages of the latest request: a long window
costs dictionary lookups, and only the new messages are serialised (``_known``).
"""
from __future__ import annotations

import json
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from helpers.core.errors import WorkshopWarning
from helpers.chat.history import HistoryError, TokenCounter
from helpers.core.tokens import REPLY_PRIMING, approx_tokens


@dataclass
class UsageRecord:
    """One request as the ledger saw it: reported prompt tokens next to what was estimated."""

    request: int
    messages: int
    prompt_tokens: int  # what the server reported
    estimated: int  # approx_tokens alone (plus the request overhead)
    predicted: int  # what ledger.cost said before this record (exact parts + estimates)
    predicted_exact: bool
    new_messages: int  # messages whose cost this request revealed (as one block)
    new_tokens: int | None  # that block's exact cost; None if the report contradicted earlier ones
    new_estimated: int

    @property
    def error(self) -> int:
        """Estimate minus reported (positive: the estimate was too high)."""
        return self.estimated - self.prompt_tokens

    @property
    def prediction_error(self) -> int:
        """Ledger prediction minus reported; 0 whenever the prediction was exact."""
        return self.predicted - self.prompt_tokens


@dataclass
class _Span:
    keys: list[str]  # content keys of the span's messages (how spans are recognised again)
    tokens: int  # exact, from the server's reports
    has_overhead: bool  # includes the fixed per-request cost
    counts: Counter = field(default_factory=Counter)
    members: list[tuple[Any, int]] = field(default_factory=list)  # (message object, its share of tokens)


# A reported count below a quarter of the estimate is not believed. approx_tokens is about 4 characters
# per token plus 4 per message; to report a quarter of that, a tokenizer would have to average over 16
# characters per token, which none does on text (English runs at 3-5 characters per token, code and other
# languages at fewer). Only a message made of long runs of one repeated character could; it is then
# estimated instead, which errs toward trimming more, never toward breaking the budget.
PLAUSIBLE_FRACTION = 4


def plausible_floor(message_count: int, estimated: int) -> int:
    """The smallest prompt_tokens a server can really report for a request: at least one token per
    message, and at least a quarter of the estimate (``PLAUSIBLE_FRACTION``), rounded up."""
    return max(message_count, -(-estimated // PLAUSIBLE_FRACTION))


def _apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` that add up to exactly ``total``."""
    if not weights:
        return []
    weight_sum = sum(weights)
    if weight_sum <= 0:
        weights, weight_sum = [1] * len(weights), len(weights)
    raw = [total * w / weight_sum for w in weights]
    parts = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - parts[i], reverse=True)
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


class UsageLedger:
    """Learns exact token costs from the server's ``usage.prompt_tokens`` after each request.

    ``record(messages, prompt_tokens)`` splits the reported total into *spans*: the
    spans already known from earlier records that are still wholly present, plus
    one new span holding every message not covered yet (and the request overhead,
    the first time). With an additive tokenizer, a span's cost is exact *as a
    whole*: in a growing history each span is "the messages appended since the
    previous request". When trimming breaks a span (drops some of its messages),
    its kept messages are estimated again and become exact, as part of a new span,
    at the next record. The ledger follows one conversation: spans that the latest
    record no longer contains are forgotten.

    ``cost(messages)`` = exact spans wholly present + estimates for the rest; it is
    exact when every message and the overhead are covered. ``count(message)`` is a
    per-message number for ``count=``: the message's share of its span's exact cost
    (split in proportion to the estimates; a one-message span is that message's
    exact cost), else the estimate. Summed over whole spans, plus ``ledger.overhead``,
    it equals the reported totals exactly. Shares follow message objects (so two
    equal "ok" messages keep separate shares); an equal copy falls back to its twin's.

    A report below ``plausible_floor`` (0 for a real request, fewer tokens than messages, under a
    quarter of the estimate) is treated as no report: ``record`` returns None, learns nothing, and
    warns once per ledger; costs stay estimated, so a budget keeps working.
    """

    def __init__(self, estimate: TokenCounter = approx_tokens, overhead: int = REPLY_PRIMING):
        self.estimate = estimate
        self.overhead = overhead
        self.records: list[UsageRecord] = []
        self.ignored = 0  # reports not believed (below plausible_floor)
        self._spans: list[_Span] = []
        self._by_id: dict[int, tuple[Any, int]] = {}
        self._by_key: dict[str, int] = {}
        self._memo: dict[int, tuple] = {}  # id -> (message, fields, content, tool_calls, key, estimate)

    @staticmethod
    def key(message: Any) -> str:
        """The identity the ledger uses to recognise a message again (its canonical JSON)."""
        return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)

    def _known(self, messages: Sequence[dict]) -> tuple[list[str], list[int]]:
        """Each message's key and estimate, computed only for messages the ledger has not seen yet.

        A message is recognised by identity while it keeps its number of fields and its ``content`` and
        ``tool_calls`` objects (a field given a new value is serialised again; changing a message's
        other fields, or a list or dict inside it, in place is not noticed - messages are not changed
        once sent). Remembered for the latest request only.
        """
        memo, keys, estimates = self._memo, [], []
        for message in messages:
            seen = memo.get(id(message))
            if seen is not None and seen[0] is message and len(message) == seen[1] \
                    and message.get("content") is seen[2] and message.get("tool_calls") is seen[3]:
                keys.append(seen[4])
                estimates.append(seen[5])
                continue
            key, estimate = self.key(message), self.estimate(message)
            if type(message) is dict:
                memo[id(message)] = (message, len(message), message.get("content"), message.get("tool_calls"),
                                     key, estimate)
            keys.append(key)
            estimates.append(estimate)
        return keys, estimates

    def _cover(self, keys: list[str]) -> tuple[int, list[_Span], bool, Counter]:
        avail = Counter(keys)
        used: list[_Span] = []
        total, overhead_used = 0, False
        for span in reversed(self._spans):
            if span.has_overhead and overhead_used:
                continue
            if all(avail[k] >= c for k, c in span.counts.items()):
                avail.subtract(span.counts)
                used.append(span)
                total += span.tokens
                overhead_used = overhead_used or span.has_overhead
        return total, used, overhead_used, avail

    def cost(self, messages: Sequence[dict]) -> tuple[int, bool]:
        """(tokens, exact) for sending ``messages``: known spans exactly, the rest estimated.

        A span that trimming broke (some of its messages dropped) is costed from whichever
        side is smaller: its exact total minus estimates of the dropped messages, or
        estimates of the kept ones. The first span carries the request overhead (tool
        schemas included), so dropping the first turn does not lose that exact figure.
        """
        return self._cost(messages, *self._known(messages))

    def _cost(self, messages: Sequence[dict], keys: list[str], estimates: list[int]) -> tuple[int, bool]:
        total, used, overhead_used, left = self._cover(keys)
        sample = dict(zip(keys, messages))
        partial = False
        used_ids = {id(u) for u in used}
        for span in reversed(self._spans):
            if id(span) in used_ids or (span.has_overhead and overhead_used):
                continue
            present = Counter({k: min(c, left[k]) for k, c in span.counts.items() if left[k] > 0})
            if not present:
                continue
            missing = span.counts - present
            est_missing = sum(self.estimate(json.loads(k)) * c for k, c in missing.items())
            est_present = (sum(self.estimate(sample[k]) * c for k, c in present.items())
                           + (self.overhead if span.has_overhead else 0))
            if est_missing < est_present:
                total += max(span.tokens - est_missing, 0)
                left.subtract(present)
                overhead_used = overhead_used or span.has_overhead
                partial = True
        estimated = int(partial)
        for key, estimate in zip(keys, estimates):
            if left[key] > 0:
                left[key] -= 1
                estimated += 1
                total += estimate
        return total + (0 if overhead_used else self.overhead), not estimated and overhead_used

    def count(self, message: dict) -> int:
        """Per-message tokens for ``count=``: a share of an exact span when known, else the estimate."""
        known = self._by_id.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        share = self._by_key.get(self.key(message)) if self._by_key else None
        return share if share is not None else self.estimate(message)

    def record(self, messages: Sequence[dict], prompt_tokens: int) -> UsageRecord | None:
        """Note that sending ``messages`` cost ``prompt_tokens`` (the server's usage.prompt_tokens).

        Returns None, learning nothing, when the count cannot be one of this request (below
        ``plausible_floor``); the first such report of this ledger is warned about.
        """
        if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int) or prompt_tokens < 0:
            raise HistoryError(f"prompt_tokens must be a whole number >= 0 (got {prompt_tokens!r}); pass "
                               "response.usage.prompt_tokens")
        keys, estimates = self._known(messages)
        self._memo = {id(m): self._memo[id(m)] for m in messages if id(m) in self._memo}  # this request's
        floor = plausible_floor(len(estimates), sum(estimates) + self.overhead)
        if messages and prompt_tokens < floor:
            self._ignore(prompt_tokens, len(estimates), sum(estimates) + self.overhead, floor)
            return None
        predicted, predicted_exact = self._cost(messages, keys, estimates)
        covered, used, overhead_used, left = self._cover(keys)
        # which occurrences are new: prefer message objects that no used span already holds
        held = {id(obj) for span in used for obj, _ in span.members}
        is_new = [False] * len(keys)
        for prefer_new in (True, False):
            for i in range(len(keys) - 1, -1, -1):
                if left[keys[i]] > 0 and not is_new[i] and (not prefer_new or id(messages[i]) not in held):
                    left[keys[i]] -= 1
                    is_new[i] = True
        rest = [i for i in range(len(keys)) if is_new[i]]
        new_estimated = sum(estimates[i] for i in rest) + (0 if overhead_used else self.overhead)
        remainder = prompt_tokens - covered
        consistent = remainder >= 0 and (bool(rest) or not overhead_used or remainder == 0)
        if consistent:
            used_ids = {id(u) for u in used}
            spans = [s for s in self._spans if id(s) in used_ids]
            if rest or not overhead_used:
                spans.append(self._span([messages[i] for i in rest], [keys[i] for i in rest],
                                        [estimates[i] for i in rest], remainder, not overhead_used))
            new_tokens: int | None = remainder
        else:  # the server disagrees with what was learnt (not additive, or messages changed): start over
            spans = [self._span(list(messages), keys, estimates, prompt_tokens, True)]
            rest, new_tokens = list(range(len(keys))), None
        self._spans = spans
        self._by_id = {id(obj): (obj, share) for span in spans for obj, share in span.members}
        self._by_key = {k: share for span in spans for k, (_, share) in zip(span.keys, span.members)}
        self._share_with_copies(messages, keys)
        entry = UsageRecord(len(self.records) + 1, len(keys), prompt_tokens, sum(estimates) + self.overhead,
                            predicted, predicted_exact, len(rest), new_tokens, new_estimated)
        self.records.append(entry)
        return entry

    def _ignore(self, reported: int, messages: int, estimated: int, floor: int) -> None:
        """Count a report that was not believed; warn about the first one."""
        self.ignored += 1
        if self.ignored == 1:
            warnings.warn(
                f"the server reported prompt_tokens={reported} for a request of {messages} messages estimated "
                f"at {estimated} tokens; no real count is below {floor}, so token costs are estimated "
                "instead and any token budget stays in force. (Some servers report 0, or only the tokens "
                "that missed their prompt cache.) Later reports like it are ignored without a warning.",
                WorkshopWarning, stacklevel=3)

    def _share_with_copies(self, messages: Sequence[dict], keys: list[str]) -> None:
        """Give each sent message that no span holds the share of an equal message a span holds instead.

        A span is recognised by its messages' contents, so it may hold an equal copy rather than the
        object sent (two "?" questions in one request). Each such copy's share goes to one sent twin,
        so counting the messages of this request adds up to what the server reported.
        """
        sent = {id(m) for m in messages}
        spare: dict[str, list[int]] = {}  # key -> shares of members whose own object was not sent
        for span in self._spans:
            for key, (obj, share) in zip(span.keys, span.members):
                if id(obj) not in sent:
                    spare.setdefault(key, []).append(share)
        for key, message in zip(keys, messages):
            if id(message) not in self._by_id and spare.get(key):
                self._by_id[id(message)] = (message, spare[key].pop(0))

    def _span(self, messages: list, keys: list[str], estimates: list[int], tokens: int,
              has_overhead: bool) -> _Span:
        for_messages = tokens - (min(self.overhead, tokens) if has_overhead else 0)
        shares = _apportion(for_messages, estimates)
        return _Span(keys, tokens, has_overhead, Counter(keys), list(zip(messages, shares)))

    def summary(self) -> dict[str, float]:
        """How good the estimates were: mean absolute error (tokens and %) and exact predictions."""
        if not self.records:
            return {"requests": 0, "mean_abs_error": 0.0, "mean_abs_pct": 0.0, "worst_pct": 0.0,
                    "exact_predictions": 0}
        pcts = [abs(r.error) / max(r.prompt_tokens, 1) * 100 for r in self.records]
        return {"requests": len(self.records),
                "mean_abs_error": sum(abs(r.error) for r in self.records) / len(self.records),
                "mean_abs_pct": sum(pcts) / len(pcts), "worst_pct": max(pcts),
                "exact_predictions": sum(r.predicted_exact for r in self.records)}

"""Durable facts with a reconciling write path (notebook 10): candidate -> decision -> audited change.

The module opens with the rules, ``decide``: given a checked candidate and every stored fact
of its key, it says what writing the candidate does. In the order the rules are checked:

1. **Replay or stale**: the source already recorded this version, or a newer one, for the key
   (a queue retry, a late arrival): ``noop``. Arrival order alone never decides. For a user or
   tool claim only that source's user/tool provenance counts, so an assistant claim filed under
   the same ``source_id`` never makes the user's statements look stale.
2. **Assistant claim**: a proposal is not evidence. A new value is ``rejected`` (stored as
   ``ineligible`` until a user or tool states it); repeating a live value is a ``noop``.
3. **Same value** (after ``AttributeSpec.normalise``) from the same source: ``noop``.
4. **Conflict**: another authoritative source still backs a rival value: every rival is held
   for review, out of ``active_facts``, until ``resolve(...)``.
5. **Correction**: a new value from a source that alone backed the old one; the old value is
   ``superseded`` (kept as history).
6. Otherwise ``insert``: a new fact, or one more independent source for a stored value.

``FactMemory`` wraps those rules in transactions: ``write_many`` checks each candidate
(``helpers.facts.schema``; a malformed one is ``rejected`` alone), loads the keys once, carries
out each plan and commits every change with one audit row per candidate: a ``FactDecision``
(``helpers.facts.decisions``, which also words the reason).
"""
from __future__ import annotations

import copy
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from helpers.core.clock import now
from helpers.core.errors import WorkshopError
from helpers.facts.decisions import FactDecision, decision_for, quoted_values
from helpers.facts.prompt import format_facts  # noqa: F401  (callers import it from here too)
from helpers.facts.schema import (  # noqa: F401  (PREVIEW_CHARS, normalise_text: re-exported for callers)
    DEFAULT_ATTRIBUTES, PREVIEW_CHARS, REASON_CHARS, UNSTORABLE, AttributeSpec, Candidate, CheckedCandidate,
    check_candidate, normalise_id, normalise_text, rejected_fields, storable_preview,
)
from helpers.facts.fact_store import (
    ACTIVE, CONFLICT, ELIGIBLE_KINDS, INELIGIBLE, SUPERSEDED, AuditEntry, FactStore, Provenance,
    SQLiteFactStore, StoredFact, WorkingSet,
)

INSERT, NOOP, CORRECTION, REJECTED = "insert", "noop", "correction", "rejected"


@dataclass
class Plan:
    """What writing one candidate does to its key: the outcome, the rule that chose it, the facts involved."""

    outcome: str                      # insert, noop, correction, conflict or rejected
    rule: str                         # replay, stale, assistant, same value, conflict, correction, new
    same: StoredFact | None = None    # the live fact that already holds the candidate's value
    replaced: Sequence[StoredFact] = ()  # values only this source backed
    rivals: Sequence[StoredFact] = ()    # values another source still backs
    seen: int | None = None           # the newest version already recorded from this source


def last_version(c: CheckedCandidate, stored: list[StoredFact]) -> int | None:
    """The newest version from ``c``'s source for this key (a user or tool claim ignores assistant rows)."""
    counted = ("user", "tool", "assistant") if c.source_kind == "assistant" else ("user", "tool")
    versions = [p.source_version for fact in stored for p in fact.provenance
                if p.source_id == c.source_id and p.source_kind in counted]
    return max(versions, default=None)


def decide(c: CheckedCandidate, stored: list[StoredFact]) -> Plan:
    """The write rules, in order: replay, assistant claim, same value, conflict, correction, insert."""
    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]
    same = next((f for f in live if f.value_key == c.value_key), None)
    seen = last_version(c, stored)
    if seen is not None and c.source_version <= seen:
        return Plan(NOOP, "replay" if c.source_version == seen else "stale", same, seen=seen)
    if c.source_kind == "assistant":
        return Plan(NOOP if same else REJECTED, "assistant", same)
    mine = [f for f in live if f is not same and c.source_id in f.supporters]
    if same and c.source_id in same.supporters and not mine:
        return Plan(NOOP, "same value", same)
    replaced = [f for f in mine if f.supporters == {c.source_id}]
    rivals = [f for f in live if f is not same and f.supporters != {c.source_id}]
    if rivals:
        return Plan(CONFLICT, "conflict", same, replaced, rivals)
    if replaced:
        return Plan(CORRECTION, "correction", same, replaced)
    return Plan(INSERT, "new", same)


class FactMemoryError(WorkshopError, RuntimeError):
    """A fact-memory operation could not be done; the message says what to do instead."""


class FactResolutionError(FactMemoryError):
    """resolve() was asked to settle a conflict that does not exist, or with a value not in it."""


def _plain(value: Any) -> Any:
    """A str or int (of a subclass, too) as the exact built-in, copied without calling the value's own methods;
    any other value as it is."""
    if isinstance(value, str) and type(value) is not str:
        return str.__str__(value)
    if isinstance(value, int) and type(value) not in (int, bool):
        return int.__index__(value)
    return value


def _plain_candidate(candidate: Any) -> Any:
    """``candidate`` as plain data for ``check_candidate``: a mapping read once into a dict, a ``Candidate`` copied,
    str and int values (keys too) as exact built-ins. Only this runs the candidate's own code, so an error in
    the checks that follow is the package's, not the candidate's."""
    if isinstance(candidate, Candidate):
        plain = copy.copy(candidate)
        vars(plain).update({name: _plain(value) for name, value in vars(candidate).items()})
        return plain
    if isinstance(candidate, Mapping):
        return {_plain(name): _plain(value) for name, value in candidate.items()}
    return candidate


def _rejected(candidate: Any, problems: list[str], at: str) -> FactDecision:
    """The decision for a malformed candidate: what it held, as previews an audit row can always store."""
    reason = storable_preview("malformed candidate, not stored (repair and resubmit): " + "; ".join(problems),
                              REASON_CHARS)
    held = rejected_fields(candidate)
    return FactDecision(held["user_id"], held["subject"], held["attribute"], held["value"], held["source_id"],
                        held["source_kind"], held["source_version"], REJECTED, reason,
                        fact_id=None, support=0, decided_at=at)


class FactMemory(AbstractContextManager):  # ``with FactMemory.open(path) as memory:`` closes it at the end
    """The reconciling writer plus review reads, over any FactStore (SQLite by default)."""

    def __init__(self, store: FactStore, *, attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES):
        self.store = store
        self.attributes = dict(attributes)

    @classmethod
    def open(cls, path: str, **kwargs: Any) -> "FactMemory":
        """A FactMemory on the SQLite file at ``path`` (created and migrated if needed)."""
        return cls(SQLiteFactStore(path), **kwargs)

    def write(self, candidate: Candidate | Mapping[str, Any]) -> FactDecision:
        """Decide one candidate and commit the decision with its audit row before returning."""
        return self.write_many([candidate])[0]

    def write_many(self, candidates: Iterable[Candidate | Mapping[str, Any]], *,
                   at: str | None = None) -> list[FactDecision]:
        """Decide candidates in order inside one transaction; every decision is audited with its change.

        ``at`` (ISO 8601) dates the decisions and provenance; default now. A private in-memory store
        rebuilt from a log passes each entry's own time, so its dates stay the ones first recorded.
        """
        candidates = list(candidates)
        if not candidates:
            return []
        checked = [self._check(candidate) for candidate in candidates]
        keys = list(dict.fromkeys(c.key for c, _ in checked if c is not None))
        at = at or now().isoformat()
        with self.store.transaction(keys) as txn:
            work = WorkingSet(txn, keys, at)
            decisions = [self._apply(work, c, decide(c, work.rows[c.key])) if c is not None
                         else _rejected(candidate, problems, at)
                         for candidate, (c, problems) in zip(candidates, checked)]
            work.changes.audit = list(decisions)  # a decision is its audit row
            txn.save(work.changes)
        return decisions

    def reserve_version(self, user_id: str, source_id: str, at_least: int = 0) -> int:
        """A version for the source's next statement, higher than every version it has recorded or been
        handed (in any session, branch or process sharing the store); ``at_least`` when that is higher.

        Keep it with the statement: writing the statement again with the same version is a replay (a
        ``noop``), while a statement made later reserves a higher one and so always counts."""
        user_id, source_id = normalise_id(user_id), normalise_id(source_id)
        if UNSTORABLE.search(user_id + source_id) or not user_id or not source_id:
            raise FactMemoryError(f"reserve_version needs a user_id and source_id a database can store (got "
                                  f"{user_id!r}, {source_id!r})")
        return self.store.reserve_version(user_id, source_id, at_least)

    def recorded(self, candidates: Iterable[Candidate | Mapping[str, Any]]) -> list[bool]:
        """For each candidate: has its source already recorded this version, or a newer one, for its key?

        True means writing it would be a replay or stale ``noop`` (rule 1 of ``decide``, the same
        ``last_version``) that changes nothing. A malformed candidate counts as recorded when the audit
        already holds its rejection (the same source and version): writing it again would only repeat the
        ``rejected`` row. Only reads: nothing is decided or audited, so a caller can catch up on what a
        store missed without filling the audit with replays.
        """
        candidates = list(candidates)
        checked = [self._check(candidate)[0] for candidate in candidates]
        rejected = {i: rejected_fields(candidate) for i, (candidate, c) in enumerate(zip(candidates, checked))
                    if c is None}
        rejections: dict[tuple[str, str], set[int]] = {}
        for held in rejected.values():
            where = (held["user_id"], held["source_id"])
            if held["source_version"] is not None and where not in rejections:
                rejections[where] = self.store.rejected_versions(*where)
        by_key: dict[tuple, list[StoredFact]] = {}
        for user_id in dict.fromkeys(c.user_id for c in checked if c is not None):
            for fact in self.store.read_facts(user_id, (ACTIVE, CONFLICT, SUPERSEDED, INELIGIBLE)):
                by_key.setdefault((fact.user_id, fact.subject, fact.attribute, fact.slot), []).append(fact)
        answers = []
        for i, c in enumerate(checked):
            if c is None:
                held = rejected[i]
                answers.append(held["source_version"] in rejections.get((held["user_id"], held["source_id"]), ()))
                continue
            seen = last_version(c, by_key.get(c.key, []))
            answers.append(seen is not None and c.source_version <= seen)
        return answers

    def _check(self, candidate: Any) -> tuple[CheckedCandidate | None, list[str]]:
        try:  # the candidate's own code (a mapping's lookups, its values' methods) runs here, and only here
            plain = _plain_candidate(candidate)
        except Exception as err:  # whatever a candidate holds, it costs only itself
            return None, [f"the candidate could not be checked ({type(err).__name__})"]
        return check_candidate(plain, self.attributes)  # plain data: what this raises is the package's bug

    def _apply(self, work: WorkingSet, c: CheckedCandidate, plan: Plan) -> FactDecision:
        """Carry out ``plan`` in the working set; the decision says why."""
        same, replaced, rivals = plan.same, plan.replaced, plan.rivals
        if plan.rule in ("replay", "stale"):
            current = same or next((f for f in work.rows[c.key] if f.status in (ACTIVE, CONFLICT)
                                    and c.source_id in f.supporters), None)
            return decision_for(c, plan, work.at, current)
        prov = Provenance(c.source_id, c.source_kind, c.source_version, c.evidence, work.at)
        if plan.rule == "same value":
            work.record_source(same, prov)
            return decision_for(c, plan, work.at, same)
        proposal = None if same else next((f for f in reversed(work.rows[c.key])
                                           if f.status == INELIGIBLE and f.value_key == c.value_key), None)
        if plan.rule == "assistant":
            return decision_for(c, plan, work.at, self._assistant_claim(work, c, prov, same or proposal))
        for f in rivals:  # the source moves away from a value others still back
            if c.source_id in f.supporters:
                work.withdraw(f, c.source_id)
        fact = same or proposal
        if fact is None:
            fact = work.insert(c.key, c.value, c.value_key, ACTIVE, prov)
        else:
            work.record_source(fact, prov)
        for f in replaced:
            work.set_status(f, SUPERSEDED, superseded_by=fact.id)
        status = CONFLICT if rivals else ACTIVE
        for f in [fact, *rivals]:
            if f.status != status:
                work.set_status(f, status)
        return decision_for(c, plan, work.at, fact, confirms_proposal=proposal is not None)

    def _assistant_claim(self, work: WorkingSet, c: CheckedCandidate, prov: Provenance,
                         fact: StoredFact | None) -> StoredFact:
        """Record an assistant's claim: on a live value only as a repeat, else as an ineligible proposal."""
        if fact is not None and fact.status != INELIGIBLE:
            mine = next((p for p in fact.provenance if p.source_id == c.source_id), None)
            if mine is None or mine.source_kind not in ELIGIBLE_KINDS:  # keep its version: replays stay noops
                work.record_source(fact, prov)
        elif fact is None:
            fact = work.insert(c.key, c.value, c.value_key, INELIGIBLE, prov)
        else:
            work.record_source(fact, prov)
        return fact

    def resolve(self, user_id: str, subject: str, attribute: str, keep_value: str, *, reviewer: str,
                note: str = "") -> FactDecision:
        """Settle a conflict: the value matching ``keep_value`` becomes active, its rivals superseded."""
        spec = self.attributes.get(attribute)
        if spec is None or spec.multi_valued:
            single = ", ".join(sorted(name for name, s in self.attributes.items() if not s.multi_valued))
            raise FactResolutionError(f"{attribute!r} is not a single-valued attribute, so it cannot be in "
                                      f"conflict; single-valued attributes: {single}")
        if not isinstance(keep_value, str) or not keep_value.strip():
            raise FactResolutionError("resolve() needs keep_value='...', one of the values that "
                                      "conflicts(user_id) lists")
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise FactResolutionError("resolve() needs reviewer='...' naming who settled the conflict (it is "
                                      "audited)")
        user_id, subject = normalise_id(user_id), normalise_id(subject)
        if UNSTORABLE.search(user_id + subject + reviewer + note):
            raise FactResolutionError("user_id, subject, reviewer and note must not contain NUL characters "
                                      "or lone surrogates (no database can store them); remove them")
        key, at = (user_id, subject, attribute, ""), now().isoformat()
        with self.store.transaction([key]) as txn:
            work = WorkingSet(txn, [key], at)
            rows = [r for r in work.rows[key] if r.status == CONFLICT]
            if not rows:
                raise FactResolutionError(f"no open conflict for {user_id}/{subject}/{attribute}; "
                                          "conflicts(user_id) lists the open ones")
            keep = next((r for r in rows if r.value_key == spec.normalise(keep_value)), None)
            if keep is None:
                raise FactResolutionError(f"{keep_value!r} is not one of the conflicting values "
                                          f"({quoted_values(rows)}); pass one of those")
            losers = [r for r in rows if r is not keep]
            work.set_status(keep, ACTIVE)
            for r in losers:
                work.set_status(r, SUPERSEDED, superseded_by=keep.id)
            superseded = quoted_values(losers)
            reason = f"conflict resolved by {reviewer}: kept {keep.value!r}, superseded {superseded}"
            reason += f" ({note})" if note else ""
            decision = FactDecision(user_id, subject, attribute, keep.value, reviewer, "reviewer", None,
                                    CORRECTION, reason, keep.id, keep.support, at, status=ACTIVE,
                                    superseded=tuple(r.id for r in losers))
            work.changes.audit = [decision]
            txn.save(work.changes)
        return decision

    def _read_facts(self, user_id: str, status: str) -> list[StoredFact]:
        user_id = normalise_id(user_id)  # the same id as on write; one no database can store has no facts
        return [] if UNSTORABLE.search(user_id) else self.store.read_facts(user_id, (status,))

    def active_facts(self, user_id: str) -> list[StoredFact]:
        """Facts safe to put in a prompt: active only (no conflicts, proposals or history)."""
        return self._read_facts(user_id, ACTIVE)

    def conflicts(self, user_id: str) -> list[StoredFact]:
        """Values held for review because authoritative sources disagree."""
        return self._read_facts(user_id, CONFLICT)

    def ineligible(self, user_id: str) -> list[StoredFact]:
        """Assistant proposals that no user statement or tool result has supported."""
        return self._read_facts(user_id, INELIGIBLE)

    def history(self, user_id: str) -> list[StoredFact]:
        """Superseded values, kept so corrections can be explained."""
        return self._read_facts(user_id, SUPERSEDED)

    def audit(self, user_id: str) -> list[AuditEntry]:
        """Every decision about this user, oldest first."""
        user_id = normalise_id(user_id)
        return [] if UNSTORABLE.search(user_id) else self.store.read_audit(user_id)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __exit__(self, *exc: object) -> None:
        self.close()

"""What the writer did with each candidate, and why (notebook 10): the decision and its reason in words.

A ``FactDecision`` is the audit row the writer stores for a candidate, plus what the caller wants to
know at once: the status of the fact it left and the facts it superseded. ``reason_for`` words each
rule of ``helpers.facts.writer.decide`` for someone reading the audit log later.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from helpers.facts.schema import CheckedCandidate
from helpers.facts.fact_store import AuditEntry, StoredFact

if TYPE_CHECKING:  # only for annotations: the writer imports this module
    from helpers.facts.writer import Plan


@dataclass(slots=True)
class FactDecision(AuditEntry):
    """What the writer did with one candidate and why: its audit row, the fact's status, what it replaced."""

    # (its ``id``, the audit row's number, stays None: the database numbers the row it stores)
    status: str | None = None         # the status of the fact the decision left (None: no fact)
    superseded: tuple[int, ...] = ()  # ids of the facts this decision superseded

    def __str__(self) -> str:
        version = "" if self.source_version is None else f" v{self.source_version}"
        who = f"{self.source_id}{version}"
        return f"{self.outcome:<10} {self.attribute}={self.value!r} ({who}): {self.reason}"


def decision_for(c: CheckedCandidate, plan: Plan, at: str, fact: StoredFact | None,
                 confirms_proposal: bool = False) -> FactDecision:
    """The decision about ``c`` once ``plan`` is carried out: ``fact`` is the fact it left (if any)."""
    fact_id, support, status = (None, 0, None) if fact is None else (fact.id, fact.support, fact.status)
    return FactDecision(c.user_id, c.subject, c.attribute, c.value, c.source_id, c.source_kind,
                        c.source_version, plan.outcome, reason_for(c, plan, confirms_proposal), fact_id,
                        support, at, status=status, superseded=tuple(f.id for f in plan.replaced))


def quoted_values(facts: Iterable[StoredFact]) -> str:
    """The facts' values for a reason: 'morning', 'evening'."""
    return ", ".join(repr(f.value) for f in facts)


def reason_for(c: CheckedCandidate, plan: Plan, confirms_proposal: bool = False) -> str:
    """Why the writer did what ``plan`` says, in words an audit reader can follow (once it is carried out)."""
    same, replaced, rivals = plan.same, plan.replaced, plan.rivals
    if plan.rule in ("replay", "stale"):
        return (f"{plan.rule}: {c.source_id} v{c.source_version} is not newer than v{plan.seen} already "
                "recorded for this key; nothing changes")
    if plan.rule == "same value":
        return (f"same value again from {c.source_id} (repeat or paraphrase of {same.value!r}); "
                f"support stays {same.support}")
    if plan.rule == "assistant" and same is not None:
        return "the assistant repeated a stored value; a proposal adds no support"
    if plan.rule == "assistant":
        return ("an assistant proposal is not evidence (saying 'I have updated it' does not change account "
                "state): recorded as ineligible until a user statement or tool result supports it")
    if plan.rule == "conflict":
        backers = "; ".join(f"{f.value!r} from {', '.join(sorted(f.supporters))}" for f in rivals)
        earlier = quoted_values(replaced)
        dropped = f" ({c.source_id}'s own earlier {earlier} is superseded)" if replaced else ""
        return (f"{c.source_id} says {c.value!r} but {backers}: authoritative sources disagree, so the key "
                f"is held for review and not used for answers (resolve() settles it){dropped}")
    if plan.rule == "correction":
        was_conflict = len(replaced) + (same is not None) > 1  # more than one live value before
        settled = " and the open conflict is settled because the sources now agree" if was_conflict else ""
        return (f"{c.source_id} v{c.source_version} replaces {quoted_values(replaced)}, which only it "
                f"supported; the old value is kept as history{settled}")
    if same is not None:
        return (f"independent source {c.source_id} agrees with {same.value!r}; "
                f"support {same.support - 1} -> {same.support}")
    confirms = " (confirms an earlier assistant proposal, until now ineligible)"
    return "new fact" + (confirms if confirms_proposal else "")

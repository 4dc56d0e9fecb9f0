"""Where the agent's memory tool writes (notebook 13): ``FactTarget``, the fact store behind ``remember``.

``helpers.agent.memory_tool`` checks that a ``remember`` call quotes the user's own words; ``FactTarget``
then writes it as every fact is written (``FactMemory``: provenance ``chat:<user>`` with the quote as
evidence, a version reserved for the source, replay, correction and conflict rules, an audit row), and
``forget`` deletes a topic's facts (``helpers.memory.forget.forget_topic``; the conversation itself is
scrubbed by the assistant once the turn is over, since the turn is still being written).
"""
from __future__ import annotations

from typing import Any, Callable

from helpers.facts.schema import AttributeSpec, Candidate
from helpers.memory.forget import forget_topic


class FactTarget:
    """The memory tool's writes for ``user_id`` into ``facts`` (a ``FactMemory``), at ``turn()``'s version."""

    def __init__(self, facts: Any, user_id: str, turn: Callable[[], int] = lambda: 0):
        self.facts, self.user_id, self.turn = facts, user_id, turn
        self.decisions: list = []

    def remember(self, attribute: str, value: str, quote: str) -> dict:
        """Write one fact the user stated (the tool checked the quote); returns what the store decided."""
        source = f"chat:{self.user_id}"
        version = self.facts.reserve_version(self.user_id, source, at_least=max(int(self.turn()), 0))
        self.facts.attributes.setdefault(attribute, AttributeSpec(attribute, description="stated by the user"))
        decision = self.facts.write(Candidate(self.user_id, "user", attribute, value, source, "user", version,
                                              quote))
        self.decisions.append(decision)
        return {"outcome": decision.outcome, "attribute": attribute, "value": value}

    def forget(self, topic: str) -> dict:
        """Delete the facts about ``topic`` (audited as deletions)."""
        report = forget_topic(topic, user_id=self.user_id, facts=self.facts)
        return {"forgotten": len(report.facts)}

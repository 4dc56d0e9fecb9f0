"""Procedural memory (notebook 13): how this user wants to be answered, learnt from their feedback.

``Instructions`` keeps one user's standing instructions in their ``FactMemory`` (the rule and the
attribute set are ``helpers.facts.instruction_facts``; the write path is every fact's). It can

* ``learn(turn_id, user_text)``: write the instructions in the user's words of one turn (only those: the
  caller passes the user's text, never a tool result, a passage or the assistant's reply);
* ``active()`` / ``texts()`` / ``report()``: list them, oldest first;
* ``undo()``: take back the newest (the one it replaced, if any, is followed again);
* ``forget(n)``: delete the n-th of the list (1 = the oldest), audited as a deletion (what it replaced stays
  replaced: forgetting is not undoing);
* ``fitted(budget)``: the newest instructions whose block fits ``INSTRUCTION_SHARE`` of a request's budget.

``InstructedAssembler`` is the context assembler (``helpers.memory.assembler.MemoryAssembler``) with one
block more: before each request it adds the instructions to the system prompt, as the block
``helpers.core.instruction_block`` writes (one quoted line each), within their share of the budget, so the
request as a whole stays under it. ``ProfileFacts`` is the fact store as the profile reads it: without the
instructions, which have their block of their own.
"""
from __future__ import annotations

from typing import Any, Sequence

from helpers.core import tokens
from helpers.core.clock import now
from helpers.core.errors import ConfigError
from helpers.core.instruction_block import with_instructions, write_instruction_block
from helpers.facts.fact_store import SUPERSEDED, StoredFact
from helpers.facts.instruction_facts import INSTRUCTION_SUBJECT, INSTRUCTIONS
from helpers.facts.pipeline import RuleExtractor, write_turn
from helpers.memory.assembler import MemoryAssembler

INSTRUCTION_SHARE = 0.10  # at most this much of a request's budget goes to the instructions' block


class Instructions:
    """One user's standing instructions, kept as facts (subject ``INSTRUCTION_SUBJECT``) in ``facts``."""

    def __init__(self, facts: Any, user_id: str):
        self.facts, self.user_id = facts, user_id
        self.extractor = RuleExtractor(INSTRUCTIONS, user_id=user_id)

    def learn(self, turn_id: int, user_text: str) -> list:
        """Write the instructions the user's words state (``write_turn``: audited, replay-safe); returns the
        decisions (none for words that give no instruction)."""
        return write_turn(self.facts, self.extractor, turn_id, user_text)

    def active(self) -> list[StoredFact]:
        """The instructions followed now, oldest first."""
        rows = [f for f in self.facts.active_facts(self.user_id) if f.subject == INSTRUCTION_SUBJECT]
        return sorted(rows, key=lambda f: (f.created_at, f.id))

    def texts(self) -> list[str]:
        """The instructions in the user's words, oldest first."""
        return [f.value for f in self.active()]

    def report(self) -> str:
        """The instructions as a numbered list (the numbers ``forget`` takes)."""
        rows = self.active()
        if not rows:
            return "Instructions: none yet (tell me how you want answers, e.g. \"no bullet points, please\")."
        return "\n".join(["Instructions:"] + [f"{i}. {f.attribute}: \"{f.value}\"" for i, f in enumerate(rows, 1)])

    def forget(self, number: int) -> list:
        """Delete the ``number``-th instruction of ``report`` (1 = the oldest), audited as a deletion."""
        rows = self.active()
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(rows):
            raise ConfigError(f"there is no instruction {number!r}: pick a number from 1 to {len(rows)} "
                              "(see the list of instructions)")
        return self._delete(rows[number - 1], "forgotten at the user's request", restore=False)

    def undo(self) -> StoredFact | None:
        """Take back the newest instruction; the one it superseded (if any) is followed again. Returns the
        instruction taken back, or None when there is none."""
        rows = self.active()
        if not rows:
            return None
        newest = max(rows, key=lambda f: (f.created_at, f.id))
        self._delete(newest, "undone at the user's request")
        return newest

    def _delete(self, fact: StoredFact, reason: str, restore: bool = True) -> list:
        """Delete one instruction, audited; ``restore``: the one it superseded is followed again (an undo)."""
        replaced = [f for f in self.facts.history(self.user_id)
                    if restore and f.status == SUPERSEDED and f.superseded_by == fact.id]
        return self.facts.store.forget(self.user_id, [fact.id], source_id=f"chat:{self.user_id}", reason=reason,
                                       at=now().isoformat(), restore=[f.id for f in replaced],
                                       hide_attribute=False)

    def fitted(self, budget: int | None, count=tokens.count_text) -> list[str]:
        """The newest instructions whose block fits ``INSTRUCTION_SHARE`` of ``budget`` (all without one),
        oldest first as they are shown."""
        texts = self.texts()
        if budget is None:
            return texts
        cap, kept = int(budget * INSTRUCTION_SHARE), []
        for text in reversed(texts):
            if count(write_instruction_block([text, *kept])) > cap:
                break
            kept.insert(0, text)
        return kept


class InstructedAssembler(MemoryAssembler):
    """``MemoryAssembler`` with the user's standing instructions added to the system prompt of each request."""

    def __init__(self, *, instructions: Instructions | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.instructions = instructions

    def build(self, system_prompt: str | None, window: Sequence, question: str, *, budget: int | None = None,
              tools: list | None = None):
        """``MemoryAssembler.build`` with ``system_prompt`` followed by the instructions' block."""
        if self.instructions is not None:
            system_prompt = with_instructions(system_prompt, self.instructions.fitted(budget))
        return super().build(system_prompt, window, question, budget=budget, tools=tools)


class ProfileFacts:
    """A ``FactMemory`` as the profile reads it: every read leaves the instructions out (they have a block of
    their own); everything else is the fact memory's own."""

    def __init__(self, facts: Any):
        self._facts = facts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._facts, name)

    def _without(self, rows: list) -> list:
        return [f for f in rows if f.subject != INSTRUCTION_SUBJECT]

    def active_facts(self, user_id: str) -> list:
        return self._without(self._facts.active_facts(user_id))

    def history(self, user_id: str) -> list:
        return self._without(self._facts.history(user_id))

    def conflicts(self, user_id: str) -> list:
        return self._without(self._facts.conflicts(user_id))

    def ineligible(self, user_id: str) -> list:
        return self._without(self._facts.ineligible(user_id))


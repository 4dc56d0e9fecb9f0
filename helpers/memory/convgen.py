"""Seeded conversations for evaluating memory: facts that change, repeat and are asked about in many ways.

``generate(seed)`` builds the user side of a long conversation with a student (the session
writes the assistant side). From the seed it picks which facts the student states, words each
statement, and schedules:

- **corrections** -- a later turn gives a new value ("Actually, my locker number is 5502 now.");
- **restatements** -- the same value again, sometimes word for word (duplicates);
- **probes** -- questions about a fact, worded differently from the statement and from each
  other, some asked more than once, always at least ``min_gap`` turns after the latest statement
  (so the fact has left a window of that many turns);
- **campus questions** answered with the tools, small talk, and turns marked ``long`` where the
  evaluation asks for a long assistant reply.

Every probe knows the value that is current when it is asked and the values it replaced
(``stale``), so an evaluation can check both that the evidence is in the context and that an
old value never stands there unmarked. ``scripted()`` is the fixed 200-turn conversation the
evaluation used before (42 facts, each stated once and probed once), kept as one case.

The wording lives in ``convgen_phrases`` (the facts, their values and probes, the phrase tables);
this module is the scheduling logic.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from helpers.core.errors import ConfigError
from helpers.retrieval.knowledge_files import load_knowledge_base
from helpers.memory.convgen_phrases import (ATTRIBUTES, CAMPUS_FORMS, CORRECT, FOLLOW_UPS, LONG_FORMS,
                                            RESTATE, SCRIPTED_FACTS, SMALL_TALK, STATE)


@dataclass
class Turn:
    """One user message and what it is for (``statement``, ``probe``, ``campus``, ``long``, ...)."""

    user: str
    kind: str
    attribute: str | None = None


@dataclass
class Probe:
    """A question about a fact: the value current when asked, and the older values it replaced."""

    turn: int
    question: str
    attribute: str
    current: str
    stale: tuple[str, ...] = ()
    stated_at: tuple[int, ...] = ()  # turns that stated the current value


@dataclass
class Conversation:
    """The user's turns and the probes among them."""

    name: str
    turns: list[Turn]
    probes: list[Probe] = field(default_factory=list)

    @property
    def corrected_probes(self) -> list[Probe]:
        """Probes asked after their fact was corrected at least once."""
        return [p for p in self.probes if p.stale]


def _campus_titles() -> list[str]:
    """Titles of the shipped campus knowledge base (installed or in a checkout), archived ones left out."""
    return [entry.title for entry in load_knowledge_base() if "archived" not in entry.title.lower()]


def generate(seed: int, n_turns: int = 200, n_facts: int = 20, min_gap: int = 8, long_share: float = 0.06
             ) -> Conversation:
    """A seeded conversation (see the module docstring); the same seed always gives the same turns."""
    if n_turns < 8 * n_facts // 2 or n_facts > len(ATTRIBUTES):
        raise ConfigError(f"{n_turns} turns are too few for {n_facts} facts (use at least {4 * n_facts} "
                         f"turns and at most {len(ATTRIBUTES)} facts)")
    rng = random.Random(seed)
    slots: list[Turn | None] = [None] * n_turns
    free = lambda lo, hi: [t for t in range(max(lo, 0), min(hi, n_turns)) if slots[t] is None]  # noqa: E731
    events: list[tuple[int, str, str, str]] = []  # (turn, attribute, kind, value)
    for attribute in rng.sample(sorted(ATTRIBUTES), n_facts):
        values = list(ATTRIBUTES[attribute][0])
        rng.shuffle(values)
        first = rng.choice(free(0, int(n_turns * 0.45)))
        slots[first] = Turn(rng.choice(STATE).format(a=attribute, v=values[0]), "statement", attribute)
        events.append((first, attribute, "statement", values[0]))
        current, last = values[0], first
        for step in range(rng.choice((0, 0, 1, 1, 2))):  # corrections
            options = free(last + 3, n_turns - min_gap - 1)
            if not options:
                break
            last = rng.choice(options[: max(1, len(options) // 2)])
            current = values[step + 1]
            slots[last] = Turn(rng.choice(CORRECT).format(a=attribute, v=current), "correction", attribute)
            events.append((last, attribute, "correction", current))
        for _ in range(rng.choice((0, 1, 1, 2))):  # restatements, after the statement or a correction
            options = free(first + 2, n_turns - min_gap - 1)
            if not options:
                break
            turn = rng.choice(options)
            value = next(v for t, a, _, v in sorted(events, reverse=True) if a == attribute and t < turn)
            text = slots[first].user if rng.random() < 0.4 and value == values[0] else \
                rng.choice(RESTATE).format(a=attribute, v=value)
            slots[turn] = Turn(text, "restatement", attribute)
            events.append((turn, attribute, "restatement", value))
    probes = []
    for attribute in sorted({a for _, a, _, _ in events}):
        phrasings = list(ATTRIBUTES[attribute][1])
        rng.shuffle(phrasings)
        for i in range(rng.choice((1, 2, 2, 3))):  # some probes are asked more than once
            said = sorted(t for t, a, _, _ in events if a == attribute)
            options = [t for t in free(said[0] + min_gap, n_turns)
                       if not any(0 <= t - s < min_gap for s in said)]
            if not options:
                break
            turn = rng.choice(options)
            question = phrasings[i % len(phrasings)] if rng.random() < 0.7 else phrasings[0]
            slots[turn] = Turn(question, "probe", attribute)
            history = sorted((t, kind, v) for t, a, kind, v in events if a == attribute and t < turn)
            current = history[-1][2]
            stale = tuple(dict.fromkeys(v for _, _, v in history if v != current))
            stated = tuple(t for t, _, v in history if v == current)
            probes.append(Probe(turn, question, attribute, current, stale, stated))
    titles = _campus_titles()
    for t in range(n_turns):
        if slots[t] is not None:
            continue
        roll = rng.random()
        if roll < 0.12:
            slots[t] = Turn(rng.choice(SMALL_TALK), "small talk")
        elif roll < 0.12 + long_share:
            slots[t] = Turn(rng.choice(LONG_FORMS).format(t=rng.choice(titles)), "long")
        elif roll < 0.30 and t > 0 and slots[t - 1] is not None and slots[t - 1].kind == "campus":
            slots[t] = Turn(rng.choice(FOLLOW_UPS), "campus")
        else:
            slots[t] = Turn(rng.choice(CAMPUS_FORMS).format(t=rng.choice(titles)), "campus")
    turns = [s for s in slots if s is not None]
    return Conversation(f"seed {seed}", turns, sorted(probes, key=lambda p: p.turn))


def scripted(n_turns: int = 200, seed: int = 11) -> Conversation:
    """The earlier fixed conversation: 42 facts, each stated once and probed once, 30-70 turns later."""
    rng = random.Random(seed)
    titles = _campus_titles()
    slots: list[Turn | None] = [None] * n_turns
    probes = []
    spacing = max(1, (n_turns - 75) // len(SCRIPTED_FACTS))
    for i, (statement, question, evidence) in enumerate(SCRIPTED_FACTS):
        fact_turn = min(i * spacing, n_turns - 40)
        while slots[fact_turn] is not None:
            fact_turn += 1
        slots[fact_turn] = Turn(statement, "statement", evidence)
        target = min(fact_turn + 30 + rng.randint(0, 40), n_turns - 1)
        probe_turn = next((t for t in list(range(target, n_turns)) + list(range(target, fact_turn + 29, -1))
                           if slots[t] is None), None)
        if probe_turn is None:
            raise ConfigError(f"no free turn to probe fact {i}; use more turns")
        slots[probe_turn] = Turn(question, "probe", evidence)
        probes.append(Probe(probe_turn, question, evidence, evidence, (), (fact_turn,)))
    for t in range(n_turns):
        if slots[t] is None:
            if rng.random() < 0.15:
                slots[t] = Turn(rng.choice(SMALL_TALK), "small talk")
            else:
                slots[t] = Turn(rng.choice(CAMPUS_FORMS).format(t=rng.choice(titles)), "campus")
    return Conversation("scripted", [s for s in slots if s is not None], sorted(probes, key=lambda p: p.turn))

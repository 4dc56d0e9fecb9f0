"""Exercises of notebook 10: phrases for the normaliser, a multi-valued attribute, and a new rule in ``decide``.

Every check writes to a throwaway in-memory fact store with fixed versions, or calls the learner's ``decide``
on hand-made and generated stored facts (no model, no clock): the same answer is right on any backend and on
any day.
"""
from __future__ import annotations

import random
from typing import Any

from helpers.exercises import Exercise, Hint
from helpers.facts.fact_store import ACTIVE, CONFLICT, INELIGIBLE, SUPERSEDED, Provenance, StoredFact
from helpers.facts.writer import (CORRECTION, DEFAULT_ATTRIBUTES, INSERT, NOOP, REJECTED, AttributeSpec, Candidate,
                                  FactMemory, Plan, check_candidate, decide, last_version, normalise_text)


def _outcomes(attributes: dict[str, AttributeSpec], attribute: str, values: list[str]) -> list[str]:
    """Write ``values`` as one customer's statements, versions 1, 2, ...; return the outcomes."""
    with FactMemory.open(":memory:", attributes=attributes) as memory:
        return [memory.write(Candidate("c1", "user", attribute, value, "chat:c1", "user", version)).outcome
                for version, value in enumerate(values, start=1)]


def _spelled(rng: random.Random, phrase: str) -> str:
    """``phrase`` as a customer might type it: any case, extra spaces, a trailing mark."""
    words = [w.upper() if rng.random() < 0.3 else w.capitalize() if rng.random() < 0.5 else w
             for w in phrase.split()]
    return (" " * rng.randint(1, 2)).join(words) + rng.choice(["", ".", "!", "!!", "?", " :)"])

# ---------------------------------------------------------------- exercise 1: phrases for the normaliser


WINDOW = DEFAULT_ATTRIBUTES["delivery_window"]
MEANT = {"first thing": "morning", "after dinner": "evening"}
SAID = (("First thing!", "morning"), ("first thing", "morning"), ("After dinner.", "evening"),
        ("after dinner", "evening"))


def said_phrases(seed: int = 10, n: int = 40) -> list[tuple[str, str]]:
    """The worked spellings, then ``n`` generated ones (seeded): (what the customer typed, the window meant)."""
    rng = random.Random(seed)
    generated = [(_spelled(rng, phrase), MEANT[phrase]) for phrase in rng.choices(sorted(MEANT), k=n)]
    return list(SAID) + generated


def _check_phrases(my_phrases: Any) -> str:
    if not isinstance(my_phrases, dict) or not my_phrases:
        raise Hint("my_phrases should hold at least one phrase and its window, e.g. "
                   "{\"a phrase\": \"morning\"}.")
    wrong = {phrase: window for phrase, window in my_phrases.items() if window not in WINDOW.allowed}
    if wrong:
        raise Hint(f"{wrong} maps to something that is not a window; each phrase maps to one of "
                   f"{sorted(WINDOW.allowed)} (phrase -> window).")
    spec = AttributeSpec("delivery_window", allowed=WINDOW.allowed, phrases={**WINDOW.phrases, **my_phrases})
    changed = [phrase for phrase, window in WINDOW.phrases.items() if spec.normalise(phrase) != window]
    if changed:
        raise Hint(f"Your table changes what {changed[0]!r} means; add new phrases, do not redefine old "
                   "ones.")
    cases = said_phrases()
    for text, window in cases:
        got, key = spec.normalise(text), normalise_text(text)
        if got == window:
            continue
        if got in WINDOW.allowed:  # the phrase is in a table, mapped to another window
            raise Hint(f"Your table maps {key!r} to {got!r}, but a customer who writes {text!r} means "
                       f"{window!r}.")
        raise Hint(f"{text!r} normalises to {got!r}, which no table maps, so it is not {window!r}. Phrases are "
                   "looked up after normalise_text (lower case, punctuation gone) and match the whole value: "
                   f"add the key {key!r}.")
    outcomes = _outcomes({**DEFAULT_ATTRIBUTES, "delivery_window": spec}, "delivery_window",
                         ["morning", "First thing!", "after dinner", "Evenings"])
    if outcomes != ["insert", "noop", "correction", "noop"]:
        raise Hint(f"morning, 'First thing!', 'after dinner', 'Evenings' gave {outcomes}; expected a "
                   "repeat, a correction and a repeat after the first insert.")
    return (f"{len(cases)} spellings normalise to the window meant; 'First thing!' is a repeat of morning "
            "(noop), 'after dinner' corrects it to evening, and 'Evenings' repeats that: outcomes "
            + ", ".join(outcomes))


exercise_1 = Exercise(
    "10.1", "teach the normaliser a customer's phrases",
    stub='my_phrases = {}  # phrase -> "morning", "afternoon" or "evening"',
    solution_code='my_phrases = {"first thing": "morning", "after dinner": "evening"}',
    checker=_check_phrases, answers=("my_phrases",),
    hints=("Each phrase maps to one of the allowed windows: morning, afternoon or evening.",
           "The value is first run through normalise_text (lower case, punctuation gone), then looked up: "
           "a key such as 'First thing!' can never match. Write 'first thing' and 'after dinner'."),
)

# ---------------------------------------------------------------- exercise 2: a multi-valued attribute

GIFTS = ["my sister", "My sis!", "my neighbour", "MY SISTER."]
EXPECTED_GIFTS = ["insert", "noop", "insert", "noop"]
PEOPLE = {"sister": ("my sister", "my sis"), "neighbour": ("my neighbour",), "mum": ("my mum",)}


def gift_lists(seed: int = 11, n: int = 12) -> list[tuple[list[str], list[str]]]:
    """The worked list, then ``n`` generated ones: (what the customer said, in order; the outcomes expected)."""
    rng, lists = random.Random(seed), [(GIFTS, EXPECTED_GIFTS)]
    for _ in range(n):
        people = [rng.choice(sorted(PEOPLE)) for _ in range(rng.randint(2, 6))]
        said = [_spelled(rng, rng.choice(PEOPLE[person])) for person in people]
        lists.append((said, ["noop" if person in people[:i] else "insert" for i, person in enumerate(people)]))
    return lists


def _check_gift_recipient(gift_recipient: Any) -> str:
    if not isinstance(gift_recipient, AttributeSpec) or gift_recipient.name != "gift_recipient":
        raise Hint("gift_recipient should be AttributeSpec(\"gift_recipient\", ...).")
    attributes = {**DEFAULT_ATTRIBUTES, "gift_recipient": gift_recipient}
    outcomes = _outcomes(attributes, "gift_recipient", GIFTS)
    if "rejected" in outcomes:
        raise Hint(f"{GIFTS} gave {outcomes}: allowed= limits the values to a fixed list, and a gift recipient "
                   "can be anyone. Leave allowed out.")
    if not gift_recipient.multi_valued:
        raise Hint(f"{GIFTS} gave {outcomes}: with one value per key, a new person replaces the first "
                   "(a correction). A customer can buy gifts for many people: set multi_valued=True.")
    for said, expected in gift_lists():
        outcomes = _outcomes(attributes, "gift_recipient", said)
        if outcomes == expected:
            continue
        if any("sis" in normalise_text(str(key)).split() for key in gift_recipient.phrases):
            raise Hint(f"{said} gave {outcomes}: phrases= match the whole value ('my sis'), so a phrase 'sis' "
                       "never applies. words= maps one word at a time.")
        if any(str(key) != normalise_text(str(key)) for key in gift_recipient.words):
            raise Hint(f"{said} gave {outcomes}: words are looked up after normalise_text (lower case, "
                       f"punctuation gone), so a key such as {next(iter(gift_recipient.words))!r} never matches; "
                       "write it in lower case.")
        raise Hint(f"{said} gave {outcomes}, expected {expected}: 'My sis!' should be the same person as "
                   "'my sister'. Map the word with words={\"sis\": \"sister\"}.")
    return (f"{len(gift_lists())} lists of people: each new person an insert, each repeat in other words a noop "
            f"(the first: {', '.join(EXPECTED_GIFTS)})")


exercise_2 = Exercise(
    "10.2", "a multi-valued attribute",
    stub=('gift_recipient = AttributeSpec("gift_recipient", '
          'description="someone the customer buys gifts for")'),
    solution_code=('gift_recipient = AttributeSpec("gift_recipient", multi_valued=True,\n'
                   '                               words={"sis": "sister"},\n'
                   '                               description="someone the customer buys gifts for")'),
    checker=_check_gift_recipient, answers=("gift_recipient",),
    hints=("Should a second person replace the first? Look at the allergy attribute in DEFAULT_ATTRIBUTES.",
           "Two settings: multi_valued=True (values never compete) and words={\"sis\": \"sister\"} (a short "
           "word for the same person)."),
    context=lambda: {"AttributeSpec": AttributeSpec},
)

# ---------------------------------------------------------------- exercise 3: a new rule in decide

USER_OWNED = frozenset({"delivery_window", "preferred_contact"})  # the customer's own preferences


def reference_decide(c, stored):
    """decide, plus the rule: a user's new value for a USER_OWNED attribute corrects every rival."""
    plan = decide(c, stored)
    if plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED:
        return Plan(CORRECTION, "the customer decides", plan.same, [*plan.replaced, *plan.rivals])
    return plan


def _fact(fact_id: int, attribute: str, value: str, status: str, *sources: tuple[str, str, int]) -> StoredFact:
    return StoredFact(fact_id, "dana", "user", attribute, "", value, DEFAULT_ATTRIBUTES[attribute].normalise(value),
                      status, "", "", None, [Provenance(s, kind, version) for s, kind, version in sources])


def _claim(attribute: str, value: str, source: str, kind: str, version: int):
    return check_candidate(Candidate("dana", "user", attribute, value, source, kind, version))[0]


WINDOW_ATTR, ADDRESS = "delivery_window", "shipping_address"
# (what happens, the stored facts of the key, the candidate, the hint when the learner's plan differs)
SCENARIOS = (
    ("the CRM copied 'morning' from an old order; Dana says 'evenings'",
     [_fact(1, WINDOW_ATTR, "morning", ACTIVE, ("crm", "tool", 7))],
     _claim(WINDOW_ATTR, "evenings", "chat:dana", "user", 5),
     "For a USER_OWNED attribute the customer's own new value is a correction, not a conflict: return a "
     "CORRECTION plan whose replaced holds every rival (plan.replaced + plan.rivals)."),
    ("Dana writes from her email (source email:dana) that she wants evenings; the CRM backs 'morning'",
     [_fact(1, WINDOW_ATTR, "morning", ACTIVE, ("crm", "tool", 7))],
     _claim(WINDOW_ATTR, "evenings", "email:dana", "user", 2),
     "Any source of kind 'user' is the customer, on any channel: test c.source_kind == 'user', not the "
     "source id."),
    ("Dana and the order service disagree about her address",
     [_fact(1, ADDRESS, "12 Elm Street", ACTIVE, ("order-service", "tool", 1187))],
     _claim(ADDRESS, "48 Harbor Road", "chat:dana", "user", 6),
     "The attribute shipping_address is not in USER_OWNED: two records of an address stay a conflict for a person to "
     "review. Apply the rule only when c.attribute in USER_OWNED."),
    ("the CRM syncs 'evening' after Dana said 'morning'",
     [_fact(1, WINDOW_ATTR, "morning", ACTIVE, ("chat:dana", "user", 1))],
     _claim(WINDOW_ATTR, "evening", "crm", "tool", 7),
     "A tool is not the customer: when the CRM disagrees with what Dana said, that stays a conflict. The rule "
     "is for c.source_kind == 'user' only."),
    ("the queue redelivers Dana's 'morning' (version 1) after she said 'evenings' (version 5)",
     [_fact(1, WINDOW_ATTR, "morning", SUPERSEDED, ("chat:dana", "user", 1)),
      _fact(2, WINDOW_ATTR, "evenings", ACTIVE, ("chat:dana", "user", 5))],
     _claim(WINDOW_ATTR, "morning", "chat:dana", "user", 1),
     "A replayed or late event changes nothing, whoever sent it: the replay rule comes first. Add your rule "
     "where decide would say conflict, after the same-value rule."),
    ("the assistant says it set Dana's window to evenings",
     [_fact(1, WINDOW_ATTR, "morning", ACTIVE, ("chat:dana", "user", 1), ("crm", "tool", 7))],
     _claim(WINDOW_ATTR, "evenings", "assistant:dana", "assistant", 3),
     "An assistant's claim is not evidence and stays rejected: the rule is for the customer's own words "
     "(c.source_kind == 'user'), not for every source that is not a tool."),
    ("Dana's own 'morning' is in conflict with the CRM's 'evening'; now Dana says 'afternoon'",
     [_fact(1, WINDOW_ATTR, "morning", CONFLICT, ("chat:dana", "user", 1)),
      _fact(2, WINDOW_ATTR, "evening", CONFLICT, ("crm", "tool", 7))],
     _claim(WINDOW_ATTR, "afternoon", "chat:dana", "user", 4),
     "Dana's own older 'morning' is in plan.replaced, the CRM's 'evening' in plan.rivals: a correction "
     "supersedes both, replaced = plan.replaced + plan.rivals."),
    ("Dana says 'mornings' again while the CRM's 'evening' conflicts with it",
     [_fact(1, WINDOW_ATTR, "morning", CONFLICT, ("chat:dana", "user", 1)),
      _fact(2, WINDOW_ATTR, "evening", CONFLICT, ("crm", "tool", 7))],
     _claim(WINDOW_ATTR, "mornings", "chat:dana", "user", 3),
     "Dana repeating her own value is not a new value: decide says noop (same value). The rule changes only "
     "what would otherwise be a conflict."),
)

SOURCES = (("chat:dana", "user"), ("email:dana", "user"), ("crm", "tool"), ("order-service", "tool"),
           ("assistant:dana", "assistant"))
VALUES = {"delivery_window": ("morning", "afternoon", "evening", "Evenings", "in the morning"),
          "preferred_contact": ("email", "sms", "phone", "text message"),
          "shipping_address": ("12 Elm Street", "12 elm st.", "48 Harbor Road", "9 Oak Ave")}


def generated_histories(seed: int = 12, n: int = 120) -> list[tuple[str, list[StoredFact], Any]]:
    """Seeded cases: a few claims written by the real writer, then one more claim to decide on."""
    rng, cases = random.Random(seed), []
    for index in range(n):
        attribute = rng.choice(sorted(VALUES))
        versions = {source: 0 for source, _ in SOURCES}

        def claim():
            source, kind = rng.choice(SOURCES)
            versions[source] += rng.choice([0, 1, 1, 2]) if versions[source] else 1  # sometimes a replay
            return Candidate("dana", "user", attribute, rng.choice(VALUES[attribute]), source, kind,
                             max(versions[source], 1))

        with FactMemory.open(":memory:") as memory:
            memory.write_many([claim() for _ in range(rng.randint(1, 5))])
            stored = [f for f in memory.store.read_facts("dana", (ACTIVE, CONFLICT, SUPERSEDED, INELIGIBLE))
                      if f.attribute == attribute]
        candidate = claim()
        cases.append((f"generated history {index}", stored, check_candidate(candidate)[0]))
    return cases


def _plan_summary(plan: Any) -> tuple:
    ids = lambda facts: sorted(f.id for f in facts or ())  # noqa: E731
    return (plan.outcome, getattr(plan.same, "id", None), ids(plan.replaced), ids(plan.rivals))


def _said(plan: Any) -> str:
    values = lambda facts: [f.value for f in facts or ()]  # noqa: E731
    same = getattr(plan.same, "value", None)
    return f"{plan.outcome} (same={same!r}, replaced={values(plan.replaced)}, rivals={values(plan.rivals)})"


def _judge_plan(label: str, got: Any, expected: Plan, stored: list[StoredFact], hint: str | None) -> None:
    if not all(hasattr(got, name) for name in ("outcome", "same", "replaced", "rivals")):  # any Plan class
        raise Hint(f"For {label}, my_decide returned {got!r:.80}; return a Plan, as decide does.")
    mine, wanted = _plan_summary(got), _plan_summary(expected)
    if mine == wanted:
        return
    lead = f"For {label}, my_decide said {_said(got)}; expected {_said(expected)}."
    if got.outcome == CORRECTION == expected.outcome and got.rivals:
        raise Hint(f"{lead} A correction leaves no rivals: the writer holds `rivals` in conflict and "
                   "supersedes `replaced`. Put every old value in replaced.")
    if expected.outcome == CORRECTION and got.outcome in (INSERT, CONFLICT) and hint is None:
        raise Hint(f"{lead} The old value must be superseded: return a CORRECTION plan with the rivals in "
                   "replaced.")
    if expected.outcome == CORRECTION == got.outcome and mine[1] != wanted[1]:
        raise Hint(f"{lead} Keep plan.same: it is the fact that already holds the new value (the writer "
                   "adds the source to it instead of inserting a copy).")
    if expected.outcome == CORRECTION == got.outcome and set(mine[2]) < set(wanted[2]):
        kept = [f.value for f in expected.replaced if f.id not in mine[2]]
        raise Hint(f"{lead} {kept} would stay live beside the new value. The customer's own older value is in "
                   "decide's plan.replaced, a tool's in plan.rivals: a correction supersedes both, "
                   "replaced = plan.replaced + plan.rivals.")
    if expected.outcome == CORRECTION == got.outcome:
        raise Hint(f"{lead} Supersede every other live value: plan.replaced and plan.rivals together.")
    raise Hint(f"{lead} {hint or 'Everything the rule does not cover is decided as decide decides it.'}")


def _check_rule(my_decide) -> str:
    if not callable(my_decide):
        raise Hint("my_decide should be a function: def my_decide(c, stored): ...")
    histories = generated_histories()
    for label, stored, candidate, hint in [*SCENARIOS, *((*case, None) for case in histories)]:
        try:
            got = my_decide(candidate, list(stored))
        except Exception as error:
            raise Hint(f"For {label}, my_decide raised {type(error).__name__}: {error}.") from None
        _judge_plan(label, got, reference_decide(candidate, list(stored)), stored, hint)
    return (f"{len(SCENARIOS)} scenarios and {len(histories)} generated histories: the customer's own new value "
            "for a preference corrects what a tool still backed; addresses, tools, assistant claims, repeats "
            "and replays are decided as before.")


exercise_3 = Exercise(
    "10.3", "a new rule in decide",
    stub=('USER_OWNED = {"delivery_window", "preferred_contact"}  # the customer\'s own preferences\n'
          '\n'
          '\n'
          'def my_decide(c, stored):\n'
          '    """decide, plus one rule: the customer\'s new value for a USER_OWNED attribute corrects every '
          'rival."""\n'
          '    plan = decide(c, stored)\n'
          '    return plan'),
    solution_code=('USER_OWNED = {"delivery_window", "preferred_contact"}  # the customer\'s own preferences\n'
                   '\n'
                   '\n'
                   'def my_decide(c, stored):\n'
                   '    plan = decide(c, stored)\n'
                   '    # decide says conflict only once replays, assistant claims and repeats are ruled out\n'
                   '    if plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED:\n'
                   '        return Plan(CORRECTION, "the customer decides", plan.same,\n'
                   '                    [*plan.replaced, *plan.rivals])\n'
                   '    return plan'),
    checker=_check_rule, answers=("my_decide",),
    hints=("Run my_decide on the CRM scenario above: which outcome does decide give, and which facts are in "
           "plan.rivals?",
           "When decide's plan is a conflict, the candidate comes from a user source and the attribute is in "
           "USER_OWNED, return Plan(CORRECTION, ..., plan.same, [*plan.replaced, *plan.rivals])."),
    context=lambda: {"decide": decide, "last_version": last_version, "Plan": Plan, "INSERT": INSERT,
                     "NOOP": NOOP, "CORRECTION": CORRECTION, "REJECTED": REJECTED, "CONFLICT": CONFLICT,
                     "ACTIVE": ACTIVE},
)

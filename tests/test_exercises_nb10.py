"""Notebook 10's exercise checks: phrases for the normaliser, a multi-valued attribute and a new rule in decide,
each judged by behaviour on worked and generated inputs; every plausible wrong answer gets its own hint, every
independently written right answer passes, and no verdict depends on the day or on the notebook's backend."""
import pytest
from exercise_support import defined, quiet_check, run

from helpers.llm import client as client_module
from helpers.exercises.nb10 import (SCENARIOS, exercise_1, exercise_2, exercise_3, generated_histories,
                                    gift_lists, said_phrases)
from helpers.facts.writer import AttributeSpec, decide, normalise_text

# ---------------------------------------------------------------- exercise 1: phrases for the normaliser

WRONG_PHRASES = {  # name: (my_phrases, the hint it must get)
    "empty": ({}, "at least one phrase"),
    "spelled as typed": ({"First thing!": "morning", "After dinner.": "evening"}, "add the key 'first thing'"),
    "windows swapped": ({"first thing": "evening", "after dinner": "morning"},
                        "maps 'first thing' to 'evening', but a customer who writes 'First thing!' means 'morning'"),
    "map turned around": ({"morning": "first thing", "evening": "after dinner"}, "(phrase -> window)"),
    "one phrase missing": ({"first thing": "morning"}, "add the key 'after dinner'"),
    "single words": ({"first": "morning", "dinner": "evening"}, "match the whole value"),
    "an old phrase redefined": ({"first thing": "morning", "after dinner": "evening", "evenings": "morning"},
                                "changes what 'evenings' means"),
    "a window in capitals": ({"first thing": "Morning", "after dinner": "evening"}, "is not a window"),
}
RIGHT_PHRASES = {
    "the solution": {"first thing": "morning", "after dinner": "evening"},
    "keys made by normalise_text": {normalise_text("First thing!"): "morning",
                                    normalise_text("After dinner."): "evening"},
    "more phrases than needed": {"first thing": "morning", "first thing in the morning": "morning",
                                 "after dinner": "evening", "after supper": "evening"},
}


@pytest.mark.parametrize("name", sorted(WRONG_PHRASES))
def test_wrong_phrases_get_their_specific_hint(name):
    phrases, hint = WRONG_PHRASES[name]
    passed, said = quiet_check(exercise_1, phrases)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_PHRASES))
def test_right_phrases_pass(name):
    passed, said = quiet_check(exercise_1, RIGHT_PHRASES[name])
    assert passed and "44 spellings" in said, said


def test_the_swapped_map_is_told_what_it_did_not_a_false_normalisation():
    passed, said = quiet_check(exercise_1, WRONG_PHRASES["windows swapped"][0])
    assert not passed and "normalises to 'evening'" not in said and "normalise_text('First thing!') = 'evening'" \
        not in said, said


def test_the_spellings_are_generated_and_varied():
    typed = [text for text, _ in said_phrases()]
    assert len(typed) == 44 and len(set(typed)) >= 20 and any(text.isupper() or "  " in text for text in typed)

# ---------------------------------------------------------------- exercise 2: a multi-valued attribute


def _spec(**settings):
    return AttributeSpec("gift_recipient", **settings)


WRONG_SPECS = {  # name: (gift_recipient, the hint it must get)
    "the stub": (_spec(description="someone the customer buys gifts for"), "set multi_valued=True"),
    "multi-valued only": (_spec(multi_valued=True), 'words={"sis": "sister"}'),
    "words only": (_spec(words={"sis": "sister"}), "set multi_valued=True"),
    "a phrase instead of a word": (_spec(multi_valued=True, phrases={"sis": "sister"}), "one word at a time"),
    "a word in capitals": (_spec(multi_valued=True, words={"Sis": "sister"}), "write it in lower case"),
    "a fixed list of people": (_spec(multi_valued=True, words={"sis": "sister"}, allowed=frozenset({"my sister"})),
                               "Leave allowed out"),
    "another name": (AttributeSpec("gift", multi_valued=True, words={"sis": "sister"}),
                     'AttributeSpec("gift_recipient"'),
    "the short word mapped elsewhere": (_spec(multi_valued=True, words={"sis": "sibling"}),
                                        "should be the same person"),
}
RIGHT_SPECS = {
    "the solution": _spec(multi_valued=True, words={"sis": "sister"}, description="gifts"),
    "the long word mapped to the short one": _spec(multi_valued=True, words={"sister": "sis"}),
    "more words than needed": _spec(multi_valued=True, words={"sis": "sister", "bro": "brother"}),
}


@pytest.mark.parametrize("name", sorted(WRONG_SPECS))
def test_a_wrong_attribute_gets_its_specific_hint(name):
    spec, hint = WRONG_SPECS[name]
    passed, said = quiet_check(exercise_2, spec)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_SPECS))
def test_a_right_attribute_passes(name):
    passed, said = quiet_check(exercise_2, RIGHT_SPECS[name])
    assert passed and f"{len(gift_lists())} lists of people" in said, said

# ---------------------------------------------------------------- exercise 3: a new rule in decide


HEAD = 'USER_OWNED = {"delivery_window", "preferred_contact"}\n\n'
WRAPPED = ("def my_decide(c, stored):\n"
           "    plan = decide(c, stored)\n"
           "    if {condition}:\n"
           "        return {plan}\n"
           "    return plan\n")
RULE = 'plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED'
CORRECTS = "Plan(CORRECTION, 'customer', plan.same, [*plan.replaced, *plan.rivals])"


def _wrapped(condition=RULE, plan=CORRECTS):
    return HEAD + WRAPPED.format(condition=condition, plan=plan)


WRONG_RULES = {  # name: (my_decide's cell, the hint it must get)
    "the stub": (exercise_3.stub, "is a correction, not a conflict"),
    "every attribute": (_wrapped('plan.outcome == CONFLICT and c.source_kind == "user"'),
                        "shipping_address is not in USER_OWNED"),
    "tools too": (_wrapped("plan.outcome == CONFLICT and c.attribute in USER_OWNED"), "A tool is not the customer"),
    "only the chat channel": (_wrapped('plan.outcome == CONFLICT and c.source_id.startswith("chat:") '
                                       "and c.attribute in USER_OWNED"), "Any source of kind 'user'"),
    "rivals left as rivals": (_wrapped(plan="Plan(CORRECTION, 'customer', plan.same, plan.replaced, plan.rivals)"),
                              "A correction leaves no rivals"),
    "only the rivals superseded": (_wrapped(plan="Plan(CORRECTION, 'customer', plan.same, plan.rivals)"),
                                   "would stay live beside the new value"),
    "only the rivals superseded, as a copy": (HEAD + (
        "from dataclasses import replace\n\n"
        "def my_decide(c, stored):\n"
        "    plan = decide(c, stored)\n"
        "    if plan.outcome == CONFLICT and c.source_kind == 'user' and c.attribute in USER_OWNED:\n"
        "        return replace(plan, outcome=CORRECTION, replaced=list(plan.rivals), rivals=[])\n"
        "    return plan\n"), "a correction supersedes both"),
    "an insert instead": (_wrapped(plan="Plan(INSERT, 'new', plan.same)"), "is a correction, not a conflict"),
    "same dropped": (_wrapped(plan="Plan(CORRECTION, 'customer', None, [*plan.replaced, *plan.rivals])"),
                     "Keep plan.same"),
    "the rule before the replay check": (HEAD + (
        "def my_decide(c, stored):\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if c.source_kind == 'user' and c.attribute in USER_OWNED and others \\\n"
        "            and not (same and c.source_id in same.supporters):\n"
        "        return Plan(CORRECTION, 'customer', same, others)\n"
        "    return decide(c, stored)\n"), "the replay rule comes first"),
    "every source but a tool": (HEAD + (
        "def my_decide(c, stored):\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    seen = last_version(c, stored)\n"
        "    if seen is not None and c.source_version <= seen:\n"
        "        return decide(c, stored)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if c.source_kind != 'tool' and c.attribute in USER_OWNED and others and same is None:\n"
        "        return Plan(CORRECTION, 'customer', same, others)\n"
        "    return decide(c, stored)\n"), "An assistant's claim is not evidence"),
    "the rule before the same-value check": (HEAD + (
        "def my_decide(c, stored):\n"
        "    seen = last_version(c, stored)\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if (seen is None or c.source_version > seen) and c.source_kind == 'user' \\\n"
        "            and c.attribute in USER_OWNED and others:\n"
        "        return Plan(CORRECTION, 'customer', same, others)\n"
        "    return decide(c, stored)\n"), "not a new value"),
}
RIGHT_RULES = {
    "the solution": exercise_3.solution_code,
    "decide rewritten with the rule in its place": HEAD + (
        "def my_decide(c, stored):\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    seen = last_version(c, stored)\n"
        "    if seen is not None and c.source_version <= seen:\n"
        "        return Plan(NOOP, 'replay' if c.source_version == seen else 'stale', same, seen=seen)\n"
        "    if c.source_kind == 'assistant':\n"
        "        return Plan(NOOP if same else REJECTED, 'assistant', same)\n"
        "    mine = [f for f in live if f is not same and c.source_id in f.supporters]\n"
        "    if same and c.source_id in same.supporters and not mine:\n"
        "        return Plan(NOOP, 'same value', same)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if c.source_kind == 'user' and c.attribute in USER_OWNED and others:\n"
        "        return Plan(CORRECTION, 'the customer decides', same, others)\n"
        "    replaced = [f for f in mine if f.supporters == {c.source_id}]\n"
        "    rivals = [f for f in live if f is not same and f.supporters != {c.source_id}]\n"
        "    if rivals:\n"
        "        return Plan(CONFLICT, 'conflict', same, replaced, rivals)\n"
        "    if replaced:\n"
        "        return Plan(CORRECTION, 'correction', same, replaced)\n"
        "    return Plan(INSERT, 'new', same)\n"),
    "a copy of the plan with its fields changed": HEAD + (
        "from dataclasses import replace\n\n"
        "def my_decide(c, stored):\n"
        "    plan = decide(c, stored)\n"
        "    if c.source_kind != 'user' or c.attribute not in USER_OWNED or plan.outcome != 'conflict':\n"
        "        return plan\n"
        "    return replace(plan, outcome='correction', rule='customer owns it',\n"
        "                   replaced=list(plan.replaced) + list(plan.rivals), rivals=())\n"),
}


@pytest.mark.parametrize("name", sorted(WRONG_RULES))
def test_a_wrong_rule_gets_its_specific_hint(name):
    code, hint = WRONG_RULES[name]
    passed, said = run(exercise_3, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_RULES))
def test_a_right_rule_passes(name):
    passed, said = run(exercise_3, RIGHT_RULES[name])
    assert passed and "generated histories" in said, said


def test_the_generated_histories_reach_the_rule_and_what_it_must_leave_alone():
    outcomes = {decide(c, stored).outcome for _, stored, c in generated_histories()}
    assert {"insert", "noop", "correction", "conflict", "rejected"} <= outcomes
    assert len(SCENARIOS) >= 7


def test_the_rule_is_checked_against_the_notebooks_own_decide():
    """In the notebook, decide and Plan come from the marked cell, not the package: plans of any Plan class count."""
    from dataclasses import dataclass

    @dataclass
    class Plan:  # the notebook's copy of the class
        outcome: str
        rule: str
        same: object = None
        replaced: tuple = ()
        rivals: tuple = ()
        seen: object = None

    def notebook_decide(c, stored):
        plan = decide(c, stored)
        return Plan(plan.outcome, plan.rule, plan.same, plan.replaced, plan.rivals, plan.seen)

    passed, said = run(exercise_3, exercise_3.solution_code, decide=notebook_decide, Plan=Plan)
    assert passed, said

# ---------------------------------------------------------------- any day, any backend


@pytest.mark.parametrize("now", ["2026-12-02T15:30:00+01:00", "2027-06-13T23:59:00-07:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (exercise_1, exercise_2, exercise_3):
        assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
        assert not quiet_check(exercise, *defined(exercise, exercise.stub))[0]


def test_checks_never_ask_the_notebooks_backend(monkeypatch):
    monkeypatch.setenv("WORKSHOP_BACKEND", "openai-compatible")
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "smollm2-135m-instruct")
    client_module.reset_default()
    try:
        for exercise in (exercise_1, exercise_2, exercise_3):
            assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
    finally:
        client_module.reset_default()

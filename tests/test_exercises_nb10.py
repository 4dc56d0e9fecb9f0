"""Notebook 10's exercise checks: a normaliser for rooms, merging a multi-valued attribute, a new rule in decide and
a question for the audit log, each judged by behaviour on worked and generated inputs; every plausible wrong answer
gets its own hint, every independently written right answer passes, and no verdict depends on the day or on the
notebook's backend."""
import pytest
from exercise_support import defined, quiet_check, run

from helpers.llm import client as client_module
from helpers.exercises.nb10 import (ATTRIBUTES, SCENARIOS, exercise_1, exercise_2, exercise_3, exercise_4,
                                    generated_histories, generated_stores, merge_cases, room_spellings, worked_store)
from helpers.facts.writer import decide

# ---------------------------------------------------------------- exercise 1: a normaliser for rooms

ROOM = "def normalise_room(value):\n{body}\n"
WRONG_ROOMS = {  # name: (normalise_room's cell, the hint it must get)
    "the stub": (exercise_1.stub, "drop it, so only the letter and the number are left"),
    "lower case only": (ROOM.format(body="    return value.lower()"), "one room, two identities"),
    "the hyphen dropped, the word kept": (ROOM.format(body="    return value.lower().replace('-', '')"),
                                          "one room, two identities"),
    "the digits only": (ROOM.format(body="    return ''.join(ch for ch in value if ch.isdigit())"),
                        "are different rooms, yet both"),
    "the word room dropped, not rm": (ROOM.format(body="    return normalise_text(value).replace('room', '')"
                                                       ".replace(' ', '')"), "'room' or 'rm'"),
    "spaces kept": (ROOM.format(body="    words = normalise_text(value).split()\n"
                                     "    return ' '.join(w for w in words if w not in ('room', 'rm'))"),
                    "differ only in spaces"),
    "letters and digits, word and all": (ROOM.format(body="    return ''.join(ch for ch in value.lower() "
                                                          "if ch.isalnum())"), "'room' or 'rm'"),
    "the first three digits": ("import re\n\n" + ROOM.format(
        body="    m = re.search(r'([a-z])\\W*(\\d{1,3})', value.lower())\n    return m.group(1) + m.group(2)"),
        "are different rooms, yet both"),
    "no answer": (ROOM.format(body="    pass"), "return a non-empty string"),
    "a regular expression that misses a spelling": ("import re\n\n" + ROOM.format(
        body="    return ''.join(re.fullmatch(r'(?:room |rm\\. )?([a-z])-?(\\d+)', value.lower()).group(1, 2))"),
        "raised AttributeError"),
}
RIGHT_ROOMS = {
    "the solution": exercise_1.solution_code,
    "a regular expression for the letter and the number": "import re\n\n" + ROOM.format(
        body="    found = re.search(r'\\b([a-z])\\W*(\\d+)\\b', value.lower().replace('room', ' ').replace('rm', ' '))\n"
             "    return (found.group(1) + found.group(2)).upper()"),
    "letters and digits after the word": ROOM.format(
        body="    text = ''.join(ch for ch in value.lower() if ch.isalnum())\n"
             "    for word in ('room', 'rm'):\n"
             "        text = text.removeprefix(word)\n"
             "    return text"),
}


@pytest.mark.parametrize("name", sorted(WRONG_ROOMS))
def test_a_wrong_normaliser_gets_its_specific_hint(name):
    code, hint = WRONG_ROOMS[name]
    passed, said = run(exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_ROOMS))
def test_a_right_normaliser_passes(name):
    passed, said = run(exercise_1, RIGHT_ROOMS[name])
    assert passed and "not shown to you" in said, said


def test_the_spellings_include_ones_the_prompt_does_not_show():
    typed = [text for text, _ in room_spellings()]
    shown = {"B-214", "b214", "rm. B 214", "Room B-214"}
    assert len(set(typed)) == len(typed) and any("#" in t or "\u2013" in t or "!" in t for t in typed)
    assert not shown >= set(typed)

# ---------------------------------------------------------------- exercise 2: merging a multi-valued attribute


MERGE = "def merge_courses(schedule, said):\n{body}\n"
WRONG_MERGES = {  # name: (merge_courses's cell, the hint it must get)
    "the stub": (exercise_2.stub, "never replaces them"),
    "both lists end to end": (MERGE.format(body="    return schedule + said"), "once on file and once named"),
    "a set of spellings": (MERGE.format(body="    return list(dict.fromkeys(schedule + said))"), "are one course"),
    "compared with the schedule only": (MERGE.format(
        body="    keys = {normalise_text(c) for c in schedule}\n"
             "    return schedule + [c for c in said if normalise_text(c) not in keys]"), "in one message"),
    "lower case instead of the normaliser": (MERGE.format(
        body="    result = list(schedule)\n"
             "    for c in said:\n"
             "        if c.lower() not in [r.lower() for r in result]:\n"
             "            result.append(c)\n"
             "    return result"), "normalise_text makes both"),
    "the new spelling wins": (MERGE.format(
        body="    merged = {normalise_text(c): c for c in schedule + said}\n    return list(merged.values())"),
        "keep the stored value"),
    "only what is new": (MERGE.format(
        body="    keys = {normalise_text(c) for c in schedule}\n"
             "    return [c for c in said if normalise_text(c) not in keys]"), "never replaces them"),
    "a set back": (MERGE.format(body="    return {normalise_text(c) for c in schedule + said}"),
                   "return a list of course names"),
}
RIGHT_MERGES = {
    "the solution": exercise_2.solution_code,
    "a dict keyed by identity, the first spelling kept": MERGE.format(
        body="    by_key = {}\n"
             "    for course in [*schedule, *said]:\n"
             "        by_key.setdefault(normalise_text(course), course)\n"
             "    return list(by_key.values())"),
    "a loop over the growing result": MERGE.format(
        body="    result = list(schedule)\n"
             "    for course in said:\n"
             "        if all(normalise_text(course) != normalise_text(kept) for kept in result):\n"
             "            result.append(course)\n"
             "    return result"),
}


@pytest.mark.parametrize("name", sorted(WRONG_MERGES))
def test_a_wrong_merge_gets_its_specific_hint(name):
    code, hint = WRONG_MERGES[name]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_MERGES))
def test_a_right_merge_passes(name):
    passed, said = run(exercise_2, RIGHT_MERGES[name])
    assert passed and f"{len(merge_cases())} schedules" in said, said


def test_the_merge_cases_hold_repeats_in_other_spellings():
    from helpers.facts.schema import normalise_text
    cases = merge_cases()
    assert any(len({normalise_text(c) for c in said}) < len(said) for _, said in cases)
    assert any({normalise_text(c) for c in said} & {normalise_text(c) for c in schedule} for schedule, said in cases)

# ---------------------------------------------------------------- exercise 4: a question for the audit log


AUDIT = "def no_turn(memory, user_id):\n{body}\n"
WRONG_AUDITS = {  # name: (no_turn's cell, the hint it must get)
    "the stub": (exercise_4.stub, "tools alone put it there"),
    "every current fact": (AUDIT.format(body="    return memory.active_facts(user_id)"),
                           "so the student stated it"),
    "matched by value, not by fact": (AUDIT.format(
        body="    said = {(e.attribute, e.value) for e in memory.audit(user_id) if e.source_kind == 'user'}\n"
             "    return [f for f in memory.active_facts(user_id) if (f.attribute, f.value) not in said]"),
        "the value is spelled as each source said it"),
    "every source but a tool": (AUDIT.format(
        body="    said = {e.fact_id for e in memory.audit(user_id) if e.source_kind != 'tool'}\n"
             "    return [f for f in memory.active_facts(user_id) if f.id not in said]"), "An assistant's proposal"),
    "a reviewer counted as the student": (AUDIT.format(
        body="    said = {e.fact_id for e in memory.audit(user_id) if e.source_kind in ('user', 'reviewer')}\n"
             "    return [f for f in memory.active_facts(user_id) if f.id not in said]"), "A reviewer settled"),
    "superseded facts too": (AUDIT.format(
        body="    rows = memory.audit(user_id)\n"
             "    said = {e.fact_id for e in rows if e.source_kind == 'user'}\n"
             "    facts = memory.store.read_facts(user_id, ('active', 'superseded'))\n"
             "    return [f for f in facts if f.id not in said]"), "not current"),
    "conflicts too": (AUDIT.format(
        body="    said = {e.fact_id for e in memory.audit(user_id) if e.source_kind == 'user'}\n"
             "    facts = memory.active_facts(user_id) + memory.conflicts(user_id)\n"
             "    return [f for f in facts if f.id not in said]"), "not current"),
    "audit row ids": (AUDIT.format(
        body="    return [e.id for e in memory.audit(user_id) if e.source_kind == 'tool' and e.outcome == 'insert']"),
        "not their values, ids or audit rows"),
    "the values": (AUDIT.format(
        body="    said = {e.fact_id for e in memory.audit(user_id) if e.source_kind == 'user'}\n"
             "    return [f.value for f in memory.active_facts(user_id) if f.id not in said]"),
        "not their values, ids or audit rows"),
}
RIGHT_AUDITS = {
    "the solution": exercise_4.solution_code,
    "the rows of each fact, one fact at a time": AUDIT.format(
        body="    rows = memory.audit(user_id)\n"
             "    found = []\n"
             "    for fact in memory.active_facts(user_id):\n"
             "        mine = [e for e in rows if e.fact_id == fact.id and e.outcome not in ('noop', 'rejected')]\n"
             "        if not any(e.source_kind == 'user' for e in mine):\n"
             "            found.append(fact)\n"
             "    return found"),
    "from the provenance, withdrawn support included": AUDIT.format(
        body="    return [f for f in memory.active_facts(user_id)\n"
             "            if not any(p.source_kind == 'user' for p in f.provenance)]"),
}


@pytest.mark.parametrize("name", sorted(WRONG_AUDITS))
def test_a_wrong_audit_question_gets_its_specific_hint(name):
    code, hint = WRONG_AUDITS[name]
    passed, said = run(exercise_4, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_AUDITS))
def test_a_right_audit_question_passes(name):
    passed, said = run(exercise_4, RIGHT_AUDITS[name])
    assert passed and "4 current facts rest on no statement of Sam" in said, said


def test_the_stores_hold_facts_with_and_without_a_turn():
    with worked_store() as memory:
        kinds = {e.source_kind for e in memory.audit("sam")}
        assert {"user", "tool", "assistant", "reviewer"} <= kinds
    stores = generated_stores()
    try:
        assert any(not any(p.source_kind == "user" for p in f.provenance)
                   for memory in stores for f in memory.active_facts("sam"))
        assert any(any(p.source_kind == "user" for p in f.provenance)
                   for memory in stores for f in memory.active_facts("sam"))
    finally:
        for memory in stores:
            memory.close()

# ---------------------------------------------------------------- exercise 3: a new rule in decide


HEAD = 'USER_OWNED = {"class_time", "preferred_contact"}\n\n'
WRAPPED = ("def my_decide(c, stored):\n"
           "    plan = decide(c, stored)\n"
           "    if {condition}:\n"
           "        return {plan}\n"
           "    return plan\n")
RULE = 'plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED'
CORRECTS = "Plan(CORRECTION, 'student', plan.same, [*plan.replaced, *plan.rivals])"


def _wrapped(condition=RULE, plan=CORRECTS):
    return HEAD + WRAPPED.format(condition=condition, plan=plan)


WRONG_RULES = {  # name: (my_decide's cell, the hint it must get)
    "the stub": (exercise_3.stub, "is a correction, not a conflict"),
    "every attribute": (_wrapped('plan.outcome == CONFLICT and c.source_kind == "user"'),
                        "advisor is not in USER_OWNED"),
    "tools too": (_wrapped("plan.outcome == CONFLICT and c.attribute in USER_OWNED"), "A tool is not the student"),
    "only the chat channel": (_wrapped('plan.outcome == CONFLICT and c.source_id.startswith("chat:") '
                                       "and c.attribute in USER_OWNED"), "Any source of kind 'user'"),
    "rivals left as rivals": (_wrapped(plan="Plan(CORRECTION, 'student', plan.same, plan.replaced, plan.rivals)"),
                              "A correction leaves no rivals"),
    "only the rivals superseded": (_wrapped(plan="Plan(CORRECTION, 'student', plan.same, plan.rivals)"),
                                   "would stay live beside the new value"),
    "only the rivals superseded, as a copy": (HEAD + (
        "from dataclasses import replace\n\n"
        "def my_decide(c, stored):\n"
        "    plan = decide(c, stored)\n"
        "    if plan.outcome == CONFLICT and c.source_kind == 'user' and c.attribute in USER_OWNED:\n"
        "        return replace(plan, outcome=CORRECTION, replaced=list(plan.rivals), rivals=[])\n"
        "    return plan\n"), "a correction supersedes both"),
    "an insert instead": (_wrapped(plan="Plan(INSERT, 'new', plan.same)"), "is a correction, not a conflict"),
    "same dropped": (_wrapped(plan="Plan(CORRECTION, 'student', None, [*plan.replaced, *plan.rivals])"),
                     "Keep plan.same"),
    "the rule before the replay check": (HEAD + (
        "def my_decide(c, stored):\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if c.source_kind == 'user' and c.attribute in USER_OWNED and others \\\n"
        "            and not (same and c.source_id in same.supporters):\n"
        "        return Plan(CORRECTION, 'student', same, others)\n"
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
        "        return Plan(CORRECTION, 'student', same, others)\n"
        "    return decide(c, stored)\n"), "An assistant's claim is not evidence"),
    "the rule before the same-value check": (HEAD + (
        "def my_decide(c, stored):\n"
        "    seen = last_version(c, stored)\n"
        "    live = [f for f in stored if f.status in (ACTIVE, CONFLICT)]\n"
        "    same = next((f for f in live if f.value_key == c.value_key), None)\n"
        "    others = [f for f in live if f is not same]\n"
        "    if (seen is None or c.source_version > seen) and c.source_kind == 'user' \\\n"
        "            and c.attribute in USER_OWNED and others:\n"
        "        return Plan(CORRECTION, 'student', same, others)\n"
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
        "        return Plan(CORRECTION, 'the student decides', same, others)\n"
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
        "    return replace(plan, outcome='correction', rule='student owns it',\n"
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
    for exercise in (exercise_1, exercise_2, exercise_3, exercise_4):
        assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
        assert not quiet_check(exercise, *defined(exercise, exercise.stub))[0]


def test_checks_never_ask_the_notebooks_backend(monkeypatch):
    monkeypatch.setenv("WORKSHOP_BACKEND", "openai-compatible")
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "smollm2-135m-instruct")
    client_module.reset_default()
    try:
        for exercise in (exercise_1, exercise_2, exercise_3, exercise_4):
            assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
    finally:
        client_module.reset_default()


def test_the_checks_keep_the_students_attributes_the_notebook_defines():
    """The notebook's STUDENT table (section 2) and the checks' ATTRIBUTES describe Sam the same way."""
    import contextlib
    import io
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "10_durable_memory.ipynb"
    cell = next("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                if c["cell_type"] == "code" and "STUDENT = {" in "".join(c["source"]))
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(cell, "<notebook 10, section 2>", "exec"), namespace)  # noqa: S102 - the notebook's own cell
    assert namespace["STUDENT"] and {name: ATTRIBUTES[name] for name in namespace["STUDENT"]} == namespace["STUDENT"]

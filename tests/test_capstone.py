"""Notebook 12's exercises: each check fails on its stub and passes on its solution on any day, and checks
what it says it checks (the tight budget really loses evidence with the default shares; a wrong answer of
each kind gets a hint)."""
import pytest
from exercise_support import run

from helpers.exercises import nb12, nb12_replay
from helpers.memory.budget import DEFAULT_SHARES, Shares

OTHER_DAYS = ("2026-12-02T15:00:00-08:00",   # a Wednesday afternoon in Los Angeles
              "2027-06-19T23:30:00+02:00")   # a Saturday night in another zone, half a year on


# exercise 1 records a whole conversation per day (a few seconds), so it is tried on one other day only
DAYS_PER_EXERCISE = [("exercise_1", OTHER_DAYS[0])] + [(key, now) for key in ("exercise_2", "exercise_3")
                                                        for now in OTHER_DAYS]


@pytest.mark.parametrize("key,now", DAYS_PER_EXERCISE)
def test_checks_do_not_depend_on_the_day(key, now, monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    nb12_replay.recorded_questions.cache_clear()  # record exercise 1's conversation again, on this day
    exercise = getattr(nb12, key)
    try:
        assert not run(exercise, exercise.stub)[0]
        passed, said = run(exercise, exercise.solution_code)
        assert passed, said
    finally:
        nb12_replay.recorded_questions.cache_clear()


def test_the_tight_budget_loses_evidence_with_the_default_shares():
    at_budget = nb12_replay.replay_shares(DEFAULT_SHARES, nb12_replay.BUDGET)
    tight = nb12_replay.replay_shares(DEFAULT_SHARES, nb12_replay.TIGHT_BUDGET)
    assert at_budget.questions >= 8 and at_budget.hits == at_budget.questions
    assert tight.hits < at_budget.hits / 2


def test_shares_that_starve_the_profile_get_a_hint():
    passed, said = run(nb12.exercise_1, "my_shares = Shares(profile=0.0, summary=0.5, recall=0.1)")
    assert not passed and "larger share" in said
    passed, said = run(nb12.exercise_1, "my_shares = 0.6")
    assert not passed and "must be a Shares" in said
    assert Shares(profile=0.6, summary=0.0, recall=0.2) != DEFAULT_SHARES


NEW_FACT_MISTAKES = {
    "the whole clause as the value": (
        'def my_extractor(text):\n'
        '    items = extract_with_rules(text)\n'
        '    m = re.search(r"I live in (.+)", text)\n'
        '    return items + ([{"key": "residence", "topic": "residence", "value": m.group(1)}] if m else [])',
        "leave out the words around the place"),
    "questions extracted": (
        'def my_extractor(text):\n'
        '    items = extract_with_rules(text)\n'
        '    m = re.search(r"I live in ([^,.;!?]+?)(?:\\s+now)?(?=[,.;!?]|$)", text)\n'
        '    return items + ([{"key": "residence", "topic": "residence", "value": m.group(1)}] if m else [])',
        "is not the user saying where they live"),
    "built-in rules dropped": (
        'def my_extractor(text):\n'
        '    m = re.search(r"\\bI live in ([^,.;!?]+?)(?:\\s+now)?(?=[,.;!?]|$)", text)\n'
        '    ok = m and not is_question(text)\n'
        '    return [{"key": "residence", "topic": "residence", "value": m.group(1)}] if ok else []',
        "built-in facts went missing"),
}


@pytest.mark.parametrize("mistake", sorted(NEW_FACT_MISTAKES))
def test_a_new_fact_extractor_with_a_mistake_gets_its_hint(mistake):
    code, hint = NEW_FACT_MISTAKES[mistake]
    passed, said = run(nb12.exercise_2, code)
    assert not passed and hint in said, said


def test_a_check_that_ignores_the_superseded_mark_is_caught():
    code = ('def unmarked_old_values(messages, old_values):\n'
            '    lines = [l for m in messages for l in str(m.get("content") or "").splitlines()]\n'
            '    return [l for l in lines if any(o.lower() in l.lower() for o in old_values)]')
    passed, said = run(nb12.exercise_3, code)
    assert not passed and "says 'superseded'" in said, said


def test_a_check_that_misses_tool_call_arguments_is_caught():
    code = ('def unmarked_old_values(messages, old_values):\n'
            '    lines = [l for m in messages for l in str(m.get("content") or "").splitlines()]\n'
            '    return [l for l in lines if "superseded" not in l.lower()\n'
            '            and any(o.lower() in l.lower() for o in old_values)]')
    passed, said = run(nb12.exercise_3, code)
    assert not passed and "arguments" in said, said

"""Notebook 09's exercise checks: the strictest recall threshold really is the strictest, a correction is
followed from the fact store to the answer, and no verdict depends on the day."""
import pytest
from exercise_support import defined, quiet_check

from helpers.exercises.nb09 import exercise_1, exercise_2, finds_every_fact, follow_correction


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2026-12-02T23:30:00-08:00",
                                 "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    assert quiet_check(exercise_1, defined(exercise_1, exercise_1.solution_code)[0])[0] and not quiet_check(exercise_1, 0.90)[0]
    assert quiet_check(exercise_2, "Actually, my advisor is now Dr. Okafor.")[0]
    assert not quiet_check(exercise_2, "I switched advisors.")[0]


def test_the_threshold_check_wants_the_strictest_value():
    strictest = defined(exercise_1, exercise_1.solution_code)[0]
    assert finds_every_fact(strictest) and not finds_every_fact(round(strictest + 0.01, 2))
    passed, said = quiet_check(exercise_1, round(strictest - 0.01, 2))
    assert not passed and "raise it" in said
    passed, said = quiet_check(exercise_1, round(strictest + 0.01, 2))
    assert not passed and "Lower the threshold" in said
    for wrong in (1.5, "0.3", 0.305):
        assert not quiet_check(exercise_1, wrong)[0]


@pytest.mark.parametrize("sentence,expected", [
    ("I switched advisors.", "no statement"),
    ("My new advisor is Dr. Okafor.", "new attribute ('new advisor')"),
    ("My advisor is Dr. Varga.", "'noop'"),
    ("My advisor is not Dr. Varga anymore.", "correction to 'not Dr. Varga'"),
])
def test_a_correction_that_is_not_one_gets_a_specific_hint(sentence, expected):
    passed, said = quiet_check(exercise_2, sentence)
    assert not passed and expected in said, said


def test_a_correction_travels_from_the_store_to_the_answer():
    result = follow_correction("My advisor is Dr. Okafor.")
    assert [(d.outcome, d.attribute, d.value) for d in result["decisions"]] == [
        ("correction", "advisor", "Dr. Okafor")]
    assert result["profile"][0].startswith('- advisor: Dr. Okafor (turn 3') and 'superseded "Dr. Varga"' in \
        result["profile"][0]
    quoted = [line for block in result["blocks"] for line in block.splitlines() if "Varga" in line]
    assert quoted and all("superseded" in line for line in quoted)
    assert "Okafor" in result["answer"] and "Varga" not in result["answer"]

"""Notebook 08's exercise checks: the smallest budget really is the smallest, pins must be the student's own
short words and must keep what the extractive summary loses, and no verdict depends on the day."""
import pytest
from exercise_support import defined, quiet_check

from helpers.exercises.nb08 import exercise_1, exercise_2, keeps_the_fact


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2026-12-02T23:30:00-08:00",
                                 "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    smallest = defined(exercise_1, exercise_1.solution_code)[0]
    assert quiet_check(exercise_1, smallest)[0] and not quiet_check(exercise_1, smallest - 1)[0]
    assert quiet_check(exercise_2, ["data science", "120 dollars"])[0]
    assert not quiet_check(exercise_2, [])[0]


def test_the_smallest_budget_is_checked_for_minimality():
    smallest = defined(exercise_1, exercise_1.solution_code)[0]
    assert keeps_the_fact(smallest) and not keeps_the_fact(smallest - 1)
    passed, said = quiet_check(exercise_1, smallest + 1)
    assert not passed and f"so does {smallest}" in said
    passed, said = quiet_check(exercise_1, 1800)
    assert not passed and "so does 1799" in said
    passed, said = quiet_check(exercise_1, smallest - 1)
    assert not passed and "Go higher" in said
    passed, said = quiet_check(exercise_1, 500)
    assert not passed and "nothing is sent" in said
    assert not quiet_check(exercise_1, True)[0] and not quiet_check(exercise_1, "1800")[0]


def test_pins_must_be_short_and_in_the_students_words():
    passed, said = quiet_check(exercise_2, ["200 dollars", "data science"])
    assert not passed and "not word for word" in said
    passed, said = quiet_check(exercise_2, ["My textbook budget is 120 dollars.", "I study data science."])
    assert passed, said
    passed, said = quiet_check(exercise_2, ["Hi! My name is Priya Raman. I study data science."])
    assert not passed and "whole sentence" in said
    passed, said = quiet_check(exercise_2, ["120 dollars"])
    assert not passed and "'data science'" in said
    assert not quiet_check(exercise_2, "120 dollars")[0]

"""Notebook 07's exercise checks: the smallest window really is the smallest, the safe cut is checked for
validity, size and gaps, and neither check depends on the day it runs."""
import pytest
from exercise_support import quiet_check

from helpers.exercises.nb07 import exercise_1, exercise_2, remembered_questions
from helpers.history import split_turns


def _solution(exercise):
    namespace = {"split_turns": split_turns}
    exec(exercise.solution_code, namespace)  # noqa: S102 - the package's own solution
    return namespace


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2026-12-02T23:30:00-08:00",
                                 "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    assert quiet_check(exercise_1, _solution(exercise_1)["my_max_turns"])[0]
    assert quiet_check(exercise_2, _solution(exercise_2)["safe_cut"])[0]
    stub = {}
    exec(exercise_2.stub, stub)  # noqa: S102
    assert not quiet_check(exercise_2, stub["safe_cut"])[0]


def test_a_window_that_works_but_is_not_the_smallest_fails():
    passed, said = quiet_check(exercise_1, 4)
    assert not passed and "so does 3" in said
    assert not quiet_check(exercise_1, 2)[0] and not quiet_check(exercise_1, None)[0]
    assert quiet_check(exercise_1, 3)[0]


def test_the_window_check_counts_turns_as_the_session_does():
    assert remembered_questions(2) == ["And when are the faculty office hours?", "Where can I print a poster?"]
    assert len(remembered_questions(3)) == 3


def test_a_cut_that_skips_a_turn_and_keeps_an_older_one_fails():
    def with_a_gap(messages, n):
        system, turns = split_turns(messages)
        kept = []
        for turn in reversed(turns):
            if len(kept) + len(turn) <= n:  # does not stop at the first turn that does not fit
                kept = turn + kept
        return system + kept

    passed, said = quiet_check(exercise_2, with_a_gap)
    assert not passed and "gap" in said


def test_a_cut_that_keeps_too_little_fails():
    passed, said = quiet_check(exercise_2, lambda messages, n: messages[:1])
    assert not passed and "whole turns that fit" in said

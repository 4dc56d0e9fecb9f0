"""Notebook 11's exercise checks: a branch is cut by turn id (not by position), a retry stores each question
once and gives up after its tries, and neither check depends on the day it runs."""
import pytest
from exercise_support import defined, quiet_check

from helpers.client import EndpointError
from helpers.exercises.nb11 import exercise_1, exercise_2, offline_client


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2026-12-02T10:00:00-08:00",
                                 "2026-12-03T19:30:00-08:00", "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (exercise_1, exercise_2):
        assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
        assert not quiet_check(exercise, *defined(exercise, exercise.stub))[0]


def test_a_branch_cut_by_position_fails_after_an_undo():
    def by_position(session, question, new_session_id):
        position = [t.question for t in session.turns].index(question)
        return session.fork(position, new_session_id)

    passed, said = quiet_check(exercise_1, by_position)
    assert not passed and "never reused" in said


def test_a_fork_helper_that_changes_the_original_fails():
    def undo_then_fork(session, question, new_session_id):
        asked = next(t for t in session.turns if t.question == question)
        session.undo()
        return session.fork(asked.turn_id, new_session_id)

    passed, said = quiet_check(exercise_1, undo_then_fork)
    assert not passed and "original session changed" in said


def test_a_retry_that_swallows_the_last_failure_fails():
    def swallow(session, text, tries=3):
        for _ in range(tries):
            try:
                return session.chat(text)
            except EndpointError:
                pass
        return None

    passed, said = quiet_check(exercise_2, swallow)
    assert not passed and "must raise" in said


def test_a_retry_that_makes_one_attempt_too_many_fails():
    def one_more(session, text, tries=3):
        for attempt in range(tries + 1):
            try:
                return session.chat(text)
            except EndpointError:
                if attempt == tries:
                    raise

    passed, said = quiet_check(exercise_2, one_more)
    assert not passed and "exactly `tries` attempts" in said


def test_the_flaky_client_fails_exactly_the_requests_asked_for():
    client = offline_client(lambda n: n == 2)
    client.models.list()
    with pytest.raises(Exception):
        client.models.list()
    client.models.list()
    assert client.requests_seen["n"] == 3

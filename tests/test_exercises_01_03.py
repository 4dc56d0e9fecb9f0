"""The exercises of notebooks 01-03: each wrong answer gets the hint about its own mistake, and the
checks pass on any day (they never read the clock)."""
import pytest
from exercise_support import run

from helpers.exercises import nb01, nb02, nb03

EXERCISES = [nb01.exercise_1, nb01.exercise_2, nb02.exercise_1, nb02.exercise_2, nb03.exercise_1, nb03.exercise_2]


@pytest.mark.parametrize("when", ["2026-12-02T15:30:00-08:00", "2027-06-05T23:59:00+02:00"])
@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_solutions_pass_and_stubs_fail_on_another_day(exercise, when, monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", when)  # a Wednesday afternoon, a Saturday night
    assert run(exercise, exercise.solution_code)[1].startswith("✓")
    assert run(exercise, exercise.stub)[1].startswith("✗")


def test_join_stream_that_reads_the_usage_chunk_is_told_to_skip_it():
    code = "def join_stream(stream):\n    return ''.join(c.choices[0].delta.content or '' for c in stream)"
    assert "choices list is empty" in run(nb01.exercise_2, code)[1]


def test_join_stream_that_adds_none_is_told_some_chunks_carry_no_text():
    code = ("def join_stream(stream):\n    text = ''\n    for c in stream:\n        if c.choices:\n"
            "            text += c.choices[0].delta.content\n    return text")
    assert "carry no text" in run(nb01.exercise_2, code)[1]


def test_a_threshold_that_drops_answerable_questions_is_too_strict():
    assert "too strict" in run(nb02.exercise_1, "my_threshold = 0.5")[1]


def test_an_entry_that_takes_over_an_existing_question_is_refused():
    code = ('my_entry = Entry(id="club-ai-two", title="AI Club meeting day", '
            'text="The AI Club meets every Monday. When does the AI club meet? On Mondays.")\n'
            'my_question = "When does the AI club meet on Mondays?"')
    said = run(nb02.exercise_2, code)[1]
    assert said.startswith("✗") and "now wins the existing question" in said


def test_an_entry_whose_id_is_taken_is_refused():
    code = 'my_entry = Entry(id="club-ai", title="AI", text="Robots.")\nmy_question = "Robots?"'
    assert "already used by" in run(nb02.exercise_2, code)[1]


def test_an_approved_answer_that_does_not_say_when_is_not_enough():
    said = run(nb03.exercise_1, 'my_answer = "Office hours are held in Halvorsen Hall [office-hours-cs]."')[1]
    assert said.startswith("✗") and "say the day and the time" in said


def test_a_scope_expectation_the_rule_disagrees_with_gets_the_verdict():
    code = ('my_requests = {"Where is the library?": "off_topic", "Tell me a joke": "off_topic", '
            '"How do I steal a bike?": "unsafe", "When is the chess club?": "campus"}')
    said = run(nb03.exercise_2, code)[1]
    assert said.startswith("✗") and "'Where is the library?' was classified campus" in said

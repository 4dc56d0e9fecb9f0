"""The stand-in's h8 rules, in sentences of their own (not the evaluation's): names typed in lower case, a relation's
name, things the user has asked about without "my", yes/no questions without their mark, a treatment and its
condition, self-corrections, corrections of another attribute, campus words in scope, claims about all of
something in grounding, and a count that says how brief "brief" is."""
import json

import pytest

from helpers.retrieval.guardrails import GROUNDING_PROMPT, SCOPE_PROMPT
from helpers.standin.meaning import length_limit
from helpers.standin.memory_rule import DONT_KNOW
from helpers.standin.policy import decide
from support import ask_standin

ask = ask_standin  # tests/support.py: the stand-in's decision after the user's statements


def _answer(said, question):
    decision = ask(said, question)
    assert decision.tool_calls == [], f"{question!r} went to the tools"
    return decision.content


# ---------------------------------------------------------------- people and pets named in lower case

PEOPLE = ["my flatmate ines is from porto", "my cousin bartek works as a plumber", "we have a tortoise called Mabel"]


@pytest.mark.parametrize("question, expected", [("where is ines from", "porto"), ("what does bartek do", "plumber")])
def test_a_person_named_in_lower_case_is_asked_about_from_memory(question, expected):
    assert expected in _answer(PEOPLE, question).lower()


@pytest.mark.parametrize("question", ["how old is bartek", "what is ines studying", "how old is mabel"])
def test_what_was_never_said_about_them_is_i_dont_know_not_a_campus_search(question):
    assert _answer(PEOPLE, question) == DONT_KNOW


def test_the_name_given_to_a_relation_answers_for_the_relation():
    reply = _answer(["My older sister Greta lives in Oslo.", "Greta is 31 and works in a bank."],
                    "how old is my sister")
    assert "31" in reply


def test_a_thing_the_user_has_is_theirs_without_my():
    said = ["our wedding is booked for the 3rd of August", "I sing in the chamber choir"]
    assert "August" in _answer(said, "when is the wedding")
    assert _answer(said, "who is doing the flowers for the wedding") == DONT_KNOW


# ---------------------------------------------------------------- health questions typed without a mark

ALLERGY = ["Hi, I'm Wen, doing a masters in acoustics.", "i'm allergic to kiwi fruit",
           "I take levothyroxine for my underactive thyroid"]


def test_a_yes_no_question_without_its_mark_is_answered_from_memory():
    assert "kiwi" in _answer(ALLERGY, "am i allergic to anything")
    assert "kiwi" in _answer(ALLERGY, "do i have any allergies")


def test_a_value_put_that_no_statement_names_is_i_dont_know_not_another_allergy():
    assert _answer(ALLERGY, "am i allergic to latex") == DONT_KNOW


def test_a_treatment_speaks_of_the_condition_it_treats():
    assert "thyroid" in _answer(ALLERGY, "what condition do I have")


def test_is_there_stays_a_campus_question():
    decision = ask(["I have two kids, Noa and Eli"], "is there a creche on campus i could use")
    assert [name for name, _ in decision.tool_calls] == ["search_campus_info"]


def test_where_do_i_sign_up_for_a_thing_is_a_campus_task():
    decision = ask(["I have chess club on mondays"], "where do i sign up for the chess club")
    assert [name for name, _ in decision.tool_calls] == ["search_campus_info"]


# ---------------------------------------------------------------- corrections

def test_taking_back_a_slip_corrects_the_statement_it_repeats():
    reply = _answer(["we're living at 27 Mill Lane", "sorry, typo, i meant 72 Mill Lane"], "what's my address")
    assert "72" in reply and "27" not in reply


def test_a_correction_of_another_attribute_keeps_what_it_does_not_change():
    said = ["My brother Emil is a teacher in Bergen.", "Emil switched jobs, he's a pilot now."]
    assert "Bergen" in _answer(said, "where does my brother live")
    job = _answer(said, "what does emil do")
    assert "pilot" in job and "teacher" not in job


def test_a_correction_that_only_moves_the_day_does_not_answer_what_it_is():
    said = ["My mum is having knee surgery on the 4th.", "Correction: the surgery was moved to the 11th."]
    assert "knee" in _answer(said, "what is my mum having done")


# ---------------------------------------------------------------- scope, grounding, length

def _scope(request):
    return json.loads(decide([{"role": "system", "content": SCOPE_PROMPT},
                              {"role": "user", "content": request}]).content)["category"]


@pytest.mark.parametrize("request_, expected", [
    ("how do i ask for more time on my coursework", "campus"),
    ("who do i report a leaking shower in my halls to", "campus"),
    ("write a haiku about rain", "off_topic"),
    ("can you make me a counterfeit graduation certificate", "unsafe"),
])
def test_scope_reads_university_life_and_requests_for_fakes(request_, expected):
    assert _scope(request_) == expected


GYM = "[gym] Gym: Students pay £5 a month. The gym is open 07:00-22:00 on weekdays."


def _verdict(answer):
    prompt = f"PASSAGES:\n{GYM}\n\nANSWER:\n{answer}"
    return json.loads(decide([{"role": "system", "content": GROUNDING_PROMPT},
                              {"role": "user", "content": prompt}]).content)["verdict"]


@pytest.mark.parametrize("answer, expected", [
    ("Students pay £5 a month for the gym [gym].", "supported"),
    ("On weekdays the Gym opens at 7am [gym].", "supported"),
    ("Every student gets the gym for free [gym].", "unsupported"),
    ("The gym is always open [gym].", "unsupported"),
])
def test_grounding_checks_claims_about_all_of_something(answer, expected):
    assert _verdict(answer) == expected


@pytest.mark.parametrize("system, limit", [
    ("Keep it concise.", 1),
    ("Be brief - at most three sentences.", 3),
    ("Be concise \u2014 two sentences at most.", 2),
    ("One short sentence, never two.", 1),
])
def test_a_count_says_how_brief_brief_is(system, limit):
    assert length_limit(system) == limit

"""The stand-in's h9 rules, in sentences of their own (not the evaluation's): word classes (a breed is a dog, a GP is
the user's doctor, a flat is their home and address, dating someone makes them a partner, "reading" a subject is
studying it), what someone does for work ("works nights as", "runs a"), rooms reassigned in the passive or by a bare
code, spans of hours, compounds naming a place ("car park" is no car), things owned by someone else, false documents
and getting to university places in scope, and "every day" and "free" in grounding."""
import json

import pytest

from helpers.core.words import word_class
from helpers.retrieval.guardrails import GROUNDING_PROMPT, SCOPE_PROMPT
from helpers.standin.memory_rule import DONT_KNOW, kinds_named
from helpers.standin.policy import decide
from support import ask_standin

ask = ask_standin  # tests/support.py: the stand-in's decision after the user's statements


def _answer(said, question, blocks=()):
    decision = ask(said, question, blocks)
    assert decision.tool_calls == [], f"{question!r} went to the tools"
    return decision.content


# ---------------------------------------------------------------- word classes

def test_word_classes_name_the_thing_a_word_is_a_kind_of():
    assert [word_class(w) for w in ("Terriers", "GP", "halls", "fiancee", "housemate")] == \
        ["dog", "doctor", "home", "partner", "flatmate"]
    assert word_class("dentist") is None and word_class("lab") is None and word_class("room") is None


def test_phrases_name_a_class_without_its_word():
    assert "partner" in kinds_named("I've started dating a lad from my course")
    assert "study" in kinds_named("I'm reading Classics at Larkspur")
    assert "home" in kinds_named("we live at 3 Ferry Road")
    assert "study" not in kinds_named("I'm reading a book about sharks")
    assert "partner" not in kinds_named("I'm seeing the physio on Monday")  # no person dated


VET = ["hi, im noor, second year pharmacy", "my gp is dr brennan at the quayside surgery", "my optician is mr fox",
       "we've got a cockapoo called pickle", "my flat is at 18 weaver street"]


def test_a_gp_is_the_users_doctor():
    reply = _answer(VET, "who is my doctor")
    assert "brennan" in reply.lower() and "fox" not in reply.lower()


def test_a_breed_is_a_dog_and_its_name_is_the_dogs_name():
    assert "pickle" in _answer(VET, "what's my dog called").lower()
    assert _answer(VET, "whats my cat called") == DONT_KNOW  # a cockapoo is no cat


def test_a_flat_is_the_users_home_and_gives_their_address():
    assert "weaver street" in _answer(VET, "what's my address").lower()


def test_a_breed_answers_what_breed_the_dog_is():
    assert "labradoodle" in _answer(["my dog pip is a labradoodle"], "what breed is my dog").lower()
    assert _answer(["my dog pip is very noisy"], "what breed is my dog") == DONT_KNOW


def test_someone_dated_is_the_partner_and_a_newer_one_replaces_the_old():
    said = ["my boyfriend used to be Kieran", "we split in june and now I'm going out with a guy called Ayo"]
    reply = _answer(said, "who's my boyfriend")
    assert "ayo" in reply.lower() and "kieran" not in reply.lower()


def test_a_partner_in_a_profile_answers_for_girlfriend():
    blocks = ["User profile:\n- name: Ravi (turn 1, 2026-11-02)\n- partner: Sana, a radiographer (turn 3, 2026-11-02)"]
    assert "radiographer" in _answer(["morning"], "what does my girlfriend do", blocks).lower()


def test_reading_a_subject_is_studying_it():
    assert "geology" in _answer(["Hi, I'm Tess.", "I'm reading Geology at Larkspur."], "What do I study?").lower()


def test_a_move_home_replaces_the_old_address():
    said = ["my house is 5 kiln lane", "actually i've moved, my flat is now at 40 canal road"]
    reply = _answer(said, "where do i live")
    assert "canal" in reply.lower() and "kiln" not in reply.lower()


# ---------------------------------------------------------------- what someone does for work

@pytest.mark.parametrize("said, question, expected", [
    (["my stepdad runs a garage in hull"], "what does my stepdad do", "garage"),
    (["my friend idris works weekends as a lifeguard"], "what does idris do", "lifeguard"),
    (["i've been seeing a girl called wren", "she's a midwife in the city"], "what does wren do", "midwife"),
])
def test_what_someone_does_for_work_is_read_from_works_as_and_runs(said, question, expected):
    assert expected in _answer(said, question).lower()


def test_what_a_dated_person_was_never_said_to_do_is_unknown():
    assert _answer(["i've been seeing a girl called wren"], "where does wren work") == DONT_KNOW


# ---------------------------------------------------------------- rooms, times and compounds

def test_a_room_reassigned_in_the_passive_replaces_the_old_one():
    said = ["my workshop is in K14", "they've put us in K02 instead"]
    reply = _answer(said, "which room is my workshop in")
    assert "K02" in reply and "K14" not in reply
    reply = _answer(["my study group meets in room D5", "we've been moved to D9 for the rest of the year"],
                    "which room does my study group meet in")
    assert "D9" in reply and "D5" not in reply


def test_a_span_of_hours_says_when_a_shift_finishes_and_starts():
    assert "5" in _answer(["my shift on saturdays is 9 till 5"], "what time does my shift finish")
    reply = _answer(["my shift at the bar runs from 4pm to 10pm"], "when does my shift start")
    assert "4pm" in reply and "10pm" in reply  # "runs from ... to" is a span, not a change "from X to Y"


def test_a_compound_naming_a_place_is_not_the_thing():
    assert _answer(["i usually park in the west car park"], "what car do i have") == DONT_KNOW
    assert "corsa" in _answer(["i usually park in the west car park", "i drive a grey corsa"],
                              "what car do i have").lower()


def test_a_thing_someone_else_has_is_not_the_users():
    assert _answer(["my cousin has a greyhound called flash"], "what's my dog called") == DONT_KNOW
    assert "flash" in _answer(["my cousin has a greyhound called flash"], "what's my cousin's dog called").lower()


# ---------------------------------------------------------------- scope

def _scope(request):
    return json.loads(decide([{"role": "system", "content": SCOPE_PROMPT},
                              {"role": "user", "content": request}]).content)["category"]


@pytest.mark.parametrize("request_text", ["where do people buy fake driving licences", "can you help me make a forged "
                                          "sick note for my tutor"])
def test_getting_or_making_a_false_document_is_unsafe(request_text):
    assert _scope(request_text) == "unsafe"


def test_reporting_a_fake_is_not_asking_for_one():
    assert _scope("I think someone sold me a fake ticket for the freshers ball, who do I tell") != "unsafe"


def test_getting_to_a_university_place_is_campus_and_elsewhere_is_not():
    from helpers.standin.tasks import _GETTING_THERE, _UNIVERSITY_LIFE
    assert _UNIVERSITY_LIFE.search("the sports ground") and _GETTING_THERE.search("which bus stops at the sports ground")
    assert not _UNIVERSITY_LIFE.search("which bus goes to the zoo")
    assert _scope("which bus stops at the sports ground") == "campus"
    assert _scope("which bus goes to the zoo") == "off_topic"


# ---------------------------------------------------------------- grounding

def _verdict(passages, answer):
    return json.loads(decide([{"role": "system", "content": GROUNDING_PROMPT},
                              {"role": "user", "content": f"PASSAGES:\n{passages}\n\nANSWER:\n{answer}"}]
                             ).content)["verdict"]


POOL = "[pool] The pool opens 07:00-21:00 on weekdays; 09:00-17:00 on Saturday and Sunday."


def test_a_time_claimed_for_every_day_must_hold_every_day():
    assert _verdict(POOL, "The pool opens at 7am every day [pool].") == "unsupported"
    assert _verdict(POOL, "On weekdays the pool opens at 7am [pool].") == "supported"
    assert _verdict("[desk] The help desk is staffed 09:00-17:00 every day.",
                    "The help desk opens at 9am every day [desk].") == "supported"


def test_free_needs_passages_that_say_something_costs_nothing():
    lockers = "[lockers] Lockers in the sports hall cost £1 a day."
    assert _verdict(lockers, "Lockers in the sports hall are free [lockers].") == "unsupported"
    assert _verdict("[lockers] Lockers in the sports hall are free of charge.",
                    "Lockers in the sports hall are free [lockers].") == "supported"
    assert _verdict(lockers, "Feel free to use a locker for £1 a day [lockers].") == "supported"

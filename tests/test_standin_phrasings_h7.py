"""The rules the ``tune_h7`` cases led to (benchmarks/standin_eval.py), each checked with wordings of our own: questions
typed in lower case without their mark or apostrophes, what someone of the user's does for a living, a person or pet
the question names, an attribute of a stated thing that was never stated, a yes/no question putting a value, the
first value against the newest, and the length and grounding rules' readings of "never enough", "several" and
durations in another unit."""
import pytest

from helpers.core.words import with_apostrophes
from helpers.standin.meaning import content_stems, length_limit
from helpers.standin.memory_rule import DONT_KNOW, _asked
from helpers.standin.tasks import judge_grounding
from support import ask_standin

ask = ask_standin  # tests/support.py: the stand-in's decision after the user's statements


def answered(decision, *expected):
    return decision.tool_calls == [] and all(word in decision.content for word in expected)


def dont_know(decision):
    return decision.tool_calls == [] and decision.content == DONT_KNOW


# ---------------------------------------------------------------- questions typed without their mark

def test_contractions_typed_without_their_apostrophe_are_read_as_contractions():
    assert with_apostrophes("wheres my locker, i cant find it") == "where's my locker, i can't find it"
    assert with_apostrophes("Whats up? Im fine, its raining") == "What's up? I'm fine, its raining"  # "its" is a word


def test_a_lower_case_question_about_the_users_thing_without_its_mark_is_about_the_user():
    said = ["I'm Wanjiru, first year law.", "my hamster is called Pretzel", "my choir meets on tuesday evenings"]
    assert answered(ask(said, "whats my hamster called"), "Pretzel")
    assert answered(ask(said, "which evening does my choir meet"), "tuesday")
    assert dont_know(ask(said, "what breed is my hamster"))


def test_a_clause_in_statement_order_is_no_question():
    assert _asked("when i was little we lived in Hull") is None
    assert _asked("which evening does my choir meet") is not None


# ---------------------------------------------------------------- someone of the user's

def test_what_someone_does_for_a_living_is_read_from_the_role_stated_of_them():
    said = ["Hi, Noor here.", "my aunt Mirela is a dental hygienist in Cluj and my uncle teaches maths",
            "my flatmate Tomasz lives in Leith, he's an electrician", "My cousin Ines visits in May.",
            "She is a paramedic."]
    assert answered(ask(said, "what does my aunt do for a living"), "hygienist")
    assert answered(ask(said, "What's Tomasz's job?"), "electrician")
    assert answered(ask(said, "what does Ines do"), "paramedic")


def test_a_statement_about_someone_else_does_not_answer_for_the_person_named():
    said = ["My cousin Ines visits in May.", "my nephew Bruno is allergic to nuts", "my flatmate Tomasz supports Hibs"]
    assert dont_know(ask(said, "What is Ines allergic to?"))
    assert dont_know(ask(said, "what's Tomasz studying?"))


def test_a_person_or_pet_named_in_a_profile_line_is_the_users_own():
    profile = ("User profile:\n- name: Ayla (turn 1, 2026-10-01)\n- studies: second-year nursing (turn 2, 2026-10-01)\n"
               "- partner: Sefa (turn 4, 2026-10-02)\n- pet: a hamster called Mochi (turn 6, 2026-10-03)")
    assert dont_know(ask([], "What does Sefa study?", (profile,)))
    assert dont_know(ask([], "How old is Mochi?", (profile,)))


def test_what_a_relative_does_is_not_what_the_user_does():
    assert dont_know(ask(["I play hockey on Sundays.", "My brother lives in Derby."], "what sport does my brother play?"))


def test_a_place_in_another_clause_is_not_where_the_relative_lives():
    assert dont_know(ask(["My uncle Tadeusz turns 60 on Friday, we're meeting at the Anchor."],
                         "where does my uncle live?"))
    assert answered(ask(["my cousin Ravi is a chef in Glasgow"], "where does my cousin live?"), "Glasgow")


def test_what_a_relative_does_is_asked_without_the_question_mark_too():
    assert dont_know(ask(["my sister Hana is flying in on Friday"], "where does my sister work"))


def test_which_days_is_answered_by_the_days_named():
    assert answered(ask(["Part-time MSc, so I'm in the lab tues and thurs only.", "My supervisor is Dr Osei."],
                        "which days am I in the lab"), "tues and thurs")


def test_a_relative_is_named_by_any_word_for_their_role_and_turning_an_age_is_a_birthday():
    assert answered(ask(["My grandmother Elsie turns 85 on 2 May."], "When is my nan's birthday?"), "2 May")
    assert answered(ask(["My son Olly turns six on 14 July."], "when's my son's birthday"), "14 July")


# ---------------------------------------------------------------- an attribute never stated

def test_an_attribute_of_a_stated_thing_that_was_never_stated_is_not_known():
    said = ["I bought a bike last week, it's so fast.", "My laptop is a grey Dell."]
    assert dont_know(ask(said, "what make is my bike"))
    assert dont_know(ask(said, "what's the serial number on my laptop?"))


def test_the_name_of_a_thing_must_be_given_next_to_it():
    assert dont_know(ask(["my daughter Ines just started nursery and loves it"], "what's the name of Ines's nursery?"))
    assert answered(ask(["my daughter's nursery is called Little Acorns"], "what's the name of my daughter's nursery?"),
                    "Little Acorns")


def test_a_gerund_after_a_determiner_is_no_verb_of_the_user():
    assert dont_know(ask(["My driving lesson is on Friday at 10."], "what car do I drive"))


def test_a_yes_no_question_putting_a_value_is_answered_with_the_value_stated():
    said = ["My bike is a grey Trek.", "I moved my bike from the north rack to the cage by the library."]
    assert answered(ask(said, "is my bike red?"), "grey")
    assert dont_know(ask(["My bike is locked by the library."], "is my bike red?"))


def test_a_kind_named_with_a_modifier_is_asked_as_the_kind():
    assert answered(ask(["I'm Rosa, second year geology.", "I've got asthma, so dusty labs are rough.",
                         "My bus is the 17."], "what's my health condition?"), "asthma")


@pytest.mark.parametrize("statement", ["I'm epileptic so strobe lights at gigs are a no-go",
                                       "I have type 2 diabetes so I carry glucose tablets and crackers around"])
def test_a_state_is_read_apart_from_what_follows_from_it(statement):
    assert answered(ask(["I'm Rosa.", statement, "My bus is the 17."], "do you remember my medical condition?"),
                    statement.split(" so ")[0])


def test_a_favourite_may_be_said_as_a_fave():
    assert answered(ask(["fave film is Paddington 2, fight me", "I live in Morley Hall."], "whats my favourite film"),
                    "Paddington")


# ---------------------------------------------------------------- first and newest values

def test_a_change_from_one_value_to_another_is_answered_with_the_new_one_only():
    said = ["My bike is locked at the north rack.", "I switched from the north rack to the cage by the library."]
    decision = ask(said, "where is my bike locked these days?")
    assert answered(decision, "cage") and "north rack" not in decision.content


def test_a_question_for_the_first_value_is_not_answered_by_a_later_change():
    profile = "User profile:\n- name: Ciaran (turn 1, 2026-09-14)\n- hometown: Tralee (turn 3, 2026-09-14)"
    quotes = 'Recalled earlier turns:\n[turn 9, 2026-10-04] user: "I moved out of halls, I\'m in Ferris House now."'
    assert answered(ask([], "where am i from originally", (profile, quotes)), "Tralee")


def test_cant_is_the_stop_word_can_not_a_word_ca():
    assert "ca" not in content_stems("what can't I eat") and "wo" not in content_stems("it won't open")


# ---------------------------------------------------------------- length and grounding

@pytest.mark.parametrize("system, limit", [
    ("Write several sentences; one sentence is never enough.", None),
    ("Two lines aren't sufficient, so write more.", None),
    ("One sentence is enough.", 1),  # a guard: enough is no shortfall
    ("Reply in several sentences, each one short.", None),  # a few short sentences, not one
])
def test_a_count_said_to_fall_short_asks_for_more(system, limit):
    assert length_limit(system) == limit


@pytest.mark.parametrize("answer, verdict", [
    ("You can keep the camera for up to three days [kit].", "supported"),   # 72 hours
    ("You can keep the camera for up to two days [kit].", "unsupported"),  # a guard: 48 hours is not 72
    ("You may borrow it twice a week, up to four times a month [kit].", "supported"),  # four loans a month
])
def test_a_duration_in_another_unit_and_a_count_of_times_are_the_passages_own(answer, verdict):
    passages = "[kit] Media Kit: Students may borrow a camera for up to 72 hours, with at most four loans a month."
    assert judge_grounding(f"PASSAGES:\n{passages}\n\nANSWER:\n{answer}")["verdict"] == verdict

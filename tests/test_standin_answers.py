"""The offline answer reads what memory brings (issue 32, point 3): questions about the user's health and
family answered from what they said, corrections worded without "my X is", and parsed length limits."""
import pytest

from helpers.standin.meaning import length_limit, sentences
from helpers.standin.memory_rule import DONT_KNOW
from helpers.standin.policy import decide
from support import ask_standin

ask = ask_standin  # tests/support.py: the stand-in's decision after the user's statements


LIFE = ["Hi, I'm Oskar, studying forestry.", "Just so you know, I'm allergic to wasp stings.",
        "My aunt Ilse is coming to stay next weekend.", "I have coeliac disease.",
        "I share a flat with Rhiannon."]


@pytest.mark.parametrize("question, expected", [
    ("What am I allergic to?", "wasp"),
    ("Who is coming to stay with me?", "Ilse"),
    ("Is anyone in my family visiting?", "Ilse"),
    ("Do I have any medical conditions?", "coeliac"),
])
def test_health_and_family_questions_are_answered_from_what_the_user_said(question, expected):
    decision = ask(LIFE, question)
    assert decision.tool_calls == [] and expected in decision.content


@pytest.mark.parametrize("question", ["What's my blood type?", "Who is my GP?", "When is my aunt's birthday?",
                                      "Where does my aunt work?"])
def test_health_and_family_questions_never_said_get_i_dont_know_not_a_campus_search(question):
    decision = ask(LIFE, question)
    assert decision.tool_calls == [] and decision.content == DONT_KNOW


def test_a_campus_question_that_mentions_health_still_goes_to_the_tools():
    decision = ask(LIFE, "Where is the campus pharmacy?")
    assert [name for name, _ in decision.tool_calls] == ["search_campus_info"]


@pytest.mark.parametrize("said, question, new, old", [
    (["My tutorial is in room 12 on Mondays."], "Which room is my tutorial in?", "room 40", "room 12"),
    (["My shift at the pool starts at 8am."], "When does my shift start?", "9am", "8am"),
    (["My physio is on Wednesdays."], "Which day is my physio?", "Friday", "Wednesday"),
    (["My mentor is Dr Hale."], "Who is my mentor?", "Ms Brook", "Hale"),
])
def test_a_correction_worded_without_my_x_is_answers_with_the_new_value(said, question, new, old):
    change = {"room 40": "They moved us to room 40 this week.", "9am": "From next week it begins at 9am instead.",
              "Friday": "It got pushed to Fridays now.", "Ms Brook": "Ms Brook took over mentoring me."}[new]
    reply = ask(said + ["I like the campus gardens.", change], question).content
    assert new in reply and old not in reply


def test_an_unrelated_change_does_not_replace_the_value_asked_about():
    said = ["I take the number 7 bus to campus.", "They moved me to desk 22 in the studio."]
    reply = ask(said, "Which bus do I take to campus?").content
    assert "7" in reply and "22" not in reply


@pytest.mark.parametrize("prompt, limit", [
    ("Answer in one short sentence, never two.", 1),
    ("Never two sentences: one is enough.", 1),
    ("Use up to three sentences.", 3),
    ("Up to three sentences per answer is fine.", 3),
    ("Never answer in one sentence.", None),
    ("Answer in two sentences, never three.", 2),
])
def test_length_is_a_parsed_limit(prompt, limit):
    assert length_limit(prompt) == limit


@pytest.mark.parametrize("prompt, most, least", [
    ("Answer in one short sentence, never two.", 1, 1),
    ("You may use up to three sentences.", 3, 2),
])
def test_replies_keep_to_the_parsed_limit_and_do_not_shrink_below_it(prompt, most, least):
    for question in ("Hiya", "What can you do?", "Hello there!"):
        reply = decide([{"role": "system", "content": prompt}, {"role": "user", "content": question}]).content
        assert least <= len(sentences(reply)) <= most, (question, reply)


@pytest.mark.parametrize("said, question, kept, wrong", [
    (["My lab partner is Lars.", "Correction: my language partner is Sigrun."], "Who is my lab partner?",
     "Lars", "Sigrun"),                                       # another kind of partner corrects nothing
    (["I do research in the Halvorsen Lab.", "Sorry, I got that wrong: my lab partner is Kofi."],
     "Where do I do research?", "Halvorsen", "Kofi"),        # a change of another "my X"
])
def test_a_change_of_another_thing_is_no_correction(said, question, kept, wrong):
    reply = ask(said, question).content
    assert kept in reply and wrong not in reply

"""The stand-in answers a question about the user only with a statement that gives the attribute asked: the kind
of value (a place for "where", a count for "how old"), the relative asked about, the end of an event, and it
answers a correction with the value that holds now (issue 32, point 3)."""
import pytest

from helpers.standin.meaning import facts_in
from helpers.standin.memory_rule import DONT_KNOW, _roles, _what_holds, _asked
from support import ask_standin

ask = ask_standin  # tests/support.py: the stand-in's decision after the user's statements


LIFE = ["Hi, I'm Rosalind, a third-year in geography.", "My choir rehearsals are on Thursday evenings.",
        "My uncle Bertrand lives in Grenoble.", "My nephew's christening is on 9 April.",
        "My placement interview is at 2pm on Monday.", "I car-share with my colleague Imogen."]


@pytest.mark.parametrize("question", [
    "Where are my choir rehearsals?",          # a day is no place
    "How old is my nephew?",                   # a date is no age
    "What is my aunt called?",                 # another relative
    "When does my placement interview end?",   # one time of an event is when it starts
    "What does Imogen study?",                 # a person named, but not what she does
])
def test_a_statement_about_the_thing_that_gives_another_attribute_answers_nothing(question):
    decision = ask(LIFE, question)
    assert decision.tool_calls == [] and decision.content == DONT_KNOW


@pytest.mark.parametrize("question, expected", [
    ("When are my choir rehearsals?", "Thursday"),
    ("Where does my uncle live?", "Grenoble"),
    ("What's my uncle's name?", "Bertrand"),
    ("When is my placement interview?", "2pm"),
    ("When is the christening?", "April"),
])
def test_the_same_statements_answer_the_attribute_they_give(question, expected):
    decision = ask(LIFE, question)
    assert decision.tool_calls == [] and expected in decision.content


def test_a_name_after_a_place_preposition_is_no_persons_name():
    assert ask(["My grandad lives in Aberdeen."], "What's my grandad's name?").content == DONT_KNOW
    assert "Hamish" in ask(["My grandad Hamish lives in Aberdeen."], "What's my grandad's name?").content


def test_relatives_are_told_apart_by_role_and_a_word_for_several_covers_each():
    assert _roles({"parent"}) == {"mother", "father", "stepmother", "stepfather"}
    assert _roles({"mum"}) == {"mother"} and not _roles({"brother"}) & _roles({"sister"})
    assert "Leeds" in ask(["My mum and dad live in Leeds."], "Where do my parents live?").content
    assert ask(["My brother is Tariq."], "What's my sister's name?").content == DONT_KNOW


def test_the_users_own_name_answers_no_other_name_question():
    profile = "User profile:\n- name: Ingrid (turn 1, 2026-11-20)"
    assert ask([], "What's my cousin's name?", (profile,)).content == DONT_KNOW
    assert "Ingrid" in ask([], "What's my name?", (profile,)).content


def test_a_thing_the_user_told_of_makes_a_campus_sounding_question_theirs():
    said = ["My lab session is in room 4.10 on Fridays."]
    decision = ask(said, "Who runs my lab session?")   # told of it, the demonstrator never said
    assert decision.tool_calls == [] and decision.content == DONT_KNOW
    decision = ask(said, "Which room is the lab session in?")
    assert decision.tool_calls == [] and "4.10" in decision.content
    assert ask([], "Who runs my lab session?").tool_calls  # never told of: the campus may know


def test_first_person_plural_speaks_for_the_user():
    said = ["Our reading group meets in the Brook Room on Wednesdays."]
    decision = ask(said, "Where do we meet for the reading group?")
    assert decision.tool_calls == [] and "Brook" in decision.content


def test_a_dotted_room_number_is_a_room_not_a_clock_time():
    assert [(c.kind, c.value) for c in facts_in("in room 1.07").claims] == [("room", ("1.07", "1.07"))]
    assert [c.kind for c in facts_in("at 1.07 tomorrow").claims] == ["time"]


@pytest.mark.parametrize("said, question, new, old", [
    (["My tutor is Dr Pike.", "Dr Pike retired, so Professor Adebayo is my tutor now."], "Who is my tutor?",
     "Adebayo", "Pike"),
    (["I volunteer at the food bank on Sundays.", "I quit the food bank, I'm at the animal shelter now."],
     "Where do I volunteer?", "shelter", "food bank"),
    (["My viva is in room 12.", "No wait, the viva is in room 15, not room 12."], "Which room is my viva in?",
     "15", "12"),
    (["My cousin Dilan is coming on Friday.", "Scratch that, Dilan can't come, my aunt Sevda is coming instead."],
     "Who is coming on Friday?", "Sevda", "Dilan"),
    (["I take sumatriptan for my migraines.", "My neurologist switched me to rizatriptan for the migraines."],
     "What do I take for my migraines?", "rizatriptan", "sumatriptan"),
])
def test_a_correction_is_answered_with_what_holds_now(said, question, new, old):
    reply = ask(said, question).content
    assert new in reply and old not in reply


@pytest.mark.parametrize("said, question, kept, wrong", [
    (["My tutor is Dr Pike.", "My flatmate switched me onto oat milk."], "Who is my tutor?", "Pike", "oat"),
    (["My study buddy is Ola.", "Update: my gym buddy is Kemi now."], "Who is my study buddy?", "Ola", "Kemi"),
])
def test_a_change_by_or_of_someone_else_corrects_nothing(said, question, kept, wrong):
    reply = ask(said, question).content
    assert kept in reply and wrong not in reply


def test_only_the_clauses_that_no_longer_hold_are_dropped():
    where = _asked("Where do I volunteer?")
    assert _what_holds("I quit the food bank, I'm at the animal shelter now.", where) == \
        "I'm at the animal shelter now."
    # nothing retracted: the sentence as said; and a clause naming no place is no answer to "where"
    assert _what_holds("Actually, I'm at the animal shelter now.", where) == "Actually, I'm at the animal shelter now."
    assert _what_holds("I quit the food bank, it was too far.", where) == "I quit the food bank, it was too far."


def test_a_question_typed_without_its_mark_is_still_asked():
    said = ["My husband Teodor is a nurse."]
    assert "Teodor" in ask(said, "what's my husband called").content
    assert ask(said, "My husband Teodor is a nurse").tool_calls == []  # a statement is noted, never asked


def test_someone_the_user_named_without_a_title_is_someone_of_theirs():
    said = ["I've got three nieces, Mila, Zofia and Ewa.", "Ewa starts ballet on Saturdays."]
    decision = ask(said, "When does Ewa start ballet?")
    assert decision.tool_calls == [] and "Saturday" in decision.content
    assert ask(said, "Where does Zofia live?").content == DONT_KNOW
    staff = ["My tutor is Dr Quist."]                  # a member of staff: the campus may know the rest
    assert ask(staff, "Where does Quist hold office hours?").tool_calls


def test_a_bare_question_about_a_profile_label_reads_the_profile_and_wants_the_kind_asked():
    profile = "User profile:\n- schedule/orchestra: Tuesdays 6pm (turn 3, 2026-11-21)"
    decision = ask([], "When's orchestra?", (profile,))
    assert decision.tool_calls == [] and "Tuesday" in decision.content
    assert ask([], "Where is orchestra?", (profile,)).content == DONT_KNOW


def test_the_thing_asked_about_is_not_its_own_place():
    said = ["Our lab meeting is every other Thursday at 3."]
    assert ask(said, "Where is our lab meeting held?").content == DONT_KNOW
    assert "Harlow" in ask(["Our lab meeting is in the Harlow building."], "Where is our lab meeting?").content


def test_a_count_counts_what_is_asked():
    said = ["I have two cats, Miso and Tofu."]
    assert "two" in ask(said, "How many cats do I have?").content
    assert ask(said, "How old is Miso?").content == DONT_KNOW
    assert "seven" in ask(["My son Elias turns seven next month."], "How old is my son turning?").content


def test_a_clause_naming_another_value_of_the_kind_asked_is_dropped_without_a_word_of_change():
    reply = ask(["Mr Hale is off sick, so Ms Duarte is teaching my seminar."], "Who is teaching my seminar?").content
    assert "Duarte" in reply and "Hale" not in reply
    reply = ask(["I can't eat shellfish, I'm allergic."], "What am I allergic to?").content
    assert "shellfish" in reply


def test_a_short_form_of_a_word_is_the_word_but_a_longer_other_word_is_not():
    from helpers.standin.meaning import stem
    from helpers.standin.memory_rule import _clipped
    assert _clipped({stem("stats")}, "My statistics exam is on Friday.") == {stem("stats")}
    assert _clipped({"exam"}, "Here is an example.") == set()
    decision = ask(["I have physiotherapy every Tuesday at 4pm."], "When do I have physio?")
    assert decision.tool_calls == [] and "Tuesday" in decision.content


@pytest.mark.parametrize("said, question, new, old", [
    (["My seminar is in room 204.", "They moved the seminar from room 204 to room 318."], "Where is my seminar?",
     "318", "204"),
    (["My book club is on Monday evenings.", "The Monday book club got bumped to Wednesday."], "When is my book club?",
     "Wednesday", "Monday"),
])
def test_a_correction_that_names_the_old_value_is_answered_with_the_new_one_alone(said, question, new, old):
    reply = ask(said, question).content
    assert new in reply and old not in reply


def test_a_correction_that_does_not_name_the_old_value_is_quoted_as_said():
    reply = ask(["My seminar is in room 204.", "I switched to room 318 today."], "Where is my seminar?").content
    assert reply == 'You told me: "I switched to room 318 today."'


def test_a_new_person_is_the_answer_only_when_the_question_names_no_role():
    reply = ask(["My peer mentor is Priya Shah.", "Actually, my lab partner is Lars now."], "Who is my peer mentor?")
    assert "Priya" in reply.content and "Lars" not in reply.content


def test_a_named_thing_says_where_but_a_description_or_a_day_does_not():
    assert "bookstore" in ask(["My part-time job is the campus bookstore."], "Where do I work part-time?").content
    assert ask(["My part-time job is on Saturdays."], "Where do I work part-time?").content == DONT_KNOW

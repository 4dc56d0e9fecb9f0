"""The stand-in's memory rule: questions about the user are answered from what the user said."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.standin.policy import decide
from helpers.standin.memory_rule import DONT_KNOW, asked_about_user
from helpers.agent.tools import tool_schemas

from support import user


TOOLS = tool_schemas()
SYSTEM = {"role": "system", "content": "You are a campus assistant for Larkspur University."}


def conversation(*said):
    """The user's statements, each answered by the assistant, as a full history."""
    out = [SYSTEM]
    for text in said:
        out += [user(text), {"role": "assistant", "content": "Noted."}]
    return out


def ask(history, question):
    decision = decide(history + [user(question)], TOOLS)
    assert not decision.tool_calls, f"{question!r} was sent to a tool: {decision.tool_calls}"
    return decision.content


HISTORY = conversation(
    "Hi! My advisor is Dr. Lee. I live in Oakland.",
    "My locker number is 42, and my interview is on Friday at 10:00.",
    "I study data science and my cat is called Miso.",
    "Actually, my advisor is now Dr. Okafor.",
    "My favourite coffee order is a flat white.",
)


@pytest.mark.parametrize("question, expected", [
    ("Who is my advisor?", "Dr. Okafor"),
    ("who's my advisor?", "Dr. Okafor"),
    ("What's my advisor's name?", "Dr. Okafor"),
    ("Do you remember my advisor?", "Dr. Okafor"),
    ("Remind me of my advisor, please.", "Dr. Okafor"),
    ("Tell me my advisor again", "Dr. Okafor"),
    ("What's my locker number?", "42"),
    ("what is my locker number again?", "42"),
    ("Do you still remember what my locker number is?", "42"),
    ("When is my interview?", "Friday at 10:00"),
    ("What did I tell you about my interview?", "Friday"),
    ("Where do I live?", "Oakland"),
    ("What do I study?", "data science"),
    ("What's my cat called?", "Miso"),
    ("Which coffee order did I say?", "flat white"),
    ("What is my favourite coffee order?", "flat white"),
    ("What's my pet's name?", "Miso"),                 # a cat is a pet: matched by meaning, not by the word
    ("Who advises me these days?", "Dr. Okafor"),
])
def test_paraphrased_questions_find_the_statement(question, expected):
    assert expected in ask(HISTORY, question)


@pytest.mark.parametrize("question", ["Who is my roommate?", "What's my blood type?", "Where do I work?",
                                      "When is my dentist appointment?", "Who am I?", "Do you know my room?",
                                      "What's my student number?", "When is my birthday?"])
def test_what_was_never_said_is_not_invented(question):
    assert ask(HISTORY, question) == DONT_KNOW


@pytest.mark.parametrize("said, question, expected", [
    (["Call me Ines."], "What's my name again?", "Ines"),
    (["My sister Yara visits next month."], "Who is visiting next month?", "Yara"),
    (["I'm allergic to peanuts"], "Which food am I allergic to?", "peanuts"),
    (["My locker number is 4471, by the way."], "Which locker is mine again?", "4471"),
])
def test_the_issue_examples_are_answered_from_what_the_user_said(said, question, expected):
    assert expected in ask(conversation(*said), question)


def test_a_correction_wins_and_a_relatives_fact_is_not_the_users():
    said = conversation("My shift starts at 9am.", "Change of plan: my shift now starts at 10am.",
                        "My sister's birthday is on 3 May.", "My cousin lives in Leeds.")
    shift = ask(said, "When does my shift start?")
    assert "10am" in shift and "9am" not in shift
    assert ask(said, "When is my birthday?") == DONT_KNOW
    assert ask(said, "Where do I live?") == DONT_KNOW


def test_the_newest_statement_wins():
    assert "Dr. Okafor" in ask(HISTORY, "Who is my advisor?")
    later = HISTORY + conversation("Sorry, my advisor is Dr. Lee again after all.")[1:]
    assert "Dr. Lee" in ask(later, "Who is my advisor?")


@pytest.mark.parametrize("question", ["When does the AI club meet?", "How do I connect to campus Wi-Fi?",
                                      "Where do I print a poster?", "Where do I find the IT help desk?"])
def test_campus_questions_still_go_to_the_tools(question):
    decision = decide(HISTORY + [user(question)], TOOLS)
    assert decision.tool_calls and decision.tool_calls[0][0] == "search_campus_info"


def test_what_did_i_say_quotes_the_users_words_before_the_profile():
    profile = {"role": "system", "content": "User profile:\n- constraint/schedule: can't do mornings (turn 1, "
                                            "2026-11-30)\n- preference/stop: the south gate stop (turn 29, "
                                            '2026-11-30; superseded "the north gate stop" from turn 5)'}
    recalled = {"role": "system", "content": '[turn 1] user: "I can\'t do mornings, I work late shifts."\n'
                                             '[turn 5] user: "I prefer the north gate stop." (superseded at turn '
                                             '29: preference/stop is now "the south gate stop")\n'
                                             '[turn 29] user: "Actually, I prefer the south gate stop now."'}
    history = [SYSTEM, profile, recalled]
    assert ask(history, "What did I say about mornings?") == \
        'You told me (turn 1): "I can\'t do mornings, I work late shifts."'
    assert ask(history, "What did I say about the gate stop?") == \
        'You told me (turn 29): "Actually, I prefer the south gate stop now."'
    current = ask(history, "What's my stop?")
    assert "(turn 29)" in current and "south gate stop" in current and "north" not in current


def test_questions_about_the_user_never_go_to_campus_search():
    for question in ["Who is my advisor?", "Who is my roommate?", "When is my office hours slot?"]:
        assert not decide([SYSTEM, user(question)], TOOLS).tool_calls


def test_the_assistants_words_are_not_the_users():
    history = [SYSTEM, user("Hi"), {"role": "assistant", "content": "My advisor is Dr. Strange."}]
    assert ask(history, "Who is my advisor?") == DONT_KNOW


def test_recalled_turns_in_a_memory_block_count_with_their_turn_ids():
    block = {"role": "system", "content": 'Recalled earlier turns:\n[turn 3] user: "My advisor is Dr. Lee."\n'
                                          '[turn 40] user: "My advisor is now Dr. Okafor."'}
    expected = 'You told me (turn 40): "My advisor is now Dr. Okafor."'
    assert ask([SYSTEM, block], "Who's my advisor?") == expected


def test_a_statement_marked_superseded_gives_way_to_the_current_value():
    block = {"role": "system", "content": 'Recalled earlier turns:\n[turn 3] user: "My room is B12." '
                                          '(superseded at turn 30: room is now "C7")'}
    assert ask([SYSTEM, block], "What is my room?") == 'You told me (turn 30) that your room is now "C7".'


def test_a_profile_line_that_names_what_it_superseded_is_current():
    block = {"role": "system", "content": "User profile:\n"
                                          '- room: C7 (turn 30, 2026-11-30; superseded "B12" from turn 3)'}
    recalled = {"role": "system", "content": '[turn 31] user: "I left my room keys in B12 yesterday."'}
    assert ask([SYSTEM, block, recalled], "Which room is mine? What's my room?").startswith(
        "Your profile says (turn 30): room: C7")


def test_a_facts_block_without_turn_ids_is_read_and_its_markers_honoured():
    block = {"role": "system", "content": "You are a campus assistant.\nWhat you know about the user:\n"
                                          "- advisor: Dr. Okafor (current)\n- advisor: Dr. Lee (superseded)"}
    assert "Dr. Okafor" in ask([block], "Who is my advisor?")


def test_a_stale_profile_fact_is_flagged():
    block = {"role": "system",
             "content": "User profile:\n- advisor: Dr. Lee (turn 2, 2025-01-10; possibly outdated)"}
    assert ask([SYSTEM, block], "Who is my advisor?").endswith("please confirm.")


@pytest.mark.parametrize("question, topic, kind, how", [
    ("What's my locker number?", {"locker"}, "number", "strong"),
    ("Who is my academic advisor this term?", {"academic", "advisor"}, "person", "strong"),
    ("What's my advisor's name?", {"advisor"}, "name_of", "strong"),
    ("Where do I live?", {"live"}, "place", "strong"),
    ("Who am I?", set(), "name", "strong"),
    ("Which food am I allergic to?", {"food", "allergic"}, "thing", "strong"),
    ("Where do I print a poster?", {"print", "poster"}, "place", "weak"),  # campus, unless the user said
])
def test_what_a_question_asks_about(question, topic, kind, how):
    asked = asked_about_user(question)
    assert (asked.topic, asked.kind, asked.how) == (topic, kind, how)


@pytest.mark.parametrize("question", ["When does the AI club meet?", "How many days until that?",
                                      "Where is the library?", "What time is it?"])
def test_other_questions_are_not_about_the_user(question):
    assert asked_about_user(question) is None


# ---------------------------------------------------------------- any noun, any value: a rule, not a script

NOUN = st.text("bcdfghjklmnprstvz", min_size=4, max_size=9).map(lambda w: w + "o")  # no stop or generic words
VALUE = st.text("bcdfghjklmnprstvz", min_size=3, max_size=8).map(lambda w: w.capitalize() + "a")
ASKED = ["What's my {}?", "what is my {} again?", "Do you remember my {}?", "Remind me of my {}.",
         "Who is my {}?", "When is my {}?", "Tell me my {} please"]


@settings(max_examples=150, deadline=None)
@given(noun=NOUN, old=VALUE, new=VALUE, other=VALUE, form=st.sampled_from(ASKED), corrected=st.booleans())
def test_any_stated_fact_is_found_and_the_newest_value_wins(noun, old, new, other, form, corrected):
    said = [f"My {noun} is {old}.", f"My favourite colour is {other}."]
    if corrected:
        said.append(f"Sorry, my {noun} is actually {new}.")
    answer = ask(conversation(*said), form.format(noun))
    assert (new if corrected else old) in answer
    if corrected and old not in new:
        assert old not in answer
    assert ask(conversation(said[1]), form.format(noun)) == DONT_KNOW  # only the other fact


# ---------------------------------------------------------------- another speaker's words

def test_another_speakers_words_do_not_answer_for_the_user():
    messages = [{"role": "system", "content": "You are the campus assistant."},
                {"role": "system", "content": 'Recalled earlier turns:\n[turn 3] user (Melanie): "My locker number '
                                              'is 12."\n[turn 5] user (Caroline): "My locker number is 4471."'},
                {"role": "user", "name": "Melanie", "content": "I'm allergic to kiwi."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "name": "Caroline", "content": "What's my locker number?"}]
    reply = decide(messages).content
    assert "4471" in reply and "12" not in reply
    messages[-1]["content"] = "What am I allergic to?"
    assert decide(messages).content == DONT_KNOW
    messages[-1]["name"] = "Melanie"  # the same request asked by the other speaker reads her words
    assert "kiwi" in decide(messages).content


def test_unnamed_quotes_still_count_when_the_user_is_named():
    messages = [{"role": "system", "content": 'Recalled earlier turns:\n[turn 3] user: "My locker number is 12."'},
                {"role": "user", "name": "Caroline", "content": "What's my locker number?"}]
    assert "12" in decide(messages).content


# ---------------------------------------------------------------- the focus of a question

@pytest.mark.parametrize("said, question, stated, value", [
    ("I take sertraline for anxiety.", "What dose of sertraline do I take?",
     "I take 50mg of sertraline every morning.", "50mg"),
    ("My wife Selin is pregnant, due in May.", "Which hospital is Selin booked into?",
     "Selin is booked into St Mary's hospital.", "Mary"),
    ("I live with my partner Noor in Elm Street.", "What's Noor's job?", "Noor works as a midwife.", "midwife"),
    ("My flatmate Kenji plays bass in a band.", "Which band is Kenji in?", "Kenji's band is the Night Owls.", "Owls"),
])
def test_a_statement_answers_only_with_the_kind_of_thing_asked_for(said, question, stated, value):
    # the same topic or person is not enough: the attribute asked for was never said ...
    assert ask(conversation(said), question) == DONT_KNOW
    # ... and once it is, it is the answer
    reply = ask(conversation(said, stated), question)
    assert reply != DONT_KNOW and value.lower() in reply.lower()


def test_a_count_reads_relatives_and_a_short_form_its_word():
    assert "three" in ask(conversation("We've got three daughters: Leila, Sara and Nika."), "how many kids do I have")
    assert "two" not in ask(conversation("I have two kids, Ren and Hana."), "How many daughters do I have?")
    assert "Tuesday" in ask(conversation("I have physiotherapy for my knee on Tuesday afternoons."),
                            "When is my physio?")

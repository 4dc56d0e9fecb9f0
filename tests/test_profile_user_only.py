"""The profile takes attributes of the user only (helpers/memory/profile.py, profile_extraction.py,
helpers/core/profile_rules.py): never another speaker's statement, another person's reported words, the
assistant's words, or conversation worded as "my X is Y"."""
import pytest

from helpers.core.profile_rules import is_users_attribute, stated_facts, without_reported_speech
from helpers.llm.config import load_settings
from helpers.memory.profile import ProfileMemory
from helpers.memory.profile_extraction import extract_with_rules, stated_parts
from helpers.standin.server import make_offline_client


def rules_profile(**options):
    return ProfileMemory(client=make_offline_client(), settings=load_settings("offline"), extractor="rules",
                         **options)


def values(profile):
    return {fact.label: fact.value for fact in profile.facts.values()}


# ---------------------------------------------------------------- conversation is not an attribute

@pytest.mark.parametrize("said", [
    "My kids' smiles are awesome.",
    "My favourite part was the ending.",
    "My favourite bit is when they all sing.",
    "My kids are so awesome.",
    "My weekend was so much fun!",
    "My parents' wedding photos are so beautiful.",
])
def test_conversation_worded_as_my_x_is_y_is_no_attribute(said):
    assert extract_with_rules(said) == []


@pytest.mark.parametrize("said, label, value", [
    ("My locker number is 4471.", "locker number", "4471"),
    ("My hometown is Port Ellery.", "hometown", "Port Ellery"),
    ("My kids are 4 and 7.", "kids", "4 and 7"),
    ("My favourite colour is blue.", "favourite colour", "blue"),
    ("My mum is a nurse.", "mum", "a nurse"),
    ("My cat's name is Biscuit.", "cat's name", "Biscuit"),   # a thing of the user's world keeps its facts
])
def test_an_attribute_of_the_user_is_still_one(said, label, value):
    assert [(f["key"], f["value"]) for f in extract_with_rules(said)] == [(label, value)]


def test_a_judging_value_or_a_past_tense_is_read_by_meaning_not_by_the_attribute():
    assert is_users_attribute("favourite film", "is", "Paprika")
    assert not is_users_attribute("favourite film", "is", "the best")
    assert not is_users_attribute("favourite film", "was", "Paprika")
    assert is_users_attribute("brother's car", "is", "a red Fiat")
    assert not is_users_attribute("brother's car", "is", "so cool")



@pytest.mark.parametrize("said", [
    "My kids are so excited about summer break!",
    "My teammates are really comforting.",
    "My boss is getting nervous about the launch.",
    "My own happiness is the most important thing.",
    "My laptop is like half of my lifeline.",
    "My hard work is paying off.",
    "My writing is going well.",
])
def test_a_feeling_a_likeness_or_a_judgement_is_no_attribute(said):
    assert extract_with_rules(said) == []


@pytest.mark.parametrize("said, label, value", [
    ("My daughter is allergic to nuts.", "daughter", "allergic to nuts"),   # a state that is a fact
    ("My flat is like 10 minutes from campus.", "flat", "like 10 minutes from campus"),  # "like" as "about"
    ("My sister is visiting next week.", "sister", "visiting next week"),
])
def test_a_state_or_an_estimate_is_still_an_attribute(said, label, value):
    assert [(f["key"], f["value"]) for f in extract_with_rules(said)] == [(label, value)]

# ---------------------------------------------------------------- another person's words

@pytest.mark.parametrize("said", [
    "My sister said her birthday is in May.",
    "My sister said my locker number is 12.",
    "Sam told me my room is 204.",
    "My supervisor, Dr Asante, thinks my thesis is too long.",
    'My dad always says "my name is Bob" at parties.',
])
def test_another_persons_reported_words_state_nothing_about_the_user(said):
    assert extract_with_rules(said) == []
    assert stated_facts(said, [said]) == []


def test_the_users_own_reported_words_are_theirs():
    assert [(f["key"], f["value"]) for f in extract_with_rules("I told Sam my room is 204.")] == [("room", "204")]
    assert without_reported_speech("I said my room is 204.") == "I said my room is 204."


def test_a_model_cannot_take_a_value_from_another_persons_words():
    profile = rules_profile()
    said = "Priya said her allergy is peanuts. My locker number is 12."
    assert all("peanuts" not in part for part in stated_parts(said))
    update = profile.merge(1, [{"key": "constraint", "topic": "allergy", "value": "peanuts"},
                               {"key": "locker number", "topic": "locker number", "value": "12"}], said)
    assert values(profile) == {"locker number": "12"}
    assert len(update.rejected) == 1 and "peanuts" in update.rejected[0]


# ---------------------------------------------------------------- another speaker, the assistant

def test_another_speakers_statement_neither_becomes_nor_supersedes_the_users():
    profile = rules_profile(user_name="Caroline")
    profile.update(1, "My locker number is 4471.", "Noted.", speaker="Caroline")
    update = profile.update(2, "My locker number is 12.", "Noted.", speaker="Melanie")
    assert update.added == [] and update.replaced == [] and "Melanie" in update.skipped
    assert values(profile) == {"locker number": "4471"}
    profile.update(3, "My locker number is 300.", "Noted.", speaker=" caroline ")  # the user, however spaced
    assert values(profile) == {"locker number": "300"}


def test_the_first_named_speaker_is_the_user_when_no_name_is_given():
    profile = rules_profile()
    profile.update(1, "My hometown is Port Ellery.", "Nice!", speaker="Jon")
    profile.update(2, "My hometown is Tromso.", "Cool.", speaker="Gina")
    assert profile.user_name == "Jon" and values(profile) == {"hometown": "Port Ellery"}


def test_the_users_name_is_saved_and_restored_with_the_profile():
    profile = rules_profile()
    profile.update(1, "My hometown is Port Ellery.", "", speaker="Jon")
    state = profile.state()
    again = rules_profile()
    again.restore(state)
    assert again.user_name == "Jon"
    again.update(2, "My hometown is Tromso.", "", speaker="Gina")
    assert values(again) == {"hometown": "Port Ellery"}
    assert "user_name" not in rules_profile().state()  # unnamed conversations keep their state as it was


def test_messages_without_names_are_the_users_as_before():
    profile = rules_profile(user_name="Caroline")
    profile.update(1, "My locker number is 4471.", "Noted.")
    assert values(profile) == {"locker number": "4471"}


def test_the_assistants_words_never_become_the_users_attribute():
    profile = rules_profile()
    profile.update(1, "My locker number is 4471.", "Noted.")
    update = profile.update(2, "Thanks!", "Your locker number is 99, and my name is Larkspur Bot.")
    assert update.added == [] and values(profile) == {"locker number": "4471"}

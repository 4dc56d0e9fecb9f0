"""Profile memory (helpers/memory/profile.py) and the stand-in's profile and about-the-user rules."""
import json
import logging
import re
from datetime import timedelta

import pytest

from helpers.llm.config import load_settings
from helpers.facts.writer import FactMemory
from helpers.memory.profile import ProfileMemory, ProfileWarning
from helpers.memory.profile_extraction import ProfileFormatError, extract_with_rules, parse_profile_reply
from helpers.standin.server import make_offline_client
from helpers.core.context_format import ATTRIBUTES, read_fact_reply, write_attributes
from helpers.standin.policy import decide, extract_facts
from helpers.facts.writer import Candidate
from helpers.memory.profile import says
from helpers.memory.profile_extraction import stated_parts

from scripted import ScriptedServer
from support import BREAKS, FORGED, assert_lines, forged, shared_profile


@pytest.fixture
def profile():
    return ProfileMemory(client=make_offline_client(), settings=load_settings("offline"))


def facts_reply(*facts):
    """A model's reply in the one shape, from (key, topic, value) triples."""
    return {"content": json.dumps({"facts": [{"attribute": key if topic == key else f"{key}/{topic}", "value": value,
                                              "evidence": value} for key, topic, value in facts]})}


def stand_in_facts(system, said):
    """The stand-in's fact extractor on one request: (attribute, value) pairs of its reply."""
    facts, problems = read_fact_reply(extract_facts(system, f"USER SAID (turn 1):\n{said}"))
    assert problems == []
    return [(f.attribute, f.value) for f in facts]


# ---------------------------------------------------------------- the stand-in's rules

@pytest.mark.parametrize("said, fact", [
    ("Hi, my name is Priya Raman.", ("name", "name", "Priya Raman")),
    ("Please call me Pri.", ("name", "name", "Pri")),
    ("I'm vegetarian, by the way.", ("constraint", "diet", "vegetarian")),
    ("I am allergic to peanuts and shellfish.", ("constraint", "allergy", "allergic to peanuts and shellfish")),
    ("I can't do mornings, sorry.", ("constraint", "schedule", "can't do mornings")),
    ("I prefer email.", ("preference", "contact", "email")),
    ("Actually I prefer the south gate shuttle stop now.", ("preference", "stop", "the south gate shuttle stop")),
    ("My goal is to finish the robotics certificate.", ("goal", "goal", "finish the robotics certificate")),
])
def test_profile_rule(said, fact):
    key, topic, value = fact
    assert stand_in_facts("You are a fact extractor.", said) == [(key if topic == key else f"{key}/{topic}", value)]


def test_profile_rule_ignores_the_assistant_section_and_questions():
    prompt = "USER SAID (turn 1):\nWhen is lunch?\n\nASSISTANT REPLIED (context only):\nMy name is Lark. I'm vegan."
    assert extract_facts("You are a fact extractor.", prompt) == '{"facts": []}'
    assert stand_in_facts("", "Can you call me Cal? I'm vegan.") == [("constraint/diet", "vegan")]


def test_the_stand_in_keeps_what_the_requests_attributes_allow():
    said = "My name is Priya. I'm vegan."
    closed = write_attributes([("name", "what the user is called")], open=False)
    opened = write_attributes([("name", "what the user is called")], open=True)
    assert stand_in_facts(closed, said) == [("name", "Priya")]
    assert stand_in_facts(opened, said) == [("name", "Priya"), ("constraint/diet", "vegan")]
    assert stand_in_facts(write_attributes([("delivery_window", "when")], open=False), said) == []
    assert ATTRIBUTES in closed


def test_about_user_rule_answers_from_a_profile_block():
    block = "User profile:\n- name: Priya Raman (turn 0, 2026-11-30)"
    reply = decide([{"role": "system", "content": "You help."}, {"role": "system", "content": block},
                    {"role": "user", "content": "What is my name?"}])
    assert reply.content == "Your profile says (turn 0): name: Priya Raman."


def test_about_user_rule_prefers_the_newest_statement():
    block = ('Recalled:\n[turn 9] user: "I prefer the south gate stop."\n'
             '[turn 2] user: "I prefer the north gate stop."')
    reply = decide([{"role": "system", "content": "You help."}, {"role": "system", "content": block},
                    {"role": "user", "content": "What did I say about the gate stop?"}])
    assert "(turn 9)" in reply.content and "south" in reply.content


def test_about_user_rule_does_not_know_without_the_fact():
    reply = decide([{"role": "system", "content": "You help. The user's name is not here."},
                    {"role": "user", "content": "What is my name?"}])
    assert reply.content.startswith("I don't know")


def test_about_user_rule_never_uses_the_assistants_words():
    reply = decide([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "My name is Lark."},
                    {"role": "user", "content": "What is my name?"}])
    assert reply.content.startswith("I don't know")


def test_statements_and_acknowledgements_get_short_replies():
    assert decide([{"role": "user", "content": "I'm vegetarian."}], tools=[]).content == "Noted: vegetarian."
    assert decide([{"role": "user", "content": "ok thanks"}]).content == "You're welcome!"


# ---------------------------------------------------------------- ProfileMemory

def test_update_records_turn_id_and_timestamp(profile):
    update = profile.update(3, "Hi, my name is Priya Raman.")
    fact = profile.get("name")
    assert update.added == [fact] and (fact.value, fact.turn_id) == ("Priya Raman", 3)
    assert fact.recorded_at == "2026-11-30T10:00:00-08:00"  # helpers.core.clock.now(), frozen by conftest


def test_newer_statement_replaces_the_older_one(profile):
    profile.update(1, "I prefer the north gate shuttle stop.")
    update = profile.update(7, "Actually I prefer the south gate shuttle stop now.")
    assert profile.get("preference", "stop").value == "the south gate shuttle stop"
    assert [f.value for f in update.replaced] == ["the north gate shuttle stop"] and len(profile.history) == 1


def test_an_older_statement_never_overrides_a_newer_one(profile):
    profile.update(7, "I prefer the south gate shuttle stop.")
    profile.update(1, "I prefer the north gate shuttle stop.")
    assert profile.get("preference", "stop").turn_id == 7


def test_extraction_asks_for_strict_json():
    server = ScriptedServer([facts_reply()])
    ProfileMemory(extractor="model", **server.kwargs()).update(0, "I'm vegetarian.")
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert "You are a fact extractor" in server.requests[0]["messages"][0]["content"]


def test_assistant_words_are_never_user_facts(caplog):
    server = ScriptedServer([facts_reply(("name", "name", "Lark"))])
    memory = ProfileMemory(extractor="model", **server.kwargs())
    with caplog.at_level(logging.WARNING, logger="helpers.memory.profile"):
        update = memory.update(0, "I'm new here. What is your name?", "My name is Lark.")
    assert len(memory) == 0 and "not in the user's words" in update.rejected[0]
    assert "not in the user's words" in caplog.text


@pytest.mark.parametrize("reply, problem", [
    ("not json", "not JSON"), ('{"facts": "name"}', 'exactly one key, "facts"'),
    ('{"facts": [], "extra": 1}', 'exactly one key, "facts"'), ('["name"]', 'exactly one key, "facts"'),
    ('{"facts": [{"key": "name", "topic": "name", "value": "Priya"}]}', "got key, topic, value"),
    ('{"facts": [{"attribute": "name", "value": "Priya"}]}', "got attribute, value"),
    ('{"facts": [{"attribute": "a/b/c", "value": "20", "evidence": ""}]}', "is not a label"),
    ('{"facts": [{"attribute": "' + "x" * 41 + '", "value": "20", "evidence": ""}]}', "is not a label"),
    ('{"facts": [{"attribute": "name", "value": "", "evidence": ""}]}', "facts[0].value is empty"),
    ('{"facts": [{"attribute": "name", "value": 7, "evidence": ""}]}', "facts[0].value must be text (got int)")])
def test_malformed_replies_are_rejected(reply, problem):
    with pytest.raises(ProfileFormatError, match=re.escape(problem)):
        parse_profile_reply(reply)


def test_a_reply_is_read_into_profile_items():
    reply = json.dumps({"facts": [{"attribute": "Preference/Stop", "value": "the south gate", "evidence": "x"},
                                  {"attribute": "locker number", "value": "4471", "evidence": "x"}]})
    assert parse_profile_reply(reply) == [{"key": "preference", "topic": "stop", "value": "the south gate"},
                                          {"key": "locker number", "topic": "locker number", "value": "4471"}]


def test_malformed_reply_is_logged_and_never_merged(caplog):
    good = {"attribute": "name", "value": "Priya", "evidence": "My name is Priya."}
    server = ScriptedServer([{"content": json.dumps({"facts": [good, 42]})}])
    memory = ProfileMemory(extractor="model", **server.kwargs())
    with caplog.at_level(logging.WARNING, logger="helpers.memory.profile"):
        update = memory.update(0, "My name is Priya.")
    assert len(memory) == 0 and update.added == [] and "rejected" in caplog.text
    assert memory.rejected and "facts[1]" in memory.rejected[0]


def test_request_failure_warns_and_merges_nothing():
    memory = ProfileMemory(extractor="model", **ScriptedServer([503]).kwargs())
    with pytest.warns(ProfileWarning, match="turn 4"):
        update = memory.update(4, "My name is Priya.")
    assert len(memory) == 0 and update.added == []


def test_small_talk_is_not_sent():
    server = ScriptedServer([])
    ProfileMemory(extractor="model", **server.kwargs()).update(0, "thanks!")
    assert server.requests == []


def test_stale_facts_are_flagged(profile, monkeypatch):
    profile.update(0, "I can't do mornings.")
    assert "possibly outdated" not in profile.lines()[0]
    monkeypatch.setenv("WORKSHOP_NOW", "2027-06-01T10:00:00-07:00")
    assert profile.lines()[0].endswith("(turn 0, 2026-11-30; possibly outdated)")
    profile.stale_after = timedelta(days=365)
    assert "possibly outdated" not in profile.lines()[0]


def test_block_is_a_system_message(profile):
    assert profile.block() is None
    profile.update(0, "My name is Priya Raman and I'm vegetarian.")
    block = profile.block()
    assert block["role"] == "system"
    assert block["content"].splitlines()[1:] == ["- name: Priya Raman (turn 0, 2026-11-30)",
                                                 "- constraint/diet: vegetarian (turn 0, 2026-11-30)"]


def test_discard_brings_back_what_a_turn_replaced(profile):
    profile.update(1, "I prefer the north gate shuttle stop.")
    profile.update(2, "I prefer the south gate shuttle stop.")
    profile.discard(2)
    assert profile.get("preference", "stop").value == "the north gate shuttle stop" and profile.history == []


def test_state_round_trip(profile):
    profile.update(0, "My name is Priya Raman.")
    restored = ProfileMemory()
    restored.restore(json.loads(json.dumps(profile.state())))
    assert restored.lines() == profile.lines()


# ---------------------------------------------------------------- one source of truth: the fact store

@pytest.mark.parametrize("said, item", [
    ("My locker number is 4471.", ("locker number", "4471")),
    ("By the way, my academic advisor is Dr. Hollis Varga.", ("academic advisor", "Dr. Hollis Varga")),
    ("Quick note: my dorm room is Wren House 312, by the way.", ("dorm room", "Wren House 312")),
    ("Actually, my locker number is now 5502.", ("locker number", "5502")),
    ("My cat is called Biscuit. My piano lessons are on Wednesdays.", ("piano lessons", "on Wednesdays")),
])
def test_rules_find_open_ended_attributes(said, item):
    assert {"key": item[0], "topic": item[0], "value": item[1]} in extract_with_rules(said)


def test_rules_skip_questions():
    assert extract_with_rules("Is my locker number 4471?") == []
    assert extract_with_rules("What is my locker number?") == []


def test_a_correction_supersedes_the_old_value_and_names_it(profile):
    profile.update(3, "My locker number is 4471.")
    update = profile.update(40, "Actually, my locker number is 5502.")
    assert [d.outcome for d in update.decisions] == ["correction"]
    assert profile.get("locker number").value == "5502" and [f.value for f in profile.history] == ["4471"]
    assert profile.lines() == ['- locker number: 5502 (turn 40, 2026-11-30; superseded "4471" from turn 3)']
    (old, current), = profile.superseded()
    assert (old.value, old.turn_id, current.value, current.turn_id) == ("4471", 3, "5502", 40)


def test_restatement_refreshes_staleness(profile, monkeypatch):
    profile.update(0, "My advisor is Dr. Varga.")
    monkeypatch.setenv("WORKSHOP_NOW", "2027-06-01T10:00:00-07:00")
    assert profile.lines()[0].endswith("possibly outdated)")
    update = profile.update(90, "My advisor is Dr. Varga.")
    assert [d.outcome for d in update.decisions] == ["noop"]
    assert profile.lines() == ["- advisor: Dr. Varga (turn 90, 2027-06-01)"]


def test_profile_reads_a_shared_fact_store_and_shows_conflicts(tmp_path):
    facts = FactMemory.open(str(tmp_path / "facts.db"))
    profile = ProfileMemory(facts=facts, user_id="priya", extractor="rules")
    profile.update(1, "My dorm room is Wren House 312.")
    assert [f.value for f in facts.active_facts("priya")] == ["Wren House 312"]  # the store notebook 10 reads
    from helpers.facts.writer import Candidate
    facts.write(Candidate("priya", "user", "dorm room", "Osprey Hall 9", "housing-office", "tool", 1))
    assert profile.get("dorm room") is None and len(profile.conflicts) == 2
    assert all("unsettled" in line for line in profile.lines())


def test_an_older_turn_never_overrides_and_state_replays(profile):
    profile.update(7, "My locker number is 5502.")
    profile.update(2, "My locker number is 4471.")
    assert profile.get("locker number").value == "5502"
    restored = ProfileMemory(extractor="rules")
    restored.restore(json.loads(json.dumps(profile.state())))
    assert restored.lines() == profile.lines()


def test_a_message_that_states_nothing_asks_no_extractor():
    """Questions and small talk state no fact (merge would reject anything found), so no request is spent."""
    from helpers.memory.profile_extraction import CAMPUS
    from helpers.facts.pipeline import RuleExtractor

    class Counting:
        user_id = "ada"

        def __init__(self):
            self.asked, self.rules = [], RuleExtractor(CAMPUS, user_id="ada")

        def extract(self, turn_id, user_text, assistant_text=""):
            self.asked.append(user_text)
            return self.rules.extract(turn_id, user_text, assistant_text)

        def define(self, memory, candidates):
            self.rules.define(memory, candidates)

    counting = Counting()
    profile = ProfileMemory(user_id="ada", extractor=counting)
    for turn_id, text in enumerate(["What is my locker number?", "thanks!", "Where can I print? Is it open now?"]):
        assert not profile.update(turn_id, text, "Some answer.").decisions
    assert counting.asked == []
    profile.update(3, "Where can I print? My locker number is 4471.")
    assert counting.asked == ["Where can I print? My locker number is 4471."]
    assert profile.get("locker number").value == "4471"


@pytest.mark.parametrize("brk", BREAKS)
def test_a_value_in_the_shared_store_cannot_forge_a_profile_line(brk):
    profile = shared_profile(forged("4471", brk))
    assert_lines("\n".join(profile.lines()), expected=1)
    assert_lines(profile.block()["content"], expected=2)


@pytest.mark.parametrize("brk", BREAKS)
def test_the_users_own_words_cannot_forge_a_profile_line(brk):
    profile = ProfileMemory(extractor="rules")
    profile.update(0, f"My locker number is 4471{brk}{FORGED}.{brk}- x: y (current).")
    assert profile.block() is not None
    assert_lines(profile.block()["content"])


CALCULUS = "Can you tell me about the calculus tutoring?"


def name_item(value):
    return [{"key": "name", "topic": "name", "value": value}]


def test_a_word_fragment_is_not_the_users_words(caplog):
    profile = ProfileMemory(extractor="rules")
    with caplog.at_level(logging.WARNING, logger="helpers.memory.profile"):
        update = profile.merge(0, name_item("Cal"), CALCULUS)
    assert update.added == [] and len(profile) == 0 and update.rejected
    assert "'Cal'" in caplog.text


@pytest.mark.parametrize("value, said", [
    ("Cal", "I study calculus."),
    ("Ann", "My advisor is Dr. Annabel Lee."),
    ("Zo", "My name is Zoë."),  # Unicode aware: "ë" is a letter, so "Zo" is only part of a word
    ("ren Hou", "My dorm room is Wren House 312."),
    ("4", "My locker number is 4471."),
])
def test_only_whole_words_are_taken(value, said):
    profile = ProfileMemory(extractor="rules")
    assert profile.merge(0, name_item(value), said).added == []
    assert not says(said, value)


@pytest.mark.parametrize("value, said", [
    ("Cal", "Please call me Cal."),
    ("CAL", "please call me cal!"),  # case-insensitive
    ("Zoë", "My name is ZOË."),
    ("Zoe\u0308", "My name is Zo\u00eb."),  # the same letter, decomposed or not
    ("Dr. Hollis Varga", "By the way, my academic advisor is Dr. Hollis Varga."),
    ("can’t do mornings", "I can't do mornings."),
])
def test_whole_words_of_a_statement_are_taken(value, said):
    profile = ProfileMemory(extractor="rules")
    # each value under the attribute its sentence states (a name only after a naming cue: "call me", "my name is")
    key = {"Dr. Hollis Varga": "academic advisor", "can’t do mornings": "constraint"}.get(value, "name")
    item = [{"key": key, "topic": key, "value": value}]
    assert [f.value for f in profile.merge(0, item, said).added] == [" ".join(value.split())]


@pytest.mark.parametrize("question", [
    "Can you call me Cal?", "Could you call me Cal from now on?", "Is my name Cal?", CALCULUS,
    "My name is Cal, can you remember that?", "Should I say my locker number is 4471?",
])
def test_a_question_yields_no_profile_facts(question):
    profile = ProfileMemory(extractor="rules")
    assert profile.update(0, question).added == [] and len(profile) == 0
    assert extract_with_rules(question) == [] and stated_parts(question) == []
    assert profile.merge(1, name_item("Cal"), question).added == []


def test_a_question_yields_no_profile_facts_from_the_model_either():
    reply = {"content": json.dumps({"facts": [{"attribute": "name", "value": "Cal", "evidence": "call me Cal"}]})}
    server = ScriptedServer([reply])
    profile = ProfileMemory(extractor="model", **server.kwargs())
    update = profile.update(0, "Can you call me Cal?")  # states nothing: the extractor is not even asked
    assert update.added == [] and len(profile) == 0 and server.requests == []
    update = profile.update(1, "I'm new here. Can you call me Cal?")  # asked: the name is only in the question
    assert len(server.requests) == 1 and update.added == [] and len(profile) == 0
    assert update.rejected and "question" in update.rejected[0]


def test_statements_beside_a_question_still_count():
    profile = ProfileMemory(extractor="rules")
    update = profile.update(0, "My name is Ada. When does the AI club meet?")
    assert [(f.key, f.value) for f in update.added] == [("name", "Ada")]
    update = profile.update(1, "Thanks! My locker number is 4471. Who is my advisor? I'm vegetarian.")
    assert sorted(f.value for f in update.added) == ["4471", "vegetarian"]
    # a value pieced together across a question is not the user's words
    assert profile.merge(2, name_item("Wren Is"), "My dorm is Wren. Is it far?").added == []

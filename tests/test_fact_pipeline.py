"""One fact pipeline (``helpers.facts.pipeline``): both domains through one extractor interface, offline and with
a scripted model (one request builder, one reply shape, one strict reader), and one user's facts from both in one
``FactMemory`` with one audit."""
import json

import pytest

from helpers.facts.extract import DELIVERY, delivery_set, extract_candidates, extract_with_rules, ingest_turn
from helpers.core.context_format import (FACT_EXTRACTOR, USER_SAID, read_attributes, read_fact_reply, read_sections,
                                    read_task)
from helpers.facts.pipeline import (Extractor, Found, ModelExtractor, MultiExtractor, ReplyFormatError, RuleExtractor,
                                    extraction_prompt, read_reply, write_turn)
from helpers.facts.schema import AttributeSpec, Candidate
from helpers.facts.writer import FactMemory
from helpers.memory import profile_extraction
from helpers.memory.profile import ProfileMemory
from helpers.memory.profile_extraction import CAMPUS, ProfileFormatError, attribute_label, split_label
from helpers.standin.server import make_offline_client

from scripted import ScriptedServer

SAID = "My name is Dana. Mornings work best for deliveries. My locker number is 4471. I'm vegetarian."


def found(candidates):
    return {(c.attribute, c.value) for c in candidates}


@pytest.mark.parametrize("domain, expected", [
    (DELIVERY, {("delivery_window", "Mornings")}),
    (CAMPUS, {("name", "Dana"), ("locker number", "4471"), ("constraint/diet", "vegetarian")}),
])
def test_both_domains_run_offline_through_one_interface(domain, expected):
    extractor = RuleExtractor(domain, user_id="dana")
    assert isinstance(extractor, Extractor)
    candidates = extractor.extract(7, SAID, "Noted, Dana: you prefer mornings.")
    assert found(candidates) == expected
    assert {(c.user_id, c.subject, c.source_id, c.source_kind, c.source_version) for c in candidates} == {
        ("dana", "user", "chat:dana", "user", 7)}
    assert all(c.evidence for c in candidates)


def test_the_old_entry_points_are_the_pipeline():
    assert extract_with_rules(SAID, role="user", user_id="dana", seq=3) == RuleExtractor(
        DELIVERY, user_id="dana").extract(3, SAID)
    assert extract_candidates({"role": "user", "content": SAID}, user_id="dana", seq=3).candidates == \
        extract_with_rules(SAID, role="user", user_id="dana", seq=3)
    items = profile_extraction.extract_with_rules(SAID)
    assert {(attribute_label(i["key"], i["topic"]), i["value"]) for i in items} == found(
        RuleExtractor(CAMPUS, user_id="dana").extract(3, SAID))
    assert all(split_label(attribute_label(i["key"], i["topic"])) == (i["key"], i["topic"]) for i in items)


def test_assistant_claims_are_proposals_of_the_delivery_set_only():
    said = "I have updated your address to 9 Oak Ave."
    claims = RuleExtractor(DELIVERY, user_id="dana", assistant_claims=True).extract(2, "ok", said)
    assert [(c.attribute, c.value, c.source_kind, c.source_id) for c in claims] == [
        ("shipping_address", "9 Oak Ave", "assistant", "assistant:dana")]
    assert RuleExtractor(DELIVERY, user_id="dana").extract(2, "ok", said) == []
    assert RuleExtractor(CAMPUS, user_id="dana", assistant_claims=True).extract(2, "ok", said) == []


TURN = "Actually, make that evenings. My locker is 5502 now; I'm vegan."
DELIVERY_REPLY = {"facts": [{"attribute": "delivery_window", "value": "evenings", "evidence": "make that evenings"}]}
CAMPUS_REPLY = {"facts": [{"attribute": "locker number", "value": "5502", "evidence": "My locker is 5502 now"},
                          {"attribute": "Constraint / Diet", "value": "vegan", "evidence": "I'm vegan."}]}


@pytest.mark.parametrize("domain, reply, expected, corrections", [
    (DELIVERY, DELIVERY_REPLY, {("delivery_window", "evenings")}, {True}),  # "Actually": the delivery cue rule
    (CAMPUS, CAMPUS_REPLY, {("locker number", "5502"), ("constraint/diet", "vegan")}, {False}),
])
def test_both_domains_ask_a_model_through_one_interface(domain, reply, expected, corrections):
    server = ScriptedServer([{"content": json.dumps(reply)}])
    extractor = ModelExtractor(domain, user_id="dana", **server.kwargs())
    assert isinstance(extractor, Extractor)
    candidates = extractor.extract(9, TURN, "Done.")
    assert found(candidates) == expected
    assert {(c.source_id, c.source_kind, c.source_version) for c in candidates} == {("chat:dana", "user", 9)}
    assert {c.explicit_correction for c in candidates} == corrections
    assert {c.evidence for c in candidates} == {f["evidence"] for f in reply["facts"]}
    [request] = server.requests
    system, turn = request["messages"][0]["content"], request["messages"][1]["content"]
    assert read_task(system) == FACT_EXTRACTOR and system == extraction_prompt(domain)
    assert read_attributes(system) == (list(domain.attributes), domain.open)
    assert read_sections(turn)[USER_SAID] == TURN
    assert request["response_format"] == {"type": "json_object"} and request["max_tokens"] == domain.max_tokens


def test_one_prompt_for_every_domain_only_the_attributes_differ():
    delivery, campus = extraction_prompt(DELIVERY).split("\n"), extraction_prompt(CAMPUS).split("\n")
    same = [line for line in delivery if line in campus]
    assert same[0].startswith("You are a fact extractor") and same[-1].startswith("Reply with JSON only")
    assert '{"facts": [{"attribute": "...", "value": "...", "evidence": "..."}]}' in same[-1]
    assert "ATTRIBUTES (only these):" in delivery and "ATTRIBUTES (these, or a new one):" in campus
    assert "- delivery_window: when the customer wants deliveries to arrive (one of afternoon, evening, morning)" \
        in delivery


@pytest.mark.parametrize("domain, reply, problem", [
    (DELIVERY, {"facts": [{**DELIVERY_REPLY["facts"][0], "attribute": "mood"}]},
     "facts[0].attribute 'mood' is not one of allergy, delivery_window, preferred_contact, shipping_address"),
    (DELIVERY, "Sure! evenings", "the reply is not JSON (Expecting value at character 0): 'Sure! evenings'"),
    (DELIVERY, {"facts": [{"subject": "user", "attribute": "delivery_window", "value": "evenings",
                           "correction": True, "evidence": "x"}]},
     "facts[0] must have exactly the keys attribute, value and evidence (got attribute, correction, evidence, "
     "subject, value)"),
    (CAMPUS, {"facts": [{"key": "name", "topic": "name", "value": "Dana"}]},
     "facts[0] must have exactly the keys attribute, value and evidence (got key, topic, value)"),
    (CAMPUS, {"facts": [], "notes": "x"}, 'the reply must be one JSON object with exactly one key, "facts"'),
    (CAMPUS, {"facts": [{"attribute": "a/b/c", "value": "x", "evidence": ""}]}, "'a/b/c' is not a label"),
    (CAMPUS, {"facts": [{"attribute": "name", "value": "  ", "evidence": ""}]}, "facts[0].value is empty"),
    (CAMPUS, {"facts": [{"attribute": "name", "value": "x" * 301, "evidence": ""}]},
     "facts[0].value is 301 characters; at most 300"),
])
def test_a_malformed_reply_gives_nothing_in_either_domain(domain, reply, problem):
    text = reply if isinstance(reply, str) else json.dumps(reply)
    server = ScriptedServer([{"content": text}])
    with pytest.raises(ReplyFormatError) as raised:
        ModelExtractor(domain, user_id="dana", **server.kwargs()).extract(1, "make that evenings")
    assert any(problem in p for p in raised.value.problems), raised.value.problems
    assert isinstance(raised.value, ProfileFormatError) == (domain is CAMPUS)
    with pytest.raises(ReplyFormatError):
        read_reply(domain, text)  # the one reader, whichever way it is reached


def test_a_reply_with_many_problems_names_the_first_five_and_counts_the_rest():
    reply = json.dumps({"facts": [{"attribute": "mood", "value": "x" * 301, "evidence": ""}] * 4})
    with pytest.raises(ReplyFormatError) as raised:
        DELIVERY.read_reply(reply)  # each fact names another attribute and is too long: 8 problems
    assert len(raised.value.problems) == 6 and raised.value.problems[-1] == "and 3 more problems"
    assert raised.value.problems[:2] == [
        "facts[0].attribute 'mood' is not one of allergy, delivery_window, preferred_contact, shipping_address",
        "facts[0].value is 301 characters; at most 300"]


def test_no_reply_text_is_a_format_error_not_a_crash():
    for domain in (DELIVERY, CAMPUS):
        with pytest.raises(ReplyFormatError, match="the reply has no text"):
            domain.read_reply(None)


@pytest.mark.parametrize("domain, said, expected", [
    (CAMPUS, "Hi, my name is Dana. I'm vegetarian. I prefer the north gate shuttle stop.",
     [("name", "Dana", "Hi, my name is Dana."), ("constraint/diet", "vegetarian", "I'm vegetarian."),
      ("preference/stop", "the north gate shuttle stop", "I prefer the north gate shuttle stop.")]),
    (CAMPUS, "Can you call me Cal?", []),
    (DELIVERY, "I'm allergic to peanuts. Mornings work best for deliveries.", []),  # no rule of its names these
])
def test_the_stand_in_answers_every_domains_request_in_the_one_shape(domain, said, expected):
    extractor = ModelExtractor(domain, user_id="dana", client=make_offline_client())
    reply = extractor.ask(3, said, "Noted: my name is Lark.")
    assert [(f.attribute, f.value, f.evidence) for f in read_fact_reply(reply)[0]] == expected
    assert [(f.attribute, f.value) for f in extractor.read(reply)] == [e[:2] for e in expected]


def test_one_users_facts_from_both_domains_land_in_one_store_with_one_audit():
    memory = FactMemory.open(":memory:")
    both = MultiExtractor(RuleExtractor(CAMPUS, user_id="dana"), RuleExtractor(DELIVERY, user_id="dana"))
    first = write_turn(memory, both, 1, SAID)
    assert sorted(d.outcome for d in first) == ["insert"] * 4
    second = write_turn(memory, both, 2, "Actually, make that evenings. My locker number is 5502.")
    assert sorted((d.attribute, d.outcome) for d in second) == [("delivery_window", "correction"),
                                                                 ("locker number", "correction")]
    assert found(memory.active_facts("dana")) == {("name", "Dana"), ("constraint/diet", "vegetarian"),
                                                  ("locker number", "5502"), ("delivery_window", "evenings")}
    audit = memory.audit("dana")
    assert [(row.attribute, row.outcome) for row in audit][-2:] == [(d.attribute, d.outcome) for d in second]
    assert {row.attribute for row in audit} == {"name", "delivery_window", "locker number", "constraint/diet"}
    assert memory.attributes["locker number"].description == "stated by the user"  # defined on first use
    assert memory.attributes["delivery_window"].allowed == {"morning", "afternoon", "evening"}  # the listed spec


def test_the_profile_and_the_facts_of_notebook_10_share_one_store_and_audit():
    memory = FactMemory.open(":memory:")
    profile = ProfileMemory(facts=memory, user_id="dana", extractor="rules")
    profile.update(1, "My locker number is 4471.")
    ingest_turn(memory, {"role": "user", "content": "Please contact me by email."}, user_id="dana", seq=1)
    profile.update(2, "My locker number is 5502 now.")
    rows = [(row.attribute, row.outcome) for row in memory.audit("dana")]
    assert rows == [("locker number", "insert"), ("preferred_contact", "insert"), ("locker number", "correction")]


def test_a_profile_runs_any_extractor_and_shows_every_domains_facts():
    memory = FactMemory.open(":memory:")
    both = MultiExtractor(RuleExtractor(CAMPUS, user_id="dana"), RuleExtractor(DELIVERY, user_id="dana"))
    profile = ProfileMemory(facts=memory, user_id="dana", extractor=both)
    update = profile.update(4, SAID)
    assert not update.rejected and len(update.decisions) == 4
    lines = "\n".join(profile.lines())
    assert "- delivery_window: Mornings (turn 4," in lines and "- locker number: 4471 (turn 4," in lines
    with pytest.raises(Exception, match="Extractor"):
        ProfileMemory(extractor="regex")


def test_a_profile_with_a_model_extractor_rejects_a_malformed_reply_whole(caplog):
    server = ScriptedServer([{"content": json.dumps({"facts": [{"key": "name"}]})}])
    profile = ProfileMemory(extractor="model", **server.kwargs())
    update = profile.update(0, "My name is Dana.")
    assert update.rejected and "must have exactly the keys attribute, value and evidence" in update.rejected[0]
    assert len(profile) == 0


def test_a_closed_domain_defines_nothing_and_an_open_one_what_it_finds():
    memory = FactMemory.open(":memory:")
    memory.attributes.pop("allergy")
    mine = Candidate("dana", "user", "allergy", "peanuts", "chat:dana")
    DELIVERY.define(memory, [mine])
    assert "allergy" in memory.attributes  # the listed spec comes back with the set
    custom = delivery_set({"delivery_window": DELIVERY.attributes["delivery_window"]})
    custom.define(memory, [Candidate("dana", "user", "mood", "good", "chat:dana")])
    assert "mood" not in memory.attributes and CAMPUS.spec("mood") == AttributeSpec("mood",
                                                                                     description="stated by the user")
    assert Found("x", "y").subject == "user"

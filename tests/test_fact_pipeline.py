"""One fact pipeline (``helpers.facts.pipeline``): both domains through one extractor interface, offline and with
a scripted model, and one user's facts from both in one ``FactMemory`` with one audit."""
import json

import pytest

from helpers.facts.extract import DELIVERY, delivery_set, extract_candidates, extract_with_rules, ingest_turn
from helpers.facts.pipeline import (Extractor, Found, ModelExtractor, MultiExtractor, ReplyFormatError, RuleExtractor,
                                    write_turn)
from helpers.facts.schema import AttributeSpec, Candidate
from helpers.facts.writer import FactMemory
from helpers.memory import profile_extraction
from helpers.memory.profile import ProfileMemory
from helpers.memory.profile_extraction import CAMPUS, ProfileFormatError, attribute_label, split_label

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


DELIVERY_REPLY = {"facts": [{"subject": "user", "attribute": "delivery_window", "value": "evenings",
                             "correction": True, "evidence": "make that evenings"}]}
CAMPUS_REPLY = {"facts": [{"key": "locker number", "topic": "locker number", "value": "5502"},
                          {"key": "constraint", "topic": "diet", "value": "vegan"}]}


@pytest.mark.parametrize("domain, reply, expected, task", [
    (DELIVERY, DELIVERY_REPLY, {("delivery_window", "evenings")}, "Extract durable facts"),
    (CAMPUS, CAMPUS_REPLY, {("locker number", "5502"), ("constraint/diet", "vegan")}, "You are a profile extractor"),
])
def test_both_domains_ask_a_model_through_one_interface(domain, reply, expected, task):
    server = ScriptedServer([{"content": json.dumps(reply)}])
    extractor = ModelExtractor(domain, user_id="dana", **server.kwargs())
    assert isinstance(extractor, Extractor)
    candidates = extractor.extract(9, "Actually, make that evenings. My locker is 5502 now; I'm vegan.", "Done.")
    assert found(candidates) == expected
    assert {(c.source_id, c.source_kind, c.source_version) for c in candidates} == {("chat:dana", "user", 9)}
    [request] = server.requests
    assert request["messages"][0]["content"].startswith(task)
    assert request["response_format"] == {"type": "json_object"} and request["max_tokens"] == domain.max_tokens


@pytest.mark.parametrize("domain, reply", [
    (DELIVERY, {"facts": [{**DELIVERY_REPLY["facts"][0], "attribute": "mood"}]}),
    (DELIVERY, "Sure! evenings"),
    (CAMPUS, {"facts": [{"key": "name", "value": "Dana"}]}),
    (CAMPUS, {"facts": [], "notes": "x"}),
])
def test_a_malformed_reply_gives_nothing_in_either_domain(domain, reply):
    server = ScriptedServer([{"content": reply if isinstance(reply, str) else json.dumps(reply)}])
    with pytest.raises(ReplyFormatError) as raised:
        ModelExtractor(domain, user_id="dana", **server.kwargs()).extract(1, "make that evenings")
    assert raised.value.problems
    if domain is CAMPUS:
        assert isinstance(raised.value, ProfileFormatError)


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
    assert update.rejected and "must have exactly key, topic and value" in update.rejected[0] and len(profile) == 0


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

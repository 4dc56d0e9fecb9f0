"""Durable facts (notebook 10): corrections worded without "my X is" replace the value they change."""
import pytest

from helpers.facts.extract import DELIVERY, corrects, ingest_turn
from helpers.facts.writer import FactMemory
from helpers.facts.fact_store import SQLiteFactStore


@pytest.fixture
def memory(tmp_path):
    memory = FactMemory(SQLiteFactStore(str(tmp_path / "facts.db")))
    yield memory
    memory.close()


def user_turn(text):
    return {"role": "user", "content": text}


def active(memory):
    return {(f.attribute, f.value) for f in memory.active_facts("u1")}


@pytest.mark.parametrize("first, change, attribute, new", [
    ("I prefer deliveries in the morning.", "I switched my deliveries to evenings.", "delivery_window",
     "evenings"),
    ("I'd like my parcels to arrive in the afternoon.", "Please move the deliveries to the morning.",
     "delivery_window", "morning"),
    ("My address is 12 Elm Street.", "We've moved to 9 Oak Avenue.", "shipping_address", "9 Oak Avenue"),
    ("My shipping address is 3 Quay Road.", "I just relocated to 77 Hill Crescent, flat 4.", "shipping_address",
     "77 Hill Crescent, flat 4"),
    ("My address is 5 Birch Lane.", "We now live at 40 Mill Lane.", "shipping_address", "40 Mill Lane"),
    ("Contact me by email.", "I changed my contact preference to text.", "preferred_contact", "text"),
])
def test_a_change_worded_without_my_x_is_replaces_the_old_value(memory, first, change, attribute, new):
    ingest_turn(memory, user_turn(first), user_id="u1", seq=1)
    report = ingest_turn(memory, user_turn(change), user_id="u1", seq=2)
    assert [d.outcome for d in report.written] == ["correction"]
    values = {v for a, v in active(memory) if a == attribute}
    assert len(values) == 1 and DELIVERY.attributes[attribute].normalise(values.pop()) == \
        DELIVERY.attributes[attribute].normalise(new)


@pytest.mark.parametrize("text", [
    "I moved to the evening shift at work.",      # no street number: no address
    "I moved to Leeds last year.",
    "We moved the sofa to the other room.",
    "I switched my major to history.",           # not a delivery or a contact
])
def test_a_change_of_something_else_is_no_delivery_fact(text):
    assert DELIVERY.rules(text) == []


@pytest.mark.parametrize("text, cue", [
    ("I switched my deliveries to evenings.", True),
    ("From now on, text me.", True),
    ("We've moved to 9 Oak Avenue.", True),
    ("I prefer deliveries in the morning.", False),
    ("My address is 12 Elm Street.", False),
])
def test_correction_cues_read_a_change_of_state(text, cue):
    assert corrects(text) is cue

"""The facts message (helpers/facts/prompt.py): every fact is one line, so a value, a subject or a superseded value
cannot forge a line of the facts block; ordinary facts render exactly as before."""
import pytest

from helpers.facts.prompt import facts_message, format_facts
from helpers.facts.writer import Candidate

from support import BREAKS, assert_lines, dana_store, forged


@pytest.mark.parametrize("brk", BREAKS)
def test_a_fact_value_cannot_forge_a_line_of_the_facts_message(brk):
    memory = dana_store(forged("12 Elm St", brk))
    content = facts_message(memory, "dana")["content"]
    lines = assert_lines(content, expected=2)
    assert lines[1].startswith("- shipping address: 12 Elm St\\")
    assert lines[1].endswith("(current); source: chat:dana")
    assert_lines(format_facts(memory.active_facts("dana")), expected=2)


@pytest.mark.parametrize("brk", ["\n", "\u2028", "\x85"])
def test_a_subject_or_a_superseded_value_cannot_forge_a_line_either(brk):
    memory = dana_store("12 Elm St", subject=forged("dana's sister", brk))
    assert_lines(facts_message(memory, "dana")["content"], expected=2)
    memory = dana_store(forged("12 Elm St", brk))
    memory.write(Candidate("dana", "user", "shipping_address", "40 Oak Ave", "chat:dana", "user", 2))
    content = facts_message(memory, "dana")["content"]
    assert_lines(content, expected=3)  # header, the current value, the superseded one
    assert "(superseded)" in content.splitlines()[2]


def test_ordinary_facts_render_exactly_as_before():
    memory = dana_store("12 Elm St")
    assert facts_message(memory, "dana")["content"] == (
        "Known facts about the user (use the values marked current):\n"
        "- shipping address: 12 Elm St (current); source: chat:dana")
    assert format_facts(memory.active_facts("dana")) == \
        "Known facts about the user:\n- shipping address: 12 Elm St (source: chat:dana)"

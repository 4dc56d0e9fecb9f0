"""The seeded conversation generator (helpers/memory/convgen.py) used by benchmarks/memory_eval.py."""
import pytest

from helpers.memory.convgen import generate, scripted
from helpers.memory.convgen_phrases import ATTRIBUTES
from helpers.memory.profile_extraction import extract_with_rules
from helpers.memory.recall import is_question


def test_the_same_seed_gives_the_same_conversation_and_another_seed_does_not():
    assert generate(3, 120, 12) == generate(3, 120, 12)
    assert generate(3, 120, 12).turns != generate(4, 120, 12).turns


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_probes_know_the_current_and_the_stale_values(seed):
    conversation = generate(seed, 160, 16)
    assert len(conversation.turns) == 160 and conversation.corrected_probes
    for probe in conversation.probes:
        said = [t for t, turn in enumerate(conversation.turns[:probe.turn])
                if turn.attribute == probe.attribute and turn.kind != "probe"]
        newest = conversation.turns[said[-1]].user
        assert probe.current in newest and probe.current not in probe.stale
        assert all(probe.turn - t >= 8 for t in said)  # the fact has left a window of 8 turns
        assert conversation.turns[probe.turn].user == probe.question and is_question(probe.question)


def test_conversations_mix_every_kind_of_turn():
    kinds = {turn.kind for turn in generate(1).turns}
    assert kinds == {"statement", "correction", "restatement", "probe", "campus", "small talk", "long"}
    repeated = [p.question for p in generate(1).probes]
    assert len(repeated) > len(set(repeated))  # some probes are asked word for word again


def test_no_value_hides_inside_another():
    values = [v.lower() for vs, _ in ATTRIBUTES.values() for v in vs]
    assert not [(a, b) for a in values for b in values if a != b and a in b]


def test_every_generated_statement_is_extracted_as_its_attribute():
    for turn in generate(2).turns:
        if turn.kind in ("statement", "correction", "restatement"):
            items = extract_with_rules(turn.user)
            assert any(item["key"] == turn.attribute.lower() for item in items), turn.user


def test_the_scripted_case_is_kept():
    conversation = scripted()
    assert len(conversation.turns) == 200 and len(conversation.probes) == 42
    assert all(p.turn - p.stated_at[0] >= 30 for p in conversation.probes)

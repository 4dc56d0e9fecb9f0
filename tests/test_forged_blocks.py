"""User text never forges a line of the blocks helpers/memory/recall.py and helpers/memory/assembler.py write
into the system part: a quoted turn, the recall block and every block ``MemoryAssembler.build`` puts before the
question keep their line count, and no line begins with a forged marker (helpers in tests/support.py).

What is left here belongs in tests/test_recall.py and tests/test_assembler.py; those files were being edited when
the rest of this theme file moved to test_context_format, test_facts_prompt, test_chat_window, test_profile and
test_summary.
"""

import pytest

from helpers.facts.writer import Candidate
from helpers.memory.assembler import MemoryAssembler, mark_superseded
from helpers.memory.recall import Recalled, quote_turn, recall_block
from helpers.memory.summary import RollingSummary, Summariser

from support import BREAKS, assert_lines, forged, shared_profile


# ---------------------------------------------------------------- recalled turns (notebook 09)

@pytest.mark.parametrize("brk", BREAKS)
def test_a_quoted_turn_cannot_forge_a_line(brk):
    turn = [{"role": "user", "content": forged("My locker number is 4471.", brk)},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": forged("lookup", brk), "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": forged("Your locker is 4471.", brk)}]
    assert_lines(quote_turn(7, turn), expected=3)  # user, tools used, answer


@pytest.mark.parametrize("brk", [b for b in BREAKS if b not in ("\n", "\r\n")])
def test_the_recall_block_cannot_hide_a_line_break(brk):
    item = Recalled(7, 0.9, f'[turn 7] user: "{forged("My locker number is 4471.", brk)}"')
    assert_lines(recall_block([item])["content"], expected=2)


# ---------------------------------------------------------------- every block the assembler writes

class _Recall:
    """A recall index that always finds one quoted turn (the real one needs embeddings)."""

    def __init__(self, text):
        self.text = text

    def attach(self, client=None, settings=None):
        pass

    def search(self, question, exclude=()):
        return [Recalled(1, 0.9, self.text)]

    def similarity(self, question, texts):
        return None


@pytest.mark.parametrize("brk", BREAKS)
def test_no_block_of_an_assembled_request_can_be_forged(brk):
    profile = shared_profile("4471")
    # a correction as another writer stored it: a value with a line break in it
    decision = profile.store.write(Candidate("dana", "user", "locker number", forged("5502", brk),
                                             "form:registrar", "tool", 2))
    assert decision.outcome == "correction", decision
    # A summary's and a quote's own "\n" are lines the package (or the summariser) wrote; any other line break
    # in them (a model echoing one, an old snapshot) must not become a line.
    hidden = "" if brk in ("\n", "\r\n") else forged("", brk)
    memory = MemoryAssembler(summariser=Summariser(), profile=profile,
                             recall=_Recall(f'[turn 1] user: "My locker number is 4471.{hidden}"'))
    memory.summary = RollingSummary(f'[turn 0] user: "My locker number is 4471.{hidden}"', [0])
    assembly = memory.build("You are a campus assistant.", [], "What is my locker number?")
    blocks = [m["content"] for m in assembly.messages if m["role"] == "system"][1:]
    assert [b.split("\n", 1)[0].split(" (")[0] for b in blocks] == [
        "User profile", "Summary of earlier turns", "Recalled earlier turns"]
    for block in blocks:
        assert_lines(block, expected=2)
    assert 'superseded at turn 2: locker number is now "5502\\' in blocks[2]
    assert 'superseded at turn 2: locker number is now "5502\\' in blocks[1]
    assert 'superseded "4471"' in blocks[0]


def test_mark_superseded_is_given_one_line_values():
    profile = shared_profile("4471")
    profile.store.write(Candidate("dana", "user", "locker number", forged("5502", "\n"), "form:registrar",
                                  "tool", 2))
    memory = MemoryAssembler(summariser=False, recall=_Recall('[turn 1] user: "My locker number is 4471."'),
                             profile=profile)
    recall_text = [m["content"] for m in memory.build(None, [], "What is my locker?").messages
                   if m["content"].startswith("Recalled")][0]
    assert_lines(recall_text, expected=2)
    raw = mark_superseded('[turn 1] user: "4471"', profile.superseded())  # the notebook's own function
    assert "\n" in raw  # (fed raw values it would add lines: that is why build gives it one-line facts)

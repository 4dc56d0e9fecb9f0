"""The memory evaluation (helpers/memory/evaluation.py): what it counts, on a short generated conversation."""
import pytest

from helpers.memory import evaluation as memory_eval
from helpers.memory.convgen import Probe, generate

PROBE = Probe(40, "What's my locker number?", "locker number", "5502", ("4471",), (30,))


@pytest.mark.parametrize("text, expected", [
    ("- locker number: 5502 (turn 30)", (1, 0, 0)),
    ('[turn 3] user: "my locker number is 4471."', (0, 1, 0)),
    ('[turn 3] user: "my locker number is 4471."\n[turn 30] user: "actually, 5502."', (1, 0, 1)),
    ('[turn 3] user: "my locker is 4471." (superseded at turn 30: locker number is now "5502")', (1, 0, 0)),
    ("nothing about it", (0, 0, 0)),
])
def test_judge_counts_evidence_stale_only_and_unmarked(text, expected):
    score = memory_eval.Score()
    memory_eval.judge(score, text.lower(), PROBE)
    assert (score.hits, score.stale_only, score.both_unmarked) == expected and score.probes == 1


def test_a_short_case_measures_the_session_s_own_requests_with_tools():
    case = memory_eval.run_case(generate(7, 48, 6, min_gap=7), budget=1500,
                                strategies={k: memory_eval.STRATEGIES[k] for k in ("full history", "hybrid")})
    assert case["tools"] > 500  # the tool schemas are part of every counted request
    hybrid, full = case["scores"]["hybrid"], case["scores"]["full history"]
    assert len(hybrid.tokens) == 48 and max(hybrid.tokens) <= 1500
    assert hybrid.probes == full.probes == len(generate(7, 48, 6, min_gap=7).probes) > 0
    assert sum(hybrid.tokens) < sum(full.tokens)

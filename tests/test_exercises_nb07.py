"""Notebook 07's exercise checks: plausible wrong answers each get the hint a learner needs, independently
written right answers pass, and no verdict depends on the day it runs."""
import pytest
from exercise_support import defined, quiet_check, run

from helpers.exercises.nb07 import CLEARED, exercise_1, exercise_2, generated_history, reference_clear
from helpers.chat.history import split_turns, turns_newest_first
from helpers.chat.validity import find_problems


# Days other than the frozen one: on that day test_exercises.py checks every solution and stub already.
@pytest.mark.parametrize("now", ["2026-12-02T23:30:00-08:00", "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (exercise_1, exercise_2):
        assert run(exercise, exercise.solution_code)[0]
        assert not run(exercise, exercise.stub)[0]


# ---------------------------------------------------------------- exercise 1: clear old tool results

def test_the_reference_keeps_every_call_answered_and_clears_only_old_results():
    for seed in range(40):
        history = generated_history(seed)
        n_turns = len(split_turns(history)[1])
        for keep in range(n_turns + 2):
            out = reference_clear(history, keep)
            assert find_problems(out) == [] and len(out) == len(history)
            cleared = sum(m.get("content") == CLEARED for m in out)
            old_turns = split_turns(history)[1][:max(n_turns - keep, 0)]
            assert cleared == sum(m["role"] == "tool" for turn in old_turns for m in turn)


CLEAR_RIGHT = {
    "by split_turns": '''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    old = len(turns) - keep
    out = list(system)
    for number, turn in enumerate(turns):
        for message in turn:
            if number < old and message["role"] == "tool":
                message = dict(message, content=CLEARED)
            out.append(message)
    return out
''',
    "by walking back to the cut": '''
def clear_old_results(messages, keep):
    starts = [start for start, _ in turns_newest_first(messages)]  # newest first
    if keep == 0:
        cut = len(messages)
    elif keep <= len(starts):
        cut = starts[keep - 1]
    else:
        cut = 0
    out = []
    for i, m in enumerate(messages):
        out.append({**m, "content": CLEARED} if i < cut and m["role"] == "tool" else m)
    return out
''',
    "by counting user messages from the end": '''
def clear_old_results(messages, keep):
    out, seen = [], 0
    for m in reversed(messages):
        if m["role"] == "tool" and seen >= keep:
            m = {**m, "content": CLEARED}
        out.append(m)
        if m["role"] == "user":
            seen += 1
    return out[::-1]
''',
}


@pytest.mark.parametrize("name", sorted(CLEAR_RIGHT))
def test_independent_right_answers_to_exercise_1_pass(name):
    passed, said = run(exercise_1, CLEAR_RIGHT[name])
    assert passed and said.startswith("✓"), said


CLEAR_WRONG = {
    "removes old tool results": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep
        out += [m for m in turn if not (old and m["role"] == "tool")]
    return out
''', "Keep every message: a tool call whose result is gone"),
    "sets old contents to None": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep
        out += [{**m, "content": None} if old and m["role"] == "tool" else m for m in turn]
    return out
''', "content is None. A strict server refuses a tool message without a string content"),
    "removes old tool calls together with their results": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep
        out += [m for m in turn if not (old and (m["role"] == "tool" or m.get("tool_calls")))]
    return out
''', "Keep every message"),
    "clears every tool result, whatever keep says": ('''
def clear_old_results(messages, keep):
    return [{**m, "content": CLEARED} if m["role"] == "tool" else m for m in messages]
''', "is in the newest 1 turn, which stay as they are"),
    "counts keep in messages, not turns": ('''
def clear_old_results(messages, keep):
    cut = len(messages) - keep
    return [{**m, "content": CLEARED} if i < cut and m["role"] == "tool" else m for i, m in enumerate(messages)]
''', "Count turns (each starts at a user message), not messages"),
    "keeps one turn too many": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep - 1
        out += [{**m, "content": CLEARED} if old and m["role"] == "tool" else m for m in turn]
    return out
''', "older than the newest 1 turn but was not cleared"),
    "clears the old answers too": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep
        out += [{**m, "content": CLEARED} if old and m["role"] in ("tool", "assistant") and m["content"] else m
                for m in turn]
    return out
''', "Clear only tool results: questions and answers stay as they are"),
    "changes the messages in place": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    for turn in turns[:max(len(turns) - keep, 0)]:
        for m in turn:
            if m["role"] == "tool":
                m["content"] = CLEARED
    return list(messages)
''', "changed the messages it was given"),
    "a placeholder of its own": ('''
def clear_old_results(messages, keep):
    system, turns = split_turns(messages)
    out = list(system)
    for number, turn in enumerate(turns):
        old = number < len(turns) - keep
        out += [{**m, "content": "…"} if old and m["role"] == "tool" else m for m in turn]
    return out
''', "set it to CLEARED exactly"),
}


@pytest.mark.parametrize("name", sorted(CLEAR_WRONG))
def test_plausible_wrong_answers_to_exercise_1_get_their_hint(name):
    code, hint = CLEAR_WRONG[name]
    passed, said = run(exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


def test_exercise_1_refuses_what_is_not_a_function_or_a_list():
    assert "must be a function" in quiet_check(exercise_1, [])[1]
    passed, said = run(exercise_1, "def clear_old_results(messages, keep):\n    return tuple(messages)")
    assert not passed and "returned tuple" in said


# ---------------------------------------------------------------- exercise 2: a safe cut

CUT_RIGHT = {
    "the solution (split_turns)": exercise_2.solution_code,
    "keep_newest, each turn costing its length": '''
def safe_cut(messages, n):
    spans, _ = keep_newest(turns_newest_first(messages), lambda span: span[1] - span[0], room=n,
                           keep_one=False)
    start = spans[-1][0] if spans else len(messages)
    return messages[:1] + messages[start:]
''',
    "walking back message by message": '''
def safe_cut(messages, n):
    start = len(messages)
    for i in range(len(messages) - 1, 0, -1):
        if len(messages) - i > n:
            break
        if messages[i]["role"] == "user":
            start = i
    return messages[:1] + messages[start:]
''',
}


@pytest.mark.parametrize("name", sorted(CUT_RIGHT))
def test_independent_right_answers_to_exercise_2_pass(name):
    passed, said = run(exercise_2, CUT_RIGHT[name])
    assert passed and said.startswith("✓"), said


CUT_WRONG = {
    "the naive cut (the stub)": (exercise_2.stub, "in the middle of a turn"),
    "skips a big turn and keeps an older one": ('''
def safe_cut(messages, n):
    system, turns = split_turns(messages)
    kept = []
    for turn in reversed(turns):
        if len(kept) + len(turn) <= n:  # does not stop at the first turn that does not fit
            kept = turn + kept
    return system + kept
''', "gap"),
    "keeps only the system message": ("def safe_cut(messages, n):\n    return messages[:1]\n",
                                      "whole turns that fit"),
    "one message too many": ('''
def safe_cut(messages, n):
    system, turns = split_turns(messages)
    kept = []
    for turn in reversed(turns):
        if len(kept) + len(turn) > n + 1:
            break
        kept = turn + kept
    return system + kept
''', "keep at most n"),
    "forgets the system message": ('''
def safe_cut(messages, n):
    system, turns = split_turns(messages)
    kept = []
    for turn in reversed(turns):
        if len(kept) + len(turn) > n:
            break
        kept = turn + kept
    return kept
''', "does not start with the system message"),
    "newest turn first": ('''
def safe_cut(messages, n):
    system, turns = split_turns(messages)
    kept = []
    for turn in reversed(turns):
        if len(kept) + len(turn) > n:
            break
        kept = kept + turn
    return system + kept
''', "in the wrong order"),
    "changes the list it was given": ('''
def safe_cut(messages, n):
    system, turns = split_turns(messages)
    while turns and sum(map(len, turns)) > n:
        turns.pop(0)
    messages[1:] = [m for turn in turns for m in turn]
    return list(messages)
''', "changed the list it was given"),
}


@pytest.mark.parametrize("name", sorted(CUT_WRONG))
def test_plausible_wrong_answers_to_exercise_2_get_their_hint(name):
    code, hint = CUT_WRONG[name]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


def test_the_solution_defines_what_the_check_asks_for():
    assert callable(defined(exercise_1, exercise_1.solution_code)[0])
    assert list(turns_newest_first([{"role": "user", "content": "q"}])) == [(0, 1)]

"""Property tests for helpers.history over generated tool-heavy conversations
(about 13,500 cases)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.history import (
    HistoryError,
    split_turns,
    trim_to_budget,
    trim_to_turns,
    turn_spans,
)
from helpers.ledger import UsageLedger
from helpers.tokens import approx_tokens
from helpers.validity import find_problems
from helpers.window import turns_to_drop

TOOLS = ["room_lookup", "course_search", "library_hours", "shuttle_times"]
WORDS = "the quad library shuttle Hale room seminar Birch lab open closed at noon 18:00 is free".split()
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def text(n: int, salt: int) -> str:
    return " ".join(WORDS[(salt + i * 7) % len(WORDS)] for i in range(n))


def build_conversation(seed: int, n_turns: int, *, n_system: int, greeting: bool, max_steps: int,
                       max_parallel: int, interrupted_pct: int) -> tuple[list[dict], int]:
    """(messages, number of turns): optional system/developer part, optional greeting, then turns.

    Each turn: a user message, 0..max_steps tool-calling steps of 1..max_parallel parallel
    calls (answered in a random order), then an answer unless the turn was interrupted.
    """
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "system" if k == 0 else "developer", "content": text(5 + k, seed + k)}
                            for k in range(n_system)]
    if greeting:
        messages.append({"role": "assistant", "content": "Hi, I am Lark, the campus assistant."})
    calls = 0
    for t in range(n_turns):
        messages.append({"role": "user", "content": text(rng.randint(0, 30), rng.randint(0, 99)) or "?"})
        for _ in range(rng.randint(0, max_steps)):
            specs = [(rng.choice(TOOLS), rng.randint(0, 40)) for _ in range(rng.randint(1, max_parallel))]
            ids = [f"call_{calls + k}" for k in range(len(specs))]
            calls += len(specs)
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": name, "arguments": json.dumps({"n": size})}}
                for cid, (name, size) in zip(ids, specs)]})
            answers = [{"role": "tool", "tool_call_id": cid, "content": text(size, rng.randint(0, 99))}
                       for cid, (_, size) in zip(ids, specs)]
            rng.shuffle(answers)
            messages.extend(answers)
        if rng.randint(1, 100) > interrupted_pct:
            messages.append({"role": "assistant", "content": text(rng.randint(1, 40), t)})
    return messages, n_turns + greeting


@dataclass
class Case:
    """One generated conversation plus the knobs a property needs, all derived from one seed."""

    messages: list[dict]
    n_turns: int
    pinned: set[int]
    rng: random.Random


def build_case(seed: int, n_turns: int) -> Case:
    knobs = random.Random(seed ^ 0x5EED)
    messages, total = build_conversation(
        seed, n_turns, n_system=knobs.choice([0, 1, 1, 1, 2]), greeting=knobs.random() < 0.1,
        max_steps=knobs.randint(0, 3), max_parallel=knobs.randint(1, 3),
        interrupted_pct=knobs.choice([0, 10, 30]))
    pinned = {knobs.randrange(total) for _ in range(knobs.choice([0, 0, 1, 2]))}
    return Case(messages, total, pinned, knobs)


def cases(max_turns: int = 8) -> st.SearchStrategy[Case]:
    """Generated cases. Only two draws each (a seed and the number of turns) so 10,000+ cases stay fast;
    a failure still reproduces from the printed seed, and shrinking reduces the number of turns."""
    return st.builds(build_case, st.integers(0, 2**32 - 1), st.integers(1, max_turns))


def check_trim(messages: list[dict], out, pinned: set[int]) -> None:
    """Invariants every trim result must satisfy."""
    system, turns = split_turns(messages)
    assert find_problems(out.messages) == []
    out_system, out_turns = split_turns(out.messages)
    assert out_system == system
    assert out.kept and out.kept[-1] == len(turns) - 1  # the newest turn is always there
    assert pinned <= set(out.kept)
    assert out.kept == sorted(out.kept)  # original order
    assert out_turns == [turns[i] for i in out.kept]  # whole, identical turns: a subsequence of the input
    assert sorted(out.kept + [d.turn_id for d in out.dropped]) == list(range(len(turns)))
    assert all(d.messages == turns[d.turn_id] for d in out.dropped)


@settings(FAST, max_examples=2500)
@given(cases())
def test_trim_to_turns_properties(case):
    messages, n_turns, pinned = case.messages, case.n_turns, case.pinned
    max_turns = case.rng.randint(1, 9)
    assert find_problems(messages) == []
    out = trim_to_turns(messages, max_turns, pinned=pinned)
    check_trim(messages, out, pinned)
    assert set(out.kept) == set(range(max(0, n_turns - max_turns), n_turns)) | pinned


@settings(FAST, max_examples=2500)
@given(cases())
def test_trim_to_budget_properties(case):
    messages, n_turns, pinned = case.messages, case.n_turns, case.pinned
    costs = [approx_tokens(m) for m in messages]
    budget = (3 + sum(costs)) * case.rng.randint(0, 120) // 100
    out = trim_to_budget(messages, budget, pinned=pinned)
    check_trim(messages, out, pinned)
    system, turns = split_turns(messages)
    cost = [sum(approx_tokens(m) for m in turn) for turn in turns]
    mandatory = 3 + sum(costs[: len(system)]) + sum(cost[i] for i in pinned | {n_turns - 1})
    assert out.over_budget == (mandatory > budget)
    assert out.tokens == 3 + sum(approx_tokens(m) for m in out.messages)
    if mandatory <= budget:
        assert out.tokens <= budget
        # nothing more fits: the newest dropped turn would have pushed the total over the budget
        if out.dropped:
            assert out.tokens + cost[out.dropped[-1].turn_id] > budget
    else:
        assert set(out.kept) == pinned | {n_turns - 1}


@settings(FAST, max_examples=2500)
@given(cases(max_turns=12))
def test_trimming_turn_by_turn_matches_trimming_the_whole_history(case):
    """ChatSession's way: keep what the last trim kept, add a turn, trim that; same as trimming it all."""
    by_budget, pins = case.rng.random() < 0.5, case.pinned
    budget, max_turns = case.rng.randint(20, 400), case.rng.randint(1, 4)
    system, turns = split_turns(case.messages)
    window, ids, dropped = list(system), [], []
    for t, turn in enumerate(turns):
        window, ids = window + turn, ids + [t]
        history = list(system) + [m for older in turns[: t + 1] for m in older]
        if by_budget:
            step = trim_to_budget(window, budget, turn_ids=ids, pinned=pins)
            whole = trim_to_budget(history, budget, pinned=pins)
        else:
            step = trim_to_turns(window, max_turns, turn_ids=ids, pinned=pins)
            whole = trim_to_turns(history, max_turns, pinned=pins)
        dropped += step.dropped
        window, ids = step.messages, step.kept
        assert (window, ids, step.tokens) == (whole.messages, whole.kept, whole.tokens)
        assert sorted(dropped, key=lambda d: d.turn_id) == whole.dropped


@settings(FAST, max_examples=1500)
@given(cases())
def test_deleting_one_message_of_a_tool_call_group_is_detected(case):
    messages = case.messages
    in_groups = [i for i, m in enumerate(messages) if m["role"] == "tool" or m.get("tool_calls")]
    if in_groups:
        victim = case.rng.choice(in_groups)
        broken = messages[:victim] + messages[victim + 1:]
        assert find_problems(broken) != []


def fake_server(message: dict) -> int:
    """An additive 'server tokenizer' that disagrees with approx_tokens."""
    return 6 + len(json.dumps(message, sort_keys=True)) // 5 + str(message.get("content")).count(" ")


@settings(FAST, max_examples=1500)
@given(cases(max_turns=10))
@example(case=build_case(1269, 8))  # two equal "?" questions in one request, one held by an older span
def test_ledger_predictions_are_exact_when_it_says_so(case):
    """Session loop: trim with ledger.count, send, record; an 'exact' cost must equal the server's."""
    system, turns = split_turns(case.messages)
    budget = case.rng.randint(60, 600)
    ledger = UsageLedger()
    sent = list(system)
    for turn in turns:
        sent = trim_to_budget(sent + turn, budget, count=ledger.count, overhead=ledger.overhead).messages
        reported = 9 + sum(fake_server(m) for m in sent)
        tokens, exact = ledger.cost(sent)
        if exact:
            assert tokens == reported
        entry = ledger.record(sent, reported)
        assert entry.prompt_tokens == reported and entry.predicted == tokens
        assert ledger.cost(sent) == (reported, True)
        assert sum(map(ledger.count, sent)) + ledger.overhead == reported


def mutate(messages: list[dict], rng: random.Random) -> list[dict]:
    """A copy with one to three messages duplicated, swapped, blanked or deleted anywhere."""
    mutated = list(messages)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(mutated))
        kind = rng.randrange(4)
        if kind == 0:
            mutated.insert(i, mutated[i])
        elif kind == 1 and i + 1 < len(mutated):
            mutated[i], mutated[i + 1] = mutated[i + 1], mutated[i]
        elif kind == 2:
            mutated[i] = {**mutated[i], "content": None}
        elif len(mutated) > 1:
            del mutated[i]
    return mutated


@settings(FAST, max_examples=2000)
@given(cases(max_turns=12))
def test_turns_to_drop_keeps_what_the_trimmers_keep(case):
    """A session's window trimmed from its oldest end keeps what trim_to_turns, then trim_to_budget, keep."""
    messages, rng = case.messages, case.rng
    system, turns = split_turns(messages)
    if not turns:
        return
    costs = {id(m): rng.randint(0, 60) for m in messages}  # any costs, zero included
    count = lambda m: costs[id(m)]  # noqa: E731
    turn_tokens = [sum(map(count, turn)) for turn in turns]
    overhead = rng.randint(0, 5)
    total = overhead + sum(map(count, system)) + sum(turn_tokens)
    max_turns = rng.choice([None, rng.randint(1, 6)])
    max_tokens = rng.choice([None, rng.randint(0, total + 3)])
    kept = messages
    if max_turns is not None:
        kept = trim_to_turns(kept, max_turns, count=count, overhead=overhead).messages
    if max_tokens is not None:
        kept = trim_to_budget(kept, max_tokens, count=count, overhead=overhead).messages
    dropped = turns_to_drop(turn_tokens, total, max_turns=max_turns, max_tokens=max_tokens)
    assert kept == system + [m for turn in turns[dropped:] for m in turn]


@settings(FAST, max_examples=1000)
@given(cases(max_turns=12))
def test_a_broken_turn_that_is_dropped_does_not_matter(case):
    """Only the kept turns are checked: a stray tool result inside a dropped turn changes nothing kept."""
    messages, pinned, max_turns = case.messages, case.pinned, case.rng.randint(1, 4)
    out = trim_to_turns(messages, max_turns, pinned=pinned)
    if not out.dropped:
        return
    victim = case.rng.choice(out.dropped).turn_id
    start, _ = list(turn_spans(messages))[victim]
    stray = {"role": "tool", "tool_call_id": "nobody", "content": "stray"}
    broken = messages[: start + 1] + [stray] + messages[start + 1:]
    assert find_problems(broken) != []
    again = trim_to_turns(broken, max_turns, pinned=pinned)
    assert (again.messages, again.kept) == (out.messages, out.kept)
    assert [d.turn_id for d in again.dropped] == [d.turn_id for d in out.dropped]

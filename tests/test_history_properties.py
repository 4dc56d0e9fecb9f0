"""Property tests for helpers.chat.history over generated tool-heavy conversations (about 20,000 cases).

``keep_newest`` is the one place "keep the newest whole turns that fit" is written: it is checked against
a brute-force search, and each of its callers -- ``trim_to_turns``/``trim_to_budget``, a session's window
(``helpers.chat.window``), ``SimpleSession`` and the context assembler's ``fit_window`` -- is checked to keep
what it says over generated conversations and costs."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.chat.history import (
    keep_newest,
    split_turns,
    trim_to_budget,
    trim_to_turns,
    turns_newest_first,
)
from helpers.chat.ledger import UsageLedger
from helpers.memory.assembler import fit_window
from helpers.chat.chat_session import SimpleSession
from helpers.core.tokens import approx_tokens
from helpers.chat.validity import find_problems
from helpers.chat.window import Window

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
    rng: random.Random


def build_case(seed: int, n_turns: int) -> Case:
    knobs = random.Random(seed ^ 0x5EED)
    messages, total = build_conversation(
        seed, n_turns, n_system=knobs.choice([0, 1, 1, 1, 2]), greeting=knobs.random() < 0.1,
        max_steps=knobs.randint(0, 3), max_parallel=knobs.randint(1, 3),
        interrupted_pct=knobs.choice([0, 10, 30]))
    return Case(messages, total, knobs)


def cases(max_turns: int = 8) -> st.SearchStrategy[Case]:
    """Generated cases. Only two draws each (a seed and the number of turns) so 10,000+ cases stay fast;
    a failure still reproduces from the printed seed, and shrinking reduces the number of turns."""
    return st.builds(build_case, st.integers(0, 2**32 - 1), st.integers(1, max_turns))


def brute_force_newest(costs: list[int], room: int | None, max_turns: int | None, keep_one: bool) -> int:
    """How many of the newest turns to keep (``costs`` newest first), found by trying every count."""
    best = 0
    for k in range(len(costs) + 1):
        fits = (room is None or sum(costs[:k]) <= room) and (max_turns is None or k <= max_turns)
        every_shorter_fits = all(room is None or sum(costs[:j]) <= room for j in range(k + 1))
        if fits and every_shorter_fits:
            best = k
    return max(best, 1) if keep_one and costs else best


@settings(FAST, max_examples=4000)
@given(st.lists(st.integers(0, 50), max_size=12), st.one_of(st.none(), st.integers(-5, 200)),
       st.one_of(st.none(), st.integers(0, 8)), st.booleans())
def test_keep_newest_is_the_longest_newest_run_that_fits(costs, room, max_turns, keep_one):
    read = []

    def cost(i: int) -> int:
        read.append(i)
        return costs[i]

    kept, total = keep_newest(iter(range(len(costs))), cost, room=room, max_turns=max_turns, keep_one=keep_one)
    n = brute_force_newest(costs, room, max_turns, keep_one)
    assert kept == list(range(n)) and total == sum(costs[:n])
    assert read == list(range(len(read))) and n <= len(read) <= n + 1  # newest first, nothing past the stop
    if keep_one and costs:
        assert kept[:1] == [0]  # the newest turn stays whatever the limits


def check_trim(messages: list[dict], out, kept_turns: int) -> None:
    """Invariants every trim result must satisfy: the system part, then the newest ``kept_turns`` whole turns."""
    system, turns = split_turns(messages)
    assert find_problems(out.messages) == []
    out_system, out_turns = split_turns(out.messages)
    assert out_system == system
    assert 1 <= kept_turns and out_turns == turns[len(turns) - kept_turns:]  # the newest turn is always there
    assert split_turns(messages[:out.cut])[1] == turns[:len(turns) - kept_turns]  # the turns before cut: dropped


@settings(FAST, max_examples=2500)
@given(cases())
def test_trim_to_turns_properties(case):
    messages, n_turns = case.messages, case.n_turns
    max_turns = case.rng.randint(1, 9)
    assert find_problems(messages) == []
    out = trim_to_turns(messages, max_turns)
    check_trim(messages, out, min(max_turns, n_turns))
    assert out.tokens == 3 + sum(approx_tokens(m) for m in out.messages) and not out.over_budget


@settings(FAST, max_examples=2500)
@given(cases())
def test_trim_to_budget_properties(case):
    messages, n_turns = case.messages, case.n_turns
    costs = [approx_tokens(m) for m in messages]
    budget = (3 + sum(costs)) * case.rng.randint(0, 120) // 100
    out = trim_to_budget(messages, budget)
    system, turns = split_turns(messages)
    cost = [sum(approx_tokens(m) for m in turn) for turn in turns]
    fixed = 3 + sum(costs[: len(system)])
    kept = brute_force_newest(cost[::-1], budget - fixed, None, True)
    check_trim(messages, out, kept)
    assert out.tokens == 3 + sum(approx_tokens(m) for m in out.messages)
    assert out.over_budget == (fixed + cost[-1] > budget)
    if not out.over_budget:
        assert out.tokens <= budget
        if kept < n_turns:  # nothing more fits: the newest dropped turn would have pushed the total over
            assert out.tokens + cost[n_turns - kept - 1] > budget


@settings(FAST, max_examples=2500)
@given(cases(max_turns=12))
def test_trimming_turn_by_turn_matches_trimming_the_whole_history(case):
    """ChatSession's way: keep what the last trim kept, add a turn, trim that; same as trimming it all."""
    by_budget = case.rng.random() < 0.5
    budget, max_turns = case.rng.randint(20, 400), case.rng.randint(1, 4)
    system, turns = split_turns(case.messages)
    window = list(system)
    for t, turn in enumerate(turns):
        window = window + turn
        history = list(system) + [m for older in turns[: t + 1] for m in older]
        if by_budget:
            step, whole = trim_to_budget(window, budget), trim_to_budget(history, budget)
        else:
            step, whole = trim_to_turns(window, max_turns), trim_to_turns(history, max_turns)
        window = step.messages
        assert (window, step.tokens, step.over_budget) == (whole.messages, whole.tokens, whole.over_budget)


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
def test_a_sessions_window_keeps_what_the_trimmers_keep(case):
    """A session's window, trimmed on the costs it knows, keeps what trim_to_turns, then trim_to_budget, keep."""
    messages, rng = case.messages, case.rng
    system, turns = split_turns(messages)
    if not turns:
        return
    costs = {id(m): rng.randint(0, 60) for m in messages}  # any costs, zero included
    count = lambda m: costs[id(m)]  # noqa: E731
    overhead = rng.randint(0, 5)
    total = overhead + sum(map(count, messages))
    max_turns = rng.choice([None, rng.randint(1, 6)])
    max_tokens = rng.choice([None, rng.randint(0, total + 3)])
    kept = messages
    if max_turns is not None:
        kept = trim_to_turns(kept, max_turns, count=count, overhead=overhead).messages
    if max_tokens is not None:
        kept = trim_to_budget(kept, max_tokens, count=count, overhead=overhead).messages
    window = Window.start(system, [m for turn in turns for m in turn], list(range(len(turns))), count)
    trimmed, dropped = window.trimmed(overhead=overhead, max_turns=max_turns, max_tokens=max_tokens)
    assert trimmed.messages == kept
    assert [d.turn_id for d in dropped] == list(range(len(dropped))) and trimmed.turn_ids[-1] == len(turns) - 1
    assert trimmed.tokens == sum(map(count, kept))


@settings(FAST, max_examples=1500)
@given(cases(max_turns=10))
def test_simple_session_forgets_what_trim_to_turns_drops(case):
    """SimpleSession.forget_old_turns keeps what trim_to_turns keeps, after every turn."""
    system, turns = split_turns(case.messages)
    max_turns = case.rng.randint(1, 4)
    session = SimpleSession(max_turns=max_turns)
    session.messages = list(system)
    for turn in turns:
        session.messages = session.messages + turn
        expected = trim_to_turns(session.messages, max_turns).messages
        session.forget_old_turns()
        assert session.messages == expected


@settings(FAST, max_examples=2000)
@given(cases(max_turns=10))
def test_the_assembler_window_keeps_the_newest_turns_that_fit(case):
    """fit_window: the newest whole turns that fit what is left, possibly none (the question is sent apart)."""
    _, turns = split_turns(case.messages)
    window = [(10 + t, turn) for t, turn in enumerate(turns)]
    cost = [sum(map(approx_tokens, turn)) for turn in turns]
    left = case.rng.choice([None, case.rng.randint(0, sum(cost) + 5)])
    messages, part = fit_window(window, left, approx_tokens)
    n = brute_force_newest(cost[::-1], left, None, keep_one=False)
    assert part.included == [10 + t for t in range(len(turns) - n, len(turns))]
    assert part.dropped == [10 + t for t in range(len(turns) - n)]
    assert messages == [m for turn in turns[len(turns) - n:] for m in turn]
    assert part.tokens == sum(cost[len(turns) - n:]) and (left is None or part.tokens <= left)


@settings(FAST, max_examples=1000)
@given(cases(max_turns=12))
def test_a_broken_turn_that_is_dropped_does_not_matter(case):
    """Only the kept turns are checked: a stray tool result inside a dropped turn changes nothing kept."""
    messages, max_turns = case.messages, case.rng.randint(1, 4)
    out = trim_to_turns(messages, max_turns)
    dropped = list(turns_newest_first(messages[:out.cut]))
    if not dropped:
        return
    start, _ = case.rng.choice(dropped)
    stray = {"role": "tool", "tool_call_id": "nobody", "content": "stray"}
    broken = messages[: start + 1] + [stray] + messages[start + 1:]
    assert find_problems(broken) != []
    again = trim_to_turns(broken, max_turns)
    assert (again.messages, again.tokens, again.cut) == (out.messages, out.tokens, out.cut + 1)

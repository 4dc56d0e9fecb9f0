"""Unit tests for helpers.chat.validity, helpers.chat.history and the usage ledger: the rules, turns, trimming.

The property tests at the end run over generated tool-heavy conversations (about 20,000 cases).
``keep_newest`` is the one place "keep the newest whole turns that fit" is written: it is checked against
a brute-force search, and each of its callers -- ``trim_to_turns``/``trim_to_budget``, a session's window
(``helpers.chat.window``), ``SimpleSession`` and the context assembler's ``fit_window`` -- is checked to keep
what it says over generated conversations and costs.
"""
from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.chat.history import (
    HistoryError,
    keep_newest,
    split_turns,
    trim_to_budget,
    trim_to_turns,
    turns_newest_first,
)
from helpers.chat.ledger import UsageLedger
from helpers.core import tokens as tokens_module
from helpers.core.tokens import REPLY_PRIMING, approx_tokens
from helpers.chat.validity import ORPHAN_PHRASE, find_problems
from helpers.memory.assembler import fit_window
from helpers.chat.chat_session import SimpleSession
from helpers.chat.window import Window


SYSTEM = {"role": "system", "content": "You are the Larkspur University campus assistant."}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def reply(text: str) -> dict:
    return {"role": "assistant", "content": text}


def call(cid: str, name: str = "room_lookup", arguments: str = '{"building": "Hale"}') -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*ids: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}


def result(cid: str, text: str = "Hale 204 is free") -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def history() -> list[dict]:
    """System + 4 turns: plain, one tool call, parallel calls, interrupted (no reply)."""
    return [
        SYSTEM,
        user("Where is the library?"), reply("North of Birch Quad."),
        user("Is Hale 204 free?"), asks("c1"), result("c1"), reply("Yes, it is free."),
        user("And Hale 205 and 206?"), asks("c2", "c3"), result("c3", "taken"), result("c2"),
        reply("205 only."),
        user("Thanks, and the gym hours?"),
    ]


def one_problem(messages: list) -> str:
    problems = find_problems(messages)
    assert len(problems) == 1, problems
    return problems[0]


# ----------------------------------------------------------------------------- find_problems rules


def test_valid_history_has_no_problems():
    assert find_problems(history()) == []


def test_orphan_tool_result_uses_the_servers_phrase_and_index():
    messages = history()[:6] + [result("nope"), reply("ok")]
    problem = one_problem(messages)
    assert problem.startswith("message 6 (tool):") and ORPHAN_PHRASE in problem and "'nope'" in problem


def test_tool_result_after_assistant_without_any_tool_calls_is_orphan():
    problem = one_problem([user("hi"), reply("hello"), result("c9")])
    assert problem.startswith("message 2 (tool):") and ORPHAN_PHRASE in problem


def test_missing_tool_response_lists_the_ids():
    messages = [user("rooms?"), asks("c1", "c2", "c3"), result("c2"), reply("done")]
    problem = one_problem(messages)
    assert problem.startswith("message 1 (assistant):") and "did not have response messages" in problem
    assert "c1" in problem and "c3" in problem and "c2" not in problem.split("messages:")[-1]


def test_unanswered_calls_at_the_end_of_the_list_are_a_problem():
    assert "did not have response messages: c1" in one_problem([user("rooms?"), asks("c1")])


def test_tool_result_answering_the_same_id_twice():
    problem = one_problem([user("rooms?"), asks("c1"), result("c1"), result("c1"), reply("ok")])
    assert problem.startswith("message 3 (tool):") and "second time" in problem and "message 2" in problem


def test_tool_result_interleaved_after_another_message_is_out_of_order():
    messages = [user("rooms?"), asks("c1", "c2"), result("c1"), reply("hm"), result("c2")]
    problems = find_problems(messages)
    assert any("did not have response messages: c2" in p for p in problems)
    late = [p for p in problems if p.startswith("message 4 (tool):")]
    assert late and "out of order" in late[0] and "message 1" in late[0]


def test_history_starting_with_a_tool_message():
    problem = one_problem([SYSTEM, result("c1"), user("hi")])
    assert problem.startswith("message 1 (tool):") and "starts with a tool message" in problem


def test_unknown_role():
    problem = one_problem([user("hi"), {"role": "robot", "content": "beep"}])
    assert problem.startswith("message 1 (robot): unknown role")


@pytest.mark.parametrize("role", ["user", "system", "developer", "tool"])
def test_missing_or_none_content(role):
    for message in ({"role": role}, {"role": role, "content": None}):
        if role == "tool":
            message["tool_call_id"] = "c1"
        messages = ([user("rooms?"), asks("c1"), message, reply("ok")] if role == "tool"
                    else [message, user("x")])
        assert any("has no content" in p for p in find_problems(messages)), messages


def test_assistant_may_have_no_content_only_with_tool_calls():
    assert "no content and no tool_calls" in one_problem([user("hi"), {"role": "assistant", "content": ""}])
    assert "no content and no tool_calls" in one_problem([user("hi"), {"role": "assistant"}])
    assert find_problems([user("hi"), {"role": "assistant", "content": "", "tool_calls": [call("c1")]},
                          result("c1")]) == []


def test_non_string_tool_call_arguments():
    message = {"role": "assistant", "content": None,
               "tool_calls": [call("c1", arguments={"building": "Hale"})]}
    problem = one_problem([user("hi"), message, result("c1")])
    assert problem.startswith("message 1 (assistant):") and "json.dumps" in problem


def test_tool_call_without_id_or_function_name():
    no_id = {"type": "function", "function": {"name": "room_lookup", "arguments": "{}"}}
    no_name = {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
    both = {"role": "assistant", "content": None, "tool_calls": [no_id, no_name]}
    messages = [user("hi"), both, result("c1")]
    problems = find_problems(messages)
    assert any("has no id" in p for p in problems) and any("no function.name" in p for p in problems)


def test_message_that_is_not_a_dict():
    assert one_problem([user("hi"), "just text"]).startswith("message 1 (str): is of type str")


def test_empty_list():
    assert "empty" in one_problem([])


def test_empty_tool_calls_list():
    empty = {"role": "assistant", "content": "x", "tool_calls": []}
    assert "non-empty list" in one_problem([user("hi"), empty])


# ----------------------------------------------------------------------------- split_turns


def test_split_turns_separates_system_part_and_turns():
    system, turns = split_turns(history())
    assert system == [SYSTEM]
    assert [t[0]["content"] for t in turns] == ["Where is the library?", "Is Hale 204 free?",
                                               "And Hale 205 and 206?", "Thanks, and the gym hours?"]
    assert sum(len(t) for t in turns) + 1 == len(history())


def test_split_turns_makes_a_preamble_turn_for_a_greeting():
    system, turns = split_turns([SYSTEM, reply("Hi, I am Lark."), user("hi"), reply("hello")])
    assert system == [SYSTEM] and turns == [[reply("Hi, I am Lark.")], [user("hi"), reply("hello")]]


def test_split_turns_keeps_a_later_system_message_inside_its_turn():
    note = {"role": "system", "content": "Reminder: be brief."}
    _, turns = split_turns([user("a"), note, reply("b")])
    assert turns == [[user("a"), note, reply("b")]]


# ----------------------------------------------------------------------------- trimming


def kept_questions(out) -> list[str]:
    return [turn[0]["content"] for turn in split_turns(out.messages)[1]]


def test_trim_to_turns_keeps_the_newest_turns_and_the_system_part():
    out = trim_to_turns(history(), 2)
    assert out.messages == [SYSTEM] + history()[7:] and out.cut == 7
    assert split_turns(history()[:out.cut])[1] == split_turns(history())[1][:2]  # the dropped turns


def test_trim_to_turns_rejects_zero_turns():
    with pytest.raises(HistoryError, match="max_turns"):
        trim_to_turns(history(), 0)


def test_trim_refuses_an_invalid_list_and_lists_problems():
    with pytest.raises(HistoryError) as info:
        trim_to_turns([user("rooms?"), asks("c1")], 3)
    assert info.value.problems and "did not have response messages" in str(info.value)


def test_trim_to_budget_keeps_everything_when_it_fits():
    total = REPLY_PRIMING + sum(approx_tokens(m) for m in history())
    out = trim_to_budget(history(), total)
    assert out.messages == history() and out.cut == 1 and out.tokens == total and not out.over_budget


def test_trim_to_budget_drops_the_oldest_turns_first():
    ones = lambda m: 1  # noqa: E731 - each message costs one token
    out = trim_to_budget(history(), 1 + 6 + 1, count=ones, overhead=0)  # system + turns 2 and 3
    assert kept_questions(out) == ["And Hale 205 and 206?", "Thanks, and the gym hours?"]
    assert out.tokens == 7 and not out.over_budget


def test_trim_to_budget_does_not_skip_a_big_turn_to_keep_an_older_small_one():
    ones = lambda m: 1  # noqa: E731
    out = trim_to_budget(history(), 1 + 1 + 3, count=ones, overhead=0)  # turn 2 (5 msgs) does not fit
    assert kept_questions(out) == ["Thanks, and the gym hours?"]


def test_trim_to_budget_reports_over_budget_but_keeps_system_and_newest_turn():
    out = trim_to_budget(history(), 1)
    assert out.over_budget and out.messages == [SYSTEM, history()[-1]] and out.tokens > 1


def test_keep_newest_stops_at_the_first_turn_that_does_not_fit():
    assert keep_newest([5, 50, 1], lambda c: c, room=10) == ([5], 5)  # never skips 50 to keep 1
    assert keep_newest([50, 1], lambda c: c, room=10) == ([50], 50)  # the newest stays...
    assert keep_newest([50, 1], lambda c: c, room=10, keep_one=False) == ([], 0)  # ...unless asked
    assert keep_newest([1, 1, 1], lambda c: c, max_turns=2) == ([1, 1], 2)
    assert keep_newest([], lambda c: c, room=0) == ([], 0)


class ReadCounter(list):
    """A message list that counts how many of its messages are read (by index, slice or iteration)."""

    reads = 0

    def __getitem__(self, key):
        item = super().__getitem__(key)
        self.reads += len(item) if isinstance(key, slice) else 1
        return item

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def long_history(n_turns: int) -> list[dict]:
    messages = [SYSTEM]
    for t in range(n_turns):
        messages += [user(f"question {t}"), asks(f"c{t}"), result(f"c{t}"), reply(f"answer {t}")]
    return messages


def test_trim_to_budget_reads_only_the_turns_it_keeps():
    trim = trim_to_budget
    messages = ReadCounter(long_history(2_000))
    counted = []
    out = trim(messages, 400, count=lambda m: counted.append(m) or approx_tokens(m))
    kept_messages = len(out.messages) - 1
    assert 10 <= kept_messages <= 40 and not out.over_budget
    assert len(counted) <= 1 + kept_messages + 4  # the system part, the kept turns, the one that did not fit
    assert messages.reads <= 4 * (1 + kept_messages + 4)  # walk back, slice, copy: a few reads each, no more


def test_trim_to_turns_reads_only_the_turns_it_keeps():
    trim = trim_to_turns
    messages = ReadCounter(long_history(2_000))
    counted = []
    out = trim(messages, 3, count=lambda m: counted.append(m) or 1)
    assert out.tokens == REPLY_PRIMING + 13 and len(counted) == 13
    assert messages.reads <= 4 * 13


def test_a_broken_turn_that_is_dropped_no_longer_blocks_the_trim():
    broken = history()[:3] + [result("stray")] + history()[3:]  # an orphan tool result inside turn 0
    assert find_problems(broken)
    out = trim_to_turns(broken, 2)
    assert out.messages == [SYSTEM] + history()[7:] and broken[1:out.cut][-1] == reply("Yes, it is free.")


def test_problems_in_kept_turns_are_numbered_as_kept():
    broken = history()[:8] + [result("stray")] + history()[8:]  # an orphan result in turn 2 (message 8)
    with pytest.raises(HistoryError) as info:
        trim_to_turns(broken, 2)
    assert info.value.problems == ["message 2 (tool): orphan tool result for 'stray': no assistant "
                                   f"message with tool_calls comes before it; {ORPHAN_PHRASE}"]
    assert "numbered from its own start" in str(info.value)


def test_a_system_part_over_budget_is_reported_even_without_turns():
    out = trim_to_budget([SYSTEM], 1)
    assert out.over_budget and out.messages == [SYSTEM] and out.cut == 1


def test_trimming_something_that_is_not_a_list_is_explained():
    with pytest.raises(HistoryError, match="messages is of type dict"):
        trim_to_budget(SYSTEM, 100)


def test_turns_newest_first_agrees_with_split_turns():
    messages = [SYSTEM, reply("Hi, I am Lark.")] + history()[1:]
    _, turns = split_turns(messages)
    assert [messages[s:e] for s, e in turns_newest_first(messages)] == turns[::-1]


def test_content_parts_are_kept_and_checked():
    parts = [user("hi"), {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    assert find_problems(parts) == [] and trim_to_budget(parts, 100).messages == parts


def test_the_framing_constants_are_defined_once_in_tokens():
    names = {"MESSAGE_OVERHEAD", "REQUEST_OVERHEAD", "REPLY_PRIMING"}
    for module in ("history.py", "ledger.py"):
        tree = ast.parse((Path(__file__).parents[1] / "helpers" / "chat" / module).read_text())
        assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                    if isinstance(t, ast.Name)}
        assert not names & assigned, module
    assert approx_tokens({"role": "", "content": ""}) == tokens_module.MESSAGE_OVERHEAD


def test_approx_tokens_counts_tool_call_arguments():
    small = asks("c1")
    big = {"role": "assistant", "content": None,
           "tool_calls": [call("c1", arguments=json.dumps({"q": "x" * 400}))]}
    assert approx_tokens(big) >= approx_tokens(small) + 90


# ----------------------------------------------------------------------------- usage ledger


def server_tokens(message: dict) -> int:
    """A fake server tokenizer: additive over messages and unlike approx_tokens."""
    return 7 + len(json.dumps(message, sort_keys=True)) // 3


def server_prompt(messages: list[dict]) -> int:
    return 5 + sum(server_tokens(m) for m in messages)


def test_ledger_first_request_is_exact_as_a_block():
    ledger = UsageLedger()
    assert ledger.cost(history()[:2])[1] is False
    ledger.record(history()[:2], server_prompt(history()[:2]))
    assert ledger.cost(history()[:2]) == (server_prompt(history()[:2]), True)


def test_ledger_learns_each_appended_span_exactly():
    ledger, messages = UsageLedger(), history()
    for end in (2, 4, 6, 9, 13):
        ledger.record(messages[:end], server_prompt(messages[:end]))
    assert ledger.cost(messages) == (server_prompt(messages), True)
    assert ledger.records[-1].new_tokens == sum(server_tokens(m) for m in messages[9:13])


def test_ledger_estimates_only_what_was_never_sent():
    ledger, messages = UsageLedger(), history()
    ledger.record(messages[:7], server_prompt(messages[:7]))
    tokens, exact = ledger.cost(messages)
    assert not exact
    assert tokens == server_prompt(messages[:7]) + sum(approx_tokens(m) for m in messages[7:])


def test_ledger_count_adds_up_exactly_over_recorded_spans():
    ledger, messages = UsageLedger(), history()
    for end in (2, 7, 13):
        ledger.record(messages[:end], server_prompt(messages[:end]))
    assert ledger.overhead + sum(ledger.count(m) for m in messages) == server_prompt(messages)
    assert trim_to_budget(messages, 10_000, count=ledger.count).tokens == server_prompt(messages)


def test_ledger_after_trimming_falls_back_then_becomes_exact_again():
    ledger, messages = UsageLedger(), history()
    for end in (2, 7, 13):
        ledger.record(messages[:end], server_prompt(messages[:end]))
    trimmed = [SYSTEM] + messages[7:]  # turns 0 and 1 dropped: the first span is broken
    tokens, exact = ledger.cost(trimmed)
    assert not exact and tokens != server_prompt(trimmed)
    ledger.record(trimmed, server_prompt(trimmed))
    grown = trimmed + [reply("Open until 22:00."), user("Thanks!")]
    ledger.record(grown, server_prompt(grown))
    assert ledger.cost(grown) == (server_prompt(grown), True)
    assert ledger.records[-1].predicted_exact is False and ledger.records[-1].new_messages == 2


def test_ledger_reports_estimate_error():
    ledger, messages = UsageLedger(), history()
    entry = ledger.record(messages[:4], server_prompt(messages[:4]))
    estimate = REPLY_PRIMING + sum(approx_tokens(m) for m in messages[:4])
    assert entry.error == estimate - server_prompt(messages[:4])
    summary = ledger.summary()
    assert summary["requests"] == 1 and summary["mean_abs_error"] == abs(entry.error)


def test_ledger_rejects_a_non_integer_prompt_tokens():
    with pytest.raises(HistoryError, match="prompt_tokens"):
        UsageLedger().record(history()[:2], "12")


def test_ledger_starts_over_when_reports_contradict_each_other():
    ledger, messages = UsageLedger(), history()
    ledger.record(messages[:4], 500)
    entry = ledger.record(messages[:6], 100)  # smaller than the known prefix: not additive
    assert entry.new_tokens is None and ledger.cost(messages[:6]) == (100, True)


def test_ledger_keeps_the_overhead_when_the_first_turn_is_dropped():
    """Tool schemas make the request overhead large; trimming turn 0 must not lose that exact figure."""
    from helpers.core import tokens as server

    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "x " * 80,
                                               "parameters": {"type": "object", "properties": {}}}}
             for i in range(4)]
    system = {"role": "system", "content": "You are a campus assistant."}
    turn0 = [{"role": "user", "content": "When does the AI club meet?"},
             {"role": "assistant", "content": "Thursdays at 18:00 [club-ai]."}]
    turn1 = [{"role": "user", "content": "And office hours?"},
             {"role": "assistant", "content": "Tuesdays at 14:00 [office-hours-cs]."}]
    ledger = UsageLedger()
    ledger.record([system, turn0[0]], server.count_request([system, turn0[0]], tools))
    ledger.record([system] + turn0 + [turn1[0]], server.count_request([system] + turn0 + [turn1[0]], tools))
    after_trim = [system, turn1[0]]  # turn 0 dropped
    predicted, exact = ledger.cost(after_trim)
    reported = server.count_request(after_trim, tools)
    assert not exact
    assert server.count_tools(tools) > 300
    assert abs(predicted - reported) <= 10  # only the dropped user message was estimated


# ----------------------------------------------------------------------------- one rule, one place


def test_every_trim_goes_through_keep_newest(monkeypatch):
    """trim_to_turns, trim_to_budget, SimpleSession, a session's window and the assembler's window all call
    helpers.chat.history.keep_newest: "keep the newest whole turns that fit" is written once."""
    from helpers.chat import history as history_module
    from helpers.chat import window as window_module
    from helpers.memory import assembler as assembler_module
    from helpers.chat.chat_session import SimpleSession
    from helpers.chat.window import Window

    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return keep_newest(*args, **kwargs)

    for module in (history_module, window_module, assembler_module):
        monkeypatch.setattr(module, "keep_newest", spy)
    trim_to_turns(history(), 2)
    trim_to_budget(history(), 100)
    session = SimpleSession(max_turns=1)
    session.messages = history()
    session.forget_old_turns()
    Window.start([SYSTEM], history()[1:], [0, 1, 2, 3], approx_tokens).trimmed(overhead=3, max_tokens=50)
    assembler_module.fit_window(list(enumerate(split_turns(history())[1])), 40, approx_tokens)
    assert len(calls) == 5 and calls[-1]["keep_one"] is False
    assert session.messages == [SYSTEM, history()[-1]]


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

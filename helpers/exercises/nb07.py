"""Exercises of notebook 07: clear old tool results without breaking a turn, and a message cut that is safe.

Both checks run the learner's function on generated message lists (no model, no clock): the same
answer gets the same verdict on any backend and on any day.
"""
from __future__ import annotations

import copy
import json
import random

from helpers.exercises import Exercise, Hint
from helpers.chat.history import keep_newest, split_turns, system_end, turns_newest_first
from helpers.chat.validity import find_problems

CLEARED = "(result cleared to save tokens)"


def generated_history(seed: int) -> list[dict]:
    """A conversation from a seed: 0-2 system messages, then 2-6 turns, plain or with (parallel) tool calls."""
    rng = random.Random(seed)
    messages = [{"role": "system", "content": f"You are a campus assistant ({k})."}
                for k in range(rng.choice([0, 1, 1, 2]))]
    calls = 0
    for number in range(rng.randint(2, 6)):
        messages.append({"role": "user", "content": f"question {number}"})
        for _ in range(rng.choice([0, 1, 1, 2])):  # tool-calling steps
            ids = [f"call_{calls + k}" for k in range(rng.choice([1, 1, 2, 3]))]
            calls += len(ids)
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": "search_campus_info", "arguments": json.dumps({"query": f"q{number}"})}}
                for cid in ids]})
            messages += [{"role": "tool", "tool_call_id": cid,
                          "content": json.dumps({"results": [f"result of {cid}"] * 3})} for cid in ids]
        messages.append({"role": "assistant", "content": f"answer {number}"})
    return messages


# ---------------------------------------------------------------- exercise 1: clear old tool results

def reference_clear(messages: list[dict], keep: int) -> list[dict]:
    """Every tool result older than the newest ``keep`` turns with its content replaced by CLEARED."""
    spans, _ = keep_newest(turns_newest_first(messages), lambda span: 1, max_turns=keep, keep_one=False)
    cut = spans[-1][0] if spans else len(messages)  # the newest ``keep`` turns start here
    return [{**m, "content": CLEARED} if i < cut and m["role"] == "tool" else m for i, m in enumerate(messages)]


CLEAR_SEEDS = tuple(range(40))
CLEAR_DOC = '"""A new list: tool results older than the newest `keep` turns cleared, nothing else changed."""'


def _where(messages: list[dict], index: int) -> str:
    """Which turn a message index is in, counted from 0, oldest first."""
    first = system_end(messages)
    if index < first:
        return "the system part"
    spans = sorted(turns_newest_first(messages))
    turn = next(t for t, (start, end) in enumerate(spans) if start <= index < end)
    return f"turn {turn} of turns 0-{len(spans) - 1}"


def _newest(keep: int) -> str:
    return f"the newest {keep} turn{'' if keep == 1 else 's'}"


def _check_clear(clear_old_results) -> str:
    if not callable(clear_old_results):
        raise Hint("clear_old_results must be a function: def clear_old_results(messages, keep): ...")
    tried = 0
    for seed in CLEAR_SEEDS:
        history = generated_history(seed)
        n_turns = len(split_turns(history)[1])
        for keep in [*range(1, n_turns + 2), 0]:
            before = copy.deepcopy(history)
            out = clear_old_results(history, keep)
            tried += 1
            if history != before:
                raise Hint("clear_old_results changed the messages it was given; a session may still hold them. "
                           "Build new dicts instead: {**message, \"content\": CLEARED}.")
            if not isinstance(out, list):
                raise Hint(f"clear_old_results returned {type(out).__name__}; return a list of messages.")
            expected = reference_clear(history, keep)
            bad = [m for m in out if isinstance(m, dict) and m.get("role") == "tool"
                   and not isinstance(m.get("content"), str)]
            if bad:
                raise Hint(f"With keep={keep} a tool result's content is {bad[0].get('content')!r}. A strict "
                           "server refuses a tool message without a string content: set it to CLEARED instead.")
            if len(out) != len(history):
                raise Hint(f"With keep={keep} the list has {len(out)} messages instead of {len(history)}. Keep "
                           "every message: a tool call whose result is gone is the 400 of section 5. Change only "
                           "the content of old tool results.")
            problems = find_problems(out + [{"role": "user", "content": "next question"}])
            if problems:
                raise Hint(f"With keep={keep} a strict server would reject the list: {problems[0]} Keep each tool "
                           "message and its tool_call_id; change only its content.")
            for index, (got, want, was) in enumerate(zip(out, expected, history)):
                if got == want:
                    continue
                where = _where(history, index)
                if want is was:  # this message should not have changed
                    if was["role"] != "tool":
                        raise Hint(f"With keep={keep} message {index} ({was['role']}, {where}) changed. Clear "
                                   "only tool results: questions and answers stay as they are.")
                    raise Hint(f"With keep={keep} the tool result at message {index} ({where}) was cleared, but it "
                               f"is in {_newest(keep)}, which stay as they are. Count turns (each starts at a "
                               "user message), not messages.")
                if got == was:
                    raise Hint(f"With keep={keep} the tool result at message {index} ({where}) is older than "
                               f"{_newest(keep)} but was not cleared. Count turns (each starts at a user "
                               "message) from the newest one back.")
                raise Hint(f"With keep={keep} the tool result at message {index} has content "
                           f"{got.get('content')!r}: set it to CLEARED exactly, and keep every other key.")
    return (f"clear_old_results keeps every message and every call answered on {tried} generated histories "
            "(keep = 0 up to more turns than there are): only the tool results of older turns are cleared.")


exercise_1 = Exercise(
    "07.1", "clear old tool results, keep the turns",
    stub=("def clear_old_results(messages, keep):\n"
          f"    {CLEAR_DOC}\n"
          "    return list(messages)  # clears nothing yet"),
    solution_code=("def clear_old_results(messages, keep):\n"
                   f"    {CLEAR_DOC}\n"
                   "    spans, _ = keep_newest(turns_newest_first(messages), lambda span: 1, max_turns=keep,\n"
                   "                           keep_one=False)  # the newest `keep` turns, each costing 1\n"
                   "    cut = spans[-1][0] if spans else len(messages)  # where those turns start\n"
                   "    return [{**m, \"content\": CLEARED} if i < cut and m[\"role\"] == \"tool\" else m\n"
                   "            for i, m in enumerate(messages)]"),
    checker=_check_clear, answers=("clear_old_results",),
    hints=("Find where the newest `keep` turns start: turns_newest_first gives each turn's (start, end), newest "
           "first, and keep_newest can take `keep` of them. Every tool message before that index is old.",
           "Build a new list: for an old tool message, {**message, \"content\": CLEARED}; every other message as "
           "it is. Never remove a message: its tool call would be left unanswered."),
    context=lambda: {"CLEARED": CLEARED, "keep_newest": keep_newest, "turns_newest_first": turns_newest_first,
                     "split_turns": split_turns},
)


# ---------------------------------------------------------------- exercise 2: a safe cut

def _history(sizes: list[int]) -> list[dict]:
    """A system message, then one turn per entry: a plain turn (2 messages) or one with tool calls."""
    messages = [{"role": "system", "content": "You are a campus assistant."}]
    for number, size in enumerate(sizes):
        question = f"question {number}"
        if size == 2:
            messages += [{"role": "user", "content": question}, {"role": "assistant", "content": "answer"}]
            continue
        calls = [{"id": f"c{number}_{k}", "type": "function",
                  "function": {"name": "search_campus_info", "arguments": "{}"}} for k in range(size - 3)]
        messages += [{"role": "user", "content": question},
                     {"role": "assistant", "content": None, "tool_calls": calls}]
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "{}"} for c in calls]
        messages += [{"role": "assistant", "content": "answer"}]
    return messages


def _reference_cut(messages: list[dict], n: int) -> list[dict]:
    system, turns = split_turns(messages)
    kept: list[dict] = []
    for turn in reversed(turns):
        if len(kept) + len(turn) > n:
            break
        kept = turn + kept
    return system + kept


CUT_DOC = '"""The system message and at most the newest n messages, never starting inside a turn."""'
CUT_CASES = ([4, 2, 5, 4], [2, 2, 2], [6, 4], [2, 5, 2, 4, 2])


def _check_cut(safe_cut) -> str:
    if not callable(safe_cut):
        raise Hint("safe_cut must be a function: def safe_cut(messages, n): ...")
    tried = 0
    for sizes in CUT_CASES:
        history = _history(sizes)
        for n in range(0, len(history)):
            before = copy.deepcopy(history)
            cut = safe_cut(history, n)
            tried += 1
            if history != before:
                raise Hint("safe_cut changed the list it was given; build a new list instead.")
            if not isinstance(cut, list):
                raise Hint(f"safe_cut returned {type(cut).__name__}; return a list of messages.")
            if cut[:1] != history[:1]:
                raise Hint(f"With n={n} the cut does not start with the system message; always keep it.")
            if len(cut) > 1 and cut[1].get("role") != "user":
                role = cut[1].get("role")
                raise Hint(f"With n={n} the kept part starts with a message of role {role!r}, in the middle "
                           "of a turn. Start it at a user message: split_turns gives you the turns.")
            problems = find_problems(cut + [{"role": "user", "content": "next question"}])
            if problems:
                raise Hint(f"With n={n} the cut is a list a strict server rejects: {problems[0]} "
                           "Start the kept part at a user message (split_turns gives you the turns).")
            if len(cut) - 1 > n:
                raise Hint(f"With n={n} you kept {len(cut) - 1} messages after the system message; "
                           "keep at most n.")
            best = _reference_cut(history, n)
            if len(cut) < len(best):
                raise Hint(f"With n={n} you kept {len(cut) - 1} messages, but the newest whole turns "
                           f"that fit hold {len(best) - 1}. Add turns, newest first, while they fit.")
            if cut != best:
                kept_turns, best_turns = split_turns(cut)[1], split_turns(best)[1]
                if sorted(map(str, kept_turns)) == sorted(map(str, best_turns)):
                    raise Hint(f"With n={n} you kept the right turns in the wrong order: put them back oldest "
                               "first, as they were sent.")
                raise Hint(f"With n={n} the cut is not the newest whole turns in order. Stop at the first "
                           "turn that does not fit: skipping it and keeping older ones leaves a gap in the "
                           "conversation.")
    return (f"safe_cut is valid on {tried} cuts (n = 0 up to the whole list, turns with and without tool "
            "calls): never more than n messages, never half a turn, and as many whole turns as fit.")


exercise_2 = Exercise(
    "07.2", "make any cut safe",
    stub=("def safe_cut(messages, n):\n"
          f"    {CUT_DOC}\n"
          "    return messages[:1] + messages[len(messages) - n:]  # the naive cut: fix it"),
    solution_code=("def safe_cut(messages, n):\n"
                   f"    {CUT_DOC}\n"
                   "    system, turns = split_turns(messages)\n"
                   "    kept = []\n"
                   "    for turn in reversed(turns):  # newest turn first\n"
                   "        if len(kept) + len(turn) > n:\n"
                   "            break  # the next turn does not fit whole: stop, never take half of it\n"
                   "        kept = turn + kept\n"
                   "    return system + kept"),
    checker=_check_cut, answers=("safe_cut",),
    hints=("split_turns(messages) gives (system messages, turns); each turn starts at a user message.",
           "Walk the turns newest first and add a whole turn only while the total stays at most n; stop at "
           "the first turn that does not fit (keep_newest does exactly that, with keep_one=False)."),
    context=lambda: {"split_turns": split_turns, "keep_newest": keep_newest,
                     "turns_newest_first": turns_newest_first},
)

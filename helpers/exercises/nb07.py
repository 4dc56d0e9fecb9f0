"""Exercises of notebook 07: the smallest memory window, and a message cut that is always safe.

Both checks work on fixed message lists (no model, no clock): the same answer is right on any
backend and on any day.
"""
from __future__ import annotations

import copy
import json

from helpers.exercises import Exercise, Hint
from helpers.history import split_turns
from helpers.validity import find_problems
from helpers.session import SimpleSession

# ---------------------------------------------------------------- exercise 1: the smallest window

WINDOW_QUESTIONS = ("When does the AI club meet?", "And when are the faculty office hours?",
                    "Where can I print a poster?")
COMPARISON = "Which of those two is sooner?"


def _scripted_turn(number: int, question: str, found: str) -> list[dict]:
    """One turn as the agent loop writes it: question, a search call, its result, the answer."""
    call_id = f"call_{number}"
    arguments = json.dumps({"query": question})
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "search_campus_info",
                                                                 "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"results": [found]})},
            {"role": "assistant", "content": found}]


FINDINGS = ("AI Club meets on Thursdays at 18:00.", "Faculty office hours are on Tuesdays at 14:00.",
            "Printers are in Harrow Library.")


def remembered_questions(max_turns: int) -> list[str]:
    """The questions a SimpleSession(max_turns=...) still holds when the comparison is asked."""
    session = SimpleSession(max_turns=max_turns)
    for number, (question, found) in enumerate(zip(WINDOW_QUESTIONS, FINDINGS)):
        session.messages += _scripted_turn(number, question, found)  # what chat() adds, without a model
        session.forget_old_turns()
    return [m["content"] for m in session.messages if m["role"] == "user"]


def _holds_both(max_turns: int) -> bool:
    kept = remembered_questions(max_turns)
    return WINDOW_QUESTIONS[0] in kept and WINDOW_QUESTIONS[1] in kept


def _check_window(my_max_turns) -> str:
    if my_max_turns is None:
        raise Hint("None keeps every turn: the comparison works, but memory grows without limit. Pick the "
                   "smallest whole number of turns that still works.")
    if isinstance(my_max_turns, bool) or not isinstance(my_max_turns, int) or my_max_turns < 1:
        raise Hint(f"my_max_turns must be a whole number of at least 1 (got {my_max_turns!r}).")
    kept = remembered_questions(my_max_turns)
    if not _holds_both(my_max_turns):
        lost = [q for q in WINDOW_QUESTIONS[:2] if q not in kept]
        raise Hint(f"With max_turns={my_max_turns} the comparison is asked with only {kept} in memory: "
                   f"{lost[0]!r} has scrolled out, so there are not two events to compare. Go higher.")
    if my_max_turns > 1 and _holds_both(my_max_turns - 1):
        raise Hint(f"max_turns={my_max_turns} works, but so does {my_max_turns - 1}: each extra turn is sent "
                   "with every request. Find the smallest value that still works.")
    return (f"max_turns={my_max_turns} is the smallest window that holds both events: the comparison "
            f"is asked with {len(kept)} earlier turns in memory; with {my_max_turns - 1} the AI club turn "
            "is gone.")


exercise_1 = Exercise(
    "07.1", "enough memory for the comparison",
    stub="my_max_turns = 1  # the smallest number of turns that keeps both events",
    solution_code=("my_max_turns = 3  # AI club, office hours, and the poster question in between:\n"
                   "# the window must reach back over the unrelated turn to hold both events"),
    checker=_check_window, answers=("my_max_turns",),
    hints=("Run the cell under the stub and read 'in memory': which questions are still in the list when the "
           "comparison is asked?",
           "The comparison needs the AI club turn and the office-hours turn; a poster question sits between "
           "them and the comparison. Count the turns from the AI club question to the poster question."),
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
           "the first turn that does not fit."),
    context=lambda: {"split_turns": split_turns},
)

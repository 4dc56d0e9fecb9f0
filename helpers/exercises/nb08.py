"""Exercises of notebook 08: the smallest budget that keeps a fact, and pinning what a summary loses.

Exercise 1 assembles one fixed request (system prompt, tool schemas, a summary, three window turns,
the question) with ``assemble_context`` and counts it with ``helpers.tokens``: no model and no clock.
Exercise 2 summarises fixed turns with the offline stand-in's documented rule, whatever backend the
notebook uses. Both give the same verdict on any backend and on any day.
"""
from __future__ import annotations

import json

from helpers import tokens
from helpers.config import load_settings
from helpers.errors import WorkshopError
from helpers.exercises import Exercise, Hint
from helpers.memory.assembler import assemble_context
from helpers.memory.budget import DEFAULT_SHARES, ContextBudgetError
from helpers.memory.summary import RollingSummary, Summariser
from helpers.session import SESSION_SYSTEM_PROMPT
from helpers.standin.server import make_offline_client
from helpers.tools import tool_schemas

# ---------------------------------------------------------------- exercise 1: the smallest budget

PROBE = "What did I say about mornings?"
NEEDED = "can't do mornings"  # the words the probe needs, in the summary's turn-1 line
SUMMARY = RollingSummary("\n".join([
    "(Left out to stay within the word limit: turns 2-5.)",
    '[turn 0] user: "Hi! My name is Priya Raman." -> assistant: "Noted: Priya Raman."',
    "[turn 1] user: \"I can't do mornings, I work late shifts at the bakery.\" -> assistant: "
    "\"Noted: can't do mornings.\"",
    '[turn 6] user: "When does the robotics club meet?" -> assistant: "Robotics Club takes place on '
    'Wednesdays at 19:00 in Ferris Engineering Building, Maker Lab [club-robotics]."',
    "Pinned: 120 dollars"]), list(range(7)))
WINDOW_TURNS = (
    (7, "How do I connect to campus Wi-Fi?", "Connect to LarkNet with your student login [it-wifi]."),
    (8, "Where is the IT help desk?", "The IT help desk is in Harrow Library, ground floor [it-helpdesk]."),
    (9, "When are the computer science faculty office hours?",
     "Computer Science faculty office hours are on Tuesdays at 14:00 in Halvorsen Hall [office-hours-cs]."),
)


def _scripted_turn(turn_id: int, question: str, found: str) -> list[dict]:
    """One turn as the agent loop writes it: question, a search call, its result, the answer."""
    call_id = f"call_{turn_id}"
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "search_campus_info", "arguments": json.dumps({"query": question})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"results": [{"text": found}]})},
            {"role": "assistant", "content": found}]


def assemble_probe(budget: int):
    """The probe's request under ``budget``: fixed costs, the summary, the newest whole turns that fit."""
    window = [(turn_id, _scripted_turn(turn_id, q, a)) for turn_id, q, a in WINDOW_TURNS]
    fixed = tokens.REPLY_PRIMING + tokens.count_tools(tool_schemas())
    return assemble_context(SESSION_SYSTEM_PROMPT, window, PROBE, budget=budget, fixed=fixed, summary=SUMMARY)


def keeps_the_fact(budget: int) -> bool:
    """True when the request for the probe fits ``budget`` and its summary still holds the needed line."""
    try:
        assembly = assemble_probe(budget)
    except ContextBudgetError:
        return False
    return any(NEEDED in (m.get("content") or "") for m in assembly.messages if m["role"] == "system")


def budget_report(budget: int) -> None:
    """Print the budget report of the probe's request and the summary block as it was sent."""
    try:
        assembly = assemble_probe(budget)
    except ContextBudgetError as error:
        print(f"ContextBudgetError: {error}")
        return
    assembly.report.show()
    summary = [m["content"] for m in assembly.messages
               if (m["content"] or "").startswith("Summary of earlier")]
    print("\n" + (summary[0] if summary else "(no summary was sent)"))
    print(f"\nthe line the probe needs ({NEEDED!r}) was sent: {keeps_the_fact(budget)}")


def _summary_cap(budget: int) -> int | None:
    part = assemble_probe(budget).report.part("summary")
    return None if part is None else part.cap


def _check_budget(my_budget) -> str:
    if isinstance(my_budget, bool) or not isinstance(my_budget, int) or my_budget < 1:
        raise Hint(f"my_budget must be a whole number of tokens (got {my_budget!r}).")
    try:
        assemble_probe(my_budget)
    except ContextBudgetError as error:
        raise Hint(f"At {my_budget} nothing is sent: {str(error).split(';')[0]}. Go higher.") from None
    if not keeps_the_fact(my_budget):
        raise Hint(f"At {my_budget} tokens the summary may use {_summary_cap(my_budget)} tokens, and "
                   "trimming its oldest lines to fit removed the turn-1 line the probe needs. Go higher.")
    if keeps_the_fact(my_budget - 1):
        raise Hint(f"{my_budget} keeps the line, but so does {my_budget - 1}: every token of budget is "
                   "paid on every request. Find the smallest budget that still keeps it.")
    return (f"{my_budget} tokens is the smallest budget that keeps the line: the summary may use "
            f"{_summary_cap(my_budget)} tokens; at {my_budget - 1} it may use {_summary_cap(my_budget - 1)} "
            "and the turn-1 line is trimmed.")


exercise_1 = Exercise(
    "08.1", "how small can the budget go?",
    stub="my_budget = 1800  # the smallest budget whose request still holds the turn-1 line",
    solution_code=("# the summary's share is int(0.20 * room), room = budget - fixed - system - question;\n"
                   "# try budgets downwards (or bisect) and keep the last one whose summary holds the line\n"
                   "my_budget = next(b for b in range(700, 1801) if keeps_the_fact(b))"),
    checker=_check_budget, answers=("my_budget",),
    hints=("Run budget_report(my_budget) and read the summary line of the report: its cap is 20% of the room "
           "(the budget minus fixed, system and question). Trimming drops the oldest summary lines first.",
           "The turn-1 line survives while the summary without its first two lines fits the cap. "
           "keeps_the_fact(b) tells you, for any b, whether it does: search for the first b where it is "
           "True."),
    context=lambda: {"keeps_the_fact": keeps_the_fact},
)

# ---------------------------------------------------------------- exercise 2: pin what a summary loses

STUDENT = ("Hi! My name is Priya Raman. I study data science. My textbook budget is 120 dollars.",
           "I can't do mornings, I work late shifts at the bakery.")
MUST_SURVIVE = ("data science", "120 dollars")
MAX_PIN_WORDS = 6


def dropped_turns() -> list[tuple[int, list[dict]]]:
    """Two turns about the student and two campus questions, as a window drops them."""
    turns = [(0, [{"role": "user", "content": STUDENT[0]},
                  {"role": "assistant", "content": "Noted: Priya."}]),
             (1, [{"role": "user", "content": STUDENT[1]}, {"role": "assistant", "content": "Noted."}])]
    questions = [(2, "When does the AI club meet?", "AI Club meets on Thursdays at 18:00 [club-ai]."),
                 (3, "Where can I print a poster?", "Posters print at the Harrow Library desk [print].")]
    return turns + [(turn_id, _scripted_turn(turn_id, q, a)) for turn_id, q, a in questions]


def summary_with(keep) -> str:
    """The offline stand-in's summary of ``dropped_turns()`` with ``keep`` pinned (on any backend)."""
    summariser = Summariser(client=make_offline_client(), settings=load_settings("offline"))
    return summariser.summarise(RollingSummary(), dropped_turns(), keep=list(keep)).summary.text


def _check_keep(my_keep) -> str:
    if isinstance(my_keep, str) or not isinstance(my_keep, (list, tuple)) or \
            not all(isinstance(fact, str) for fact in my_keep):
        raise Hint("my_keep must be a list of strings, e.g. ['a fact', 'another fact'].")
    said = " ".join(" ".join(STUDENT).lower().split())
    for fact in my_keep:
        if " ".join(fact.lower().split()) not in said:
            raise Hint(f"{fact!r} is not word for word what the student said; pin her own words.")
        if len(fact.split()) > MAX_PIN_WORDS:
            raise Hint(f"{fact!r} is a whole sentence. A pin is sent with every request for the rest of the "
                       f"conversation: keep each to the fact itself ({MAX_PIN_WORDS} words at most).")
    try:
        text = summary_with(my_keep)
    except WorkshopError as error:
        raise Hint(f"the summary could not be made: {error}") from None
    lost = [fact for fact in MUST_SURVIVE if fact not in text.lower()]
    if lost:
        raise Hint(f"the summary still loses {lost[0]!r}: the extractive rule keeps only the first two "
                   "sentences of each message. Pin that fact word for word.")
    return f"{len(my_keep)} pin(s): the summary keeps {' and '.join(MUST_SURVIVE)}."


exercise_2 = Exercise(
    "08.2", "pin what matters",
    stub="my_keep = []  # facts, word for word as the student said them, that every summary must keep",
    solution_code='my_keep = ["data science", "120 dollars"]',
    checker=_check_keep, answers=("my_keep",),
    hints=("Print summary_with(my_keep) and compare it with what the student said in turn 0: which of her "
           "facts are missing?",
           "The rule keeps 'Hi!' and 'My name is Priya Raman.', the first two sentences. What she studies "
           "and her textbook budget come after them."),
)

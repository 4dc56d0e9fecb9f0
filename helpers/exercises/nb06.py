"""Exercises of notebook 06 (the agent loop). Every check runs on the offline stand-in and reads the day
counts from the tools' own results, so it passes on any day of the week and with any backend configured: a
small local model may not call the tools at all, so a server could not decide these checks."""
from __future__ import annotations

import functools
import json
import random
from itertools import combinations

from helpers.agent.loop import MAX_STEPS
from helpers.agent.turn import run_agent
from helpers.llm.config import load_settings
from helpers.exercises import Exercise, Hint
from helpers.agent.tools import REGISTRY, Tool

TWO_TOOL_QUESTION = "When does the AI club meet, and how many days is that from now?"


def _offline():
    return load_settings("offline")


def _counted_date(result) -> str | None:
    """The date days_until_weekday returned during the turn, if it was called and worked."""
    for message in result.added:
        if message["role"] == "tool":
            found = json.loads(message["content"])
            if "days" in found and "date" in found:
                return found["date"]
    return None


def _found_the_club(result) -> bool:
    """Whether a tool result of the turn holds the AI Club's passage (its meeting day)."""
    for message in result.added:
        if message["role"] == "tool":
            found = json.loads(message["content"])
            if any(row.get("id") == "club-ai" for row in found.get("results") or ()):
                return True
    return False


def _outcome(tools) -> tuple[bool, bool]:
    """(answered with the date a tool counted, found when the club meets) with these tools."""
    result = run_agent(TWO_TOOL_QUESTION, tools=list(tools), settings=_offline())
    date = _counted_date(result)
    return result.stopped == "answer" and date is not None and date in result.answer, _found_the_club(result)


def _answers(tools) -> bool:
    return _outcome(tools)[0]


def _check_tools(my_tools) -> str:
    if not isinstance(my_tools, (list, tuple)) or not all(isinstance(name, str) for name in my_tools):
        raise Hint("my_tools must be a list of tool names (strings), e.g. ['search_campus_info']")
    unknown = [name for name in my_tools if name not in REGISTRY]
    if unknown:
        verb = "is not a tool" if len(unknown) == 1 else "are not tools"
        raise Hint(f"{', '.join(unknown)} {verb}; choose from {sorted(REGISTRY)}")
    if len(set(my_tools)) != len(my_tools):
        raise Hint("a tool name appears twice in my_tools; each tool needs to be offered only once")
    answered, found = _outcome(my_tools)
    if not answered:
        if found:
            raise Hint("with these tools the agent finds when the club meets, but nothing counts the days "
                       "to it; which tool counts days?")
        raise Hint("with these tools the agent cannot both find when the club meets and count the days "
                   "to it; which tool looks things up, and which one counts days?")
    for size in range(1, len(my_tools)):
        for smaller in combinations(REGISTRY, size):
            if _answers(smaller):
                raise Hint(f"a smaller set also answers: {list(smaller)}. "
                           "Remove the tools the answer never used.")
    return f"{my_tools} is the smallest set: one tool to look up the day, one to count to it"


exercise_1 = Exercise(
    "06.1", "choose the tools",
    stub='my_tools = ["get_current_time"]',
    solution_code='my_tools = ["search_campus_info", "days_until_weekday"]',
    checker=_check_tools, answers=("my_tools",),
    hints=("Run the question with verbose=True and all tools: which tools does the trace show?",
           "The club's day comes from the knowledge base; the count comes from a tool that never estimates."),
)

STEP_QUESTIONS = (
    "How many days until Thursday?",
    TWO_TOOL_QUESTION,
    "Which is sooner, Tuesday at 14:00 or Thursday at 18:00?",
    "When does the AI club meet?",
)


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _unseen_questions(seed: int = 2027) -> tuple[str, ...]:
    """Two questions the notebook never shows, so a table of the shown ones' answers does not pass."""
    rng = random.Random(seed)
    first, second = rng.sample(WEEKDAYS, 2)
    return (f"How many days until {rng.choice(WEEKDAYS)}?",
            f"Which is sooner, {first} at {rng.randrange(8, 20)}:00 or {second} at {rng.randrange(8, 20)}:30?")


def _noting_registry(ran: list[str]) -> dict[str, Tool]:
    """The tools of REGISTRY, each noting its name in ``ran`` when it runs (same results)."""
    def noting(tool: Tool) -> Tool:
        @functools.wraps(tool.function)  # run_tool reads the signature through the wrapper
        def run(*args, **kwargs):
            ran.append(tool.name)
            return tool.function(*args, **kwargs)
        return Tool(tool.name, run, tool.schema)
    return {name: noting(tool) for name, tool in REGISTRY.items()}


def _check_steps(smallest_max_steps) -> str:
    if not callable(smallest_max_steps):
        raise Hint("smallest_max_steps must be a function: def smallest_max_steps(question, **options): ...")
    found = []
    for question in STEP_QUESTIONS + _unseen_questions():
        needed = run_agent(question, settings=_offline()).steps
        ran: list[str] = []  # the options carry tools that note when they run: were they passed on?
        given = smallest_max_steps(question, settings=_offline(), registry=_noting_registry(ran))
        if not ran:
            raise Hint(f"for {question!r} your function never ran the agent with the options it was given: "
                       "call run_agent(question, max_steps=n, **options). The options carry the settings the "
                       "check counted with (the offline stand-in), whatever backend this notebook uses")
        if isinstance(given, bool) or not isinstance(given, int):
            raise Hint(f"smallest_max_steps returned {given!r}; return a whole number of steps")
        if given != needed:
            parallel = "Which is sooner" in question
            if given > needed:
                advice = (" Several tool calls in one reply are one step." if parallel
                          else " Try each max_steps from 1 upwards and stop at the first that answers.")
                raise Hint(f"for {question!r} you said {given}, but max_steps={needed} already "
                           f"answers.{advice}")
            raise Hint(f"for {question!r} you said {given}, but with max_steps={given} the agent stops "
                       "before answering (result.stopped is 'max_steps'). Keep going until it is 'answer'.")
        found.append(needed)
    return "smallest step budgets " + ", ".join(f"{n}" for n in found) + " (parallel calls share one step)"


exercise_2 = Exercise(
    "06.2", "the step budget",
    stub='''def smallest_max_steps(question, **options):
    """The smallest max_steps with which run_agent answers ``question`` (options go to run_agent)."""
    return 1''',
    solution_code='''from helpers.agent.loop import MAX_STEPS
from helpers.agent.turn import run_agent

def smallest_max_steps(question, **options):
    """The smallest max_steps with which run_agent answers ``question`` (options go to run_agent)."""
    for max_steps in range(1, MAX_STEPS + 1):
        if run_agent(question, max_steps=max_steps, **options).stopped == "answer":
            return max_steps
    return None''',
    checker=_check_steps, answers=("smallest_max_steps",),
    hints=("Call run_agent(question, max_steps=n, **options) for n = 1, 2, 3, ... and look at .stopped.",
           "Return the first n for which result.stopped == 'answer'. (result.steps of an unlimited run "
           "gives the same number.)"),
    context=lambda: {"run_agent": run_agent, "MAX_STEPS": MAX_STEPS},
)

"""The agent's own memory tool (notebook 13): ``remember`` and ``forget``, called by the model in the turn.

The series writes memory in the **background**: after a turn, an extractor reads the user's words and the
fact store decides (notebooks 09-10). Here the model itself decides, **in the hot path**: the tools are
offered with every request, and a call is one more model step before the answer. What that buys and costs
is measured in ``benchmarks/memory_tool_eval.py``.

A model can be talked into anything, so what it may write is checked here, not left to its judgement:
``remember(attribute, value, quote)`` is refused (a ``ToolInputError``, which the agent loop returns to the
model as the tool's error) unless ``quote`` is the user's own words in this turn and ``value`` is within it
(``users_words_problem``). Text from a tool result, a retrieved passage or the model's own reply is
therefore never written, however it is phrased. ``forget(topic)`` deletes what the user asked to forget.

``memory_tools(target, user_words)`` returns the two ``Tool`` objects for a session's registry: ``target``
does the writing (``MemoryTarget``: ``helpers.memory.hot_path.FactTarget`` writes to the fact store) and
``user_words()`` gives the user's message of the turn in progress.
"""
from __future__ import annotations

import re
from typing import Callable, Protocol

from helpers.agent.tools import Tool, ToolInputError, function_schema

REMEMBER, FORGET = "remember", "forget"
MAX_VALUE_CHARS = 200


class MemoryTarget(Protocol):
    """Where the memory tool writes (a fact store, in ``helpers.memory.hot_path``)."""

    def remember(self, attribute: str, value: str, quote: str) -> dict:
        ...

    def forget(self, topic: str) -> dict:
        ...


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w@.:/'-]+", " ", str(text).lower()).split())


def users_words_problem(value: str, quote: str, user_text: str) -> str | None:
    """Why ``remember`` must not write (a sentence for the model), or None: ``quote`` must be part of the
    user's message of this turn, and ``value`` part of ``quote`` (compared without case and punctuation)."""
    if not str(value).strip() or not str(quote).strip():
        return "value and quote are both needed: the value, and the user's sentence that states it"
    if len(str(value)) > MAX_VALUE_CHARS:
        return f"value is {len(str(value))} characters; at most {MAX_VALUE_CHARS}"
    if _plain(quote) not in _plain(user_text):
        return "quote is not the user's words in this turn; only what the user said may be remembered"
    if _plain(value) not in _plain(quote):
        return "value is not in the quote; remember the user's own words for it"
    return None


REMEMBER_SCHEMA = function_schema(
    REMEMBER, "Remember a fact the user just stated about themselves, in their own words, for later "
    "conversations. Only for what the user said in this message.",
    {"attribute": {"type": "string", "description": "What the fact is about, a short label: 'locker number'"},
     "value": {"type": "string", "description": "The value, copied from the user's words"},
     "quote": {"type": "string", "description": "The user's sentence that states it, copied exactly"}},
    ["attribute", "value", "quote"])
FORGET_SCHEMA = function_schema(
    FORGET, "Forget what the user asked you to forget, everywhere it is stored.",
    {"topic": {"type": "string", "description": "What to forget, in the user's words: 'my sister'"}}, ["topic"])


def memory_tools(target: MemoryTarget, user_words: Callable[[], str]) -> dict[str, Tool]:
    """The ``remember`` and ``forget`` tools, writing through ``target``; ``user_words()`` is the user's message
    of the turn in progress (what ``remember`` may quote)."""

    def remember(attribute: str, value: str, quote: str) -> dict:
        problem = users_words_problem(value, quote, user_words())
        if problem is not None:
            raise ToolInputError(problem)
        return target.remember(" ".join(str(attribute).split()).lower(), str(value).strip(), str(quote).strip())

    def forget(topic: str) -> dict:
        if not str(topic).strip():
            raise ToolInputError("topic is empty; say what to forget, in the user's words")
        return target.forget(str(topic).strip())

    return {REMEMBER: Tool(REMEMBER, remember, REMEMBER_SCHEMA), FORGET: Tool(FORGET, forget, FORGET_SCHEMA)}

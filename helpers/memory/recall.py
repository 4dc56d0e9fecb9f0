"""Recall of older turns by meaning (lesson 09): what is evidence, how past turns rank, how they are quoted.

The module opens with the core notebook 09 builds: ``statements`` (what of a user's message is
evidence), ``rank`` (similarity plus a recency term, ties to the newest turn) and
``merge_repeats`` (near-identical restatements become one). ``RecallIndex``
(``helpers.memory.recall_index``) uses them and adds the bookkeeping: embedding in batches,
tool answers, searching, saving and restoring.

Small talk ("ok", "thanks", "got it") is not evidence, and neither are questions: a question
is not a statement, so "Who is my advisor?" asked three times is never recalled as evidence
(``is_question``: a sentence that ends with "?" or starts with an interrogative word such as
"what", "who", "where", "when", "which", "how", "why", "do", "can", "is", or with "tell me" /
"remind me"). Evidence is what the user stated, what the assistant stated in its own words
(``assistant_statements``), and the final answer of a turn that used a tool (what the tools
returned); an acknowledgement ("Noted"), a reply that only repeats the user's words, or one that
cites memory ("You told me (turn 0): ...") is not evidence. The assistant's words are quoted as
its own and never read for the profile.

Ranking knows time:

- score = cosine similarity of a turn's best piece + ``RECENCY_WEIGHT`` x recency, where
  recency runs from 0 (the oldest indexed turn) to 1 (the newest);
- ties go to the newest turn;
- identical or near-identical statements are merged (``near_identical``): the newest
  occurrence is kept and the quote says how many times, and in which turns, it was said.

A recalled turn is shown as quoted text with its turn id (``[turn 7] user: "..."``, the
assistant's side ``[turn 7] assistant: "..."``, a named speaker ``user (Dana): "..."``; ``quote_turn``) inside a context block (``recall_block``); it is never re-inserted as raw
messages, so a recalled tool call can never arrive without its result. Each quoted line is one
line (``one_line``): nothing the user or a tool said can start a line of the block.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from helpers.core.context_format import (EMPTY_MESSAGE, RECALL_HEADER, arrange_by_day, safe_lines,  # the owner
                                         write_quote_line, write_tools_line, write_turn_line)
from helpers.core.text import shorten
from helpers.core.tokens import content_text

ACKNOWLEDGEMENTS = frozenset("""ok okay k kk thanks thank you thx ty cool great nice sure yes yep yeah no nope
fine got it alright right perfect awesome bye goodbye hi hello hey cheers lol sounds good will do
noted welcome you're glad anytime""".split())
RECENCY_WEIGHT = 0.05  # at most this much is added to the newest turn's similarity
ANSWER_CHARS = 240  # a recalled tool answer is quoted up to this many characters
NEAR_IDENTICAL = 0.9  # share of the shorter statement's words the longer one must contain
_INTERROGATIVES = re.compile(r"^\W*(?:what|what's|whats|who|who's|whom|whose|where|where's|when|which|why|"
                             r"how|do|does|did|can|could|would|will|should|shall|may|is|are|am|was|were|"
                             r"have|has|tell me|remind me|any idea)\b", re.I)


def is_substantive(text: Any) -> bool:
    """False for empty text and pure acknowledgements ("ok", "thanks!", "got it, thank you")."""
    words = re.findall(r"[a-z0-9']+", str(text or "").lower())
    return bool(words) and not set(words) <= ACKNOWLEDGEMENTS


def is_question(text: Any) -> bool:
    """True for a question: it ends with "?" or starts with an interrogative ("what", "tell me", ...)."""
    text = " ".join(str(text or "").split())
    return text.endswith("?") or _INTERROGATIVES.match(text) is not None


def statements(user_text: str) -> list[str]:
    """The sentences of a user's message that state something: questions and small talk are not evidence."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(user_text.split()))
    return [sentence for sentence in sentences if is_substantive(sentence) and not is_question(sentence)]


def rank(best: Mapping[int, float]) -> list[tuple[int, float]]:
    """(turn id, score), best first: similarity plus RECENCY_WEIGHT x recency; ties go to the newer turn.

    ``best`` maps each turn to the similarity of its best piece. Recency runs from 0 for the
    oldest turn in ``best`` to 1 for the newest.
    """
    oldest, newest = min(best), max(best)
    span = max(newest - oldest, 1)
    score = {turn: similarity + RECENCY_WEIGHT * (turn - oldest) / span for turn, similarity in best.items()}
    return sorted(score.items(), key=lambda item: (-round(item[1], 6), -item[0]))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def near_identical(a: str, b: str, threshold: float = NEAR_IDENTICAL) -> bool:
    """True when the shorter text's words are (``threshold`` of them) in the longer one, which adds <= 3."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) >= threshold and abs(len(wa) - len(wb)) <= 3


def merge_repeats(ranked: Sequence[tuple[int, float]], texts: Mapping[int, str], k: int) -> list[list[int]]:
    """Up to ``k`` groups of turn ids, best first; a turn that restates a group's first turn joins it."""
    groups: list[list[int]] = []
    for turn_id, _score in ranked:
        group = next((g for g in groups if near_identical(texts[turn_id], texts[g[0]])), None)
        if group is not None:
            group.append(turn_id)
        elif len(groups) < k:
            groups.append([turn_id])
    return groups


def _content(message: dict) -> str:
    """A message's words: its text, or the text parts of mixed content (image parts carry none)."""
    return " ".join(content_text(message.get("content")).split())


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending with "…" when it was cut (no space before it)."""
    return shorten(text, limit, flatten=False, tidy=True)


def turn_parts(messages: Sequence[dict]) -> tuple[str, str, list[str]]:
    """(user text, final assistant answer, tool names used) of one turn."""
    user = next((_content(m) for m in messages if m.get("role") == "user"), "")
    answers = [_content(m) for m in messages if m.get("role") == "assistant" and _content(m)]
    tools = [c.get("function", {}).get("name", "tool") for m in messages for c in m.get("tool_calls") or []]
    return user, answers[-1] if answers else "", tools


def speaker_names(messages: Sequence[dict]) -> tuple[str, str]:
    """(user's name, final answer's speaker name): the OpenAI message ``name`` field, "" where absent."""
    def name(message: dict | None) -> str:
        return " ".join(str((message or {}).get("name") or "").split())
    user = next((m for m in messages if m.get("role") == "user"), None)
    answer = [m for m in messages if m.get("role") == "assistant" and _content(m)]
    return name(user), name(answer[-1] if answer else None)


_CITES_MEMORY = re.compile(r"\bturns? \d+|\byou told me\b", re.I)
_LEADING_TAGS = re.compile(r"^(?:\[[^\]]*\]\s*)*(?:[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}: )?")
SENTENCE_PIECES = True  # embed each longer sentence of a long message on its own as well as the whole message
SENTENCE_PIECES_FROM = 60  # ... a message of at least this many words (a shorter one is embedded whole only:
# measured on LoCoMo's tuning half, its sentences added nothing but vectors -- a third of them -- and time)
MIN_PIECE_WORDS = 4  # a sentence shorter than this is embedded only inside its whole message


def assistant_statements(answer: str, user: str = "") -> list[str]:
    """What of an assistant's reply (no tool used) is its own evidence: its statements, except one that only
    repeats words of the user's message (``Noted: blue.``); none of a reply that cites memory (``You told me
    (turn 0): ...``): it repeats what was said, it says nothing new."""
    if _CITES_MEMORY.search(answer):
        return []
    heard = _words(user) | ACKNOWLEDGEMENTS
    return [s for s in statements(answer) if not _words(s) <= heard]


def side_pieces(said: Sequence[str], name: str = "", limit: int = 12) -> list[str]:
    """The pieces one speaker's statements are embedded as: the whole message (``name: ...`` when the message
    names its speaker), then -- for a message of at least ``SENTENCE_PIECES_FROM`` words, where one fact would
    be diluted in the whole -- each sentence of at least ``MIN_PIECE_WORDS`` words on its own, without a
    leading ``[tag]`` or ``Name: `` prefix (so a speaker's name cannot make "Melanie: Thanks, Caroline!" match
    every question about Melanie), at most ``limit`` pieces."""
    if not said:
        return []
    whole = " ".join(said)
    pieces = [f"{name}: {whole}" if name else whole]
    for sentence in said:
        bare = _LEADING_TAGS.sub("", sentence, count=1).strip()
        if len(re.findall(r"[a-z0-9']+", bare.lower())) >= MIN_PIECE_WORDS and bare not in pieces:
            pieces.append(bare)
    long = len(re.findall(r"[a-z0-9']+", whole.lower())) >= SENTENCE_PIECES_FROM
    return pieces[:limit] if len(said) > 1 and SENTENCE_PIECES and long else pieces[:1]


def quote_turn(turn_id: int, messages: Sequence[dict], max_chars: int = 400,
               answer_chars: int = ANSWER_CHARS, at: Any = None) -> str:
    """A turn as quoted lines for a context block: user words, tools used, final answer (clipped shorter).

    A tool's answer is clipped to ``answer_chars``; an assistant's own words (no tool) to ``max_chars``, like
    the user's. A speaker the message names (``name``) is quoted with its role: ``user (Dana): "..."``.
    ``at``, the time the turn was said, dates every line's tag: ``[turn 7, 2023-05-08] user: "..."``."""
    user, answer, tools = turn_parts(messages)
    user_name, answer_name = speaker_names(messages)
    lines = [write_quote_line(turn_id, "user", clip(user, max_chars), name=user_name or None, at=at) if user
             else write_turn_line(turn_id, "user", EMPTY_MESSAGE, at=at)]
    if tools:
        lines.append(write_tools_line(turn_id, tools, at=at))
    if answer:
        limit = min(max_chars, answer_chars) if tools else max_chars
        lines.append(write_quote_line(turn_id, "assistant", clip(answer, limit), name=answer_name or None, at=at))
    return "\n".join(lines)


@dataclass
class Recalled:
    """One past turn brought back: its id, similarity score and quoted text."""

    turn_id: int
    score: float
    text: str
    also: tuple[int, ...] = ()  # older turns that said the same thing (merged into this one)


def recall_block(items: Sequence[Recalled]) -> dict | None:
    """The system message that carries recalled turns (None when there are none)."""
    if not items:
        return None
    lines = arrange_by_day([safe_lines(item.text) for item in items])  # oldest day first, each day's heading once
    return {"role": "system", "content": RECALL_HEADER + "\n" + "\n".join(lines)}

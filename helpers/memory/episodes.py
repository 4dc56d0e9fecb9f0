"""Episodic memory as worked examples (notebook 13): a past exchange that went well, shown for a new question
of the same kind.

Recall (notebook 09) brings back what was *said*. An **episode** keeps what was *done*: the question, the
tool calls that answered it, in order, and the answer (``episode_from_turn`` reads one from a kept turn's
messages; a turn counts as gone well when its answer was kept, i.e. not refused and not taken back by the
grounding check, and it used at least one tool). ``EpisodeMemory`` keeps them and, for a new question,
``search`` finds the most similar past question by meaning (local MiniLM embeddings, ``local_embed``);
``example_block`` writes the best one as a system message: how the question was answered, marked as an
example of *how*, never a source of facts.

When it helps and when it misleads (measured in notebook 13): a new question of the same kind ("when does the
robotics club meet?" after "when does the AI club meet?") gets the tool sequence that worked; a question close
in words but of another kind ("how many days until the AI club meets?") gets an example whose sequence is one
step short, and an example's answer holds values (Thursday, 18:00) that are wrong for the new question.
``SIMILARITY`` is the threshold below which no example is shown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from helpers.core.context_format import quote_text
from helpers.retrieval.embeddings import local_embed

SIMILARITY = 0.6  # below this cosine similarity between questions, no example is shown
EXAMPLE_HEADER = ("A worked example from an earlier conversation (how a similar question was answered; an "
                  "example of the steps, not a source of facts):")


@dataclass(frozen=True)
class Episode:
    """One exchange that went well: the question, the tool calls in order (name, arguments), the answer."""

    question: str
    steps: tuple[tuple[str, str], ...]
    answer: str
    turn_id: int = -1

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools called, in order."""
        return tuple(name for name, _ in self.steps)


def episode_from_turn(messages: Sequence[dict], turn_id: int = -1) -> Episode | None:
    """The episode of one kept turn (its messages: user, tool calls and results, answer), or None when it used
    no tool or has no final answer."""
    messages = list(messages)
    if not messages or messages[0].get("role") != "user":
        return None
    steps = tuple((call["function"]["name"], call["function"].get("arguments") or "{}")
                  for m in messages if m.get("role") == "assistant" for call in m.get("tool_calls") or [])
    final = messages[-1]
    if not steps or final.get("role") != "assistant" or not final.get("content"):
        return None
    return Episode(str(messages[0].get("content")), steps, str(final["content"]), turn_id)


@dataclass
class EpisodeMemory:
    """Episodes that went well, searchable by the meaning of their question."""

    episodes: list[Episode] = field(default_factory=list)
    _vectors: np.ndarray | None = None

    def add(self, episode: Episode | None) -> bool:
        """Keep one episode (None: nothing to keep); returns whether it was kept."""
        if episode is None:
            return False
        self.episodes.append(episode)
        vector = local_embed([episode.question])
        self._vectors = vector if self._vectors is None else np.vstack([self._vectors, vector])
        return True

    def search(self, question: str, k: int = 1, threshold: float = SIMILARITY) -> list[tuple[float, Episode]]:
        """The ``k`` episodes whose question is most similar to ``question`` (cosine, at least ``threshold``)."""
        if not self.episodes or not str(question).strip():
            return []
        scores = self._vectors @ local_embed([question])[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(round(float(scores[i]), 3), self.episodes[i]) for i in order if scores[i] >= threshold]


def _step(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except ValueError:
        args = {}
    shown = ", ".join(f"{k}={quote_text(v)!r}" for k, v in args.items()) if isinstance(args, dict) else ""
    return f"{name}({shown})"


def example_block(found: Sequence[tuple[float, Episode]]) -> str:
    """The system message that shows the best episode as a worked example, or "" without one."""
    if not found:
        return ""
    _, episode = found[0]
    steps = " -> ".join(_step(name, args) for name, args in episode.steps)
    return "\n".join([EXAMPLE_HEADER, f'- question: "{quote_text(episode.question)}"', f"- steps: {steps}",
                      f'- answer: "{quote_text(episode.answer)}"'])

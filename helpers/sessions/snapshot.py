"""Saving a ChatSession as plain data and continuing from it (notebook 11).

``ChatSession`` (``helpers.session``, notebook 07) takes its save-and-resume methods from
``Snapshots``: ``snapshot()`` is everything needed to continue the conversation later, as
JSON-ready data; ``ChatSession.from_snapshot(data)`` continues it in a new session, and
``load_snapshot(data)`` in place. ``helpers.sessions.store`` keeps snapshots in SQLite or
PostgreSQL, turn by turn.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from helpers.errors import ConfigError
from helpers.history import DroppedTurn, HistoryError
from helpers.validity import find_problems


@dataclass
class TurnRecord:
    """What happened to one turn: its id, the question, and the answer."""

    turn_id: int
    question: str
    answer: str
    steps: int


def resume_arguments(state: dict, kwargs: dict, name: str = "this conversation") -> tuple[str | None, dict]:
    """The stored system prompt and the constructor arguments that continue ``state`` (``kwargs`` win).

    A conversation keeps the system prompt it was started with: ``system_prompt`` in ``kwargs`` is
    accepted when it equals the stored one (so the arguments that started a session also reopen
    it) and raises ConfigError when it differs. ``max_turns`` and ``max_tokens`` given here override
    the stored limits; every other argument goes to the constructor unchanged.
    """
    kwargs = dict(kwargs)
    prompt = state["system_prompt"]
    if "system_prompt" in kwargs:
        given = kwargs.pop("system_prompt")
        if given != prompt:
            raise ConfigError(f"system_prompt={given!r:.60} differs from the one {name} was started with "
                              f"({prompt!r:.60}); a saved conversation keeps its system prompt - omit "
                              "system_prompt= to continue it, or start a new session id for the new prompt")
    kwargs.setdefault("max_turns", state.get("max_turns"))  # an explicit value overrides the stored one
    kwargs.setdefault("max_tokens", state.get("max_tokens"))
    return prompt, kwargs


class Snapshots:
    """The save-and-resume half of ``ChatSession``: plain data out, a continuing session back in."""

    def snapshot(self) -> dict:
        """Everything needed to resume this conversation later, as plain JSON-ready data."""
        return {
            "version": 1,
            "system_prompt": self.system_prompt,
            "max_turns": self.max_turns,
            "max_tokens": self.max_tokens,
            "messages": copy.deepcopy(self.messages[(1 if self.system_prompt else 0):]),
            "turn_ids": self.turn_ids,
            "next_id": self._next_id,
            "turns": [vars(t).copy() for t in self.turns],
            "dropped": [{"turn_id": d.turn_id, "messages": copy.deepcopy(d.messages), "tokens": d.tokens}
                        for d in self.dropped],
            "memory": self.memory_state(),
        }

    def memory_state(self) -> dict:
        """Extra memory (summaries, profile) that subclasses or memory plug-ins add to snapshots."""
        return self.memory.state() if self.memory is not None else {}

    def restore_memory_state(self, state: dict) -> None:
        """Counterpart of ``memory_state``."""
        if self.memory is not None:
            self.memory.restore(state)

    @classmethod
    def from_snapshot(cls, state: dict, **kwargs):
        """A session continuing from ``snapshot()`` data (client, tools and verbosity from ``kwargs``).

        ``system_prompt`` may be passed only with the snapshot's own value (see ``resume_arguments``).
        """
        if state.get("version") != 1:
            raise ValueError(f"unsupported session snapshot version {state.get('version')!r}; expected 1")
        prompt, kwargs = resume_arguments(state, kwargs)
        session = cls(prompt, **kwargs)
        session.load_snapshot(state)
        return session

    def load_snapshot(self, state: dict) -> None:
        """Continue from ``snapshot()`` data in place (client, tools, limits and usage ledger stay)."""
        try:
            window = self._new_window(copy.deepcopy(list(state["messages"])), state["turn_ids"])
        except HistoryError as error:
            raise ValueError("session snapshot is inconsistent: turn_ids do not match the messages") from error
        problems = find_problems(window.messages) if state["messages"] else []
        if problems:
            raise ValueError("session snapshot holds a message list a server would reject: "
                             + "; ".join(problems))
        self._window, self._next_id = window, int(state["next_id"])
        self.turns = [TurnRecord(**t) for t in state.get("turns", [])]
        self.dropped = [DroppedTurn(d["turn_id"], copy.deepcopy(d["messages"]), d["tokens"])
                        for d in state.get("dropped", [])]
        self.restore_memory_state(copy.deepcopy(state.get("memory") or {}))

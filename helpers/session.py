"""A multi-turn session: one persistent message list, trimmed by whole turns.

``SimpleSession`` is the whole idea in about twenty lines, as notebook 07 builds it: a
message list on ``self``; ``chat`` runs the agent loop (``helpers.agent``) with everything
still in the list and keeps the turn it added; ``reset`` forgets; ``max_turns`` keeps the
newest whole turns, cut at user messages, so a tool result never loses its tool call.

``ChatSession`` is the same idea hardened for notebooks 08-11, the chat window and the
terminal chat. It trims with the functions notebook 07 builds (``trim_to_turns`` and
``trim_to_budget`` from ``helpers.history``), on the turns it kept, before each question. It adds:

- a failed or abandoned turn leaves the list exactly as it was (rollback);
- ``stream`` yields the answer as it arrives;
- ``max_tokens``: a token budget. A ``UsageLedger`` learns what messages cost from the
  server's ``usage.prompt_tokens``, so the budget is counted from the server's own figures
  for everything already sent (to within a few tokens where a trim splits a run of messages
  the server counted together); messages the server has not seen yet (the new question,
  and the whole first request with its tool schemas) are estimated;
- turn ids, the dropped turns, ``undo``, per-request token statistics, and
  ``snapshot`` / ``from_snapshot`` to save and resume a conversation;
- ``memory=MemoryAssembler(...)`` (``helpers.memory.assembler``, notebooks 08-09): the
  session still keeps every raw turn (the window in its list, older ones in ``dropped``),
  but what it *sends* is assembled per request: system prompt, profile, summary of the
  turns that left the window, recalled older turns, then the newest whole turns -- all
  within ``max_tokens``. Without ``memory`` nothing changes.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from helpers.agent import MAX_STEPS, AgentResult, agent_turn, check_max_steps, run_agent
from helpers.config import ConfigError
from helpers.errors import EmptyMessageError
from helpers.history import (DroppedTurn, approx_tokens, find_problems, split_turns, trim_to_budget,
                             trim_to_turns, turn_spans, turns_newest_first)
from helpers.ledger import UsageLedger
from helpers.tools import tool_schemas

SESSION_SYSTEM_PROMPT = (
    "You are the Larkspur University campus assistant in an ongoing conversation. Resolve references such as "
    "'that', 'it' or 'those two' from earlier turns of this conversation. Reuse facts already in the history "
    "instead of looking them up again when they answer the question. Use the tools for campus facts, cite "
    "knowledge-base ids in square brackets, and always use days_until_weekday to count or compare days "
    "rather than estimating."
)


class SimpleSession:
    """The smallest multi-turn session: one message list on ``self``, trimmed by whole turns."""

    def __init__(self, system_prompt: str = SESSION_SYSTEM_PROMPT, max_turns: int | None = None,
                 **agent_options):
        self.system_prompt = system_prompt
        self.max_turns = max_turns  # how many turns stay in memory (None: all of them)
        self.agent_options = agent_options  # for run_agent: client, tools, verbose, ...
        self.reset()

    def reset(self) -> None:
        """Forget the conversation: back to the system prompt alone."""
        self.messages = [{"role": "system", "content": self.system_prompt}]

    def chat(self, text: str) -> str:
        """Ask one question with everything still in the list; returns the answer."""
        turn = run_agent(text, list(self.messages), **self.agent_options)  # the loop works on a copy
        self.messages += turn.added  # the question, every tool call and result, the answer
        self.forget_old_turns()
        return turn.answer

    def forget_old_turns(self) -> None:
        """Keep the system prompt and the newest ``max_turns`` turns; each turn starts at a user message."""
        starts = [i for i, message in enumerate(self.messages) if message["role"] == "user"]
        if self.max_turns is not None and len(starts) > self.max_turns:
            self.messages = self.messages[:1] + self.messages[starts[-self.max_turns]:]


def _whole_number_from_1(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass
class TurnRecord:
    """What happened to one turn: its id, the question, and the answer."""

    turn_id: int
    question: str
    answer: str
    steps: int


@dataclass
class SessionStats:
    """Per-request numbers for plots: reported prompt tokens and what was estimated beforehand."""

    prompt_tokens: list[int] = field(default_factory=list)
    estimated_tokens: list[int] = field(default_factory=list)  # ledger: exact where known, else estimated
    naive_tokens: list[int] = field(default_factory=list)  # approx_tokens for every message, no ledger
    turn_of_request: list[int] = field(default_factory=list)


class ChatSession:
    """SimpleSession hardened: rollback, streaming, a token budget, undo, snapshots and memory hooks.

    ``max_turns`` is how many earlier turns are remembered when a new question arrives
    (the request carries them plus the new turn), so it sends what ``SimpleSession``
    sends. ``max_tokens`` caps the request the same way, counted by a usage ledger: from
    the server's reports for messages it has counted before, estimated for new ones.

    ``memory`` (a ``MemoryAssembler``) switches to assembled requests: ``max_turns`` (or
    ``memory.window_turns``) is the sliding window whose dropped turns feed the summary,
    and ``max_tokens`` caps each turn's first request, tool schemas included.
    """

    def __init__(self, system_prompt: str = SESSION_SYSTEM_PROMPT, *, max_turns: int | None = None,
                 max_tokens: int | None = None, client=None, settings=None, tools: list[str] | None = None,
                 registry=None, max_steps: int = MAX_STEPS, verbose: bool = False, memory=None):
        if max_turns is not None and not _whole_number_from_1(max_turns):
            raise ConfigError(f"max_turns must be a whole number of at least 1 (got {max_turns!r}), or None "
                              "for no limit; the newest turn is always kept")
        if max_tokens is not None and not _whole_number_from_1(max_tokens):
            raise ConfigError(f"max_tokens must be a positive whole number (got {max_tokens!r}), or None for "
                              "no limit")
        tool_schemas(tools, registry)  # an unknown tool name is reported now, not at the first question
        self.system_prompt = system_prompt
        self.max_turns, self.max_tokens = max_turns, max_tokens
        self.client, self.settings = client, settings
        self.tools, self.registry, self.max_steps = tools, registry, check_max_steps(max_steps)
        self.verbose = verbose
        self.memory = memory
        if memory is not None:
            memory.attach(client, settings)
        self.ledger = UsageLedger()
        self.dropped: list[DroppedTurn] = []
        self.turns: list[TurnRecord] = []
        self.stats = SessionStats()
        self._next_id = 0  # the id the next turn gets; ids are never reused
        self._set_history([], [])

    # ------------------------------------------------------------ state
    # Two plain lists: the system prompt plus the kept turns, and one session id per kept turn; and
    # each kept message's token cost. All three are replaced, never changed in place, so a save
    # point is just their references.
    def _set_history(self, messages: list[dict], turn_ids: list[int]) -> None:
        """Start from ``messages`` (the turns after the system prompt), one id per turn in ``turn_ids``."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        self._messages: list[dict] = system + list(messages)
        self._turn_ids: list[int] = list(turn_ids)
        self._costs: dict[int, tuple[dict, int]] = {}  # id(message) -> (message, tokens)
        self._learn_costs(None)

    def _cost(self, message: dict) -> int:
        """A kept message's tokens as fixed by ``_learn_costs``; the ledger's figure for any other."""
        known = self._costs.get(id(message))
        return known[1] if known is not None and known[0] is message else self.ledger.count(message)

    def _learn_costs(self, newest: int | None) -> None:
        """Ask the ledger for the cost of the ``newest`` last messages (None: all); the others keep theirs.

        A message's cost is fixed once the server has counted it: its share of that request's
        ``usage.prompt_tokens``. Counting it again later would share the request overhead (tool
        schemas) out differently, and part of it would leave with every dropped turn.
        """
        cut = 0 if newest is None else len(self._messages) - newest
        self._costs = {id(m): (m, self._cost(m) if i < cut else self.ledger.count(m))
                       for i, m in enumerate(self._messages)}

    @property
    def messages(self) -> list[dict]:
        """The message list the next request will build on (a copy)."""
        return list(self._messages)

    @property
    def turn_ids(self) -> list[int]:
        """Ids of the turns still in memory, oldest first."""
        return list(self._turn_ids)

    def reset(self) -> None:
        """Forget the whole conversation (the system prompt stays)."""
        self.dropped.clear()
        self.turns.clear()
        self._set_history([], [])
        if self.memory is not None:
            self.memory.reset()

    def undo(self) -> TurnRecord | None:
        """Remove the newest whole turn; returns what it was, or None when there is nothing to undo."""
        if not self._turn_ids:
            return None
        newest = self._turn_ids[-1]
        start, _ = next(turns_newest_first(self._messages))
        self._messages, self._turn_ids = self._messages[:start], self._turn_ids[:-1]
        self._learn_costs(0)  # forget the undone messages' costs
        removed = next((t for t in reversed(self.turns) if t.turn_id == newest), None)
        if removed is not None:
            self.turns.remove(removed)
        if self.memory is not None:
            self.memory.discard(newest)
        return removed

    # ------------------------------------------------------------ saving and restoring
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
    def from_snapshot(cls, state: dict, **kwargs) -> "ChatSession":
        """A session continuing from ``snapshot()`` data (client, tools and verbosity from ``kwargs``)."""
        if state.get("version") != 1:
            raise ValueError(f"unsupported session snapshot version {state.get('version')!r}; expected 1")
        kwargs.setdefault("max_turns", state.get("max_turns"))  # an explicit value overrides the stored one
        kwargs.setdefault("max_tokens", state.get("max_tokens"))
        session = cls(state["system_prompt"], **kwargs)
        session._set_history(copy.deepcopy(list(state["messages"])), list(state["turn_ids"]))
        if len(list(turn_spans(session._messages))) != len(state["turn_ids"]):
            raise ValueError("session snapshot is inconsistent: turn_ids do not match the messages")
        problems = find_problems(session._messages) if state["messages"] else []
        if problems:
            raise ValueError("session snapshot holds a message list a server would reject: "
                             + "; ".join(problems))
        session._next_id = int(state["next_id"])
        session.turns = [TurnRecord(**t) for t in state.get("turns", [])]
        session.dropped = [DroppedTurn(d["turn_id"], d["messages"], d["tokens"])
                           for d in state.get("dropped", [])]
        session.restore_memory_state(state.get("memory") or {})
        return session

    # ------------------------------------------------------------ a turn
    def _say(self, text: str) -> None:
        if self.verbose:
            print(text)

    def _trim(self, reserve: int = 0) -> list[DroppedTurn]:
        """Drop the oldest whole turns (notebook 07's trimmers), keeping ``reserve`` tokens free."""
        dropped: list[DroppedTurn] = []
        max_turns = self.max_turns
        if max_turns is None and self.memory is not None:
            max_turns = self.memory.window_turns
        costs = {"count": self._cost, "overhead": self.ledger.overhead}
        if max_turns is not None and self._turn_ids:
            kept = trim_to_turns(self._messages, max_turns, turn_ids=self._turn_ids, **costs)
            dropped += kept.dropped  # read now: it is worked out from the list that was trimmed
            self._messages, self._turn_ids = kept.messages, kept.kept
        if self.max_tokens is not None and self.memory is None and self._turn_ids:
            # with memory, the assembler keeps the budget
            budget = max(self.max_tokens - reserve, 0)
            kept = trim_to_budget(self._messages, budget, turn_ids=self._turn_ids, **costs)
            dropped += kept.dropped
            self._messages, self._turn_ids = kept.messages, kept.kept
        for turn in dropped:
            self._say(f"memory  dropped turn {turn.turn_id} ({len(turn.messages)} messages, "
                      f"{turn.tokens} tokens)")
        self.dropped += dropped
        return dropped

    def chat(self, text: str) -> str:
        """Ask one question in this conversation; returns the answer (the list is rolled back on failure)."""
        turn = self._turn(text, stream=False)
        while True:
            try:
                next(turn)
            except StopIteration as done:
                return done.value

    def stream(self, text: str):
        """Like ``chat`` but yields the answer's text as it arrives (same loop, streamed requests).

        Stopping the iteration early abandons the turn: it is rolled back, not half-kept.
        """
        return (yield from self._turn(text, stream=True))

    def _turn(self, text: str, stream: bool):
        """One whole turn or nothing: on any failure the session is restored to how it was."""
        if getattr(self, "_busy", False):
            raise RuntimeError("a turn is already in progress in this session; finish (or close) it first")
        self._busy = True
        saved = self._save_point()
        try:
            if self.memory is not None:
                return (yield from self._memory_turn(text, stream))
            return (yield from self._plain_turn(text, stream))
        except BaseException:
            self._restore_point(saved)
            raise
        finally:
            self._busy = False

    def _save_point(self) -> tuple:
        """What a failed turn must put back. The lists and the cost table are replaced, never changed in
        place, so keeping their references is enough; only the memory state (summary, recall) is copied."""
        memory = copy.deepcopy(self.memory_state()) if self.memory is not None else None
        return self._messages, self._turn_ids, self._costs, len(self.dropped), self._next_id, memory

    def _restore_point(self, saved: tuple) -> None:
        self._messages, self._turn_ids, self._costs, dropped, self._next_id, memory = saved
        del self.dropped[dropped:]
        if self.memory is not None:
            self.restore_memory_state(memory)

    def _keep_turn(self, added: list[dict], learn: int | None) -> int:
        """Add a finished turn's messages under a new id and learn the newest ``learn`` messages' costs."""
        turn_id, self._next_id = self._next_id, self._next_id + 1
        self._messages, self._turn_ids = self._messages + list(added), self._turn_ids + [turn_id]
        self._learn_costs(learn)
        return turn_id

    def _plain_turn(self, text: str, stream: bool):
        if not isinstance(text, str) or not text.strip():
            raise EmptyMessageError("the question is empty; ask something in words (nothing was sent)")
        new_cost = approx_tokens({"role": "user", "content": text})
        # Make room for the new question before sending it: exact costs for what was sent before.
        self._trim(reserve=new_cost)
        working = list(self._messages)  # the loop appends to its own copy
        turn_number = self._next_id

        def record(sent: int, response) -> None:
            estimate, _ = self.ledger.cost(working[:sent])
            self.ledger.record(working[:sent], response.usage.prompt_tokens)
            self.stats.prompt_tokens.append(response.usage.prompt_tokens)
            self.stats.estimated_tokens.append(estimate)
            naive = sum(approx_tokens(m) for m in working[:sent]) + self.ledger.overhead
            self.stats.naive_tokens.append(naive)
            self.stats.turn_of_request.append(turn_number)

        result: AgentResult = yield from agent_turn(
            text, working, stream=stream, client=self.client, settings=self.settings, tools=self.tools,
            registry=self.registry, max_steps=self.max_steps, verbose=self.verbose, on_response=record)
        # The server has now counted this turn and the previous answer (all of it, on the first turn).
        turn_id = self._keep_turn(result.added, len(result.added) + 1 if self.turns else None)
        self.turns.append(TurnRecord(turn_id, text, result.answer, result.steps))
        return result.answer

    def _memory_turn(self, text: str, stream: bool):
        """A turn with an assembled request: forget (summarise), build, run the loop, remember."""
        for event in self.memory.forget(self._trim()):
            self._say(f"memory  {event}")
        _, window_turns = split_turns(self._messages)
        assembly = self.memory.build(self.system_prompt, list(zip(self.turn_ids, window_turns)), text,
                                     budget=self.max_tokens, tools=tool_schemas(self.tools, self.registry))
        for line in assembly.report.lines():
            self._say(f"context {line.strip()}")
        working, turn_number = assembly.messages, self._next_id
        base = len(working) + 1  # the assembled messages plus the question

        def record(sent: int, response) -> None:
            self.stats.prompt_tokens.append(response.usage.prompt_tokens)
            added = sum(map(self.memory.count, working[base:sent]))
            self.stats.estimated_tokens.append(assembly.report.total + added)
            self.stats.turn_of_request.append(turn_number)

        result: AgentResult = yield from agent_turn(
            text, working, stream=stream, client=self.client, settings=self.settings, tools=self.tools,
            registry=self.registry, max_steps=self.max_steps, verbose=self.verbose, on_response=record)
        turn_id = self._keep_turn(result.added, len(result.added))
        self.turns.append(TurnRecord(turn_id, text, result.answer, result.steps))
        for event in self.memory.remember(turn_id, result.added):
            self._say(f"memory  {event}")
        return result.answer

    def show(self, width: int = 100) -> None:
        """Print the message list compactly, one line per message."""
        for message in self.messages:
            role = message["role"]
            if message.get("tool_calls"):
                body = ", ".join(f"{c['function']['name']}({c['function']['arguments']})"
                                 for c in message["tool_calls"])
                body = "calls " + body
            else:
                body = str(message.get("content") or "")
            body = " ".join(body.split())
            print(f"{role:>9}: {body[:width - 11] + ('…' if len(body) > width - 11 else '')}")

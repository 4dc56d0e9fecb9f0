"""A multi-turn session: one persistent message list, trimmed by whole turns (notebook 07).

``SimpleSession`` is the whole idea in about twenty lines, as notebook 07 builds it: a
message list on ``self``; ``chat`` runs the agent loop with everything still in the list and
keeps the turn it added; ``reset`` forgets; ``max_turns`` keeps the newest whole turns.

``ChatSession`` is the same idea hardened for notebooks 08-11, the chat window and the terminal
chat. Its window (``helpers.chat.window``) is trimmed before each question by ``keep_newest``, the rule
notebook 07's ``trim_to_turns`` / ``trim_to_budget`` follow, run on the costs it already knows. It
adds: rollback (a failed or abandoned turn leaves everything as it was); ``stream``; a
``max_tokens`` budget counted by a ``UsageLedger`` from the server's own ``usage.prompt_tokens``
(estimated only for what the server has not seen yet); turn ids, the dropped turns, ``undo`` and
per-request statistics; snapshots (``helpers.chat.snapshot``, stored by notebook 11); and
``memory=MemoryAssembler(...)`` (notebooks 08-09), which keeps every raw turn but sends a request
assembled from the system prompt, profile, summary, recalled turns and the newest turns, all
within ``max_tokens``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from helpers.agent.loop import MAX_STEPS
from helpers.agent.turn import AgentResult, agent_turn, check_max_steps, run_agent
from helpers.core.errors import ConfigError, EmptyMessageError, WorkshopError
from helpers.chat.history import DroppedTurn, trim_to_turns
from helpers.chat.ledger import UsageLedger
from helpers.chat.memory_protocol import Memory
from helpers.chat.snapshot import Snapshots, TurnRecord
from helpers.core.tokens import approx_tokens
from helpers.agent.tools import tool_schemas
from helpers.chat.window import Window

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
        """Keep the system prompt and the newest ``max_turns`` whole turns (``trim_to_turns``, notebook 07)."""
        if self.max_turns is not None:
            self.messages = trim_to_turns(self.messages, self.max_turns).messages


class TurnInProgressError(WorkshopError, RuntimeError):
    """A question was asked while this session was still answering another (e.g. a stream not yet read)."""


def _whole_number_from_1(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass
class SessionStats:
    """Per-request numbers for plots: reported prompt tokens and what was estimated beforehand."""

    prompt_tokens: list[int] = field(default_factory=list)
    estimated_tokens: list[int] = field(default_factory=list)  # ledger: exact where known, else estimated
    naive_tokens: list[int] = field(default_factory=list)  # approx_tokens for every message, no ledger
    turn_of_request: list[int] = field(default_factory=list)


class ChatSession(Snapshots):
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
                 registry=None, max_steps: int = MAX_STEPS, verbose: bool = False, memory: Memory | None = None):
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
        self._window = self._new_window([], [])

    # ------------------------------------------------------------ state
    # The window (helpers.chat.window) holds the system prompt, the kept turns and each kept message's cost.
    # A cost is fixed once the server has counted the message: its share of that request's
    # usage.prompt_tokens. Counting it again later would share the request overhead (tool schemas)
    # out differently. A window is a value, replaced on every change, so a save point is a reference.
    def _new_window(self, messages: list[dict], turn_ids: list[int]) -> Window:
        """The system prompt and ``messages`` (whole turns, one id each in ``turn_ids``), costed by the ledger."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return Window.start(system, messages, turn_ids, self.ledger.count)

    @property
    def messages(self) -> list[dict]:
        """The message list the next request will build on (a copy)."""
        return list(self._window.messages)

    @property
    def turn_ids(self) -> list[int]:
        """Ids of the turns still in memory, oldest first."""
        return list(self._window.turn_ids)

    def reset(self) -> None:
        """Forget the whole conversation (the system prompt stays)."""
        self.dropped, self.turns = [], []  # new lists: a snapshot mark keeps the old ones (restore_mark)
        self._window = self._new_window([], [])
        if self.memory is not None:
            self.memory.reset()
        else:
            self._carried = None  # a carried memory state is forgotten too (a failed save's rollback keeps it)

    def undo(self) -> TurnRecord | None:
        """Remove the newest whole turn; returns what it was, or None when there is nothing to undo."""
        if not self._window.turn_ids:
            return None
        newest = self._window.turn_ids[-1]
        self._window = self._window.without_newest()
        removed = next((t for t in reversed(self.turns) if t.turn_id == newest), None)
        if removed is not None:
            self.turns.remove(removed)
        if self.memory is not None:
            self.memory.discard(newest)
        else:
            self._carried_discard(newest)
        return removed

    # ------------------------------------------------------------ a turn
    def _say(self, text: str) -> None:
        if self.verbose:
            print(text)

    def _trim(self, reserve: int = 0) -> list[DroppedTurn]:
        """Drop the oldest whole turns beyond ``max_turns`` and ``max_tokens`` (keeping ``reserve`` tokens free)."""
        max_turns, budget = self.max_turns, None
        if max_turns is None and self.memory is not None:
            max_turns = self.memory.window_turns
        if self.max_tokens is not None and self.memory is None:  # with memory, the assembler keeps the budget
            budget = max(self.max_tokens - reserve, 0)
        self._window, dropped = self._window.trimmed(overhead=self.ledger.overhead, max_turns=max_turns,
                                                     max_tokens=budget)
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
            raise TurnInProgressError("a turn is already in progress in this session; finish (or close) it first")
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
        """What a failed turn must put back. The window is a value, so keeping its reference is enough;
        the memory gives its checkpoint (``Snapshots.memory_checkpoint``)."""
        memory = self.memory_checkpoint() if self.memory is not None else None
        return self._window, self._next_id, len(self.dropped), len(self.turns), memory

    def _restore_point(self, saved: tuple) -> None:
        self._window, self._next_id, dropped, records, memory = saved
        del self.dropped[dropped:]
        del self.turns[records:]  # the record of a turn whose memory step failed
        if self.memory is not None:
            self.memory_rollback(memory)

    def _keep_turn(self, added: list[dict], learn: int | None) -> int:
        """Keep a finished turn under a new id; ask the ledger for the newest ``learn`` messages' costs.

        ``learn`` counts the new turn's messages plus any earlier ones the server has counted since
        (the previous answer); None asks for every message's cost again.
        """
        window = self._window
        earlier = len(window.messages) if learn is None else learn - len(added)
        if earlier > 0:
            window = window.recounted(earlier, self.ledger.count)
        turn_id = self._next_id
        self._window = window.with_turn(turn_id, added, self.ledger.count)
        self._next_id += 1
        return turn_id

    def _plain_turn(self, text: str, stream: bool):
        if not isinstance(text, str) or not text.strip():
            raise EmptyMessageError("the question is empty; ask something in words (nothing was sent)")
        new_cost = approx_tokens({"role": "user", "content": text})
        # Make room for the new question before sending it: exact costs for what was sent before.
        self._trim(reserve=new_cost)
        working = list(self._window.messages)  # the loop appends to its own copy
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
        if not result.added:  # the model said nothing, even when asked again: no turn is kept
            return result.answer
        # The server has now counted this turn and the previous answer (all of it, on the first turn).
        turn_id = self._keep_turn(result.added, len(result.added) + 1 if self.turns else None)
        self.turns.append(TurnRecord(turn_id, text, result.answer, result.steps))
        self._carried_turn(turn_id)  # a carried memory state notes the turn its memory never saw
        return result.answer

    def _memory_turn(self, text: str, stream: bool):
        """A turn with an assembled request: forget (summarise), build, run the loop, remember."""
        for event in self.memory.forget(self._trim()):
            self._say(f"memory  {event}")
        assembly = self.memory.build(self.system_prompt, self._window.turns(), text,
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
        if not result.added:  # the model said nothing, even when asked again: no turn is kept
            return result.answer
        turn_id = self._keep_turn(result.added, len(result.added))
        self.turns.append(TurnRecord(turn_id, text, result.answer, result.steps))
        for event in self.memory.remember(turn_id, result.added):
            self._say(f"memory  {event}")
        return result.answer

"""A session's window: the system prompt and the whole turns it kept, with what each one cost (notebook 07).

``ChatSession`` (``helpers.chat.chat_session``) trims before every question. The turns it kept were
checked when they were kept and their costs are known, so a trim need not read a message:
``Window.trimmed`` hands the kept turns' costs, newest first, to ``helpers.chat.history.keep_newest``
-- the same rule ``trim_to_turns`` and ``trim_to_budget`` follow -- and drops the older turns.

A ``Window`` is a value: every change returns a new one, so a session's save point (what a
failed turn puts back) is just a reference to it.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from helpers.chat.history import DroppedTurn, HistoryError, TokenCounter, keep_newest, split_turns
from helpers.chat.validity import find_problems


class Window(NamedTuple):
    """The system part and the kept turns, with each kept message's token cost; every change is a new one."""

    messages: list[dict]  # the system part, then the kept turns' messages
    first: int  # how many system messages open ``messages``
    turn_ids: tuple[int, ...]
    turn_costs: tuple[tuple[int, ...], ...]  # each kept message's tokens, turn by turn
    turn_tokens: tuple[int, ...]  # each kept turn's total
    tokens: int  # the system part and every kept turn: what sending the window costs

    @classmethod
    def start(cls, system: list[dict], messages: list[dict], turn_ids: Sequence[int],
              count: TokenCounter) -> "Window":
        """A window of ``system`` plus ``messages`` (whole turns, one id each), every message costed by ``count``."""
        window = list(system) + list(messages)
        costs = tuple(tuple(map(count, turn)) for turn in split_turns(window)[1])
        if len(costs) != len(turn_ids):
            raise HistoryError(f"{len(turn_ids)} turn ids for {len(costs)} turns; give one id per turn")
        turn_tokens = tuple(map(sum, costs))
        return cls(window, len(system), tuple(turn_ids), costs, turn_tokens,
                   sum(map(count, system)) + sum(turn_tokens))

    def turns(self) -> list[tuple[int, list[dict]]]:
        """(id, messages) of every kept turn, oldest first."""
        turns, start = [], self.first
        for turn_id, costs in zip(self.turn_ids, self.turn_costs):
            turns.append((turn_id, self.messages[start:start + len(costs)]))
            start += len(costs)
        return turns

    def trimmed(self, *, overhead: int, max_turns: int | None = None,
                max_tokens: int | None = None) -> tuple["Window", list[DroppedTurn]]:
        """This window without its oldest turns beyond ``max_turns`` and ``max_tokens``, and those turns.

        ``overhead`` is what every request adds; the system part always stays, and so does the newest turn.
        """
        turns = len(self.turn_tokens)
        room = None if max_tokens is None else max_tokens - overhead - (self.tokens - sum(self.turn_tokens))
        kept, _ = keep_newest(range(turns - 1, -1, -1), self.turn_tokens.__getitem__, room=room,
                              max_turns=max_turns)
        n = turns - len(kept)
        if not n:
            return self, []
        dropped, start = [], self.first
        for turn_id, costs, tokens in zip(self.turn_ids[:n], self.turn_costs[:n], self.turn_tokens[:n]):
            dropped.append(DroppedTurn(turn_id, self.messages[start:start + len(costs)], tokens))
            start += len(costs)
        return Window(self.messages[:self.first] + self.messages[start:], self.first, self.turn_ids[n:],
                      self.turn_costs[n:], self.turn_tokens[n:], self.tokens - sum(self.turn_tokens[:n])), dropped

    def with_turn(self, turn_id: int, messages: list[dict], count: TokenCounter) -> "Window":
        """This window plus a new newest turn. A turn a strict server would reject is refused here, so the
        window stays valid without being checked again."""
        problems = find_problems(messages)
        if problems:
            raise HistoryError.invalid(problems)
        costs = tuple(map(count, messages))
        return Window(self.messages + list(messages), self.first, self.turn_ids + (turn_id,),
                      self.turn_costs + (costs,), self.turn_tokens + (sum(costs),), self.tokens + sum(costs))

    def without_newest(self) -> "Window":
        """This window without its newest turn (nothing to remove: the same window)."""
        if not self.turn_ids:
            return self
        size = len(self.turn_costs[-1])
        return Window(self.messages[:-size], self.first, self.turn_ids[:-1], self.turn_costs[:-1],
                      self.turn_tokens[:-1], self.tokens - self.turn_tokens[-1])

    def recounted(self, newest: int, count: TokenCounter) -> "Window":
        """This window with its ``newest`` messages costed by ``count`` again (past the turns: the system part)."""
        fresh, end, t = [], len(self.messages), len(self.turn_costs)  # turns t.. are costed afresh
        while newest > 0 and t > 0:
            t -= 1
            old = self.turn_costs[t]
            k = min(newest, len(old))
            fresh.insert(0, old[:len(old) - k] + tuple(map(count, self.messages[end - k:end])))
            newest, end = newest - k, end - len(old)
        turn_tokens = self.turn_tokens[:t] + tuple(map(sum, fresh))
        tokens = self.tokens - sum(self.turn_tokens[t:]) + sum(turn_tokens[t:])
        if newest > 0:  # the system part too
            tokens = sum(map(count, self.messages[:self.first])) + sum(turn_tokens)
        return Window(self.messages, self.first, self.turn_ids, self.turn_costs[:t] + tuple(fresh), turn_tokens,
                      tokens)

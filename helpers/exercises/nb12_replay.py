"""What notebook 12's first exercise replays: a recorded conversation, assembled again under other shares.

``recorded_questions`` runs one generated conversation through the real session once and keeps, for
each question about the user, what its first request was built from; ``replay_shares`` assembles
those requests again under a budget and shares (fixed, or chosen per request by the learner's function
from the room and what each part needs: ``replay_chosen``) and counts what evidence made it in, and how
often the window still carried the newest turn where that turn would fit on its own.
Everything runs on the offline stand-in, whatever backend the notebook uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from helpers.core import tokens
from helpers.llm.client import make_client
from helpers.llm.config import load_settings
from helpers.memory.assembler import MemoryAssembler, assemble_context
from helpers.memory.budget import Shares, fit_profile, fit_recall, fit_summary, fixed_parts
from helpers.memory.convgen import generate
from helpers.chat.chat_session import ChatSession

BUDGET, TIGHT_BUDGET, WINDOW = 1500, 950, 6
EXERCISE_SEED = 120  # exercise 1's own conversation: neither the notebook's seed nor the benchmark's


def offline():
    """Settings and a client for the stand-in, so a check never depends on the learner's backend."""
    settings = load_settings("offline")
    return settings, make_client(settings)


def context_lines(messages: list[dict]) -> list[str]:
    """Every line of a request's text: contents and tool calls' arguments (a content may be None)."""
    lines: list[str] = []
    for message in messages:
        lines += str(message.get("content") or "").splitlines()
        lines += [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return lines


@dataclass
class Replayed:
    """Exercise 1's result for one budget and one set of shares."""

    hits: int
    questions: int
    stale: int  # questions whose context names an old value on a line that does not say "superseded"
    mean_tokens: float
    missed: list[str]
    fits: int = 0  # requests whose newest earlier turn would fit in the room (budget minus fixed parts) alone
    sent: int = 0  # ... of which the window really carried it
    in_profile: int = 0  # questions whose profile block names the current value
    in_recall: int = 0  # questions whose recall block quotes the user's words that hold the current value
    in_summary: int = 0  # requests that sent the summary block
    everything_fits: int = 0  # requests whose room holds every part in full (set by ``replay_chosen``)


@lru_cache(maxsize=1)
def recorded_questions(seed: int = EXERCISE_SEED, turns: int = 48, facts: int = 8) -> tuple:
    """(probe, what its first request was built from) for each question about the user in a real session."""
    settings, client = offline()
    memory = MemoryAssembler()
    session = ChatSession(memory=memory, max_turns=WINDOW, max_tokens=BUDGET, client=client,
                          settings=settings)
    conversation = generate(seed, turns, facts)
    probes = {p.turn: p for p in conversation.probes}
    found = []
    for t, turn in enumerate(conversation.turns):
        session.chat(turn.user)
        if t in probes:
            found.append((probes[t], dict(memory.last_inputs)))
    return tuple(found)


BLOCKS = ("profile", "summary", "recall", "window")  # what shares the room; the other parts are always sent


def replay_shares(shares: Shares, budget: int) -> Replayed:
    """Assemble each recorded question's request again under ``budget`` and ``shares``; count evidence."""
    return _replay([(probe, inputs, shares) for probe, inputs in recorded_questions()], budget)


def _replay(requests: list[tuple], budget: int) -> Replayed:
    """Count the evidence in each (probe, inputs, shares) request assembled again under ``budget``."""
    hits, stale, used, missed, fits, sent, in_profile, in_recall, in_summary = 0, 0, [], [], 0, 0, 0, 0, 0
    for probe, inputs, shares in requests:
        assembly = assemble_context(
            inputs["system_prompt"], inputs["window"], inputs["question"], budget=budget,
            fixed=inputs["fixed"], shares=shares, profile_lines=inputs["profile_lines"],
            summary=inputs["summary"], recalled=inputs["recalled"])
        lines = [line.lower() for line in context_lines(assembly.messages)]
        for message in assembly.messages:  # which layer carried the evidence: each block opens with its title
            text = str(message.get("content") or "").lower()
            in_profile += text.startswith("user profile") and probe.current.lower() in text
            in_recall += text.startswith("recalled") and probe.current.lower() in text
        found = any(probe.current.lower() in line for line in lines)
        hits += found
        stale += any(old.lower() in line and "superseded" not in line
                     for old in probe.stale for line in lines)
        used.append(assembly.report.total)
        if not found:
            missed.append(f"{probe.question!r} (turn {probe.turn})")
        room = budget - sum(part.tokens for part in assembly.report.parts if part.kind not in BLOCKS)
        newest = inputs["window"][-1][1] if inputs["window"] else None
        if newest is not None and sum(map(tokens.count_message, newest)) <= room:
            fits += 1
            sent += bool(assembly.report.part("window").included)  # the window keeps the newest turns first
        in_summary += bool(assembly.report.part("summary").included)
    return Replayed(hits, len(requests), stale, sum(used) / max(len(used), 1), missed, fits, sent,
                    in_profile, in_recall, in_summary)


def needs_of(inputs: dict, budget: int) -> tuple[int, dict[str, int]]:
    """The room a recorded request has under ``budget`` and the tokens each part would use in full.

    ``needs``: the whole profile block, the whole summary block, every recalled quote, and the newest turn
    of the window (what the window must carry for a follow-up to make sense).
    """
    count = tokens.count_message
    _, _, head, tail = fixed_parts(inputs["system_prompt"], inputs["question"], budget, inputs["fixed"], count)
    room = budget - sum(part.tokens for part in head + tail)
    _, profile = fit_profile(inputs["profile_lines"], None, count)
    _, summary = fit_summary(inputs["summary"], None, None, count, [])
    _, recall = fit_recall(inputs["recalled"], None, None, count)
    newest = inputs["window"][-1][1] if inputs["window"] else []
    return room, {"profile": profile.tokens, "summary": summary.tokens, "recall": recall.tokens,
                  "window": sum(map(count, newest))}


def replay_chosen(choose: Callable[[int, dict], Shares], budget: int) -> Replayed:
    """Like ``replay_shares``, with each request's shares chosen by ``choose(room, needs)`` (see ``needs_of``)."""
    requests, everything_fits = [], 0
    for probe, inputs in recorded_questions():
        room, needs = needs_of(inputs, budget)
        everything_fits += sum(needs.values()) <= room
        requests.append((probe, inputs, choose(room, dict(needs))))
    result = _replay(requests, budget)
    result.everything_fits = everything_fits
    return result

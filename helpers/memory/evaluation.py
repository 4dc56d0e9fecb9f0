"""Memory strategies measured on generated conversations (for ``benchmarks/memory_eval.py`` and notebooks).

``run_case(conversation)`` replays the user's turns of a ``helpers.memory.convgen`` conversation
through a real ``ChatSession(memory=MemoryAssembler(), ...)`` with its tools, against the offline
stand-in. A recording transport keeps every request body the session sends, so the hybrid's
numbers are those of the exact requests, tool schemas included, counted with ``helpers.core.tokens``.
At the same point of the same conversation, every other strategy's first request is assembled
from the same raw turns and memory state (tools included): full history, the window alone, the
window plus one memory, or the hybrid with one layer off (``ABLATIONS``).

Per probe (``judge``): **recall** -- the current value is in the context (the question excluded);
**stale only** -- an older value is there but the current one is not; **both unmarked** -- the
current value is there and an older one stands on a line that does not say "superseded".
A ``long`` turn asks for a long reply: the transport appends campus texts (about 400 tokens) to
the stand-in's final answer, standing in for a talkative model.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import httpx2
import openai

from helpers.core import tokens
from helpers.llm.client import make_offline_client, offline_transport  # the stand-in, reached through the client
from helpers.llm.config import load_settings
from helpers.chat.history import split_turns
from helpers.retrieval.knowledge_files import load_knowledge_base
from helpers.memory.assembler import MemoryAssembler, assemble_context
from helpers.memory.convgen import Conversation
from helpers.chat.chat_session import ChatSession

BUDGET, WINDOW = 1500, 6
# name -> (memory layers used, under the budget?); "hybrid" is the session itself, measured, not replayed
STRATEGIES: dict[str, tuple[frozenset, bool]] = {
    "full history": (frozenset({"everything"}), False),
    "window": (frozenset(), False),
    "window+summary": (frozenset({"summary"}), False),
    "window+recall": (frozenset({"recall"}), False),
    "window+profile": (frozenset({"profile"}), False),
    "hybrid": (frozenset({"summary", "recall", "profile"}), True),
}
ABLATIONS: dict[str, tuple[frozenset, bool]] = {
    "hybrid w/o summary": (frozenset({"recall", "profile"}), True),
    "hybrid w/o recall": (frozenset({"summary", "profile"}), True),
    "hybrid w/o profile": (frozenset({"summary", "recall"}), True),
}


_EMBEDDINGS: dict[bytes, httpx2.Response] = {}  # request body -> response, shared by every case of a run


class RecordingTransport(httpx2.BaseTransport):
    """The stand-in behind a transport that keeps every chat request body and can lengthen final answers."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, dict]] = []  # (turn, request body)
        self.turn, self.long = -1, False
        self._embeddings = _EMBEDDINGS
        self._offline = offline_transport()
        self._texts = [entry.text for entry in load_knowledge_base()]

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        if request.url.path.endswith("/embeddings"):  # the same texts are embedded again and again: remember
            if body not in self._embeddings:
                response = self._offline.handle_request(request)
                self._embeddings[body] = httpx2.Response(response.status_code, content=response.read(),
                                                         headers={"content-type": "application/json"})
            cached = self._embeddings[body]
            return httpx2.Response(cached.status_code, content=cached.content, headers=cached.headers)
        if request.url.path.endswith("/chat/completions"):
            data = json.loads(body)
            if "tools" in data:  # a conversation request (the session sends its tools), not a summariser call
                self.requests.append((self.turn, data))
        response = self._offline.handle_request(request)
        if not self.long or response.status_code != 200 or not request.url.path.endswith("/chat/completions"):
            return response
        reply = json.loads(response.read())
        message = reply["choices"][0]["message"]
        if message.get("content") and not message.get("tool_calls"):
            rng = random.Random(self.turn)
            message["content"] += " More detail: " + " ".join(rng.sample(self._texts, 5))
        return httpx2.Response(200, json=reply)

    def client(self) -> openai.OpenAI:
        """A real openai client whose requests go through this transport."""
        return make_offline_client(self.handle_request)


@dataclass
class Score:
    """One strategy on one case."""

    tokens: list[int] = field(default_factory=list)  # first request of each turn
    hits: int = 0
    stale_only: int = 0
    both_unmarked: int = 0
    probes: int = 0
    missed: list[str] = field(default_factory=list)

    def row(self, full: float) -> dict:
        """Shares as numbers for a table."""
        mean = sum(self.tokens) / max(len(self.tokens), 1)
        n = max(self.probes, 1)
        return {"mean tokens": mean, "tokens %": 100 * mean / full, "recall %": 100 * self.hits / n,
                "stale-only %": 100 * self.stale_only / n, "both-unmarked %": 100 * self.both_unmarked / n,
                "probes": self.probes, "max tokens": max(self.tokens, default=0)}


def context_text(messages: list[dict]) -> str:
    """The text of every message (tool calls' arguments included), lower-cased."""
    parts = []
    for m in messages:
        parts.append(str(m.get("content") or ""))
        parts += [c["function"]["arguments"] for c in m.get("tool_calls") or []]
    return "\n".join(parts).lower()


def judge(score: Score, text: str, probe) -> None:
    """Count one probe: evidence, stale-only, both values unmarked."""
    current = probe.current.lower()
    has_current = current in text
    stale_lines = [line for line in text.splitlines() for old in probe.stale if old.lower() in line]
    unmarked = [line for line in stale_lines if "superseded" not in line]
    score.probes += 1
    score.hits += has_current
    score.stale_only += bool(stale_lines) and not has_current
    score.both_unmarked += has_current and bool(unmarked)
    if not has_current:
        score.missed.append(f"turn {probe.turn} {probe.attribute}")


def replay(inputs: dict, raw: list, layers: frozenset, budget: int | None, assembler: MemoryAssembler):
    """The first request a strategy would send here, from the hybrid's own memory state."""
    return assemble_context(
        inputs["system_prompt"], inputs["window"], inputs["question"], budget=budget, fixed=inputs["fixed"],
        count=assembler.count, shares=assembler.shares,
        profile_lines=inputs["profile_lines"] if "profile" in layers else (),
        summary=inputs["summary"] if "summary" in layers else None,
        recalled=inputs["recalled"] if "recall" in layers else ())


def run_case(conversation: Conversation, *, budget: int = BUDGET, window: int = WINDOW,
             strategies: dict | None = None) -> dict:
    """Replay one conversation through a real session; a Score per strategy plus the session's own totals."""
    strategies = dict(STRATEGIES if strategies is None else strategies)
    transport = RecordingTransport()
    client, settings = transport.client(), load_settings("offline")
    memory = MemoryAssembler(client=client, settings=settings)
    session = ChatSession(memory=memory, max_turns=window, max_tokens=budget, client=client,
                          settings=settings)
    probes = {p.turn: p for p in conversation.probes}
    scores = {name: Score() for name in strategies}
    raw: list[tuple[int, list[dict]]] = []
    past_tokens, past_text = 0, []  # full history, kept as running totals (counting it anew is quadratic)
    all_hybrid = all_full = 0
    for t, turn in enumerate(conversation.turns):
        transport.turn, transport.long = t, turn.kind == "long"
        start = len(transport.requests)
        session.chat(turn.user)
        sent = [body for _, body in transport.requests[start:]]
        inputs = memory.last_inputs
        prefix = len(sent[0]["messages"]) - 1  # the assembled messages before the question
        system = sent[0]["messages"][:1]
        for body in sent:
            all_hybrid += tokens.count_request(body["messages"], body.get("tools"))
            own = body["messages"][prefix:]  # this turn's question and steps
            all_full += past_tokens + tokens.count_request(system + own, body.get("tools"))
        for name, (layers, budgeted) in strategies.items():
            if name == "hybrid":
                text = context_text(sent[0]["messages"][:-1])
                score_tokens = tokens.count_request(sent[0]["messages"], sent[0].get("tools"))
            elif "everything" in layers:
                score_tokens = past_tokens + tokens.count_request(system + sent[0]["messages"][-1:],
                                                                  sent[0].get("tools"))
                text = context_text(system) + "\n" + "\n".join(past_text) if t in probes else ""
            else:
                assembly = replay(inputs, raw, layers, budget if budgeted else None, memory)
                text, score_tokens = context_text(assembly.messages), assembly.report.total
            scores[name].tokens.append(score_tokens)
            if t in probes:
                judge(scores[name], text, probes[t])
        newest = split_turns(session.messages)[1][-1]
        raw.append((session.turn_ids[-1], newest))
        past_tokens += sum(map(tokens.count_message, newest))
        past_text.append(context_text(newest))
    return {"name": conversation.name, "turns": len(conversation.turns), "scores": scores,
            "probes": len(conversation.probes), "corrected": len(conversation.corrected_probes),
            "all requests %": 100 * all_hybrid / all_full, "budget": budget,
            "tools": tokens.count_tools(sent[0].get("tools"))}


def rows(case: dict) -> dict[str, dict]:
    """Table rows of one case, by strategy."""
    full = sum(case["scores"]["full history"].tokens) / len(case["scores"]["full history"].tokens)
    return {name: score.row(full) for name, score in case["scores"].items()}


def meets_targets(row: dict) -> bool:
    """The hybrid's targets: <= 15 % tokens, >= 95 % recall, no stale-only, no both-unmarked."""
    return (row["tokens %"] <= 15 and row["recall %"] >= 95 and row["stale-only %"] == 0
            and row["both-unmarked %"] == 0)

"""Which memory strategy keeps what matters, at what cost, when facts change? (evaluation, not a timed test)

Runs the real ``ChatSession(memory=MemoryAssembler(), max_turns=6, max_tokens=BUDGET)`` with its
tools against the offline stand-in, on conversations from ``helpers.memory.convgen``: several
seeds (corrections, restatements, repeated and paraphrased probes, long assistant replies, tool
calls) plus the earlier scripted conversation as one case. Every request the session sends
goes through a recording transport, so the hybrid's numbers are those of the exact request
bodies, tool schemas included, counted with ``helpers.tokens`` (the stand-in's own count).

For comparison, at the same point of the same conversation, each other strategy's first request
is assembled from the same raw turns and the same memory state, tools included:
full history, the window alone, the window plus one memory, and the hybrid with one layer off.

Per strategy and case:

- **tokens %**: mean first-request tokens per turn, as a share of full history's;
- **recall**: probes whose current value is in the context (the question itself excluded);
- **stale only**: probes whose context holds an older value of the fact but not the current one;
- **both unmarked**: probes whose context holds the current value and an older one on a line
  that does not say "superseded".

Targets for the hybrid on every case: <= 15 % tokens, >= 95 % recall, 0 stale-only, 0 both-unmarked.
A "long" turn asks for a long reply: the recording transport appends campus texts to the
stand-in's final answer (about 400 tokens), standing in for a talkative model.

Run: python benchmarks/memory_eval.py [--quick] [--seeds 1 2 3 4 5] [--budget 1500] [--turns 200]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")
os.environ.setdefault("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
os.environ.setdefault("TQDM_DISABLE", "1")

import httpx2  # noqa: E402
import openai  # noqa: E402

from helpers import tokens  # noqa: E402
from helpers.standin import server as offline  # noqa: E402
from helpers.config import OFFLINE_API_KEY, OFFLINE_BASE_URL, load_settings  # noqa: E402
from helpers.history import split_turns  # noqa: E402
from helpers.memory.assembler import MemoryAssembler, assemble_context  # noqa: E402
from helpers.memory.convgen import Conversation, generate, scripted  # noqa: E402
from helpers.session import ChatSession  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
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
        lines = (ROOT / "data" / "campus_kb.jsonl").read_text().splitlines()
        kb = [json.loads(line) for line in lines if line.strip()]
        self._texts = [row["text"] for row in kb]

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        if request.url.path.endswith("/embeddings"):  # the same texts are embedded again and again: remember
            if body not in self._embeddings:
                response = offline.handle(request)
                self._embeddings[body] = httpx2.Response(response.status_code, content=response.read(),
                                                         headers={"content-type": "application/json"})
            cached = self._embeddings[body]
            return httpx2.Response(cached.status_code, content=cached.content, headers=cached.headers)
        if request.url.path.endswith("/chat/completions"):
            data = json.loads(body)
            if "tools" in data:  # a conversation request (the session sends its tools), not a summariser call
                self.requests.append((self.turn, data))
        response = offline.handle(request)
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
        return openai.OpenAI(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
                             http_client=httpx2.Client(transport=self))


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


def report(cases: list[dict]) -> bool:
    """Print one table per case and a summary line for the hybrid; True when every case meets the targets."""
    ok = True
    for case in cases:
        print(f"\n{case['name']}: {case['turns']} turns, {case['probes']} probes ({case['corrected']} "
              f"after a correction); window {WINDOW} turns, hybrid budget {case['budget']:,} tokens incl. "
              f"{case['tools']} of tool schemas")
        print(f"  {'strategy':<20}{'mean tok':>9}{'% full':>8}{'recall':>8}{'stale-only':>11}"
              f"{'both-unmarked':>14}")
        for name, row in rows(case).items():
            print(f"  {name:<20}{row['mean tokens']:>9,.0f}{row['tokens %']:>7.1f}%{row['recall %']:>7.0f}%"
                  f"{row['stale-only %']:>10.0f}%{row['both-unmarked %']:>13.0f}%")
        hybrid = rows(case)["hybrid"]
        ok &= meets_targets(hybrid)
        missed = case["scores"]["hybrid"].missed
        print(f"  hybrid, every request of each turn: {case['all requests %']:.1f}% of full history"
              + (f"; missed: {', '.join(missed)}" if missed else ""))
    print("\nhybrid per case (targets: <= 15% tokens, >= 95% recall, 0 stale-only, 0 both-unmarked):")
    for case in cases:
        row = rows(case)["hybrid"]
        print(f"  {case['name']:<10} {row['tokens %']:5.1f}%  recall {row['recall %']:5.1f}%  stale-only "
              f"{row['stale-only %']:.0f}%  both-unmarked {row['both-unmarked %']:.0f}%  "
              f"{'MET' if meets_targets(row) else 'NOT met'}")
    return ok


def plot(cases: list[dict], path: Path) -> None:
    """Prompt tokens per turn by strategy (first case) and the hybrid's recall per case, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    first = cases[0]
    for name, score in first["scores"].items():
        left.plot(score.tokens, label=name, linewidth=1.6 if name == "hybrid" else 1)
    left.axhline(first["budget"], color="grey", linestyle=":", label="hybrid budget")
    left.set_yscale("log")
    left.set(xlabel="turn", ylabel="first-request tokens (log scale)",
             title=f"Prompt tokens per turn ({first['name']})")
    left.legend(fontsize=7, ncol=2)
    names = [c["name"] for c in cases]
    table = [rows(c)["hybrid"] for c in cases]
    right.bar(names, [r["recall %"] for r in table], color="tab:green", label="evidence recall %")
    right.bar(names, [r["tokens %"] for r in table], color="tab:blue", label="tokens % of full history")
    right.axhline(95, color="tab:green", linestyle=":")
    right.axhline(15, color="tab:blue", linestyle=":")
    right.set(ylim=(0, 105), title="Hybrid per case")
    right.tick_params(axis="x", labelrotation=30, labelsize=8)
    right.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot saved to {path.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--facts", type=int, default=20)
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--quick", action="store_true", help="120-turn conversations, 14 facts")
    parser.add_argument("--ablations", action="store_true", help="also the hybrid with one layer off")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    turns, facts = (120, 14) if args.quick else (args.turns, args.facts)
    strategies = {**STRATEGIES, **(ABLATIONS if args.ablations else {})}
    started = time.perf_counter()
    conversations = [scripted(160 if args.quick else 200)] + [generate(s, turns, facts) for s in args.seeds]
    cases = []
    for conversation in conversations:
        cases.append(run_case(conversation, budget=args.budget, strategies=strategies))
        print(f"  ... {conversation.name} done ({time.perf_counter() - started:.0f} s)", flush=True)
    ok = report(cases)
    if not args.no_plot:
        plot(cases, Path(__file__).resolve().parent / "memory_eval.png")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

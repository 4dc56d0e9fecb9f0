"""The agent's own memory tool (hot path) against the background extractor: what each captures and costs.

Two ways of writing durable facts, run on the same conversations against the offline stand-in:

* **background** (notebooks 09-10): the session answers with its usual tools; after each turn the campus
  attribute set's rules (``helpers.facts.pipeline.RuleExtractor`` over ``helpers.memory.profile_extraction.CAMPUS``)
  read the user's words and the candidates are committed by ``helpers.facts.background.BackgroundWriter``, off
  the turn's path;
* **hot path** (notebook 13): ``remember`` and ``forget`` (``helpers.agent.memory_tool``) are offered with
  every request, and the stand-in calls ``remember`` in the turn when the user states something
  (``helpers.standin.memory_calls``); the write happens before the answer.

Per mode: **captured** - facts the conversation states (the current value of each attribute a probe asks
about, from ``helpers.memory.convgen``) found among the active facts at the end; **wrong** - writes (inserts
and corrections) whose value is none of the generator's values the conversation states (words of a campus
question or small talk taken for a fact); **tokens/turn** - prompt + completion
tokens of every request of a turn, from the stand-in's usage; **ms/turn** - wall time of the turn (the
background mode's extraction and commit are shown apart: they are off the turn's path). LoCoMo's tuning half
(conversations 26, 30, 41, 42, 43; never the held-out 44, 47, 48, 49, 50) has no fact labels, so there only
the writes and the costs are counted.

Run: python benchmarks/memory_tool_eval.py [--seeds 1 2 3] [--turns 80] [--locomo /tmp/locomo]
     [--locomo-turns 100] [--plot benchmarks/memory_tool_eval.png]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")

import httpx2  # noqa: E402

from helpers.agent.memory_tool import memory_tools  # noqa: E402
from helpers.agent.tools import REGISTRY  # noqa: E402
from helpers.chat.chat_session import ChatSession  # noqa: E402
from helpers.facts.background import BackgroundWriter  # noqa: E402
from helpers.facts.pipeline import RuleExtractor  # noqa: E402
from helpers.facts.schema import normalise_text  # noqa: E402
from helpers.facts.writer import FactMemory  # noqa: E402
from helpers.memory import convgen  # noqa: E402
from helpers.memory.hot_path import FactTarget  # noqa: E402
from helpers.memory.profile_extraction import CAMPUS  # noqa: E402
from helpers.standin.server import handle, make_offline_client  # noqa: E402

TUNING = (26, 30, 41, 42, 43)  # LoCoMo's tuning half; the held-out conversations are never read here
USER = "bench"


class Usage:
    """A stand-in client that adds up the tokens of every request."""

    def __init__(self):
        self.tokens = 0
        self.client = make_offline_client(self._answer)

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        response = handle(request)
        if request.url.path.endswith("/chat/completions") and response.status_code == 200:
            usage = json.loads(response.content).get("usage") or {}
            self.tokens += int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
        return response


def run(texts: list[str], mode: str) -> dict:
    """One conversation (``texts``: the user's messages) in one mode; what was written and what it cost."""
    facts, usage, said = FactMemory.open(":memory:"), Usage(), {"text": ""}
    session: ChatSession | None = None
    registry, tools = dict(REGISTRY), None
    if mode == "hot path":
        registry.update(memory_tools(FactTarget(facts, USER, turn=lambda: len(session.turns)), lambda: said["text"]))
        tools = list(registry)
    session = ChatSession(client=usage.client, registry=registry, tools=tools, max_turns=6)
    extractor, writer = RuleExtractor(CAMPUS, user_id=USER), BackgroundWriter(facts) if mode == "background" else None
    turn_ms, background_ms, tokens = [], [], []
    for turn_id, text in enumerate(texts):
        said["text"], before = text, usage.tokens
        start = time.perf_counter()
        session.chat(text)
        turn_ms.append((time.perf_counter() - start) * 1000)
        tokens.append(usage.tokens - before)
        if writer is not None:  # the background path: extraction and the queued commit, after the turn
            start = time.perf_counter()
            for candidate in extractor.extract(turn_id, text):
                CAMPUS.define(facts, [candidate])
                writer.submit(candidate)
            background_ms.append((time.perf_counter() - start) * 1000)
    if writer is not None:
        start = time.perf_counter()
        writer.flush()
        writer.close()
        background_ms.append((time.perf_counter() - start) * 1000)
    audit = facts.audit(USER)
    return {"active": facts.active_facts(USER), "writes": [e for e in audit if e.outcome in ("insert", "correction")],
            "turn_ms": statistics.median(turn_ms), "tokens": statistics.mean(tokens),
            "background_ms": sum(background_ms) / max(len(texts), 1)}


def _has(values: set[str], value: str) -> bool:
    value = normalise_text(value)
    return any(value == v or (len(v) > 3 and (v in value or value in v)) for v in values)


def score_generated(conversation: convgen.Conversation, result: dict) -> tuple[int, int, int, int]:
    """(captured, of how many, wrong writes, writes) against the conversation's probes."""
    current: dict[str, str] = {}
    for probe in conversation.probes:
        current[probe.attribute] = probe.current  # the value the latest probe asks for
    said = " ".join(t.user for t in conversation.turns)
    stated = {normalise_text(v) for values, _ in convgen.ATTRIBUTES.values() for v in values if v in said}
    active = {normalise_text(f.value) for f in result["active"]}
    captured = sum(_has(active, value) for value in current.values())
    wrong = sum(not _has(stated, e.value) for e in result["writes"])
    return captured, len(current), wrong, len(result["writes"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--locomo", default="/tmp/locomo", help="folder holding LoCoMo (skipped when absent)")
    parser.add_argument("--locomo-turns", type=int, default=100)
    parser.add_argument("--plot", default=str(Path(__file__).with_suffix(".png")))
    args = parser.parse_args(argv)
    rows, totals = [], {m: {"captured": 0, "of": 0, "wrong": 0, "writes": 0, "ms": [], "tokens": [], "bg": []}
                        for m in ("background", "hot path")}
    for seed in args.seeds:
        conversation = convgen.generate(seed, n_turns=args.turns, n_facts=min(20, args.turns // 4))
        texts = [t.user for t in conversation.turns]
        for mode in ("background", "hot path"):
            result = run(texts, mode)
            captured, of, wrong, writes = score_generated(conversation, result)
            t = totals[mode]
            t["captured"] += captured; t["of"] += of; t["wrong"] += wrong; t["writes"] += writes  # noqa: E702
            t["ms"].append(result["turn_ms"]); t["tokens"].append(result["tokens"]); t["bg"].append(result["background_ms"])  # noqa: E702,E501
            rows.append((f"seed {seed}", mode, f"{captured}/{of}", f"{wrong}/{writes}", f"{result['tokens']:,.0f}",
                         f"{result['turn_ms']:.1f}", f"{result['background_ms']:.2f}"))
    locomo_rows = []
    if Path(args.locomo).exists():
        from locomo_data import conversation_turns, load_folder

        for conversation in load_folder(args.locomo, ids=list(TUNING)):
            texts = [t.messages[0]["content"] for t in conversation_turns(conversation)][:args.locomo_turns]
            for mode in ("background", "hot path"):
                result = run(texts, mode)
                per_100 = 100 * len(result["writes"]) / max(len(texts), 1)
                locomo_rows.append((f"LoCoMo {conversation.id}", mode, f"{per_100:.1f}", f"{result['tokens']:,.0f}",
                                    f"{result['turn_ms']:.1f}", f"{result['background_ms']:.2f}"))
    print("| conversation | mode | captured | wrong / writes | tokens/turn | ms/turn (median) | background ms/turn |")
    print("|---|---|---|---|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for mode, t in totals.items():
        print(f"| all seeds | {mode} | {t['captured']}/{t['of']} ({100 * t['captured'] / max(t['of'], 1):.0f}%) | "
              f"{t['wrong']}/{t['writes']} | {statistics.mean(t['tokens']):,.0f} | {statistics.mean(t['ms']):.1f} | "
              f"{statistics.mean(t['bg']):.2f} |")
    if locomo_rows:
        print("\n| LoCoMo (tuning half) | mode | writes per 100 turns | tokens/turn | ms/turn (median) | "
              "background ms/turn |")
        print("|---|---|---:|---:|---:|---:|")
        for row in locomo_rows:
            print("| " + " | ".join(row) + " |")
    else:
        print(f"\n(LoCoMo skipped: no data at {args.locomo}; unzip locomo10.zip there)")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        modes = list(totals)
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
        axes[0].bar(modes, [100 * totals[m]["captured"] / max(totals[m]["of"], 1) for m in modes], color=["tab:blue", "tab:orange"])
        axes[0].set(title="facts captured (%)", ylim=(0, 100))
        axes[1].bar(modes, [statistics.mean(totals[m]["tokens"]) for m in modes], color=["tab:blue", "tab:orange"])
        axes[1].set(title="tokens per turn")
        axes[2].bar(modes, [statistics.mean(totals[m]["ms"]) for m in modes], color=["tab:blue", "tab:orange"])
        axes[2].set(title="ms per turn (median, in the turn)")
        fig.suptitle(f"hot path vs background, generated conversations (seeds {', '.join(map(str, args.seeds))})")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()

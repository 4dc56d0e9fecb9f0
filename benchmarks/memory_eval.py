"""Which memory strategy keeps what matters, at what cost, when facts change? (evaluation, not a timed test)

Runs the real ``ChatSession(memory=MemoryAssembler(), max_turns=6, max_tokens=BUDGET)`` with its
tools against the offline stand-in, on conversations from ``helpers.memory.convgen``: several
seeds (corrections, restatements, repeated and paraphrased probes, long assistant replies, tool
calls) plus the earlier scripted conversation as one case. Every request the session sends
goes through a recording transport, so the hybrid's numbers are those of the exact request
bodies, tool schemas included, counted with ``helpers.core.tokens`` (the stand-in's own count).
The measuring code is ``helpers.memory.evaluation``, so a notebook can run it on a seed of its own.

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
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")
os.environ.setdefault("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
os.environ.setdefault("TQDM_DISABLE", "1")

from helpers.memory.convgen import generate, scripted  # noqa: E402
from helpers.memory.evaluation import (  # noqa: E402
    ABLATIONS, BUDGET, STRATEGIES, WINDOW, meets_targets, rows, run_case)

ROOT = Path(__file__).resolve().parents[1]


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

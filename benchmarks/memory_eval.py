"""Which memory strategy keeps what matters, and at what cost? (evaluation, not a timed test)

Generates a deterministic 200-turn conversation with a student: campus questions
answered from the Larkspur knowledge base, small talk, and 42 planted facts about the
student ("My locker number is 4471."). Each fact is probed 30-70 turns later
("What's my locker number?"). At every turn, each strategy assembles the request it would
send (``helpers.memory.assembler.assemble_context``), and we measure:

- prompt tokens per turn (the offline stand-in's tokenizer, ``helpers.tokens``);
- evidence recall: the fraction of probes whose supporting fact (the exact value, e.g.
  "4471") is present somewhere in the assembled context.

Strategies: full history; a sliding window of the newest 6 turns; the window plus a
rolling summary, plus recall of older turns (top 3), plus a profile; and the hybrid --
all of them under one budget. The summariser and the profile extractor are the offline
stand-in's documented rules and recall uses local MiniLM embeddings, so the run needs
no key. Target for the hybrid: at most 15 % of full-history prompt tokens with at least
95 % evidence recall. Writes ``benchmarks/memory_eval.png``.

Run: python benchmarks/memory_eval.py [--budget 900] [--window 6] [--turns 200]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")
os.environ.setdefault("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
os.environ.setdefault("TQDM_DISABLE", "1")

from helpers import tokens  # noqa: E402
from helpers.client import get_client, get_settings  # noqa: E402
from helpers.memory.assembler import Shares, assemble_context  # noqa: E402
from helpers.memory.profile import ProfileMemory  # noqa: E402
from helpers.memory.recall import RecallIndex  # noqa: E402
from helpers.memory.summary import RollingSummary, Summariser  # noqa: E402

SYSTEM = ("You are the Larkspur University campus assistant in an ongoing conversation. Use what the student told "
          "you earlier; cite knowledge-base ids in square brackets.")
# (statement, probe, evidence): the evidence string must appear in the context for the probe to be answerable
FACTS = [
    ("Hi! My name is Tamsin Okafor, by the way.", "What is my name?", "Tamsin Okafor"),
    ("I'm vegetarian, so keep that in mind for dining tips.", "What did I say about my diet?", "vegetarian"),
    ("I can't do mornings because of my bakery shifts.", "What did I say about mornings?", "can't do mornings"),
    ("My goal is to finish the robotics certificate by June.", "What is my goal this year?", "robotics certificate"),
    ("I prefer the north shuttle loop.", "Which shuttle did I say I prefer?", "north shuttle"),
    ("My locker number is 4471.", "What's my locker number?", "4471"),
    ("My student ID is LU-58213.", "What is my student ID?", "LU-58213"),
    ("My academic advisor is Dr. Hollis Varga.", "Who is my academic advisor?", "Hollis Varga"),
    ("My lab partner is Ines Moreau.", "Who is my lab partner?", "Ines Moreau"),
    ("My dorm room is Wren House 312.", "What is my dorm room?", "Wren House 312"),
    ("My bike is a green Brompton folding bike.", "What kind of bike do I have?", "green Brompton"),
    ("My thesis is about coral bleaching in cold reefs.", "What is my thesis about?", "coral bleaching"),
    ("My textbook budget is 120 dollars this term.", "What is my textbook budget?", "120 dollars"),
    ("My sister Mira visits on December 12.", "When does my sister visit?", "December 12"),
    ("My cat is called Biscuit.", "What's my cat called?", "Biscuit"),
    ("My hometown is Port Ellery, up the coast.", "Where is my hometown?", "Port Ellery"),
    ("I'm allergic to penicillin.", "What am I allergic to?", "penicillin"),
    ("My piano lessons are on Wednesdays at 17:30.", "When are my piano lessons?", "17:30"),
    ("My exam seat number is C-42.", "What is my exam seat number?", "C-42"),
    ("My phone number ends in 0917.", "What does my phone number end in?", "0917"),
    ("My part-time job is at the Quarry Street bakery.", "Where is my part-time job?", "Quarry Street bakery"),
    ("My favourite study spot is the Harrow Library mezzanine.", "What's my favourite study spot?", "mezzanine"),
    ("My minor is Scandinavian linguistics.", "What is my minor?", "Scandinavian linguistics"),
    ("My mentor in the peer programme is Jonah Ekwueme.", "Who is my peer mentor?", "Jonah Ekwueme"),
    ("My car is a blue 2009 Corolla.", "What car do I drive?", "2009 Corolla"),
    ("My parking permit number is P-7730.", "What is my parking permit number?", "P-7730"),
    ("My team in the hackathon is called Byte Lanterns.", "What is my hackathon team called?", "Byte Lanterns"),
    ("My running club meets at the Osprey track.", "Where does my running club meet?", "Osprey track"),
    ("My scholarship is the Calloway Award.", "Which scholarship do I have?", "Calloway Award"),
    ("My laptop is a ThinkPad X13 with a cracked hinge.", "What laptop do I have?", "ThinkPad X13"),
    ("My graduation year is 2029.", "What is my graduation year?", "2029"),
    ("My roommate is Dev Castellanos.", "Who is my roommate?", "Dev Castellanos"),
    ("My language exchange partner speaks Icelandic.", "What language does my exchange partner speak?",
     "Icelandic"),
    ("My blood type is O negative.", "What is my blood type?", "O negative"),
    ("My emergency contact is my uncle Ravi Sandhu.", "Who is my emergency contact?", "Ravi Sandhu"),
    ("My meal plan is the Silver 14 plan.", "Which meal plan am I on?", "Silver 14"),
    ("My research lab is the Tidewater Ecology Lab.", "Which research lab am I in?", "Tidewater Ecology Lab"),
    ("My favourite professor is Professor Anneli Strand.", "Who is my favourite professor?", "Anneli Strand"),
    ("My bank card PIN reminder word is marigold.", "What is my PIN reminder word?", "marigold"),
    ("My mailbox number at the student union is 2286.", "What is my mailbox number?", "2286"),
    ("My choir section is second alto.", "Which choir section am I in?", "second alto"),
    ("My dentist appointment is on January 9.", "When is my dentist appointment?", "January 9"),
]
SMALL_TALK = ["ok thanks", "thanks!", "great", "got it", "cool, thank you", "ok"]
FILLER_FORMS = ["Tell me about the {t}.", "What should I know about {t}?", "Can you describe {t}?",
                "I was wondering about {t}. What is it like?"]
NEUTRAL_REPLIES = ["Got it, thanks for telling me.", "Thanks, noted for later.", "Understood."]


def build_conversation(n_turns: int = 200, seed: int = 11) -> tuple[list[dict], list[dict]]:
    """Turns (user/assistant text and kind) and probes (turn, fact turn, evidence), deterministically."""
    rng = random.Random(seed)
    kb = [json.loads(line) for line in (Path(__file__).resolve().parents[1] / "data" / "campus_kb.jsonl")
          .read_text().splitlines() if line.strip()]
    slots: list[dict | None] = [None] * n_turns
    probes = []
    spacing = max(1, (n_turns - 75) // len(FACTS))
    for i, (statement, probe, evidence) in enumerate(FACTS):
        fact_turn = min(i * spacing, n_turns - 40)
        while slots[fact_turn] is not None:
            fact_turn += 1
        slots[fact_turn] = {"user": statement, "assistant": rng.choice(NEUTRAL_REPLIES), "kind": "fact"}
        target = min(fact_turn + 30 + rng.randint(0, 40), n_turns - 1)
        probe_turn = next((t for t in list(range(target, n_turns)) + list(range(target, fact_turn + 29, -1))
                           if slots[t] is None), None)
        if probe_turn is None:
            raise SystemExit(f"no free turn to probe fact {i}; use more turns")
        slots[probe_turn] = {"user": probe, "assistant": "Let me check what you told me.", "kind": "probe"}
        probes.append({"turn": probe_turn, "fact_turn": fact_turn, "evidence": evidence, "question": probe})
    for t in range(n_turns):
        if slots[t] is None:
            if rng.random() < 0.15:
                slots[t] = {"user": rng.choice(SMALL_TALK), "assistant": "You're welcome!", "kind": "small talk"}
            else:
                entry = rng.choice(kb)
                question = rng.choice(FILLER_FORMS).format(t=entry["title"])
                slots[t] = {"user": question, "assistant": f"{entry['text']} [{entry['id']}]", "kind": "campus"}
    return slots, sorted(probes, key=lambda p: p["turn"])


def as_messages(turn: dict) -> list[dict]:
    return [{"role": "user", "content": turn["user"]}, {"role": "assistant", "content": turn["assistant"]}]


def context_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages).lower()


STRATEGIES = ("full history", "window", "window+summary", "window+recall", "window+profile", "hybrid")


def run(n_turns: int, window_turns: int, budget: int, shares: Shares, quiet: bool = False) -> dict:
    """Replay the conversation; per strategy, tokens per turn and probe hits."""
    turns, probes = build_conversation(n_turns)
    probe_at = {p["turn"]: p for p in probes}
    client, settings = get_client(quiet=True), get_settings()
    summariser = Summariser(client=client, settings=settings)
    recall = RecallIndex(client=client, settings=settings)
    profile = ProfileMemory(client=client, settings=settings)
    summary = RollingSummary()
    history: list[tuple[int, list[dict]]] = []
    result = {s: {"tokens": [], "hits": [], "missed": []} for s in STRATEGIES}
    started = time.perf_counter()
    for t, turn in enumerate(turns):
        question = turn["user"]
        window = history[-window_turns:]
        recalled = recall.search(question, exclude=[i for i, _ in window])
        lines = profile.lines()
        plans = {
            "full history": dict(window=history),
            "window": dict(window=window),
            "window+summary": dict(window=window, summary=summary),
            "window+recall": dict(window=window, recalled=recalled),
            "window+profile": dict(window=window, profile_lines=lines),
            "hybrid": dict(window=window, summary=summary, recalled=recalled, profile_lines=lines, budget=budget),
        }
        for name, plan in plans.items():
            window_part = plan.pop("window")
            assembly = assemble_context(SYSTEM, window_part, question, shares=shares, **plan)
            sent = tokens.count_request(assembly.request)
            assert sent == assembly.report.total and (name != "hybrid" or sent <= budget)
            result[name]["tokens"].append(sent)
            if t in probe_at:
                found = probe_at[t]["evidence"].lower() in context_text(assembly.messages)
                result[name]["hits"].append(found)
                if not found:
                    result[name]["missed"].append(probe_at[t]["evidence"])
        # the turn happens; memory learns from it
        messages = as_messages(turn)
        history.append((t, messages))
        recall.add(t, messages)
        profile.update(t, turn["user"], turn["assistant"])
        if len(history) > window_turns:  # the oldest window turn leaves the window: summarise it
            summary = summariser.summarise(summary, [history[-window_turns - 1]]).summary
        if not quiet and (t + 1) % 50 == 0:
            print(f"  ... {t + 1} turns replayed ({time.perf_counter() - started:.0f} s)", flush=True)
    result["_meta"] = {"turns": n_turns, "facts": len(FACTS), "probes": len(probes), "window": window_turns,
                       "budget": budget, "profile_facts": len(profile), "recall_skipped": len(recall.skipped),
                       "gaps": [p["turn"] - p["fact_turn"] for p in probes]}
    return result


def report(result: dict) -> list[tuple]:
    """Print the table; returns its rows."""
    meta = result["_meta"]
    full = sum(result["full history"]["tokens"]) / meta["turns"]
    print(f"\n{meta['turns']} turns, {meta['facts']} planted facts, {meta['probes']} probes asked "
          f"{min(meta['gaps'])}-{max(meta['gaps'])} turns after their fact; window = {meta['window']} turns, "
          f"hybrid budget = {meta['budget']} tokens\n")
    print(f"{'strategy':<16}{'mean tokens/turn':>17}{'max':>8}{'% of full':>11}{'evidence recall':>18}")
    rows = []
    for name in STRATEGIES:
        data = result[name]
        mean = sum(data["tokens"]) / len(data["tokens"])
        hits = sum(data["hits"])
        rows.append((name, mean, max(data["tokens"]), 100 * mean / full, hits / len(data["hits"])))
        print(f"{name:<16}{mean:>17,.0f}{max(data['tokens']):>8,}{100 * mean / full:>10.1f}%"
              f"{hits:>9}/{len(data['hits'])} = {100 * hits / len(data['hits']):>3.0f}%")
    hybrid = rows[-1]
    ok = hybrid[3] <= 15 and hybrid[4] >= 0.95
    print(f"\nhybrid: {hybrid[3]:.1f}% of full-history tokens, {100 * hybrid[4]:.1f}% evidence recall -> "
          f"target (<= 15%, >= 95%) {'MET' if ok else 'NOT met'}")
    if result["hybrid"]["missed"]:
        print("hybrid missed:", ", ".join(result["hybrid"]["missed"]))
    return rows


def plot(result: dict, path: Path) -> None:
    """Tokens per turn by strategy, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name in STRATEGIES:
        ax.plot(result[name]["tokens"], label=name, linewidth=1.4 if name == "hybrid" else 1)
    ax.axhline(result["_meta"]["budget"], color="grey", linestyle=":", label="hybrid budget")
    ax.set_yscale("log")
    ax.set_xlabel("turn")
    ax.set_ylabel("prompt tokens (log scale)")
    ax.set_title("Prompt tokens per turn by memory strategy")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot saved to {path.relative_to(Path(__file__).resolve().parents[1])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=6)
    parser.add_argument("--budget", type=int, default=900)
    args = parser.parse_args()
    if args.turns < 120:
        parser.error("--turns must be at least 120 to plant every fact and probe it 30+ turns later")
    result = run(args.turns, args.window, args.budget, Shares())
    report(result)
    plot(result, Path(__file__).resolve().parent / "memory_eval.png")


if __name__ == "__main__":
    main()

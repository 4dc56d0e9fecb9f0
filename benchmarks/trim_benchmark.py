"""What keeping a long tool-heavy history under a token budget costs, ours against LangChain's.

Builds a 10,000-turn conversation (0-3 tool-calling steps per turn, some with
parallel calls) and measures, in the same run, repeated over several runs:

  langchain_core.messages.trim_messages(list, max_tokens=B, strategy="last",
      start_on="human", include_system=True)                 on the 10,000-turn and the 100-turn list
  helpers.chat.history.trim_to_budget(list, B)      the readable function notebook 07 builds, same two lists:
      it walks back from the newest message and hands the turns to keep_newest
  what ChatSession(max_tokens=B) runs per turn, through its own methods: Window.trimmed (keep_newest
      over the costs of the turns it kept, which it already knows, so it reads no message), the
      copy handed to the agent loop, keeping the new turn (the new turn checked and costed, new
      lists); then the same plus its save point (references to those lists, no copy). The model
      call and the ledger's record are left out.
  a window loop that instead re-trims its whole window with history.trim_to_budget every turn,
      to show what knowing the costs saves

Every row uses the same budget and the same counts (approx_tokens, precomputed and
looked up, no per-request overhead). Times are CPU time (time.process_time), steadier
than wall time on a busy shared machine; the garbage collector is paused while a row is
timed (as timeit does), so no row pays for collecting the large histories. In each run a
per-call row is the best of 5 batches of calls, a per-turn row the mean over its turns;
the table shows the median run with the spread (min-max) over runs.
Ratios are taken within each run. Every output is checked with find_problems. A second
table trims before every model call under tight budgets, where the current turn may
not fit. Needs langchain-core (pip install langchain-core).
Run: python benchmarks/trim_benchmark.py [--turns N] [--small N] [--budget B] [--runs R]
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.chat.history import starts_turn, system_end, trim_to_budget  # noqa: E402
from helpers.chat.ledger import UsageLedger  # noqa: E402
from helpers.chat.chat_session import ChatSession  # noqa: E402
from helpers.core.tokens import approx_tokens  # noqa: E402
from helpers.chat.validity import find_problems  # noqa: E402

TOOLS = ["room_lookup", "course_search", "library_hours", "shuttle_times", "dining_menu"]
WORDS = ("Larkspur quad library shuttle Hale room seminar Birch lab open closed noon evening free booked "
         "north south cafe menu exam week registrar office hours parking permit").split()
SYSTEM = {"role": "system", "content": "You are Lark, the Larkspur University campus assistant. " * 3}
SESSION_TURNS = 2_000  # turns a session row runs through per run; its cost per turn is flat after ~40


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def build_turns(n_turns: int, seed: int = 7) -> list[list[dict]]:
    """A deterministic tool-heavy conversation, as a list of turns."""
    rng = random.Random(seed)
    turns, calls = [], 0
    for t in range(n_turns):
        turn = [{"role": "user", "content": f"({t}) " + words(rng, rng.randint(4, 25))}]
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            ids = [f"call_{calls + k}" for k in range(rng.choice([1, 1, 1, 2, 3]))]
            calls += len(ids)
            turn.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": rng.choice(TOOLS), "arguments": json.dumps({"query": words(rng, 3)})}}
                for cid in ids]})
            turn.extend({"role": "tool", "tool_call_id": cid, "content": words(rng, rng.randint(5, 60))}
                        for cid in ids)
        turn.append({"role": "assistant", "content": words(rng, rng.randint(5, 50))})
        turns.append(turn)
    return turns


def per_call(function, repeats: int, batches: int = 5) -> float:
    """CPU microseconds per call of ``function()``: the best of ``batches`` batches of ``repeats`` calls."""
    best = float("inf")
    for _ in range(batches):
        start = time.process_time()
        for _ in range(repeats):
            function()
        best = min(best, (time.process_time() - start) / repeats * 1e6)
    return best


def session_per_turn(turns: list[list[dict]], budget: int, count, save_point: bool) -> float:
    """ChatSession's own steps per turn, without the model call: (save point,) trim, copy, keep the turn."""
    session = ChatSession(SYSTEM["content"], max_tokens=budget)
    system = session.messages[0]  # the session's own system message (its cost is already learnt)
    system_cost = approx_tokens(system)
    session.ledger = UsageLedger(estimate=lambda m: system_cost if m is system else count(m), overhead=0)
    start = time.process_time()
    for turn in turns:
        if save_point:
            session._save_point()
        session._trim(reserve=count(turn[0]))
        working = list(session._window.messages)  # what the agent loop gets
        session._keep_turn(turn, len(turn) + 1)
    elapsed = time.process_time() - start
    kept = session.turn_ids
    assert not find_problems(working + turn) and not find_problems(session.messages)
    assert kept[-1] == len(turns) - 1 and len(session.dropped) + len(kept) == len(turns)
    return elapsed / len(turns) * 1e6


def window_per_turn(turns: list[list[dict]], budget: int, count) -> float:
    """A session that keeps only its window and re-trims all of it with trim_to_budget every turn."""
    window, dropped = [SYSTEM], 0
    start = time.process_time()
    for turn in turns:
        sent = window + turn
        trimmed = trim_to_budget(sent, budget, count=count, overhead=0)
        dropped += sum(map(starts_turn, sent[system_end(sent):trimmed.cut]))  # the turns it dropped
        window = trimmed.messages
    elapsed = time.process_time() - start
    kept = sum(m["role"] == "user" for m in window)
    assert not find_problems(window) and window[-1] is turns[-1][-1] and dropped + kept == len(turns)
    return elapsed / len(turns) * 1e6


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000, help="turns in the long history")
    parser.add_argument("--small", type=int, default=100, help="turns in the short history")
    parser.add_argument("--budget", type=int, default=8_000, help="token budget B")
    parser.add_argument("--runs", type=int, default=5, help="how many times to measure everything")
    args = parser.parse_args()
    try:
        from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages
    except ImportError:
        print("langchain-core is not installed, so there is nothing to compare against.\n"
              "Install it with:  pip install langchain-core   and run this script again.")
        sys.exit(1)

    turns = build_turns(args.turns)
    long = [SYSTEM] + [m for turn in turns for m in turn]
    short = [SYSTEM] + [m for turn in turns[: args.small] for m in turn]
    costs = {id(m): approx_tokens(m) for m in long}
    lookup = lambda m: costs[id(m)]  # noqa: E731 - the same precomputed counts LangChain gets
    lc_long, lc_short = convert_to_messages(long), convert_to_messages(short)
    lc_costs = {id(m): approx_tokens(d) for m, d in zip(lc_long + lc_short, long + short)}

    def lc_count(messages: list) -> int:  # the list form trim_messages calls; partial copies counted afresh
        return sum(lc_costs[id(m)] if id(m) in lc_costs else approx_tokens(convert_to_openai_messages(m))
                   for m in messages)

    def lc_trim(messages: list) -> list:
        return trim_messages(messages, max_tokens=args.budget, token_counter=lc_count, strategy="last",
                             start_on="human", include_system=True)

    def ours(trim, messages):
        return lambda: trim(messages, args.budget, count=lookup, overhead=0)

    kept = {}
    for messages, lc_messages in ((long, lc_long), (short, lc_short)):  # warm every path up, check the answers
        readable = trim_to_budget(messages, args.budget, count=lookup, overhead=0)
        assert not find_problems(readable.messages) and not find_problems(convert_to_openai_messages(
            lc_trim(lc_messages)))
        kept[len(messages)] = sum(m["role"] == "user" for m in readable.messages)
    n_messages, n_kept = len(long), kept[len(long)]
    print(f"history: {args.turns:,} turns, {n_messages:,} messages, {sum(len(t) - 2 for t in turns):,} "
          f"tool-call messages; budget B = {args.budget:,} tokens keeps the newest {n_kept} turns; "
          f"short history: {args.small} turns, {len(short):,} messages (keeps {kept[len(short)]}); "
          f"{args.runs} runs\n")

    rows = {}
    long_label, short_label = f"{args.turns:,} turns", f"{args.small:,} turns"
    lc_long_row, readable_long, readable_short = (f"langchain trim_messages, {long_label}",
                                                  f"history.trim_to_budget, {long_label}",
                                                  f"history.trim_to_budget, {short_label}")
    session_row, save_row, window_row = ("ChatSession per turn: trim + keep the turn",
                                         "ChatSession per turn, with its save point",
                                         "window re-trimmed by trim_to_budget per turn")
    paths = [
        (lc_long_row, lambda: per_call(lambda: lc_trim(lc_long), 1)),
        (f"langchain trim_messages, {short_label}", lambda: per_call(lambda: lc_trim(lc_short), 20)),
        (readable_long, lambda: per_call(ours(trim_to_budget, long), 50)),
        (readable_short, lambda: per_call(ours(trim_to_budget, short), 50)),
        (session_row, lambda: session_per_turn(turns[:SESSION_TURNS], args.budget, lookup, save_point=False)),
        (save_row, lambda: session_per_turn(turns[:SESSION_TURNS], args.budget, lookup, save_point=True)),
        (window_row, lambda: window_per_turn(turns[:SESSION_TURNS], args.budget, lookup)),
    ]
    for run in range(args.runs):
        for name, measure in paths:
            gc.collect()
            gc.disable()
            try:
                rows.setdefault(name, []).append(measure())
            finally:
                gc.enable()
    lc_long_times = rows[paths[0][0]]
    header = f"langchain {long_label} / this"
    print(f"{'path':54} {'us per call/turn: median (min-max)':>36} {header:>30}")
    for name, times in rows.items():
        ratios = [lc / t for lc, t in zip(lc_long_times, times)]
        print(f"{name:54} {spread(times):>36} {spread(ratios) + 'x':>30}")

    def ratio(top: str, bottom: str) -> list[float]:
        return [a / b for a, b in zip(rows[top], rows[bottom])]

    print("\ntargets (ratios within each run; median (min-max) over runs):")
    checks = [
        (f"trim_to_budget at {long_label} vs langchain, >= 200x", ratio(lc_long_row, readable_long),
         lambda r: r >= 200),
        (f"trim_to_budget {long_label} / {short_label}, <= 2x", ratio(readable_long, readable_short),
         lambda r: r <= 2),
        ("ChatSession per turn vs langchain, >= 1,000x", ratio(lc_long_row, session_row), lambda r: r >= 1000),
        ("  the same with its save point, >= 1,000x", ratio(lc_long_row, save_row), lambda r: r >= 1000),
        ("  re-trimming the window / what ChatSession runs", ratio(window_row, session_row), lambda r: r >= 2),
    ]
    for name, values, ok in checks:
        verdict = "met in every run" if all(map(ok, values)) else (
            "met by the median" if ok(statistics.median(values)) else "NOT met")
        print(f"  {name:66} {spread(values) + 'x':>28}  {verdict}")
    tight_budgets(trim_messages, convert_to_messages, convert_to_openai_messages)


def tight_budgets(trim_messages, convert_to_messages, convert_to_openai_messages) -> None:
    """Correctness when the current turn may not fit: trim before every model call, mid-turn too."""
    system, turns = SYSTEM, build_turns(300, seed=3)
    print("\ntight budgets, 300 turns, trimming before every model call (after the user message and after "
          "each batch of tool results):")
    print(f"{'budget':>7} {'calls':>6} | {'langchain start_on=human':>25} | {'langchain no start_on':>22} | "
          f"{'ours: invalid / lost / over_budget':>34}")

    def count(ms: list) -> int:
        return sum(approx_tokens(convert_to_openai_messages(m)) for m in ms)

    for budget in (120, 250, 500):
        calls, tally = 0, {"human": [0, 0], None: [0, 0], "ours": [0, 0, 0]}
        history = [system]
        for turn in turns:
            ends = [1] + [i + 1 for i in range(1, len(turn)) if turn[i]["role"] == "tool"
                          and (i + 1 == len(turn) or turn[i + 1]["role"] != "tool")]
            for end in ends:
                sent, question = history + turn[:end], turn[0]["content"]
                calls += 1
                lc = convert_to_messages(sent)
                for start_on in ("human", None):
                    out = convert_to_openai_messages(trim_messages(
                        lc, max_tokens=budget, token_counter=count, strategy="last", start_on=start_on,
                        include_system=True))
                    tally[start_on][0] += bool(find_problems(out))
                    tally[start_on][1] += not any(m.get("content") == question for m in out)
                ours = trim_to_budget(sent, budget, overhead=0)
                tally["ours"][0] += bool(find_problems(ours.messages))
                tally["ours"][1] += not any(m.get("content") == question for m in ours.messages)
                tally["ours"][2] += ours.over_budget
            history = [system] + trim_to_budget(history + turn, 2_000, overhead=0).messages[1:]
        fmt = lambda pair: f"{pair[0]} invalid, {pair[1]} lost"  # noqa: E731
        print(f"{budget:>7} {calls:>6} | {fmt(tally['human']):>25} | {fmt(tally[None]):>22} | "
              f"{' / '.join(map(str, tally['ours'])):>34}")


if __name__ == "__main__":
    main()

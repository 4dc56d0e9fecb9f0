"""Per-turn cost of keeping a long tool-heavy history under a token budget.

Builds a 10,000-turn conversation (0-3 tool-calling steps per turn, some with
parallel calls) and, turn by turn, measures:

  ours (session)   TurnIndex.extend(new turn) + trim_to_budget(B) + validate(), every turn
  ours (+messages) the same plus materialising index.messages (the list you would send)
  ours (pure)      trim_to_budget(full list, B) from scratch, on sampled turns
  langchain        langchain_core.messages.trim_messages(full list, max_tokens=B,
                   strategy="last", start_on="human", include_system=True), on sampled turns

Every row uses the same budget and the same counts (approx_tokens, no per-request
overhead). The full-list rows (ours and LangChain's) look precomputed counts up,
so they pay no counting cost; the session row counts each new message once.
LangChain outputs are converted back to dicts and checked with find_problems. A
second table trims before every model call under tight budgets, where the
current turn may not fit. Times are CPU time (time.process_time), which stays
steady on a busy shared machine where wall time does not. Needs langchain-core (pip install langchain-core).
Run: python benchmarks/trim_benchmark.py [--turns N] [--budget B] [--every K]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.history import TurnIndex, approx_tokens, find_problems, trim_to_budget  # noqa: E402

TOOLS = ["room_lookup", "course_search", "library_hours", "shuttle_times", "dining_menu"]
WORDS = ("Larkspur quad library shuttle Hale room seminar Birch lab open closed noon evening free booked "
         "north south cafe menu exam week registrar office hours parking permit").split()


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--budget", type=int, default=8_000, help="token budget B")
    parser.add_argument("--every", type=int, default=50, help="time the full-list trims on every Nth turn")
    args = parser.parse_args()
    try:
        from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages
    except ImportError:
        print("langchain-core is not installed, so there is nothing to compare against.\n"
              "Install it with:  pip install langchain-core   and run this script again.")
        sys.exit(1)

    system = {"role": "system", "content": "You are Lark, the Larkspur University campus assistant. " * 3}
    turns = build_turns(args.turns)
    n_messages = 1 + sum(len(t) for t in turns)
    print(f"history: {args.turns} turns, {n_messages} messages, "
          f"{sum(len(t) - 2 for t in turns)} tool-call messages; budget B = {args.budget} tokens")

    # (a) our session path, every turn
    index = TurnIndex([system], overhead=0)
    ours = ours_messages = 0.0
    for turn in turns:
        start = time.process_time()
        index.extend(turn)
        index.trim_to_budget(args.budget)
        problems = index.validate()
        middle = time.process_time()
        _ = index.messages
        ours += middle - start
        ours_messages += time.process_time() - start
        assert not problems
    kept_turns = len(index.turn_ids)

    # full-list rows, sampled: pure trim_to_budget and LangChain on the same growing list
    costs: dict[int, int] = {}

    def lc_count(messages: list) -> int:  # list form: what trim_messages builds from a per-message counter
        total = 0
        for m in messages:  # precomputed; partial copies made by allow_partial=True are counted on the spot
            cost = costs.get(id(m))
            total += cost if cost is not None else approx_tokens(convert_to_openai_messages(m))
        return total

    full: list[dict] = [system]
    lc_list: list = []
    dict_costs = {id(m): approx_tokens(m) for m in [system] + [m for turn in turns for m in turn]}
    lookup = lambda m: dict_costs[id(m)]  # noqa: E731 - the same precomputed counts LangChain gets
    warm = convert_to_messages([system] + turns[0])  # first calls pay one-off import/setup costs: keep them out
    costs.update((id(m), approx_tokens(d)) for m, d in zip(warm, [system] + turns[0]))
    for partial in (False, True):
        trim_messages(warm, max_tokens=args.budget, token_counter=lc_count, strategy="last", start_on="human",
                      include_system=True, allow_partial=partial)
    pure_time = lc_time = lc_partial_time = 0.0
    samples = invalid = invalid_partial = lost = lost_partial = 0
    for t, turn in enumerate(turns):
        full.extend(turn)
        new = convert_to_messages([system] if t == 0 else []) + convert_to_messages(turn)
        for message, source in zip(new, ([system] if t == 0 else []) + turn):
            costs[id(message)] = approx_tokens(source)
        lc_list.extend(new)
        if (t + 1) % args.every:
            continue
        samples += 1
        start = time.process_time()
        pure = trim_to_budget(full, args.budget, overhead=0, count=lookup)
        pure_time += time.process_time() - start
        for partial in (False, True):
            start = time.process_time()
            out = trim_messages(lc_list, max_tokens=args.budget, token_counter=lc_count, strategy="last",
                                start_on="human", include_system=True, allow_partial=partial)
            elapsed = time.process_time() - start
            dicts = convert_to_openai_messages(out)
            bad = bool(find_problems(dicts))
            missing = not any(m.get("role") == "user" and m.get("content") == turn[0]["content"] for m in dicts)
            if partial:
                lc_partial_time, invalid_partial, lost_partial = (lc_partial_time + elapsed, invalid_partial + bad,
                                                                  lost_partial + missing)
            else:
                lc_time, invalid, lost = lc_time + elapsed, invalid + bad, lost + missing
        assert find_problems(pure.messages) == [] and pure.kept[-1] == t

    per_turn = lambda total, n: total / n * 1e6  # noqa: E731
    ours_us, ours_msg_us = per_turn(ours, len(turns)), per_turn(ours_messages, len(turns))
    pure_us, lc_us, lc_p_us = (per_turn(x, samples) for x in (pure_time, lc_time, lc_partial_time))
    print(f"our index kept {kept_turns} turns at the end; full-list rows sampled on every {args.every}th turn "
          f"({samples} samples, list growing to {n_messages} messages)\n")
    print(f"{'path':52} {'us/turn':>10} {'langchain / this':>17} {'invalid outputs':>16} {'lost question':>14}")
    rows = [("ours: TurnIndex append + trim_to_budget + validate", ours_us, "0 / every turn", "0"),
            ("ours: same + materialise index.messages", ours_msg_us, "0 / every turn", "0"),
            ("ours: trim_to_budget(full list) from scratch", pure_us, f"0 / {samples}", "0"),
            ("langchain trim_messages (allow_partial=False)", lc_us, f"{invalid} / {samples}", f"{lost}"),
            ("langchain trim_messages (allow_partial=True)", lc_p_us, f"{invalid_partial} / {samples}",
             f"{lost_partial}")]
    for name, us, bad, lost_q in rows:
        print(f"{name:52} {us:10.1f} {lc_us / us:16.1f}x {bad:>16} {lost_q:>14}")
    print(f"\nsummary: ours {ours_us:.1f} us/turn, langchain {lc_us:.1f} us/turn, ratio {lc_us / ours_us:.0f}x; "
          f"langchain invalid outputs {invalid} / {samples} (allow_partial=True: {invalid_partial} / {samples})")
    print("'langchain / this' compares with the allow_partial=False row. 'invalid outputs' = find_problems "
          "rejected the trimmed list; 'lost question' = the newest user message was not in it.")
    tight_budgets(system, trim_messages, convert_to_messages, convert_to_openai_messages)


def tight_budgets(system, trim_messages, convert_to_messages, convert_to_openai_messages) -> None:
    """Correctness when the current turn may not fit: trim before every model call, mid-turn too."""
    turns = build_turns(300, seed=3)
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
            ends = [1] + [i + 1 for i in range(1, len(turn))
                          if turn[i]["role"] == "tool" and (i + 1 == len(turn) or turn[i + 1]["role"] != "tool")]
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

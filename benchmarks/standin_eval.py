"""How well the offline stand-in's rules read meaning: accuracy per rule on a fixed, hand-written case set.

The cases are in ``benchmarks/data/standin_eval.jsonl`` (one JSON object a line), written for this
evaluation -- not taken from the notebooks -- each with a fixed ``split``, decided when it was written:

- ``tune`` (128): read while the rules were written;
- ``heldout`` (127): written with ``tune``, split from it at random, first run once the rules were done;
- ``fresh`` (77): written after that first held-out run (and before the fixes it led to), run once;
- ``final`` (86): written after the ``fresh`` run (and before the fixes it led to), run once, last;
- ``tune_h3`` (113): written for issue 32's failure groups (health and family questions, corrections worded
  without "my X is", facts never said, parsed length limits), in four batches, and read while those rules
  were fixed (the last batch of 20 passed 14 on its first run).
- ``tune_h4`` (155): written before the rules they led to, in two batches -- 120 cases (facts never said that
  sound close to a stated one, another attribute of a stored topic, corrections of every shape, profile and
  recalled-turn blocks, subtle unsupported grounding claims, length limits in many forms; 85 of 120 passed
  on their first run), then 35 memory cases in other wordings (lower case, no question mark, children named
  in a list, a facts block; 18 of 35 passed first) -- and read while those rules were fixed.
- ``tune_h5`` (40): memory cases written before the focus rule they led to (a statement answers only if it
  carries the kind of thing asked for, not merely the same topic or person): 21 facts never said whose topic
  or person was stated but not the attribute asked (a dose, a price, which hospital, band or nursery, a
  flight, a job, a vet), and 19 questions about the user that must still be answered (counts of children
  named in a list, word forms, lower case, no question mark, first and third person, profile and
  recalled-turn blocks); 27 of 40 passed on their first run (about the user 17 of 19, never said 10 of 21).
- ``tune_h7`` (120): cases by a writer who read none of the rules -- 90 memory cases in 15 conversations (lower
  case, no question mark or apostrophes, what relatives and partners do for a living, pets and people named in a
  profile, attributes of a stated thing never stated, yes/no questions putting a value, changes "from X to Y",
  the first value against the newest), 10 scope, 10 grounding and 10 length -- written before the fixes they led
  to, and read while those were made; first run: about the user 17/45 (37.8%), corrections 8/15 (53.3%), never
  said 12/24 (50.0%), campus search 6/6, scope 8/10, grounding 8/10, length 9/10; after the fixes: about the user
  40/45 (88.9%), corrections 13/15 (86.7%), never said 24/24, campus search 6/6, scope 8/10, grounding 9/10,
  length 10/10.
- ``tune_h8`` (150): written before the h8 rules were read -- 100 memory cases in 18 conversations (lower case,
  no question mark, British spelling, relatives, partners and pets named in lower case, health: allergies,
  medication, conditions, doctors; family visits, jobs, addresses, rooms, schedules; corrections without "my X is":
  "I switched to ...", "we moved to ...", "it's X now, not Y", "scratch that, ...", "actually ...", "no longer ...";
  questions close to a stated fact that nothing answers; profile and recalled-turn blocks), 20 scope, 15 grounding
  and 15 length (limits in many forms) -- then read while the h8 rules were made; first run: about the user 28/47
  (59.6%), corrections 11/14 (78.6%), never said 14/33 (42.4%), campus search 5/6, scope 14/20, grounding 10/15,
  length 14/15; after the fixes: about the user 41/47 (87.2%), corrections 14/14, never said 30/33 (90.9%), campus
  search 6/6, scope 19/20, grounding 13/15, length 15/15.
- ``tune_h8b`` (60): written after the h8 fixes, by the same writer, before looking at how they would be handled
  -- 40 memory cases in 7 conversations, 8 scope, 6 grounding, 6 length -- run once, nothing fixed after it (the
  writer's estimate of how the h8 rules generalise): about the user 17/20 (85.0%), corrections 4/6 (66.7%), never
  said 11/12 (91.7%), campus search 2/2, scope 7/8, grounding 5/6, length 6/6.
- ``tune_h9`` (90): written before the h9 rules, around word classes rather than wordings -- 60 memory cases in 12
  conversations (roles and kinds: a GP for "my doctor", a breed for "my dog", a flat or house for "my address";
  what relatives and partners do for work, "works nights as", "runs a"; partners one is dating or seeing; rooms
  reassigned in the passive or by a bare code; shifts and appointments; "car park" for "what car"; a profile block),
  15 scope (false documents, getting to university places), 10 grounding (every day, always, all, free, when the
  passages say otherwise or nothing) and 5 length -- then read while the h9 rules were made; first run: about the
  user 23/38 (60.5%), corrections 1/7 (14.3%), never said 12/15 (80.0%), scope 13/15, grounding 8/10, length 5/5;
  after the fixes: about the user 38/38, corrections 7/7, never said 15/15, scope 15/15, grounding 10/10, length 5/5.
- ``tune_h9b`` (40): written after the h9 fixes, before looking at how they would be handled -- 30 memory cases in 6
  conversations, 5 scope, 5 grounding -- run once, nothing changed after it: about the user 19/21 (90.5%),
  corrections 3/3, never said 5/6 (83.3%), scope 5/5, grounding 4/5 (80.0%).

``--file PATH`` runs another case file of the same format (every case in it, whatever its split) and
``--counts-only`` prints only the accuracy per rule and per group, never a case: the way to run a held-out
set written by someone else without reading it. The groups are those of outside testers: *about the user*
(a memory question answered with a value), *corrections* (one whose answer must leave a replaced value
out), *never said* (``dont_know``), *campus search* (a first-person campus question), and the other rules.
``standin_heldout_3.jsonl`` (180 cases, ``heldout3``, 30 a group) was written apart from the rules: ``--counts-only``.

``heldout`` and ``fresh`` were looked at after their first run and so became development data: only the
first run of each is a held-out measurement (``--split dev`` is everything but ``final``). Each case
names its rule:

- **memory** -- a conversation (the user's statements, each answered "Noted.", and sometimes memory
  blocks: recalled turns, a profile) and a question. Expected: an answer naming the current value (and
  none it replaced), "I don't know" (``DONT_KNOW``) for a fact never stated, or campus search for a
  campus question asked in the first person.
- **scope** -- a request and its category (``campus``, ``off_topic``, ``unsafe``), asked with the
  scope classifier's prompt from ``helpers.retrieval.guardrails``.
- **grounding** -- passages, an answer and the verdict (``supported`` / ``unsupported``), asked with
  the grounding judge's prompt.
- **length** -- a system prompt and a greeting; expected ``one`` sentence or ``more`` than one.

Every case goes through ``helpers.standin.policy.decide``, the function the stand-in's server calls.
``--memory-run`` also replays the memory benchmark's generated conversations through a real
``ChatSession`` with the hybrid memory and counts the answers to questions about the user that name
the current value and none of the values it replaced (slow: about a minute).

Run: python benchmarks/standin_eval.py [--split heldout|tune|fresh|final|tune_h3|tune_h4|tune_h5|tune_h7|tune_h8|tune_h8b|tune_h9|tune_h9b|dev|all]
     [--show-failures]
     [--memory-run] [--file PATH --counts-only]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")
os.environ.setdefault("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
os.environ.setdefault("TQDM_DISABLE", "1")

from helpers.retrieval.guardrails import GROUNDING_PROMPT, SCOPE_PROMPT  # noqa: E402
from helpers.standin.meaning import sentences  # noqa: E402
from helpers.standin.policy import decide  # noqa: E402
from helpers.standin.memory_rule import DONT_KNOW  # noqa: E402
from helpers.agent.tools import tool_schemas  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "standin_eval.jsonl"
RULES = ("memory", "scope", "grounding", "length")
GROUPS = ("about the user", "corrections", "never said", "campus search", "scope", "grounding", "length")
SPLITS = ("heldout", "tune", "fresh", "final", "tune_h3", "tune_h4", "tune_h5", "tune_h7", "tune_h8", "tune_h8b", "tune_h9",
          "tune_h9b", "dev", "all")
TOOLS = tool_schemas()
SYSTEM = "You are the Larkspur University campus assistant."


FIELDS = {"memory": {"said": list, "blocks": list, "question": str, "expect": str},
          "scope": {"request": str, "expect": str}, "grounding": {"passage": str, "answer": str, "expect": str},
          "length": {"system": str, "question": str, "expect": str}}
EXPECTS = {"memory": {"answer", "dont_know", "search"}, "scope": {"campus", "off_topic", "unsafe"},
           "grounding": {"supported", "unsupported"}, "length": {"one", "more"}}


def check_case(case: dict, where: str) -> None:
    """ValueError naming the case and the field when a case is not in this file's format (no case text shown)."""
    rule = case.get("rule")
    if rule not in FIELDS:
        raise ValueError(f"{where}: rule {rule!r} is not one of {sorted(FIELDS)}")
    for name, kind in FIELDS[rule].items():
        if not isinstance(case.get(name), kind):
            raise ValueError(f"{where} ({rule}): field {name!r} must be a {kind.__name__}")
    if case["expect"] not in EXPECTS[rule]:
        raise ValueError(f"{where} ({rule}): expect must be one of {sorted(EXPECTS[rule])}")
    if rule == "memory":
        if not all(isinstance(x, str) for x in case["said"] + case["blocks"]):
            raise ValueError(f"{where} (memory): every item of 'said' and 'blocks' must be a string")
        if case["expect"] == "answer" and not (isinstance(case.get("contains"), list) and case["contains"]):
            raise ValueError(f"{where} (memory): an expected answer needs a non-empty 'contains' list")


def load_cases(split: str = "heldout", path: Path = DATA) -> list[dict]:
    """The cases of one split (``all`` for every case, ``dev`` for all but ``final``), in file order; a case not
    in the format (``check_case``) is a ValueError that names its line and field."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            check_case(row, f"{path.name} line {number}")
            rows.append(row)
    return [row for row in rows if split == "all" or row.get("split") == split
            or (split == "dev" and row.get("split") != "final")]


def group_of(case: dict) -> str:
    """The outside testers' group of a case (its ``group`` field when it has one)."""
    if case.get("group"):
        return case["group"]
    if case["rule"] != "memory":
        return case["rule"]
    if case["expect"] == "dont_know":
        return "never said"
    if case["expect"] == "search":
        return "campus search"
    return "corrections" if case.get("excludes") else "about the user"


def failure_kind(reply: str) -> str:
    """What a failing case got, in one word (the only thing ``--counts-only`` says about a failure)."""
    if reply.startswith("tools "):
        return "tools"
    if reply == DONT_KNOW:
        return "dont_know"
    if reply.startswith("You told me") or reply.startswith("Your profile says"):
        return "quoted_memory"
    return "other_reply"


def _memory_messages(case: dict) -> list[dict]:
    messages = [{"role": "system", "content": SYSTEM}]
    messages += [{"role": "system", "content": block} for block in case.get("blocks", [])]
    for text in case["said"]:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    return messages + [{"role": "user", "content": case["question"]}]


def run_case(case: dict) -> tuple[bool, str]:
    """(passed, what the stand-in replied) for one case."""
    rule = case["rule"]
    if rule == "memory":
        decision = decide(_memory_messages(case), TOOLS)
        if case["expect"] == "search":
            names = [name for name, _ in decision.tool_calls]
            return names[:1] == ["search_campus_info"], f"tools {names}" if names else decision.content
        reply = decision.content or ""
        if decision.tool_calls:
            return False, f"tools {[name for name, _ in decision.tool_calls]}"
        if case["expect"] == "dont_know":
            return reply == DONT_KNOW, reply
        low = reply.lower()
        ok = (reply != DONT_KNOW and all(word.lower() in low for word in case["contains"])
              and not any(word.lower() in low for word in case["excludes"]))
        return ok, reply
    if rule == "scope":
        reply = decide([{"role": "system", "content": SCOPE_PROMPT},
                        {"role": "user", "content": case["request"]}]).content
        return json.loads(reply)["category"] == case["expect"], reply
    if rule == "grounding":
        prompt = f"PASSAGES:\n{case['passage']}\n\nANSWER:\n{case['answer']}"
        reply = decide([{"role": "system", "content": GROUNDING_PROMPT},
                        {"role": "user", "content": prompt}]).content
        return json.loads(reply)["verdict"] == case["expect"], reply
    if rule == "length":
        reply = decide([{"role": "system", "content": case["system"]},
                        {"role": "user", "content": case["question"]}]).content or ""
        count = len(sentences(reply))
        return (count == 1) if case["expect"] == "one" else (count > 1), f"{count} sentence(s): {reply}"
    raise ValueError(f"unknown rule {rule!r} in case {case.get('id')}")


def evaluate(cases: list[dict]) -> dict[str, dict]:
    """Per rule: cases, passed, failures (id, reply) and the mean time per case in ms."""
    return _tally(cases, lambda case: case["rule"])


def evaluate_groups(cases: list[dict]) -> dict[str, dict]:
    """The same per outside testers' group (``group_of``)."""
    return _tally(cases, group_of)


def _tally(cases: list[dict], key) -> dict[str, dict]:
    out: dict[str, dict] = defaultdict(lambda: {"cases": 0, "passed": 0, "failures": [], "ms": 0.0})
    for case in cases:
        started = time.perf_counter()
        ok, reply = run_case(case)
        row = out[key(case)]
        row["ms"] += 1000 * (time.perf_counter() - started)
        row["cases"] += 1
        row["passed"] += ok
        if not ok:
            row["failures"].append((case, reply))
    for row in out.values():
        row["ms"] /= max(row["cases"], 1)
    return dict(out)


def memory_run(seeds: list[int], turns: int = 200, facts: int = 20, show: bool = False) -> tuple[int, int]:
    """Replay generated conversations with the hybrid memory; (answers naming the current value, probes)."""
    from helpers.llm.config import load_settings
    from helpers.memory.assembler import MemoryAssembler
    from helpers.memory.convgen import generate, scripted
    from helpers.memory.evaluation import BUDGET, WINDOW, RecordingTransport
    from helpers.chat.chat_session import ChatSession

    named = total = 0
    for conversation in [scripted(turns)] + [generate(seed, turns, facts) for seed in seeds]:
        transport = RecordingTransport()
        client, settings = transport.client(), load_settings("offline")
        session = ChatSession(memory=MemoryAssembler(client=client, settings=settings), max_turns=WINDOW,
                              max_tokens=BUDGET, client=client, settings=settings)
        probes = {p.turn: p for p in conversation.probes}
        hits = 0
        for t, turn in enumerate(conversation.turns):
            transport.turn, transport.long = t, turn.kind == "long"
            answer = session.chat(turn.user).lower()
            if t in probes:
                probe = probes[t]
                ok = probe.current.lower() in answer and not any(old.lower() in answer for old in probe.stale)
                hits += ok
                if show and not ok:
                    print(f"    turn {t} {probe.question!r}: want {probe.current!r} -> {answer[:110]!r}")
        print(f"  {conversation.name}: {hits} of {len(probes)} answers name the current value", flush=True)
        named, total = named + hits, total + len(probes)
    return named, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS, default="heldout")
    parser.add_argument("--file", type=Path, help="another case file: every case in it, whatever its split")
    parser.add_argument("--counts-only", action="store_true",
                        help="print accuracy per rule and group only, never a case (for a set you must not read)")
    parser.add_argument("--show-failures", action="store_true")
    parser.add_argument("--memory-run", action="store_true", help="also the generated 200-turn conversations")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args = parser.parse_args()
    if args.counts_only and args.show_failures:
        parser.error("--counts-only never shows a case; drop --show-failures")
    cases = load_cases("all", args.file) if args.file else load_cases(args.split)
    where = f"every case of {args.file.name}" if args.file else f"the {args.split} split"
    evaluate(cases[:1])  # load the embedding model before timing
    results = evaluate(cases)
    print(f"stand-in rules on {where} ({len(cases)} cases):")
    print(f"  {'rule':<16}{'cases':>6}{'passed':>8}{'accuracy':>10}{'ms/case':>9}")
    ok = True
    for rule in RULES:
        row = results.get(rule)
        if not row:
            continue
        accuracy = row["passed"] / row["cases"]
        ok &= accuracy >= 0.9
        print(f"  {rule:<16}{row['cases']:>6}{row['passed']:>8}{accuracy:>9.1%}{row['ms']:>9.1f}")
        if args.show_failures and not args.counts_only:
            for case, reply in row["failures"]:
                shown = next(case[k] for k in ("question", "request", "answer", "system") if k in case)
                print(f"      {case['id']}: {shown!r} expected {case['expect']!r}; got {reply[:150]!r}")
    groups = evaluate_groups(cases)
    print("  by outside testers' group:")
    for group in [g for g in GROUPS if g in groups] + sorted(set(groups) - set(GROUPS)):
        row = groups[group]
        print(f"  {group:<16}{row['cases']:>6}{row['passed']:>8}{row['passed'] / row['cases']:>9.1%}")
    if args.counts_only:  # what the failures replied, counted: tool calls, "I don't know", another answer
        print("  failures by what the stand-in did instead:")
        for group in [g for g in GROUPS if g in groups]:
            kinds: dict[str, int] = defaultdict(int)
            for _, reply in groups[group]["failures"]:
                kinds[failure_kind(reply)] += 1
            if kinds:
                print(f"  {group:<16}" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    if args.memory_run:
        print("\nanswers to questions about the user in generated conversations (hybrid memory):")
        named, total = memory_run(args.seeds, show=args.show_failures)
        print(f"  all: {named} of {total} ({named / max(total, 1):.0%})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

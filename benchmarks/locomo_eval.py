"""Does the memory bring a real conversation's evidence into the context? LoCoMo, measured (evaluation).

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024;
github.com/snap-research/locomo): ten two-person conversations of 19-32 dated sessions and about 2,000
questions, each naming the dialog lines that hold its answer. Get the data by cloning that repository and
unzipping ``data/locomo10.zip``; pass the folder as ``--data``.

**Feeding.** Every conversation goes through the public memory API a learner uses, with its defaults:
``MemoryAssembler()`` (``RecallIndex``, ``ProfileMemory``, ``Summariser``, the default ``Shares``) on the
offline stand-in, exactly the three hooks ``ChatSession(memory=...)`` calls: ``remember`` after each turn,
``forget`` for the turns that leave the sliding window (``memory.window_turns``), and ``build`` for a
request. Each pair of dialog lines of a session is one turn (the pair's first line as the user's message,
the second as the assistant's), ``"Name: "`` before each line, image captions as text, the session's date on
a line of its own before the session's first line (``benchmarks/locomo_data.py``). If ``remember`` takes a
``created_at`` keyword, each turn is given its session's date there as well. The questions are side
queries after the whole conversation: ``memory.build(system, window, question, budget=B)``, no tools, not
remembered.

**Strategies, scored the same way, in the same run:**

- ``hybrid`` -- the memory above (window + summary + recall + profile), at the budget;
- ``window`` -- ``assemble_context`` with the same window and no memory blocks, at the budget;
- ``BM25`` -- BM25 over every dialog line, best first until the budget is full;
- ``cosine`` -- the project's local MiniLM embeddings (``helpers.retrieval.embeddings``) over every line,
  best first until the budget is full (each baseline line carries its session date);
- ``full history`` -- every turn, no budget.

**Measures**, per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial apart), on
the tuning half (26, 30, 41, 42, 43) and the held-out half (44, 47, 48, 49, 50) separately, at 500, 900
and 2,000 tokens: evidence recall (mean over questions of the share of its evidence lines whose whole text
is in the assembled messages), all-evidence rate, for temporal questions whether every evidence line's
session date is in the context (in any usual spelling), tokens as % of full history (stand-in count,
question included); for the hybrid, ingest turns/s (every turn remembered and summarised, the history
embedded) and p50/p95 ms of building one question's context.

``--answers``: a model (``NVIDIA_API_KEY`` or any server ``helpers.llm.config`` is set up for) answers each
question of categories 1-4 from one strategy's context; scored by token F1 (LoCoMo paper) and by an LLM
judge (CORRECT/WRONG, as in the mem0 paper), beside the published judge scores. The judge first grades
control answers of known verdict (each question's own gold answer, and another question's); a model that
cannot tell them apart gets no judge column, and the table says why. A request the server refuses (a context
larger than its window, say) scores as wrong and is counted, with the first error. The memory is still
built on the offline stand-in (its summariser would otherwise ask the model once per turn). Offline,
this mode says it needs a model and exits 0.

Run: python benchmarks/locomo_eval.py --data /tmp/locomo [--quick] [--conversations 26 30]
     [--budgets 500 900 2000] [--answers [--answer-budget 900 --answer-strategies hybrid "full history"]]
"""
from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from helpers.core import tokens  # noqa: E402
from helpers.memory.assembler import MemoryAssembler, assemble_context  # noqa: E402

import locomo_data as ld  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = (500, 900, 2000)
STRATEGIES = ("hybrid", "window", "BM25", "cosine", "full history")
SYSTEM_PROMPT = ("You are an assistant in a long, ongoing conversation between two people. Answer from what "
                 "was said in it; give dates as the conversation states them.")
PUBLISHED_JUDGE = {"full context": 72.9, "Mem0": 66.9, "Zep": 66.0, "LangMem": 58.1, "OpenAI memory": 52.9}
ANSWER_PROMPT = ("Based on the conversation above, answer this question in a short phrase (a few words), "
                 "using the exact words of the conversation where you can. If the answer is a date, give "
                 "the date.\nQuestion: {question}\nShort answer:")
JUDGE_PROMPT = (
    "You grade an answer to a question about a long conversation. You are given the question, the gold "
    "answer and a generated answer. Be generous: the generated answer is CORRECT if it refers to the same "
    "thing, person, place or time as the gold answer, even if it is longer or worded differently (a date in "
    "another format, or a relative date that resolves to the same day, counts). It is WRONG if it names "
    "something else, misses the point or says it does not know.\n\nQuestion: {question}\nGold answer: {gold}\n"
    "Generated answer: {answer}\n\nReply with one word: CORRECT or WRONG.")


def _progress(items, **options):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return items
    return tqdm(items, **options)


# --------------------------------------------------------------------------------------------- feeding
def offline_memory() -> MemoryAssembler:
    """The learner's memory with its defaults, on the offline stand-in (its MiniLM embeddings included)."""
    from helpers.llm.client import make_client
    from helpers.llm.config import load_settings

    settings = load_settings("offline")
    return MemoryAssembler(client=make_client(settings), settings=settings)


def takes_created_at(memory: Any) -> bool:
    """Does ``memory.remember`` accept a ``created_at`` keyword (a turn's own time)?"""
    try:
        parameters = inspect.signature(memory.remember).parameters
    except (TypeError, ValueError):
        return False
    return "created_at" in parameters


def ingest(memory: Any, turns: Sequence[ld.Turn]) -> tuple[list[tuple[int, list[dict]]], float]:
    """Feed every turn as a session would (forget what leaves the window, then remember the turn), then make
    the memory ready to search (one ``build``, which embeds what is queued). Returns (window, seconds)."""
    dated = takes_created_at(memory)
    size = int(getattr(memory, "window_turns", 6))
    window: list[tuple[int, list[dict]]] = []
    started = time.perf_counter()

    def trim() -> None:
        nonlocal window
        if len(window) > size:
            memory.forget(window[:-size])
            window = window[-size:]

    for turn in turns:
        trim()
        if dated and turn.created_at is not None:
            memory.remember(turn.turn_id, turn.messages, created_at=turn.created_at)
        else:
            memory.remember(turn.turn_id, turn.messages)
        window.append((turn.turn_id, turn.messages))
    trim()
    memory.build(SYSTEM_PROMPT, window, "What did we talk about in our conversations?", budget=None)
    return window, time.perf_counter() - started


# --------------------------------------------------------------------------------------------- scoring
def context_of(messages: Sequence[dict]) -> str:
    """Every message's text (content parts, tool-call arguments and ``name`` included), ``normal``-ised."""
    parts = []
    for m in messages:
        if m.get("name"):
            parts.append(str(m["name"]))
        parts.append(tokens.content_text(m.get("content")))
        parts += [str((c.get("function") or {}).get("arguments", "")) for c in m.get("tool_calls") or []]
    return ld.normal("\n".join(parts))


@dataclass
class Row:
    """One question under one strategy at one budget."""

    conversation: int
    half: str
    category: int
    strategy: str
    budget: int | None
    found: list[bool]
    date_ok: bool | None  # temporal questions only: every evidence line's session date is in the context
    tokens: int
    full: int

    @property
    def recall(self) -> float:
        return sum(self.found) / len(self.found)


@dataclass
class Result:
    """Everything one run measured."""

    rows: list[Row] = field(default_factory=list)
    ingest: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))  # half -> (turns, s)
    build_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # half -> ms per build
    largest_ms: dict[str, tuple[int, list[float]]] = field(default_factory=dict)  # half -> (turns, ms) of largest
    full_tokens: dict[int, int] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)  # half -> questions without known evidence
    warnings: Counter = field(default_factory=Counter)
    over_budget: list[str] = field(default_factory=list)
    contexts: list[dict] = field(default_factory=list)  # kept for --answers
    dated: bool = False


class Baselines:
    """BM25 and cosine rankings over every dialog line of one conversation."""

    def __init__(self, conversation: ld.Conversation, embed=None):
        self.lines = list(conversation.lines)
        texts = [line.rendered() for line in self.lines]
        self.bm25 = ld.BM25(texts)
        self._embed = embed or _local_embed
        self.vectors = self._embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)

    def cosine_rankings(self, questions: Sequence[str]) -> list[list[int]]:
        """Line indices by cosine similarity to each question, best first."""
        if not questions or not self.lines:
            return [[] for _ in questions]
        scores = self._embed(list(questions)) @ self.vectors.T
        return [sorted(range(len(row)), key=lambda i: (-row[i], i)) for row in scores.tolist()]


def _local_embed(texts: list[str]) -> np.ndarray:
    from helpers.retrieval import embeddings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few lines are longer than MiniLM reads: the baseline reads their start
        vectors = embeddings.local_embed(texts)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


def baseline_context(system: list[dict], baselines: Baselines, ranking: Sequence[int], question: dict,
                     budget: int | None) -> list[dict]:
    """A baseline's messages: its best lines until ``budget`` is full."""
    return ld.fill_lines(system, baselines.lines, ranking, question, budget, tokens.count_message,
                         tokens.count_text, tokens.REPLY_PRIMING)


def evaluate(conversation: ld.Conversation, budgets: Sequence[int] = BUDGETS, *, result: Result | None = None,
             memory: Any = None, embed=None, keep_contexts: tuple[int, Sequence[str]] | None = None,
             show_progress: bool = True) -> Result:
    """Feed one conversation, ask every question under every strategy and budget; rows added to ``result``."""
    result = result if result is not None else Result()
    half = conversation.half
    memory = memory if memory is not None else offline_memory()
    result.dated = takes_created_at(memory)
    turns = ld.conversation_turns(conversation)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        window, seconds = ingest(memory, turns)
        result.ingest[half].append((len(turns), seconds))
        baselines = Baselines(conversation, embed)
        system = [{"role": "system", "content": SYSTEM_PROMPT}]
        every = system + [m for turn in turns for m in turn.messages]
        lines = conversation.by_id
        asked = [q for q in conversation.questions if q.evidence]
        result.skipped[half] += len(conversation.questions) - len(asked)
        cosine = baselines.cosine_rankings([q.text for q in asked])
        timings: list[float] = []
        items = _progress(list(zip(asked, cosine)), desc=f"conversation {conversation.id}", leave=False,
                          disable=not show_progress)
        for question, cosine_ranking in items:
            ask = {"role": "user", "content": question.text}
            full = tokens.count_request(every + [ask])
            result.full_tokens[conversation.id] = full
            bm25_ranking = baselines.bm25.ranking(question.text)

            def score(strategy: str, budget: int | None, messages: list[dict]) -> None:
                text = context_of(messages)
                used = tokens.count_request(list(messages) + [ask])
                if budget is not None and used > budget:
                    result.over_budget.append(f"{strategy} at {budget}: {used} tokens (conversation "
                                              f"{conversation.id})")
                date_ok = None
                if question.category == 2:
                    dates = {lines[e].date for e in question.evidence if lines[e].date}
                    date_ok = all(ld.date_in_context(d, text) for d in dates) if dates else None
                result.rows.append(Row(conversation.id, half, question.category, strategy, budget,
                                       ld.evidence_found(question, lines, text), date_ok, used, full))
                if keep_contexts and question.category != 5 and strategy in keep_contexts[1] \
                        and budget in (keep_contexts[0], None):
                    result.contexts.append({"conversation": conversation.id, "half": half, "strategy": strategy,
                                            "category": question.category, "question": question.text,
                                            "answer": question.answer, "messages": list(messages)})

            for budget in budgets:
                started = time.perf_counter()
                assembly = memory.build(SYSTEM_PROMPT, window, question.text, budget=budget)
                timings.append(1000 * (time.perf_counter() - started))
                score("hybrid", budget, assembly.messages)
                plain = assemble_context(SYSTEM_PROMPT, window, question.text, budget=budget)
                score("window", budget, plain.messages)
                score("BM25", budget, baseline_context(system, baselines, bm25_ranking, ask, budget))
                score("cosine", budget, baseline_context(system, baselines, cosine_ranking, ask, budget))
            score("full history", None, every)
    result.build_ms[half] += timings
    if len(turns) >= result.largest_ms.get(half, (0, []))[0]:
        result.largest_ms[half] = (len(turns), timings)
    for w in seen:
        result.warnings[f"{w.category.__name__}: {str(w.message).splitlines()[0][:120]}"] += 1
    return result


def long_history_ms(conversations: Sequence[ld.Conversation], target: int = 700, budgets: Sequence[int] = (900,),
                    questions: int = 200) -> tuple[int, float, list[float], list[int]]:
    """Context time on a longer history than any one conversation: the conversations' turns fed end to end (turn
    ids continuing, each with its own date) until there are at least ``target``, then up to ``questions`` of their
    questions built at each budget. Returns (turns fed, ingest seconds, ms of each build)."""
    turns: list[ld.Turn] = []
    asked: list[str] = []
    fed: list[int] = []
    for conversation in conversations:
        fed.append(conversation.id)
        turns += [replace(turn, turn_id=len(turns) + n) for n, turn in enumerate(ld.conversation_turns(conversation))]
        asked += [q.text for q in conversation.questions if q.evidence]
        if len(turns) >= target:
            break
    memory = offline_memory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        window, seconds = ingest(memory, turns)
        timings = []
        for question in asked[:questions]:
            for budget in budgets:
                started = time.perf_counter()
                memory.build(SYSTEM_PROMPT, window, question, budget=budget)
                timings.append(1000 * (time.perf_counter() - started))
    return len(turns), seconds, timings, fed


def long_history_line(conversations: Sequence[ld.Conversation], target: int, budgets: Sequence[int]) -> str:
    turns, seconds, ms, fed = long_history_ms(conversations, target, budgets)
    return (f"\nLonger history ({turns} turns, conversations {', '.join(map(str, fed))} fed end "
            f"to end): ingest {turns / seconds:.0f} turns/s; one question's context p50 {_percentile(ms, 50):.1f} "
            f"ms, p95 {_percentile(ms, 95):.1f} ms over {len(ms)} builds at {', '.join(map(str, budgets))} tokens")


# --------------------------------------------------------------------------------------------- reports
GROUPS = {"1-4": (1, 2, 3, 4), **{str(c): (c,) for c in ld.CATEGORIES}}


def summarise(rows: Sequence[Row], half: str, strategy: str, budget: int | None, group: str = "1-4") -> dict | None:
    """Recall %, all-evidence %, dates % (temporal), tokens % of full history over one cell's questions."""
    chosen = [r for r in rows if r.half == half and r.strategy == strategy and r.category in GROUPS[group]
              and (r.budget == budget or strategy == "full history")]
    if not chosen:
        return None
    temporal = [r.date_ok for r in chosen if r.category == 2 and r.date_ok is not None]
    return {"questions": len(chosen),
            "recall %": 100 * statistics.fmean(r.recall for r in chosen),
            "all %": 100 * statistics.fmean(all(r.found) for r in chosen),
            "dates %": 100 * statistics.fmean(temporal) if temporal else None,
            "tokens %": 100 * statistics.fmean(r.tokens / r.full for r in chosen),
            "tokens": statistics.fmean(r.tokens for r in chosen)}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"


def halves_in(rows: Sequence[Row]) -> list[str]:
    """The halves present, tuning first."""
    return [h for h in ("tuning", "held-out", "other") if any(r.half == h for r in rows)]


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def report(result: Result, budgets: Sequence[int] = BUDGETS) -> str:
    """Every table, in Markdown, as one text (printed by ``main``)."""
    out: list[str] = []
    rows = result.rows
    for half in halves_in(rows):
        ids = sorted({r.conversation for r in rows if r.half == half})
        questions = sum(1 for r in rows if r.half == half and r.strategy == "full history")
        full = summarise(rows, half, "full history", None, "1-4") or summarise(rows, half, "full history", None, "5")
        out.append(f"\n### {half} half: conversations {', '.join(map(str, ids))} ({questions} questions with "
                   f"evidence, {result.skipped[half]} without; full history {full['tokens']:,.0f} tokens a "
                   "question on average)\n")
        out.append("| strategy | budget | recall 1-4 | all evidence 1-4 | temporal: dates | tokens % of full | "
                   "recall 5 (adversarial) |")
        out.append("|---|---|---|---|---|---|---|")
        for strategy in STRATEGIES:
            for budget in ([None] if strategy == "full history" else budgets):
                s = summarise(rows, half, strategy, budget)
                if s is None:
                    continue
                five, temporal = summarise(rows, half, strategy, budget, "5"), summarise(rows, half, strategy, budget, "2")
                out.append(f"| {strategy} | {'–' if budget is None else f'{budget:,}'} | {_pct(s['recall %'])} | "
                           f"{_pct(s['all %'])} | {_pct(temporal['dates %'] if temporal else None)} | "
                           f"{s['tokens %']:.1f}% ({s['tokens']:,.0f}) | {_pct(five['recall %'] if five else None)} |")
        out.append(f"\n{half} half, evidence recall by category (all-evidence rate in brackets):\n")
        names = [f"{c} {ld.CATEGORIES[c]}" for c in ld.CATEGORIES]
        out.append("| strategy | budget | " + " | ".join(names) + " |")
        out.append("|---|---|" + "---|" * len(names))
        for strategy in STRATEGIES:
            for budget in ([None] if strategy == "full history" else budgets):
                cells = []
                for c in ld.CATEGORIES:
                    s = summarise(rows, half, strategy, budget, str(c))
                    cells.append("–" if s is None else f"{s['recall %']:.1f}% ({s['all %']:.0f}%) n={s['questions']}")
                out.append(f"| {strategy} | {'–' if budget is None else f'{budget:,}'} | " + " | ".join(cells) + " |")
        turns = sum(n for n, _ in result.ingest[half])
        seconds = sum(s for _, s in result.ingest[half])
        ms = result.build_ms[half]
        big_turns, big_ms = result.largest_ms.get(half, (0, []))
        out.append(f"\n{half} half, hybrid speed: ingest {turns / seconds:.0f} turns/s ({turns} turns in "
                   f"{seconds:.1f} s, summary, profile and embedding included); one question's context "
                   f"p50 {_percentile(ms, 50):.1f} ms, p95 {_percentile(ms, 95):.1f} ms over {len(ms)} builds "
                   f"(largest conversation, {big_turns} turns: p50 {_percentile(big_ms, 50):.1f} ms, "
                   f"p95 {_percentile(big_ms, 95):.1f} ms)")
    if result.over_budget:
        out.append(f"\nOVER BUDGET ({len(result.over_budget)}): " + "; ".join(result.over_budget[:5]))
    else:
        out.append("\nNo strategy exceeded its budget (stand-in token count, question included).")
    out.append("Turn times: " + ("each turn was given its session date (remember(created_at=...))." if result.dated
                                 else "remember() takes no created_at: the session date is only in the text."))
    if result.warnings:
        out.append("Warnings from the memory: " + "; ".join(f"{k} (x{n})" for k, n in result.warnings.most_common(5)))
    return "\n".join(out)


def readme_table(result: Result, budgets: Sequence[int] = BUDGETS) -> str:
    """The compact table for the README: recall over categories 1-4 per budget, each half."""
    mid = 900 if 900 in budgets else budgets[len(budgets) // 2]
    head = ("| half | strategy | " + " | ".join(f"recall @{b:,}" for b in budgets)
            + f" | all evidence @{mid:,} | temporal dates @{mid:,} | tokens % @{mid:,} |")
    out = [head, "|---|---|" + "---|" * (len(budgets) + 3)]
    for half in halves_in(result.rows):
        for strategy in STRATEGIES:
            cells = []
            for b in budgets:
                s = summarise(result.rows, half, strategy, b)
                cells.append(_pct(s["recall %"]) if s else "–")
            s, t = summarise(result.rows, half, strategy, mid), summarise(result.rows, half, strategy, mid, "2")
            if s is None:
                continue
            out.append(f"| {half} | {strategy} | " + " | ".join(cells)
                       + f" | {_pct(s['all %'])} | {_pct(t['dates %'] if t else None)} | {s['tokens %']:.1f}% |")
    return "\n".join(out)


def plot(result: Result, path: Path, budgets: Sequence[int] = BUDGETS) -> None:
    """Evidence recall (categories 1-4) against budget, one line per strategy, one panel per half."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    halves = [h for h in halves_in(result.rows) if h != "other"] or halves_in(result.rows)
    fig, axes = plt.subplots(1, len(halves), figsize=(5.5 * len(halves), 4), sharey=True, squeeze=False)
    for ax, half in zip(axes[0], halves):
        for strategy in STRATEGIES:
            if strategy == "full history":
                s = summarise(result.rows, half, strategy, None)
                if s:
                    ax.axhline(s["recall %"], color="grey", linestyle=":", label="full history")
                continue
            values = [summarise(result.rows, half, strategy, b) for b in budgets]
            ax.plot(list(budgets), [v["recall %"] if v else np.nan for v in values], marker="o",
                    linewidth=2 if strategy == "hybrid" else 1.2, label=strategy)
        ids = sorted({r.conversation for r in result.rows if r.half == half})
        ax.set(xscale="log", xlabel="token budget", ylim=(0, 105),
               title=f"{half} half (conversations {', '.join(map(str, ids))})")
        ax.set_xticks(list(budgets), [f"{b:,}" for b in budgets])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("evidence recall, categories 1-4 (%)")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, 0.95), ncol=2)
    fig.suptitle("LoCoMo: evidence in the context", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -------------------------------------------------------------------------------------- answer accuracy
def answer_model() -> tuple[Any, Any] | None:
    """(client, settings) of the configured model, or None when only the offline stand-in is available."""
    from helpers.llm.client import make_client
    from helpers.llm.config import load_settings

    try:
        settings = load_settings()
    except Exception as exc:  # a broken configuration counts as none, with its reason
        print(f"answer mode: the model settings could not be read ({type(exc).__name__}: {exc})")
        return None
    if settings.backend == "offline":
        return None
    return make_client(settings), settings


def _reply(messages: list[dict], client: Any, settings: Any, max_tokens: int) -> str:
    from helpers.llm.client import chat

    response = chat(messages, client=client, settings=settings, max_tokens=max_tokens, temperature=0)
    return (response.choices[0].message.content or "").strip()


JUDGE_CONTROLS = 4  # right and wrong answers of known verdict the judge grades first (see ``judge_passes``)


def judge_passes(items: Sequence[dict], client: Any, settings: Any) -> tuple[bool, str]:
    """Can the judge tell a right answer from a wrong one? It grades ``JUDGE_CONTROLS`` questions twice: with the
    gold answer itself (must be CORRECT) and with another question's gold answer (must be WRONG). A model too
    weak for this says CORRECT to everything, and its score would mean nothing. Returns (passed, what it did)."""
    asked = list({item["question"]: item for item in items}.values())
    controls = []
    for n, item in enumerate(asked[:JUDGE_CONTROLS]):
        other = next((o["answer"] for o in asked[n + 1:] + asked[:n] if ld.normal(o["answer"]) != ld.normal(item["answer"])),
                     None)
        controls.append((item, item["answer"], True))
        if other is not None:
            controls.append((item, other, False))
    right = 0
    for item, answer, expected in controls:
        try:
            verdict = _reply([{"role": "user", "content": JUDGE_PROMPT.format(
                question=item["question"], gold=item["answer"], answer=answer)}], client, settings, 8)
        except Exception:  # a failed request fails its control
            continue
        right += judged_correct(verdict) == expected
    return right == len(controls), f"{right} of {len(controls)} control verdicts right"


def judged_correct(verdict: str) -> bool:
    """The judge's reply read as a verdict: CORRECT, and not INCORRECT."""
    return "CORRECT" in verdict.upper() and "INCORRECT" not in verdict.upper()


def answer_accuracy(result: Result, client: Any, settings: Any, limit: int | None = None) -> str:
    """Ask the model each kept question from its context; token F1 and judge score per half and strategy.

    A request that fails (the server refused it, e.g. a context larger than its window) scores as a wrong answer
    and is counted in the table, with the first such error. The judge's column is printed only when the judge
    passes ``judge_passes``; otherwise the table says why it is left out."""
    scores: dict[tuple[str, str], list[tuple[float, bool]]] = defaultdict(list)
    failed: Counter = Counter()
    first_error: dict[tuple[str, str], str] = {}
    items = result.contexts if limit is None else _limited(result.contexts, limit)
    judge_ok, control = judge_passes(items, client, settings)
    for item in _progress(items, desc="answers"):
        key = (item["half"], item["strategy"])
        ask = {"role": "user", "content": ANSWER_PROMPT.format(question=item["question"])}
        answer, correct = "", False
        try:
            answer = _reply(item["messages"] + [ask], client, settings, 64)
            if judge_ok:
                correct = judged_correct(_reply([{"role": "user", "content": JUDGE_PROMPT.format(
                    question=item["question"], gold=item["answer"], answer=answer)}], client, settings, 8))
        except Exception as exc:  # one failed request is a wrong answer, not a lost run
            failed[key] += 1
            first_error.setdefault(key, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
        scores[key].append((ld.token_f1(answer, item["answer"], item["category"]), correct))
    out = [f"\nAnswer accuracy, categories 1-4 (model {settings.chat_model}):\n",
           "| half | strategy | questions | failed requests | token F1 | LLM judge |", "|---|---|---|---|---|---|"]
    for (half, strategy), values in sorted(scores.items()):
        judged = f"{100 * statistics.fmean(c for _, c in values):.1f}" if judge_ok else "–"
        out.append(f"| {half} | {strategy} | {len(values)} | {failed[(half, strategy)]} | "
                   f"{100 * statistics.fmean(f for f, _ in values):.1f} | {judged} |")
    for (half, strategy), error in sorted(first_error.items()):
        out.append(f"\n{half}, {strategy}: {failed[(half, strategy)]} request(s) failed, each scored as wrong; "
                   f"the first: {error}")
    if not judge_ok:
        out.append(f"\nThe judge column is left out: the model could not tell a right answer from a wrong one "
                   f"({control}; it must grade each question's own gold answer CORRECT and another question's "
                   f"WRONG). A larger model is needed as the judge; token F1 needs none.")
    out.append("\nPublished LLM-judge scores on LoCoMo (mem0 paper, categories 1-4, GPT-4o-mini): "
               + ", ".join(f"{k} {v}" for k, v in PUBLISHED_JUDGE.items()))
    return "\n".join(out)


def _limited(contexts: list[dict], limit: int) -> list[dict]:
    """The first ``limit`` questions of each conversation, every strategy's context of them."""
    seen: dict[int, list[str]] = defaultdict(list)
    out = []
    for item in contexts:
        asked = seen[item["conversation"]]
        if item["question"] not in asked:
            if len(asked) >= limit:
                continue
            asked.append(item["question"])
        out.append(item)
    return out


# --------------------------------------------------------------------------------------------- command
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the unzipped LoCoMo folder (holds locomo10_v2/<id>.json)")
    parser.add_argument("--conversations", type=int, nargs="+", help="conversation ids (default: all ten)")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--quick", action="store_true", help="tuning half, first two conversations, 900 only")
    parser.add_argument("--answers", action="store_true", help="answer accuracy with a model (needs one)")
    parser.add_argument("--answer-budget", type=int, default=900)
    parser.add_argument("--answer-strategies", nargs="+", default=["hybrid", "full history"])
    parser.add_argument("--answer-limit", type=int, default=None, help="questions per conversation in --answers")
    parser.add_argument("--long", type=int, default=700, metavar="TURNS",
                        help="also time one question's context on this many turns (conversations fed end to end; "
                             "0: skip)")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--plot", default=str(Path(__file__).resolve().parent / "locomo_eval.png"))
    parser.add_argument("--json", help="also write every row to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    model = None
    if args.answers:
        model = answer_model()
        if model is None:
            print("--answers needs a model: set NVIDIA_API_KEY, or configure a server (WORKSHOP_BACKEND, "
                  "WORKSHOP_BASE_URL; see helpers.llm.config). Nothing was run.")
            return 0
    ids = args.conversations
    budgets = list(args.budgets)
    if args.quick:
        ids, budgets = list(ld.TUNING[:2]) if ids is None else ids[:2], [900]
    conversations = ld.load_folder(args.data, ids)
    result = Result()
    keep = (args.answer_budget, tuple(args.answer_strategies)) if args.answers else None
    if keep and args.answer_budget not in budgets:
        budgets.append(args.answer_budget)
    started = time.perf_counter()
    for conversation in _progress(conversations, desc="conversations"):
        evaluate(conversation, budgets, result=result, keep_contexts=keep)
        print(f"  conversation {conversation.id} ({conversation.half}, {len(conversation.lines)} lines) done "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    print(report(result, budgets))
    if args.long and not args.quick:
        print(long_history_line(conversations, args.long, budgets))
    print("\nFor the README (evidence recall over categories 1-4; LoCoMo, snap-research/locomo):\n")
    print(readme_table(result, budgets))
    if not args.no_plot:
        plot(result, Path(args.plot), budgets)
        print(f"\nplot saved to {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in result.rows]), encoding="utf-8")
    if model is not None:
        print(answer_accuracy(result, *model, limit=args.answer_limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How well retrieval works: recall@k, MRR and the unanswerable questions, on labelled questions.

``load_eval_questions()`` reads ``data/retrieval_eval.jsonl``: each row a question and the ids of the
entries that answer it (``[]`` when the campus data cannot answer it). ``evaluate`` runs them through a
``KnowledgeBase`` with its threshold applied, as in real use; ``benchmarks/retrieval_eval.py`` prints the
threshold sweep that chose ``DEFAULT_THRESHOLDS``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from helpers.retrieval.knowledge import KnowledgeBase
from helpers.retrieval.knowledge_files import KnowledgeBaseError, read_jsonl

EVAL_FILE = "retrieval_eval.jsonl"


def load_eval_questions(path: str | Path | None = None) -> list[dict]:
    """Read the retrieval test questions: rows of {"question": str, "relevant": [ids]}."""
    path, rows = read_jsonl(path, EVAL_FILE)
    out = []
    for lineno, row in rows:
        question, relevant = row.get("question"), row.get("relevant")
        if not isinstance(question, str) or not question.strip():
            raise KnowledgeBaseError(f"{path}, line {lineno}: 'question' must be a non-empty string")
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise KnowledgeBaseError(f"{path}, line {lineno}: "
                                     "'relevant' must be a list of ids ([] if unanswerable)")
        out.append({"question": question, "relevant": relevant})
    return out


def evaluate(kb: KnowledgeBase, eval_rows: Sequence[dict], k: int = 3,
             threshold: float | None = None) -> dict:
    """Retrieval quality on labelled questions, with the threshold applied as in real use.

    For questions with relevant ids: ``recall_at_k`` = share of a question's relevant
    ids among its returned hits, averaged; ``hit_rate_at_k`` = share of questions with
    at least one relevant hit; ``mrr`` = mean of 1/rank of the first relevant hit (0 if
    none). Questions with ``relevant == []`` are scored apart: ``unanswerable_correct``
    counts those that correctly returned nothing.
    """
    rows = list(eval_rows)
    if not rows:
        raise KnowledgeBaseError("no evaluation questions given")
    known = {entry.id for entry in kb.entries}
    for row in rows:
        unknown = [r for r in row["relevant"] if r not in known]
        if unknown:
            raise KnowledgeBaseError(f"question {row['question']!r} names unknown ids {unknown}")
    results = kb.search_many([row["question"] for row in rows], k=k, threshold=threshold)
    recalls, ranks, misses = [], [], []
    answerable_empty = unanswerable_correct = 0
    for row, hits in zip(rows, results, strict=True):
        got = [hit.id for hit in hits]
        relevant = set(row["relevant"])
        if not relevant:
            unanswerable_correct += not got
            if got:
                misses.append({"question": row["question"], "relevant": [], "got": got})
            continue
        answerable_empty += not got
        recalls.append(len(relevant.intersection(got)) / len(relevant))
        ranks.append(next((1.0 / (i + 1) for i, g in enumerate(got) if g in relevant), 0.0))
        if not relevant.intersection(got):
            misses.append({"question": row["question"], "relevant": sorted(relevant), "got": got})
    answerable, unanswerable = len(recalls), len(rows) - len(recalls)
    return {
        "model": kb.model, "k": k, "threshold": kb.threshold if threshold is None else threshold,
        "answerable": answerable,
        "recall_at_k": float(np.mean(recalls)) if recalls else float("nan"),
        "hit_rate_at_k": float(np.mean([r > 0 for r in ranks])) if ranks else float("nan"),
        "mrr": float(np.mean(ranks)) if ranks else float("nan"),
        "answerable_empty": answerable_empty,
        "unanswerable": unanswerable,
        "unanswerable_correct": unanswerable_correct,
        "misses": misses,
    }

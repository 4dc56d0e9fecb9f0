"""Retrieval quality and embedding speed on the campus knowledge base.

Prints recall@k, MRR and how many unanswerable questions correctly got no hits,
a threshold sweep (to choose DEFAULT_THRESHOLDS in helpers/retrieval/knowledge.py), and
cold/warm embedding times. Always runs the local MiniLM model, directly and
through the offline stand-in client; also runs NVIDIA NIM when NVIDIA_API_KEY is set.

    python benchmarks/retrieval_eval.py [--k 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from helpers.retrieval.embeddings import LOCAL_MODEL_NAME, local_embed  # noqa: E402
from helpers.retrieval.knowledge import KnowledgeBase  # noqa: E402
from helpers.retrieval.knowledge_eval import evaluate, load_eval_questions  # noqa: E402
from helpers.retrieval.knowledge_files import load_knowledge_base  # noqa: E402

NIM_EMBEDDING_MODEL = "nvidia/nv-embedqa-e5-v5"


def sweep(kb: KnowledgeBase, rows: list[dict], k: int) -> None:
    """For each threshold: answerable questions with a relevant hit, unanswerable with none."""
    results = kb.search_many([r["question"] for r in rows], k=k, threshold=-1.0)
    answerable = sum(1 for r in rows if r["relevant"])
    print(f"  threshold sweep (k={k}): hit = answerable with a relevant id in top {k}; "
          "empty = unanswerable with no hits")
    for threshold in np.arange(0.16, 0.52, 0.02):
        hit = empty = 0
        for row, hits in zip(rows, results, strict=True):
            kept = [h.id for h in hits if h.score >= threshold]
            if row["relevant"]:
                hit += bool(set(kept) & set(row["relevant"]))
            else:
                empty += not kept
        mark = "  <- default" if abs(threshold - kb.threshold) < 1e-9 else ""
        print(f"    {threshold:.2f}  hit {hit:2d}/{answerable}  empty {empty}/{len(rows) - answerable}"
              f"  total {hit + empty}/{len(rows)}{mark}")


def report(label: str, kb: KnowledgeBase, rows: list[dict], k: int) -> None:
    start = time.perf_counter()
    result = evaluate(kb, rows, k=k)
    elapsed = time.perf_counter() - start
    print(f"\n== {label}: model {kb.model}, threshold {result['threshold']:.2f}")
    print(f"  recall@{k}            {result['recall_at_k']:.3f}  (share of relevant ids retrieved, "
          f"{result['answerable']} answerable questions)")
    print(f"  hit rate@{k}          {result['hit_rate_at_k']:.3f}")
    print(f"  MRR                 {result['mrr']:.3f}")
    print(f"  unanswerable empty  {result['unanswerable_correct']}/{result['unanswerable']}")
    print(f"  answerable but empty {result['answerable_empty']}")
    print(f"  {len(rows)} questions searched in {elapsed:.2f} s ({1000 * elapsed / len(rows):.1f} ms/question)")
    for miss in result["misses"]:
        print(f"  miss: {miss['question']!r} wanted {miss['relevant']} got {miss['got']}")
    sweep(kb, rows, k)


def timed_build(entries, cache: Path, **kwargs) -> KnowledgeBase:
    kb = KnowledgeBase(entries, cache_path=cache, **kwargs)
    state = "warm cache" if kb.from_cache else "cold cache"
    print(f"  build with {state}: {kb.embed_seconds:.3f} s for {len(kb)} passages")
    return kb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    entries, rows = load_knowledge_base(), load_eval_questions()
    print(f"{len(entries)} entries, {len(rows)} questions "
          f"({sum(1 for r in rows if not r['relevant'])} unanswerable)")

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        print("\n-- local MiniLM (int8 ONNX), called directly")
        start = time.perf_counter()
        local_embed(["warm up"])
        print(f"  model load + first text: {time.perf_counter() - start:.3f} s")
        timed_build(entries, cache)
        kb = timed_build(entries, cache)
        start = time.perf_counter()
        for _ in range(20):
            kb.search("When does the AI Club meet?")
        print(f"  one search (embed query + score): {1000 * (time.perf_counter() - start) / 20:.1f} ms")
        report("local", kb, rows, args.k)

        try:
            from helpers.standin.server import make_offline_client
        except ImportError as exc:
            print(f"\n(offline stand-in not available: {exc})")
        else:
            print("\n-- the same model behind the offline stand-in (openai client, /v1/embeddings)")
            client = make_offline_client()
            offline_kb = timed_build(entries, cache / "offline", client=client, model=LOCAL_MODEL_NAME, progress=False)
            same = np.allclose(offline_kb.matrix, kb.matrix, atol=1e-5)
            print(f"  vectors identical to the direct path: {same}")

        if os.environ.get("NVIDIA_API_KEY"):
            import openai

            from helpers.llm.config import NIM_BASE_URL

            print(f"\n-- NVIDIA NIM {NIM_EMBEDDING_MODEL}")
            client = openai.OpenAI(api_key=os.environ["NVIDIA_API_KEY"], base_url=NIM_BASE_URL)
            nim_kb = timed_build(entries, cache / "nim", client=client, model=NIM_EMBEDDING_MODEL, progress=False)
            timed_build(entries, cache / "nim", client=client, model=NIM_EMBEDDING_MODEL)
            report("NIM", nim_kb, rows, args.k)
        else:
            print("\n(NVIDIA_API_KEY not set: NIM not measured)")


if __name__ == "__main__":
    main()

"""How long the first recall of a restored session takes, with its vectors stored beside the turns.

Builds a 10,000-turn session (every turn one statement the recall index embeds, with a short
assistant reply; the window keeps the newest 4 turns, the rest are dropped turns), gives its recall
index one vector per piece, saves it to a session store and, in each run, in the same process:

  restore   store.load(...): header, turn rows and recall_vectors rows read, vectors handed to the
            recall index (``import_stored_vectors``)
  first     the restored index's first search (embeds the question only: no turn is pending)
  warm      a later search on the same index with another question (its vectors already in memory)

The history's vectors are SYNTHETIC (random unit vectors of the local model's size, 384), so
building 10,000 turns takes seconds; every question is embedded by the local model
(all-MiniLM-L6-v2 through the offline stand-in's /v1/embeddings), in the first and the warm row
alike. What a restore cost before vectors were stored - embedding every piece again - is
measured with the local model on a smaller sample (--sample turns) and scaled to the full size.

A last table times one warm search against indexes of growing size (synthetic vectors, one piece
per turn), to show up to which size a per-user brute-force search (one matrix product plus a
sort) is fast enough; every search there also embeds its question (about 10 ms). Times are
wall-clock (time.perf_counter) on a shared machine; the table shows the median of --runs runs,
with min and max. SQLite always; PostgreSQL as well when --dsn (or WORKSHOP_TEST_PG_DSN) is given.

Brute force (the whole matrix times the question, in numpy) grows linearly: measured here about
50 ms at 10,000 pieces, 170 ms at 50,000 and 600 ms at 200,000. Up to some tens of thousands of
pieces per user it is fast enough for a chat turn. Past that, or to search across many users at
once, the vectors belong in an approximate nearest-neighbour index: on PostgreSQL, pgvector's HNSW
index (a ``vector(384)`` column, ``CREATE INDEX ... USING hnsw (embedding vector_cosine_ops)``,
queried with ``WHERE user_id = ...``), or a per-user FAISS/hnswlib index kept beside the store.
Run: python benchmarks/recall_restore.py [--turns N] [--runs R] [--sample S] [--dsn DSN]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.llm.config import load_settings  # noqa: E402
from helpers.memory.assembler import MemoryAssembler  # noqa: E402
from helpers.memory.recall_index import RecallIndex  # noqa: E402
from helpers.chat.chat_session import ChatSession  # noqa: E402
from helpers.sessions.session_store import SQLiteSessionStore  # noqa: E402
from helpers.standin.server import make_offline_client  # noqa: E402

DIM = 384  # all-MiniLM-L6-v2
WINDOW = 4
PLACES = ["the library", "Marsh House", "the gym", "the lab", "the union", "the pool", "the cafe"]
THINGS = ["locker", "bike", "laptop", "badge", "notebook", "umbrella", "charger", "mug"]
QUESTIONS = ["Where did I leave my umbrella?", "What is my locker number?", "Which lab do I work in?",
             "Where is my bike parked?", "What did I say about the cafe?", "Where is my charger?"]


def statement(n: int) -> str:
    """The user's words in turn ``n``: a varied, substantive statement."""
    thing, place = THINGS[n % len(THINGS)], PLACES[n * 7 % len(PLACES)]
    return f"My {thing} number {n} is kept in {place}, shelf {n % 97}."


def turn(n: int) -> list[dict]:
    return [{"role": "user", "content": statement(n)}, {"role": "assistant", "content": "Noted."}]


def memory(client, settings) -> MemoryAssembler:
    """Recall only (no summary, no profile), embedding through the local model."""
    recall = RecallIndex(client=client, settings=settings)
    return MemoryAssembler(summariser=False, profile=False, recall=recall)


def build_session(turns: int, client, settings, rng: np.random.Generator) -> ChatSession:
    """A ``turns``-turn session built from its snapshot, its recall index holding synthetic vectors."""
    remembered = memory(client, settings)  # its state: one part per turn (MemoryAssembler.state)
    for n in range(turns):
        remembered.recall.add(n, turn(n))
    kept = list(range(max(turns - WINDOW, 0), turns))
    state = ChatSession(client=client, settings=settings, memory=memory(client, settings)).snapshot()
    state.update(
        messages=[m for n in kept for m in turn(n)], turn_ids=kept, next_id=turns,
        turns=[{"turn_id": n, "question": statement(n), "answer": "Noted.", "steps": 1}
               for n in range(turns)],
        dropped=[{"turn_id": n, "messages": turn(n), "tokens": 30} for n in range(turns) if n not in kept])
    state["memory"] = remembered.state()
    session = ChatSession.from_snapshot(state, client=client, settings=settings,
                                        memory=memory(client, settings))
    recall = session.memory.recall
    vectors = {n: unit(rng, len(recall.texts[n])) for n in recall.texts}
    assert recall.import_vectors(recall.embedding_model(), vectors) == len(recall.texts)
    return session


def unit(rng: np.random.Generator, rows: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def measure(store, turns: int, runs: int, client, settings) -> dict[str, list[float]]:
    """restore / first / warm times (seconds) over ``runs`` restores of the stored session."""
    times: dict[str, list[float]] = {"restore": [], "first": [], "warm": []}
    for run in range(runs):
        seconds, session = timed(lambda: store.load("bench", "long", client=client, settings=settings,
                                                     memory=memory(client, settings)))
        recall = session.memory.recall
        assert recall.pending == [], "the restored index should have every turn's vectors"
        times["restore"].append(seconds)
        before = recall.embed_requests
        first_q, warm_q = QUESTIONS[run % len(QUESTIONS)], QUESTIONS[(run + 1) % len(QUESTIONS)]
        times["first"].append(timed(lambda: recall.search(first_q))[0])
        times["warm"].append(timed(lambda: recall.search(warm_q))[0])
        assert recall.embed_requests - before == 2, "each search should embed its question only"
    return times


def reembed_per_turn(sample: int, client, settings) -> float:
    """Seconds per turn to embed a restored index again with the local model (the cost before)."""
    index = RecallIndex(client=client, settings=settings)
    for n in range(sample):
        index.add(n, turn(n))
    index.search(QUESTIONS[0])  # warm the model up on a query first
    index = RecallIndex(client=client, settings=settings)
    for n in range(sample):
        index.add(n, turn(n))
    seconds, _ = timed(lambda: index.search(QUESTIONS[0]))
    question, _ = timed(lambda: index.search(QUESTIONS[1]))  # a search that embeds its question only
    return (seconds - question) / sample


def scaling(sizes: list[int], client, settings, rng: np.random.Generator) -> list[tuple[int, float]]:
    """Median seconds of a warm search against indexes of ``sizes`` turns (one piece each)."""
    out = []
    for size in sizes:
        index = RecallIndex(client=client, settings=settings)
        for n in range(size):
            index.add(n, turn(n))
        index.import_vectors(index.embedding_model(), {n: unit(rng, 1) for n in range(size)})
        index.search(QUESTIONS[0])
        out.append((size, statistics.median(timed(lambda q=q: index.search(q))[0] for q in QUESTIONS[1:])))
    return out


def ms(values: list[float]) -> str:
    low, high = min(values) * 1000, max(values) * 1000
    return f"{statistics.median(values) * 1000:9.1f} ms (min {low:.1f}, max {high:.1f})"


def main() -> None:
    """Run the measurements and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sample", type=int, default=300, help="turns embedded with the local model")
    parser.add_argument("--dsn", default=os.environ.get("WORKSHOP_TEST_PG_DSN"))
    args = parser.parse_args()
    client, settings = make_offline_client(), load_settings("offline")
    rng = np.random.default_rng(7)
    seconds, session = timed(lambda: build_session(args.turns, client, settings, rng))
    pieces = sum(len(t) for t in session.memory.recall.texts.values())
    print(f"{args.turns:,} turns ({pieces:,} pieces, synthetic {DIM}-d vectors) built in {seconds:.1f} s; "
          f"questions embedded by {settings.embedding_model}")
    stores = []
    folder = tempfile.TemporaryDirectory()
    stores.append(("SQLite", SQLiteSessionStore(Path(folder.name) / "sessions.db")))
    if args.dsn:
        from helpers.core.postgres import drop_schema
        from helpers.sessions.session_store_pg import PostgresSessionStore

        drop_schema(args.dsn, "bench_recall_restore")
        stores.append(("PostgreSQL", PostgresSessionStore(args.dsn, schema="bench_recall_restore")))
    per_turn = reembed_per_turn(args.sample, client, settings)
    print(f"\nmedian of {args.runs} restores of the stored {args.turns:,}-turn session")
    print(f"{'backend':<11} {'step':<40} time")
    for name, store in stores:
        save_seconds, _ = timed(lambda: store.save("bench", "long", session))
        times = measure(store, args.turns, args.runs, client, settings)
        ratios = [f / w for f, w in zip(times["first"], times["warm"])]
        print(f"{name:<11} {'save (every vector written)':<40} {save_seconds * 1000:9.1f} ms")
        print(f"{name:<11} {'restore (turns + vectors read, imported)':<40} {ms(times['restore'])}")
        print(f"{name:<11} {'first recall after the restore':<40} {ms(times['first'])}")
        print(f"{name:<11} {'warm recall':<40} {ms(times['warm'])}")
        print(f"{name:<11} {'first / warm (same run)':<40} {statistics.median(ratios):9.2f} x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}; target <= 2)")
    print(f"{'(before)':<11} {'first recall, every piece embedded again':<40} "
          f"{per_turn * args.turns:9.1f} s  (local model: {per_turn * 1000:.2f} ms per turn over "
          f"{args.sample} turns, scaled to {args.turns:,})")
    print("\nwarm search, brute force over one user's index (synthetic vectors, one piece per turn)")
    print(f"{'turns':>9}  median search")
    for size, seconds in scaling([10_000, 50_000, 200_000], client, settings, rng):
        print(f"{size:>9,}  {seconds * 1000:9.1f} ms")
    print("brute force grows linearly with the pieces: fine per user up to some tens of thousands; past that "
          "use an ANN index\n(pgvector HNSW filtered by user_id, or FAISS/hnswlib per user)")
    for _name, store in stores:
        store.close()
    if args.dsn:
        drop_schema(args.dsn, "bench_recall_restore")
    folder.cleanup()


if __name__ == "__main__":
    main()

"""What one recall search costs as a user's history grows: 1k, 10k and 100k stored turns, three ways, one run.

    python benchmarks/recall_scale.py [--sizes 1000,10000,100000] [--queries 20] [--dsn postgresql://...]

For each size one user's history is stored in a fresh SQLite file and a fresh PostgreSQL schema, with the
session store's own tables (``helpers.sessions.store_sql``: sessions, turns, recall vectors, and the search
rows ``recall_pieces``/``recall_lines``), in sessions of 100 turns, beside a second user with a tenth as many
turns (so every query filters by user). Then the same query vectors are searched (``dense_lines``, the
ranking by meaning, k=10) by:

  sqlite brute force   the user's vectors read from SQLite and ranked in numpy (SQLite has no vector index)
  pg brute force       the user's vectors read from PostgreSQL and ranked in numpy: what the store did before
                       it searched in the database (``method="python"``; also a store without pgvector)
  pg exact             every one of the user's vectors ranked by pgvector in the database, no index
  pg hnsw              the HNSW index (m=16, ef_construction=64; ``hnsw.ef_search`` 160), ``method="hnsw"``

and the whole ``search_user_turns`` (both rankings, fused, then recall's rules across lines) on SQLite and on
PostgreSQL, beside the search as it was before those rules (``search_as_before``: the fused order, quotes of the
k turns kept). It prints the median
and p95 per search, HNSW recall@10 against the exact ranking, the HNSW build time and size, and writes
``benchmarks/recall_scale.png``.

**Scale data are random unit vectors of 384 numbers (MiniLM's size), one piece per turn, and random words** -
not text: at 100k turns embedding real text would take most of an hour. The vectors are a random linear map of
a 32-dimensional Gaussian plus noise (sentence embeddings have a low intrinsic dimension), and each question is a
stored turn's point moved a little and embedded afresh, as a question about something said. Plain uniform
directions in 384 dimensions have no near neighbours worth the name (every cosine is about 0 +- 0.05), which no
approximate index serves: ``--uniform 10000`` (the default) runs that worst case too and prints its recall. A small sanity case with real MiniLM embeddings of real sentences
(``--sanity``, on by default) checks that every method finds the sentence the question is about.

Done when: at 100k stored turns, one HNSW search is at least 10x faster than the PostgreSQL brute force in the
same run, with recall@10 >= 0.95. The exit status is 1 otherwise.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DSN_FILE = Path(os.environ.get("WORKSHOP_PG_DIR", "/tmp/agent-memory-workshop-pg")) / "dsn"
DIM, MODEL, PER_SESSION = 384, "bench/random-384", 100
WORDS = [f"w{n}" for n in range(2000)]
USER, OTHER = "scale-user", "other-user"


def default_dsn() -> str | None:
    dsn = os.environ.get("WORKSHOP_TEST_PG_DSN", "").strip()
    if not dsn and DSN_FILE.is_file():
        dsn = DSN_FILE.read_text().strip()
    return dsn or None


LATENT = 32  # the structure of the scale vectors (see the module docstring)


class Vectors:
    """Random unit vectors of DIM numbers with the structure of sentence embeddings: a random linear map of a
    LATENT-dimensional Gaussian plus isotropic noise (``uniform=True``: plain uniform directions, no structure)."""

    def __init__(self, rng: np.random.Generator, uniform: bool = False):
        self.rng, self.uniform = rng, uniform
        self.basis = rng.standard_normal((LATENT, DIM)).astype(np.float32)

    def _embed(self, latent: np.ndarray) -> np.ndarray:
        if self.uniform:
            out = self.rng.standard_normal((len(latent), DIM)).astype(np.float32)
        else:
            out = latent @ self.basis + 0.5 * self.rng.standard_normal((len(latent), DIM)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def history(self, turns: int) -> tuple[np.ndarray, list[str], np.ndarray]:
        latent = self.rng.standard_normal((turns, LATENT)).astype(np.float32)
        texts = [" ".join(self.rng.choice(WORDS, size=8)) for _ in range(turns)]
        return self._embed(latent), texts, latent

    def questions(self, latent: np.ndarray, n: int) -> list[np.ndarray]:
        """Questions about stored turns: a stored turn's latent point moved a little, embedded afresh."""
        picked = latent[self.rng.integers(0, len(latent), n)]
        return list(self._embed(picked + 0.5 * self.rng.standard_normal(picked.shape).astype(np.float32)))


def rows_of(user: str, vectors: np.ndarray, texts: list[str]):
    """The rows a save would write for these turns (one user side, one piece each), session by session."""
    sessions, turns, vector_rows, pieces, lines = [], [], [], [], []
    for n, (vector, text) in enumerate(zip(vectors, texts)):
        session, turn = f"s{n // PER_SESSION:05d}", n % PER_SESSION
        if turn == 0:
            sessions.append((user, session, 1, "{}", "", min(PER_SESSION, len(texts) - n), 0, "2026-01-01",
                             "2026-01-01"))
        quote = f'[turn {turn}] user: "{text}"'
        body = json.dumps({"kept": [], "memory": {"recall": {"quote": quote, "texts": [text]}}})
        turns.append((user, session, turn, "kept", text, body, hashlib.sha256(body.encode()).hexdigest()))
        blob = vector.astype("<f4").tobytes()
        vector_rows.append((user, session, turn, MODEL, DIM, "", blob))
        pieces.append((user, session, turn, 0, 0, 0, MODEL, DIM, blob))
        lines.append((user, session, turn, 0, quote, text))
    return sessions, turns, vector_rows, pieces, lines


SQL = {"sessions": "user_id, session_id, revision, header, title, turns, dropped, created_at, updated_at",
       "session_turns": "user_id, session_id, turn_id, state, question, body, digest",
       "recall_vectors": "user_id, session_id, turn_id, model, dim, source, vector",
       "recall_pieces": "user_id, session_id, turn_id, piece, side, answer, model, dim, vector",
       "recall_lines": "user_id, session_id, turn_id, side, quote, words"}


def load_sqlite(store, parts) -> None:
    conn = store._connection()
    conn.execute("BEGIN")
    for table, rows in zip(SQL, parts):
        cols = SQL[table]
        conn.executemany(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(cols.split(', ')))})", rows)
    conn.execute("COMMIT")


def load_postgres(store, parts) -> None:
    from helpers.sessions.pgvector import vector_text

    conn = store._conns.get()
    with conn.transaction():
        for table, rows in zip(SQL, parts):
            cols = SQL[table] + (", embedding" if table == "recall_pieces" else "")
            with conn.cursor().copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((*row, vector_text(row[-1])) if table == "recall_pieces" else row)
    conn.execute("ANALYZE")


def timed(fn, queries) -> tuple[list[float], list]:
    out, results = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(fn(q))
        out.append(time.perf_counter() - start)
    return out, results


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def search_as_before(store, user_id: str, vector, text: str, k: int = 10, min_score=None) -> dict:
    """``search_user_turns`` as it was before recall's rules across lines: the fused order, and the quotes of
    only the ``k`` turns kept (the rules read the found turns' and their neighbours')."""
    from helpers.sessions import recall_search as rs

    pool = max(rs.DEFAULT_POOL, 4 * k)
    fused = rs.fuse(rs.dense_lines(store, user_id, vector, min_score=min_score, pool=pool),
                    rs.word_lines(store, user_id, text, pool=pool))
    return rs._backend(store).quotes(rs.check_user_id(user_id), list(rs.first_turns(fused, k)))


def measure(size: int, dsn: str, queries: int, seed: int, uniform: bool = False) -> dict:
    from helpers.core.postgres import drop_schema
    from helpers.sessions.recall_search import dense_lines, dense_plan, search_user_turns
    from helpers.sessions.session_store import SQLiteSessionStore
    from helpers.sessions.session_store_pg import PostgresSessionStore

    rng = np.random.default_rng(seed + size)
    gen = Vectors(rng, uniform)
    mine, other = gen.history(size), gen.history(max(10, size // 10))
    parts = [a + b for a, b in zip(rows_of(USER, *mine[:2]), rows_of(OTHER, *other[:2]))]
    qs = gen.questions(mine[2], queries)
    words = [" ".join(rng.choice(WORDS, size=3)) for _ in range(queries)]
    result: dict = {"size": size, "uniform": uniform}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteSessionStore(Path(tmp) / "scale.db")
        start = time.perf_counter()
        load_sqlite(sqlite, parts)
        result["sqlite load s"] = time.perf_counter() - start
        result["sqlite"], _ = timed(lambda q: dense_lines(sqlite, USER, q, min_score=None, pool=10), qs)
        result["sqlite search"], _ = timed(lambda i: search_user_turns(sqlite, USER, qs[i], words[i], k=10,
                                                                        min_score=None), range(queries))
        result["sqlite plain"], _ = timed(lambda i: search_as_before(sqlite, USER, qs[i], words[i]), range(queries))
        sqlite.close()
    schema = f"scale_{size}{'_uniform' if uniform else ''}"
    drop_schema(dsn, schema)
    pg = PostgresSessionStore(dsn, schema=schema)
    if pg.vector_type is None:
        raise SystemExit(f"the PostgreSQL server has no pgvector; run bash tests/setup_postgres.sh")
    start = time.perf_counter()
    load_postgres(pg, parts)
    result["pg load s"] = time.perf_counter() - start
    conn = pg._conns.get()
    start = time.perf_counter()
    with conn.transaction():
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        pg._index_size(lambda q, a: conn.execute(q, a), DIM)
    conn.execute("ANALYZE recall_pieces")
    result["hnsw build s"] = time.perf_counter() - start
    result["hnsw MB"] = conn.execute("SELECT pg_relation_size('recall_pieces_hnsw_384')").fetchone()[0] / 2**20
    result["pg brute"], _ = timed(lambda q: dense_lines(pg, USER, q, min_score=None, pool=10, method="python"), qs)
    result["pg exact"], exact = timed(lambda q: dense_lines(pg, USER, q, min_score=None, pool=10, method="exact"),
                                      qs)
    result["pg hnsw"], approx = timed(lambda q: dense_lines(pg, USER, q, min_score=None, pool=10, method="hnsw"),
                                      qs)
    result["pg search"], _ = timed(lambda i: search_user_turns(pg, USER, qs[i], words[i], k=10, min_score=None),
                                   range(queries))
    result["pg plain"], _ = timed(lambda i: search_as_before(pg, USER, qs[i], words[i]), range(queries))
    result["recall@10"] = statistics.mean(len(set(e[:10]) & set(a[:10])) / 10 for e, a in zip(exact, approx))
    result["auto plan uses hnsw"] = "hnsw" in dense_plan(pg, USER, qs[0], pool=10)
    pg.close()
    drop_schema(dsn, schema)
    return result


def sanity(dsn: str) -> list[str]:
    """Real sentences embedded by MiniLM: each method puts the sentence a question is about first."""
    from helpers.core.postgres import drop_schema
    from helpers.retrieval.embeddings import local_embed
    from helpers.sessions.recall_search import dense_lines
    from helpers.sessions.session_store import SQLiteSessionStore
    from helpers.sessions.session_store_pg import PostgresSessionStore

    facts = ["My locker number is 4471.", "I am allergic to peanuts.", "My sister Maya visits on Friday.",
             "I take the 8:15 bus to campus.", "My advisor is Professor Okafor.", "I play cello in the orchestra.",
             "My dorm is Birch Hall, room 318.", "I work at the library on Tuesdays.",
             "My favourite food is ramen.", "I am training for a half marathon."]
    questions = {"What is my locker number?": 0, "What food must I avoid?": 1, "Who is coming to see me?": 2,
                 "How do I get to campus?": 3, "Who advises me?": 4, "What instrument do I play?": 5,
                 "Where do I live?": 6, "When is my library shift?": 7, "What do I like to eat?": 8,
                 "What race am I preparing for?": 9}
    vectors = local_embed(facts).astype(np.float32)
    parts = rows_of(USER, vectors, facts)
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteSessionStore(Path(tmp) / "sanity.db")
        load_sqlite(sqlite, parts)
        drop_schema(dsn, "scale_sanity")
        pg = PostgresSessionStore(dsn, schema="scale_sanity")
        load_postgres(pg, parts)
        conn = pg._conns.get()
        with conn.transaction():
            pg._index_size(lambda q, a: conn.execute(q, a), DIM)
        qvec = local_embed(list(questions))
        for (question, want), q in zip(questions.items(), qvec):
            ranked = {name: [line[1] for line in found] for name, found in (
                ("sqlite", dense_lines(sqlite, USER, q, min_score=None)),
                ("pg python", dense_lines(pg, USER, q, min_score=None, method="python")),
                ("pg hnsw", dense_lines(pg, USER, q, min_score=None, method="hnsw")))}
            if len({tuple(r[:3]) for r in ranked.values()}) != 1:
                misses.append(f"the methods disagree on {question!r}: {ranked}")
            if want not in ranked["sqlite"][:3]:
                misses.append(f"{question!r}: {facts[want]!r} not in the top 3 (first: "
                              f"{facts[ranked['sqlite'][0]]!r})")
        sqlite.close()
        pg.close()
        drop_schema(dsn, "scale_sanity")
    return misses


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in results if not r["uniform"]]
    sizes = [r["size"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in (("sqlite", "SQLite brute force"), ("pg brute", "PostgreSQL brute force (into Python)"),
                       ("pg exact", "PostgreSQL exact, in the database"), ("pg hnsw", "PostgreSQL HNSW")):
        ax.plot(sizes, [1000 * statistics.median(r[key]) for r in results], marker="o", label=label)
    for r in results:
        ax.annotate(f"recall@10 {r['recall@10']:.2f}", (r["size"], 1000 * statistics.median(r["pg hnsw"])),
                    textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("stored turns of one user (random 384-d unit vectors, 32-d structure)")
    ax.set_ylabel("one search by meaning, median ms (k=10)")
    ax.set_title("Recall search cost against history size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--uniform", default="10000", help="sizes also run on structureless uniform vectors "
                        "(the worst case for HNSW); empty for none")
    parser.add_argument("--no-sanity", action="store_true")
    parser.add_argument("--plot", default=str(ROOT / "benchmarks" / "recall_scale.png"))
    args = parser.parse_args(argv)
    dsn = args.dsn or default_dsn()
    if not dsn:
        print("no PostgreSQL server: run bash tests/setup_postgres.sh (or pass --dsn)")
        return 1
    results = []
    runs = [(int(s), False) for s in args.sizes.split(",")] + [(int(s), True) for s in args.uniform.split(",") if s]
    for size, uniform in runs:
        r = measure(size, dsn, args.queries, args.seed, uniform)
        results.append(r)
        print(f"{size:>7} turns{' (uniform)' if uniform else ''}: loaded SQLite {r['sqlite load s']:.1f} s, PostgreSQL {r['pg load s']:.1f} s, "
              f"HNSW built in {r['hnsw build s']:.1f} s ({r['hnsw MB']:.0f} MB); auto plan uses HNSW: {r['auto plan uses hnsw']}", flush=True)
    print()
    print("| stored turns | SQLite brute | PG brute (into Python) | PG exact (in DB) | PG HNSW | brute/HNSW | "
          "HNSW recall@10 | search_user_turns SQLite; as before the rules | search_user_turns PG; as before the rules |")
    print("|---|---|---|---|---|---|---|---|---|")
    ms = lambda values: f"{1000 * statistics.median(values):.1f} ms (p95 {1000 * p(values, 0.95):.1f})"  # noqa: E731
    median = lambda values: f"{1000 * statistics.median(values):.1f} ms"  # noqa: E731
    for r in results:
        ratio = statistics.median(r["pg brute"]) / statistics.median(r["pg hnsw"])
        print(f"| {r['size']:,}{' uniform' if r['uniform'] else ''} | {ms(r['sqlite'])} | {ms(r['pg brute'])} | {ms(r['pg exact'])} | {ms(r['pg hnsw'])} "
              f"| {ratio:.1f}x | {r['recall@10']:.3f} | {ms(r['sqlite search'])}; {median(r['sqlite plain'])} "
              f"| {ms(r['pg search'])}; {median(r['pg plain'])} |")
    plot(results, Path(args.plot))
    print(f"\nplot: {args.plot}")
    ok = True
    if not args.no_sanity:
        misses = sanity(dsn)
        print("sanity (MiniLM, 10 real sentences, 10 questions): the three methods rank the top 3 alike, and the "
              f"sentence asked about is in it: {'yes' if not misses else 'NO'}" + "".join(f"\n  {m}" for m in misses))
        ok = ok and not misses
    largest = max((r for r in results if not r["uniform"]), key=lambda r: r["size"])
    if largest["size"] >= 100_000:
        ratio = statistics.median(largest["pg brute"]) / statistics.median(largest["pg hnsw"])
        target = ratio >= 10 and largest["recall@10"] >= 0.95
        print(f"target at {largest['size']:,} turns: HNSW {ratio:.1f}x faster than PG brute force (>= 10x), "
              f"recall@10 {largest['recall@10']:.3f} (>= 0.95): {'met' if target else 'NOT met'}")
        ok = ok and target
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

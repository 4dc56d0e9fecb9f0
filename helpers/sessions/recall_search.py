"""Recall searched inside the session store (lesson 11): one user's every session, never another user's.

``RecallIndex`` (notebook 09) keeps one session's turns in Python and ranks them there. A store holds every
session of every user, so this module asks the database instead, over the rows the stores write beside the
vectors (``helpers.sessions.recall_rows``: one per embedded piece, one per side of a turn)::

    from helpers.sessions.recall_search import search_user_turns

    hits = search_user_turns(store, "ada", question_vector, "where is my locker?", k=5,
                             exclude_session="today")   # "what did I tell you last week, in another chat?"
    for hit in hits:
        hit.session_id, hit.turn_id, hit.sides, hit.score, hit.quote

``question_vector`` is the question embedded with the model the turns were embedded with (``model=`` picks
one when a store holds several; by default rows of any model with the vector's size are read). Each side of
a turn is ranked twice and the two rankings fused by reciprocal rank, with ``RecallIndex``'s constants
(``RRF_K``, ``LEXICAL_WEIGHT``): a line scores 1/(RRF_K + its rank by meaning) + LEXICAL_WEIGHT/(RRF_K + its
rank by words). Only the top rows of each ranking leave the database (``pool`` lines each), and a turn is
quoted by the sides that were found. Every query is filtered by ``user_id`` (and by ``session_id`` or
``exclude_session`` when given), with parameters, so one user's search never reads another's rows.

* **By meaning**, a line scores as its best piece: cosine similarity, a tool's answer ``ANSWER_PENALTY`` lower,
  kept when it reaches ``min_score``. On PostgreSQL with pgvector the database ranks the pieces (an HNSW
  index per vector size: approximate, ``hnsw.ef_search`` at least ``EF_SEARCH``, iterative scans so the user filter
  still fills the list); ``method="exact"`` ranks every one of the user's pieces in the database, and
  ``method="python"`` loads them into Python and ranks them there, as a store without pgvector does (that
  store warns once, ``VectorSearchWarning``). SQLite has no vector index: its pieces are ranked in Python.
* **By words**, the full-text index: FTS5's ``bm25()`` on SQLite (its statistics are the whole file's), and
  PostgreSQL's ``ts_rank`` over a ``tsvector`` of the line (``'simple'`` configuration) - a term-frequency
  rank, not BM25, so the two backends may order word matches differently. Both fold word forms with the
  in-Python BM25's rule (``helpers.core.words``): a line is indexed with its words' stems beside them, and
  the question searches by its words that are not stop words and their stems.

The fused lines then go through ``RecallIndex``'s rules across lines (``reranked``: ``recall_index.rerank``): a
line said the same day beside a match gains part of its score, a day that matched several times lifts its lines,
a question naming a day or a month ranks what was said then first, and one naming a speaker ranks that speaker's
lines first. For that the quotes of the found turns and their neighbours are read in one query.

Unlike ``RecallIndex.search`` there is no recency term (turn ids of different sessions do not compare) and no
merging of repeats; a turn embedded by no save yet is not found until its vectors are stored.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from helpers.core.errors import ConfigError, WorkshopWarning
from helpers.core.ids import check_id
from helpers.core.words import query_words as words_of_query
from helpers.memory.recall_index import (ANSWER_PENALTY, ASSISTANT, DEFAULT_MIN_SCORE, LEXICAL_WEIGHT, RRF_K,
                                         USER, _Lexical, rerank)
from helpers.sessions.protocol import SessionIdError, SessionStoreError, check_user_id

SIDES = {USER: "user", ASSISTANT: "assistant"}
DEFAULT_POOL = 50  # lines each ranking hands over (at least 4 x k)
MAX_QUERY_WORDS = 32
METHODS = ("auto", "hnsw", "exact", "python")
QUOTE_CHUNK = 400  # (session, turn) pairs read by one quote query on SQLite
EF_SEARCH = 100  # HNSW candidates per search at least (benchmarks/recall_scale.py: recall@10 against exact)


class VectorSearchWarning(WorkshopWarning):
    """A PostgreSQL store without pgvector: recall loads the user's vectors into Python (said once per store)."""


@dataclass(frozen=True)
class TurnHit:
    """One recalled turn: where it is, which sides matched ("user", "assistant"), its fused score, its quote."""

    session_id: str
    turn_id: int
    sides: tuple[str, ...]
    score: float
    quote: str


Line = tuple[str, int, int]  # (session_id, turn_id, side)


def query_words(question: str) -> list[str]:
    """The words the full-text index is searched by: the question's words that are not stop words, then their
    stems (``helpers.core.words.query_words``; at most MAX_QUERY_WORDS)."""
    return words_of_query(question, MAX_QUERY_WORDS)


def fuse(by_meaning: Sequence[Line], by_words: Sequence[Line]) -> list[tuple[Line, float]]:
    """Reciprocal-rank fusion of two rankings (best first), as ``RecallIndex.search`` fuses them."""
    fused: dict[Line, float] = {}
    for n, line in enumerate(by_meaning, 1):
        fused[line] = fused.get(line, 0.0) + 1.0 / (RRF_K + n)
    for n, line in enumerate(by_words, 1):
        fused[line] = fused.get(line, 0.0) + LEXICAL_WEIGHT / (RRF_K + n)
    return sorted(fused.items(), key=lambda item: (-round(item[1], 9), item[0][0], -item[0][1], item[0][2]))


def best_lines(rows: Sequence[tuple[str, int, int, int, float]], min_score: float | None, pool: int) -> list[Line]:
    """Lines by their best piece (rows: session, turn, side, answer, similarity), best first, at most ``pool``."""
    best: dict[Line, float] = {}
    for session_id, turn_id, side, answer, similarity in rows:
        score = float(similarity) - ANSWER_PENALTY * int(answer)
        line = (session_id, int(turn_id), int(side))
        if line not in best or score > best[line]:
            best[line] = score
    kept = [(line, s) for line, s in best.items() if min_score is None or s >= min_score]
    kept.sort(key=lambda item: (-round(item[1], 9), item[0][0], -item[0][1], item[0][2]))
    return [line for line, _ in kept[:pool]]


def search_user_turns(store: Any, user_id: str, question_vector: Any, question_text: str, k: int = 5, *,
                      session_id: str | None = None, exclude_session: str | None = None, model: str | None = None,
                      min_score: float | None = DEFAULT_MIN_SCORE, pool: int = DEFAULT_POOL,
                      method: str = "auto") -> list[TurnHit]:
    """Up to ``k`` of ``user_id``'s stored turns that match the question, best first (see the module)."""
    if type(k) is not int or k < 1:
        raise ConfigError(f"k must be a whole number from 1 (got {k!r})")
    pool = max(pool, 4 * k)
    where = dict(session_id=session_id, exclude_session=exclude_session, pool=pool)
    by_meaning = dense_lines(store, user_id, question_vector, model=model, min_score=min_score, method=method,
                             **where)
    by_words = word_lines(store, user_id, question_text, **where)
    backend = _backend(store)
    ranked, quotes = reranked(question_text, fuse(by_meaning, by_words),
                              lambda turns: backend.quotes(check_user_id(user_id), turns))
    turns = first_turns(ranked, k)
    return [TurnHit(sess, turn, tuple(SIDES[s] for s in sorted(sides)), round(score, 6),
                    _quote(quotes.get((sess, turn), {}), sides))
            for (sess, turn), (score, sides) in turns.items()]


def first_turns(ranked: Sequence[tuple[Line, float]], k: int) -> dict[tuple[str, int], list]:
    """The first ``k`` turns of ranked lines: (session, turn) -> [its best line's score, the sides found]."""
    turns: dict[tuple[str, int], list] = {}
    for (sess, turn, side), score in ranked:
        if (sess, turn) not in turns:
            if len(turns) >= k:
                continue
            turns[(sess, turn)] = [score, set()]
        turns[(sess, turn)][1].add(side)
    return turns


def reranked(question: str, fused: Sequence[tuple[Line, float]],
             read_quotes: Callable[[list[tuple[str, int]]], dict[tuple[str, int], dict[int, str]]]
             ) -> tuple[list[tuple[Line, float]], dict[tuple[str, int], dict[int, str]]]:
    """The fused lines after ``RecallIndex``'s rules across lines (``recall_index.rerank``: context, the day, a
    named time, a named speaker), best first, and the quotes read for them.

    The rules need each line's day, speaker and neighbours, so the quotes of the found turns and of the turns
    just before and after them are read (``read_quotes``, one query) and indexed under stand-in turn numbers:
    consecutive turns of one session stay consecutive, and other turns are kept apart, so a line is only ever
    the context of its own session's lines."""
    found = {(sess, turn) for (sess, turn, _), _ in fused}
    wanted = sorted({(sess, turn + d) for sess, turn in found for d in (-1, 0, 1)})
    quotes = read_quotes(wanted) if wanted else {}
    number: dict[tuple[str, int], int] = {}
    lexical = _Lexical()
    previous, at = None, 0
    for sess, turn in sorted(quotes):
        at += 1 if previous == (sess, turn - 1) else 3  # a gap: no line is within two of another session's
        number[(sess, turn)], previous = at, (sess, turn)
        lexical.add_sides(at, quotes[(sess, turn)])
    line_of = {number[(sess, turn)] * 2 + side: (sess, turn, side) for sess, turn in number for side in (USER, ASSISTANT)}
    scores = {number[(sess, turn)] * 2 + side: score for (sess, turn, side), score in fused if (sess, turn) in number}
    scores = rerank(question, scores, lexical)
    out = [(line_of[code], score) for code, score in scores.items()]
    out += [(line, score) for line, score in fused if line[:2] not in number]  # no quote read: left as it was
    out.sort(key=lambda item: (-round(item[1], 9), item[0][0], -item[0][1], item[0][2]))
    return out, quotes


def dense_lines(store: Any, user_id: str, question_vector: Any, *, session_id: str | None = None,
                exclude_session: str | None = None, model: str | None = None,
                min_score: float | None = DEFAULT_MIN_SCORE, pool: int = DEFAULT_POOL,
                method: str = "auto") -> list[Line]:
    """The ranking by meaning: up to ``pool`` of the user's lines (session, turn, side), best piece first."""
    backend, where, args = _scope(store, user_id, session_id, exclude_session)
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)} (got {method!r})")
    vector = _vector(question_vector)
    return best_lines(backend.pieces(where, args, vector, model, pool, method), min_score, pool)


def word_lines(store: Any, user_id: str, question_text: str, *, session_id: str | None = None,
               exclude_session: str | None = None, pool: int = DEFAULT_POOL) -> list[Line]:
    """The ranking by words: up to ``pool`` of the user's lines holding a word of the question, best first."""
    backend, where, args = _scope(store, user_id, session_id, exclude_session)
    if not isinstance(question_text, str):
        raise ConfigError(f"question_text must be text (got {type(question_text).__name__})")
    words = query_words(question_text)
    return backend.lines(where, args, words, pool) if words else []


def dense_plan(store: Any, user_id: str, question_vector: Any, *, pool: int = DEFAULT_POOL,
               method: str = "auto") -> str:
    """PostgreSQL's plan for the ranking by meaning (EXPLAIN), to see whether the HNSW index serves it."""
    backend, where, args = _scope(store, user_id, None, None)
    if not isinstance(backend, _Postgres) or store.vector_type is None:
        return "brute force in Python (no vector index in this store)"
    statements = backend.dense_sql(where, args, _vector(question_vector), None, pool, method)
    last = statements[-1]
    return "\n".join(row[0] for row in backend._run([*statements[:-1], ("EXPLAIN " + last[0], last[1])], "a plan"))


def _vector(question_vector: Any) -> np.ndarray:
    try:
        vector = np.asarray(question_vector, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        raise ConfigError(f"question_vector must be a list of numbers (got {type(question_vector).__name__})") \
            from None
    if vector.size == 0 or not np.isfinite(vector).all() or not np.any(vector):
        raise ConfigError(f"question_vector must be a non-zero vector of finite numbers (got {vector.size} numbers)")
    return vector


def _scope(store: Any, user_id: str, session_id: str | None, exclude_session: str | None) -> tuple:
    """(backend, WHERE clause, its parameters) for one user's rows, ids checked by the one id rule."""
    backend = _backend(store)
    user_id = check_user_id(user_id)
    where, args = "user_id = ?", [user_id]
    if session_id is not None:
        where, args = where + " AND session_id = ?", args + [check_id(session_id, "session_id", SessionIdError)]
    if exclude_session is not None:
        where += " AND session_id <> ?"
        args.append(check_id(exclude_session, "exclude_session", SessionIdError))
    return backend, where, tuple(args)


def _quote(by_side: dict[int, str], sides: set[int]) -> str:
    """The quote lines of the matched sides (a tool's answer side is already the whole turn)."""
    if ASSISTANT in sides and by_side.get(ASSISTANT, "").startswith(by_side.get(USER, "\x00")):
        return by_side[ASSISTANT]
    return "\n".join(by_side[s] for s in sorted(sides) if s in by_side)


def _backend(store: Any) -> "_SQLite | _Postgres":
    from helpers.sessions.session_store import SQLiteSessionStore

    if isinstance(store, SQLiteSessionStore):
        return _SQLite(store)
    try:
        from helpers.sessions.session_store_pg import PostgresSessionStore
    except ImportError:  # psycopg missing: it cannot be a PostgreSQL store
        PostgresSessionStore = ()  # type: ignore[assignment]
    if PostgresSessionStore and isinstance(store, PostgresSessionStore):
        return _Postgres(store)
    raise ConfigError(f"search_user_turns needs a SQLiteSessionStore or PostgresSessionStore "
                      f"(got {type(store).__name__})")


def _rank_in_python(rows: Sequence[tuple], vector: np.ndarray) -> list[tuple]:
    """(session, turn, side, answer, cosine) of stored pieces (rows end with their float32 bytes)."""
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(bytes(r[-1]) for r in rows), dtype="<f4").reshape(len(rows), -1)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(vector))
    similarity = (matrix @ vector) / np.where(norms > 0, norms, 1.0)
    return [(*r[:4], s) for r, s in zip(rows, similarity.tolist())]


def _model_filter(model: str | None, dim: int) -> tuple[str, tuple]:
    return (" AND dim = ?" + (" AND model = ?" if model else ""), (dim, model) if model else (dim,))


class _SQLite:
    """Pieces ranked in Python over the user's rows; words by FTS5's bm25()."""

    def __init__(self, store: Any):
        self.store = store

    def _read(self, query: str, args: tuple) -> list[tuple]:
        return self.store._read(query, args)

    def pieces(self, where: str, args: tuple, vector: np.ndarray, model: str | None, pool: int,
               method: str) -> list[tuple]:
        extra, more = _model_filter(model, vector.size)
        rows = self._read(f"SELECT session_id, turn_id, side, answer, vector FROM recall_pieces WHERE {where}{extra}",
                          args + more)
        return _rank_in_python(rows, vector)

    def lines(self, where: str, args: tuple, words: list[str], pool: int) -> list[Line]:
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        where = " AND ".join("l." + part for part in where.split(" AND "))
        rows = self._read("SELECT l.session_id, l.turn_id, l.side FROM recall_lines_fts JOIN recall_lines l ON "
                          f"l.line_id = recall_lines_fts.rowid WHERE recall_lines_fts MATCH ? AND {where} "
                          "ORDER BY bm25(recall_lines_fts), l.session_id, l.turn_id DESC, l.side LIMIT ?",
                          (match, *args, pool))
        return [(s, int(t), int(side)) for s, t, side in rows]

    def quotes(self, user_id: str, turns: list[tuple[str, int]]) -> dict[tuple[str, int], dict[int, str]]:
        out: dict[tuple[str, int], dict[int, str]] = {}
        for start in range(0, len(turns), QUOTE_CHUNK):  # one query per chunk (SQLite bounds its parameters)
            chunk = turns[start:start + QUOTE_CHUNK]
            pairs = ", ".join(["(?, ?)"] * len(chunk))
            rows = self._read(f"WITH t(session_id, turn_id) AS (VALUES {pairs}) SELECT l.session_id, l.turn_id, "
                              "l.side, l.quote FROM t JOIN recall_lines l ON l.user_id = ? AND "
                              "l.session_id = t.session_id AND l.turn_id = t.turn_id",
                              (*[x for pair in chunk for x in pair], user_id))
            for sess, turn, side, quote in rows:
                out.setdefault((sess, int(turn)), {})[int(side)] = quote
        return out


_WARNED: set[str] = set()  # stores (by where) already told that they search without pgvector


class _Postgres:
    """Pieces ranked by pgvector (HNSW or exact) in the database; words by a tsvector's ts_rank."""

    def __init__(self, store: Any):
        self.store = store

    def _run(self, statements: Sequence[tuple[str, tuple]], what: str) -> list[tuple]:
        """Run statements in one transaction (SET LOCAL lasts until its end); the last one's rows.

        Never as a prepared statement: the same query runs under different settings (``method``), and a plan
        PostgreSQL cached under one (say, index scans off) would serve the others."""
        import psycopg

        conn = self.store._conns.get()
        try:
            with conn.transaction():
                rows: list[tuple] = []
                for query, args in statements:
                    cur = conn.execute(query.replace("?", "%s"), args, prepare=False)
                    rows = cur.fetchall() if cur.description else []
                return rows
        except psycopg.Error as err:
            raise SessionStoreError(f"searching {what} on {self.store.where} failed "
                                    f"({self.store._reason(err)})") from None

    def pieces(self, where: str, args: tuple, vector: np.ndarray, model: str | None, pool: int,
               method: str) -> list[tuple]:
        extra, more = _model_filter(model, vector.size)
        vector_type = self.store.vector_type
        if vector_type is None or method == "python":
            if vector_type is None and method in ("hnsw", "exact"):
                raise SessionStoreError(f"{self.store.where} has no pgvector extension, so method={method!r} "
                                        "cannot run; use method='auto' (vectors ranked in Python)")
            if vector_type is None and self.store.where not in _WARNED:
                _WARNED.add(self.store.where)
                warnings.warn(f"{self.store.where} has no pgvector (CREATE EXTENSION vector): recall searches load "
                              "each user's vectors into Python, so their cost grows with the history",
                              VectorSearchWarning, stacklevel=3)
            rows = self._run([(f"SELECT session_id, turn_id, side, answer, vector FROM recall_pieces "
                               f"WHERE {where}{extra}", args + more)], "recall vectors")
            return _rank_in_python(rows, vector)
        return self._run(self.dense_sql(where, args, vector, model, pool, method), "recall vectors")

    def dense_sql(self, where: str, args: tuple, vector: np.ndarray, model: str | None, pool: int,
                  method: str) -> list[tuple[str, tuple]]:
        """The statements of a ranking by pgvector: settings for this transaction, then the query."""
        from helpers.sessions.pgvector import distance_operator

        dim = int(vector.size)  # written into the query, so the planner can match the partial index WHERE dim = n
        extra, more = (f" AND dim = {dim}" + (" AND model = ?" if model else ""), (model,) if model else ())
        vector_type = self.store.vector_type
        typed = f"{vector_type}({dim})"
        distance = f"(embedding::{typed}) {distance_operator(vector_type)} ?::{typed}"
        text = "[" + ",".join(map(repr, vector.astype(np.float64).tolist())) + "]"
        limit = 4 * pool  # pieces: a line has several
        settings = [("SELECT set_config('hnsw.ef_search', ?, true)", (str(min(1000, max(EF_SEARCH, limit))),)),
                    ("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)", ())]
        if method == "exact":
            settings = [("SELECT set_config('enable_indexscan', 'off', true)", ()),
                        ("SELECT set_config('enable_bitmapscan', 'off', true)", ())]
        elif method == "hnsw":  # only the HNSW index gives rows in distance order without a sort
            settings += [("SELECT set_config(name, 'off', true) FROM unnest(?::text[]) AS name",
                          (["enable_seqscan", "enable_bitmapscan", "enable_sort"],))]
        query = (f"SELECT session_id, turn_id, side, answer, 1 - ({distance}) FROM recall_pieces "
                 f"WHERE {where}{extra} ORDER BY {distance} LIMIT ?")
        return [*settings, (query, (text, *args, *more, text, limit))]

    def lines(self, where: str, args: tuple, words: list[str], pool: int) -> list[Line]:
        query = " || ".join(["plainto_tsquery('simple', ?)"] * len(words))
        rows = self._run([(f"SELECT session_id, turn_id, side FROM recall_lines, (SELECT {query} AS query) AS q "
                           f"WHERE {where} AND words_tsv @@ q.query "
                           "ORDER BY ts_rank(words_tsv, q.query, 1) DESC, session_id, turn_id DESC, side LIMIT ?",
                           (*words, *args, pool))], "recall words")
        return [(s, int(t), int(side)) for s, t, side in rows]

    def quotes(self, user_id: str, turns: list[tuple[str, int]]) -> dict[tuple[str, int], dict[int, str]]:
        if not turns:
            return {}
        rows = self._run([("SELECT l.session_id, l.turn_id, l.side, l.quote FROM recall_lines l JOIN "
                           "unnest(?::text[], ?::integer[]) AS t(session_id, turn_id) "
                           "ON l.session_id = t.session_id AND l.turn_id = t.turn_id WHERE l.user_id = ?",
                           ([sess for sess, _ in turns], [turn for _, turn in turns], user_id))], "recall quotes")
        out: dict[tuple[str, int], dict[int, str]] = {}
        for sess, turn, side, quote in rows:
            out.setdefault((sess, int(turn)), {})[int(side)] = quote
        return out

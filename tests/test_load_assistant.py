"""The load test's quick mode against the test server (benchmarks/load_assistant.py: 8 users x 5 turns, 4 processes).

It needs PostgreSQL (``bash tests/setup_postgres.sh``); the full run (100 users x 50 turns) is a benchmark,
reported in the README, not a test.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import load_assistant  # noqa: E402  (benchmarks/ is not a package)

from test_postgres import pg_dsn, scratch_schema  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("load_quick")
    dsn = pg_dsn()
    schema = scratch_schema(tmp_path, "loadq_")
    result = load_assistant.run(dsn, users=8, turns=5, processes=4, schema=schema, restart_every=3, fresh=False,
                                recall_every=3)
    return dsn, schema, result


def test_the_quick_mode_loses_nothing_and_every_search_stays_with_its_user(quick):
    _, _, result = quick
    assert result.problems == []
    assert sorted(result.users) == [load_assistant.user_name(i) for i in range(8)]
    searches = [s for found in result.searches.values() for s in found]
    assert len(result.searches) >= 2 and all(s.found for s in searches)  # users with two statements to recall
    assert all(hit[2] for s in searches for hit in s.hits)
    assert 0 < result.search_percentile(50) <= result.search_percentile(95)
    assert result.turns_per_second > 0 and 0 < result.percentile(50) <= result.percentile(95)


def test_the_checks_find_a_foreign_search_hit_and_a_doubled_recall_piece(quick):
    import psycopg
    from psycopg import sql

    dsn, schema, result = quick
    users = sorted(result.searches)
    mine = users[0]
    with psycopg.connect(dsn, autocommit=True) as conn:  # what mine's turns hold, line by line
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        own = {(s, t): set() for s, t in conn.execute("SELECT session_id, turn_id FROM recall_lines WHERE user_id = %s",
                                                       (mine,)).fetchall()}
        for s, t, q in conn.execute("SELECT session_id, turn_id, quote FROM recall_lines WHERE user_id = %s", (mine,)):
            own[(s, t)].update(q.split("\n"))
    foreign = [hit for user in users[1:] for found in result.searches[user] for hit in found.hits
               if not set(hit[2].split("\n")) <= own.get((hit[0], hit[1]), set())]
    assert foreign  # another user's turn, which mine's turn of the same id does not hold
    forged = {mine: [load_assistant.SearchResult("x", 0.1, True, [foreign[0]])]}
    problems = load_assistant.check(dsn, schema, result.users, forged)
    assert any(p.startswith(f"{mine}:") and "not theirs" in p for p in problems)
    missed = {mine: [load_assistant.SearchResult("never said", 0.1, False, [])]}
    assert any("did not find it" in p for p in load_assistant.check(dsn, schema, result.users, missed))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        conn.execute("INSERT INTO recall_pieces (user_id, session_id, turn_id, piece, side, answer, model, dim, vector) "
                     "SELECT user_id, session_id, turn_id, piece + 100, side, answer, model, dim, vector "
                     "FROM recall_pieces WHERE user_id = %s LIMIT 1", (mine,))
    problems = load_assistant.check(dsn, schema, result.users, result.searches)
    assert any(p.startswith(f"{mine}:") and "recall pieces" in p for p in problems)

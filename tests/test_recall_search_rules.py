"""The session store's search applies RecallIndex's rules across lines (helpers/sessions/recall_search.py,
``reranked``): a line beside a match on the same day comes with it, a question naming a month ranks what was
said then first, and a question naming a speaker ranks that speaker's lines first. On SQLite and PostgreSQL."""
import numpy as np
import pytest

import helpers.memory.recall_index as recall_index
import helpers.sessions.recall_search as recall_search
from helpers.sessions.recall_search import search_user_turns
from test_recall_search import plant, store, unit  # noqa: F401  (store: the fixture, on each backend)


def one_hot(dim, n):
    v = np.zeros(dim, dtype=np.float32)
    v[n] = 1.0
    return v


def test_a_line_beside_a_match_on_the_same_day_comes_with_it_and_only_in_its_own_session(store):
    plant(store, "ada", "hike", [
        (0, "the ridge hike was long", None, one_hot(8, 0)[None, :], False),
        (1, "we saw three golden eagles near the top", None, one_hot(8, 1)[None, :], False),
        (7, "I repainted the kitchen", None, one_hot(8, 2)[None, :], False)], day="2023-06-10")
    plant(store, "ada", "other", [(1, "my cousin moved to Leeds", None, one_hot(8, 3)[None, :], False)],
          day="2023-06-10")
    hits = search_user_turns(store, "ada", one_hot(8, 0), "how was the hike?", k=3)
    found = [(h.session_id, h.turn_id) for h in hits]
    assert found[:2] == [("hike", 0), ("hike", 1)]  # the next turn that day, though it shares no word or meaning
    assert "eagles" in hits[1].quote
    assert ("hike", 7) not in found  # a turn further away is no context


def test_a_line_is_never_the_context_of_another_sessions_line():
    day = "2023-06-10"
    quotes = {("a", 5): {0: f'[turn 5, {day}] user: "the ridge hike was long"'},
              ("b", 0): {0: f'[turn 0, {day}] user: "my cousin moved to Leeds"'},
              ("b", 1): {0: f'[turn 1, {day}] user: "a short hike by the river"'}}
    read = []
    fused = [(("a", 5, 0), 1.0), (("b", 1, 0), 0.1)]
    ranked, _ = recall_search.reranked("how was the hike?", fused,
                                       lambda turns: read.extend(turns) or {t: quotes[t] for t in turns if t in quotes})
    scores = dict(ranked)
    assert ("b", 0) in read  # read as the neighbour of b's match
    # b's first line is two lines from a's match in the order read, but in another session: only b's weak match
    # lends it context (0.4 x 0.1, lifted by its day), never a's (0.4 x 1.0)
    assert 0 < scores[("b", 0, 0)] < 0.1


def test_a_negative_turn_id_keeps_its_quote(store):
    plant(store, "ada", "neg", [(-1, "the ridge hike was long", None, one_hot(8, 0)[None, :], False)])
    hits = search_user_turns(store, "ada", one_hot(8, 0), "how was the hike?", k=1)
    assert hits[0].turn_id == -1 and "ridge hike" in hits[0].quote


def test_without_the_rules_the_neighbour_is_not_found(store, monkeypatch):
    plant(store, "ada", "hike", [
        (0, "the ridge hike was long", None, one_hot(8, 0)[None, :], False),
        (1, "we saw three golden eagles near the top", None, one_hot(8, 1)[None, :], False)], day="2023-06-10")
    monkeypatch.setattr(recall_search, "rerank", lambda question, scores, lexical, excluded=(): scores)
    found = [h.turn_id for h in search_user_turns(store, "ada", one_hot(8, 0), "how was the hike?", k=3)]
    assert found == [0]


def test_a_question_naming_a_month_ranks_that_months_line_first(store, monkeypatch):
    rng = np.random.default_rng(3)
    same = unit(rng, 8)
    plant(store, "ada", "a-sept", [(0, "we went camping at Ridge Creek", None, same[None, :], False)],
          day="2023-09-20")
    plant(store, "ada", "b-june", [(0, "we went camping at Pine Lake", None, same[None, :], False)],
          day="2023-06-12")
    asked = "where did we go camping in June?"
    assert search_user_turns(store, "ada", same, asked, k=1)[0].session_id == "b-june"
    monkeypatch.setattr(recall_index, "TIME_WEIGHT", 0.0)  # a tie otherwise, which the session id breaks
    assert search_user_turns(store, "ada", same, asked, k=1)[0].session_id == "a-sept"


def test_a_question_naming_a_speaker_ranks_that_speakers_lines_first(store, monkeypatch):
    rng = np.random.default_rng(4)
    query = unit(rng, 8)
    near = query + 0.3 * unit(rng, 8)
    # consecutive turns, undated (no line is another's context): the search reads both speakers' lines
    plant(store, "ada", "talk", [
        (0, "Melanie: I painted a sunset over the lake", None, query[None, :], False),  # closest in meaning
        (1, "Caroline: I painted a portrait of my grandma", None, (near / np.linalg.norm(near))[None, :], False),
        (2, "Melanie: I took the kids to the museum", None, unit(rng, 8)[None, :], False),
        (3, "Caroline: I joined a support group", None, unit(rng, 8)[None, :], False)])
    asked = "What did Caroline paint by the lake at sunset?"
    assert search_user_turns(store, "ada", query, asked, k=1)[0].turn_id == 1
    monkeypatch.setattr(recall_index, "SPEAKER_FACTOR", 1.0)  # without the rule Melanie's line wins
    assert search_user_turns(store, "ada", query, asked, k=1)[0].turn_id == 0

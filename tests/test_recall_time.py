"""Recall rules about when things were said (issue 32): a question that names a day or a month ranks what was
said then first, a day that matched several times lifts its lines, and the question's vector takes a step
toward its best matches before lines are ranked by meaning."""
import numpy as np
import pytest

import helpers.memory.recall_index as recall_index
from helpers.llm.config import load_settings
from helpers.memory.recall_index import RecallIndex, by_day, by_named_time, named_period
from helpers.standin.server import make_offline_client


def turn(user, answer="Noted."):
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def fresh(**kwargs):
    return RecallIndex(client=make_offline_client(), settings=load_settings("offline"), **kwargs)


@pytest.mark.parametrize("question, periods", [
    ("When did Melanie go camping in June?", ((None, 6, 1, 31),)),
    ("What setback did she face in October 2023?", ((2023, 10, 1, 31),)),
    ("Which painting did she show on October 13, 2023?", ((2023, 10, 13, 13),)),
    ("What did Gina find on 1 February, 2023?", ((2023, 2, 1, 1),)),
    ("what happened on the 3rd of may", ((None, 5, 3, 3),)),
    ("Who came by on 2023-05-03?", ((2023, 5, 3, 3),)),
    ("What did I do in Sept?", ((None, 9, 1, 31),)),
    ("what did I do in mid-June?", ((None, 6, 1, 31),)),
    ("Where was I early-July 2023?", ((2023, 7, 1, 31),)),
    ("How many times did she go to the beach in 2023?", ()),  # a year alone names no period
    ("May I ask what my locker number is?", ()),  # "May" that is no month
    ("Where did I march last week?", ()),
])
def test_named_period_reads_days_and_months_in_usual_spellings(question, periods):
    assert named_period(question) == periods


def _camping(index, june="2023-06-12", september="2023-09-20"):
    index.add(0, turn("We went camping with the kids at Pine Lake, it rained all weekend."), at=june)
    index.add(1, turn("We went camping with my cousins at Ridge Creek, the stars were amazing."), at=september)


def test_a_question_naming_a_month_ranks_what_was_said_then_first(monkeypatch):
    index = fresh()
    _camping(index)
    asked = "Where did we go camping in June?"
    assert index.search(asked, k=1)[0].turn_id == 0
    monkeypatch.setattr(recall_index, "TIME_WEIGHT", 0.0)  # without the rule the newer trip wins
    assert index.search(asked, k=1)[0].turn_id == 1


def test_a_named_day_reaches_what_was_told_a_few_days_later_but_not_weeks_later():
    scores = {0: 1.0, 2: 1.0, 4: 1.0}  # three lines (user sides of turns 0, 1, 2), equal scores
    days = {0: "2023-05-03", 1: "2023-05-08", 2: "2023-05-20"}
    out = by_named_time("What did I cook on May 3, 2023?", scores, days)
    assert out[0] == out[2] > out[4]  # the day itself and five days after it; not seventeen days after
    assert by_named_time("What did I cook on May 3, 2024?", scores, days) == scores  # another year: no period
    assert by_named_time("What did I cook?", scores, days) == scores


def test_a_month_without_a_year_is_also_last_years_month():
    scores = {0: 1.0, 2: 1.0}
    days = {0: "2023-12-18", 1: "2024-03-02"}
    out = by_named_time("What did I buy in December?", scores, days)
    assert out[0] > out[2]


def test_a_day_with_several_matches_lifts_its_lines_over_a_lone_match():
    # turns 0-2 said on one day, each matching a little; turn 3 on another day, matching as well as turn 0
    scores = {0: 0.30, 2: 0.25, 4: 0.25, 6: 0.30}
    days = {0: "2023-07-01", 1: "2023-07-01", 2: "2023-07-01", 3: "2023-08-09"}
    out = by_day(scores, days)
    assert out[0] > out[6]  # equal before, the busier day's line wins after
    assert all(out[c] >= scores[c] for c in scores)  # a lift, never a cut
    assert by_day({0: 0.3, 2: 0.0}, {0: "2023-07-01", 1: "2023-07-01"})[2] == 0.0  # no match, no lift
    assert by_day({0: 0.3}, {}) == {0: 0.3}  # undated lines are left alone


def test_feedback_moves_the_question_toward_its_best_matches_only():
    index = fresh()
    index.add(0, turn("I volunteer at the animal shelter on Saturdays."))
    index.add(1, turn("The shelter dogs love the long walks by the canal."))
    index.add(2, turn("My favourite pasta is cacio e pepe."))
    index.search("Where do I volunteer?", k=1)  # embeds every turn
    query = index._query_vector("Where do I volunteer?")
    similarity = index._matrix @ query
    moved = index._with_feedback(query, similarity, set())
    assert np.isclose(np.linalg.norm(moved), 1.0, atol=1e-5)
    rows = {turn_id: row for row, turn_id in enumerate(index._ids)}
    assert moved @ index._matrix[rows[0]] > query @ index._matrix[rows[0]]  # toward the best match
    # only pieces at least min_score close take part, and never an excluded turn's
    assert np.array_equal(index._with_feedback(query, similarity - 1.0, set()), query)
    best = int(np.argmax(similarity))
    without_best = index._with_feedback(query, similarity, {index._ids[best]})
    assert not np.allclose(without_best, moved)


@pytest.mark.parametrize("question, expected", [
    ("What did I tell you yesterday about the gym?", [("2026-11-29", "2026-11-29")]),
    ("what did i say the day before yesterday", [("2026-11-28", "2026-11-28")]),
    ("Which film did I mention 3 days ago?", [("2026-11-27", "2026-11-27")]),
    ("what did I say a couple of days ago", [("2026-11-28", "2026-11-28")]),
    ("What did I plan a week ago?", [("2026-11-20", "2026-11-26")]),
    ("What did we talk about last week?", [("2026-11-23", "2026-11-29")]),  # Monday to Sunday before this week
    ("Where did I eat last month?", [("2026-10-01", "2026-10-31")]),
    ("What did I cook last Friday?", [("2026-11-27", "2026-11-27")]),
    ("What did I cook last Monday?", [("2026-11-23", "2026-11-23")]),  # today is a Monday: the one before
    ("What did I tell you this morning?", [("2026-11-30", "2026-11-30")]),
    ("How was the weekend before last?", []),
    ("What is my locker number?", []),
])
def test_relative_period_reads_past_days_from_today(question, expected):
    from datetime import date

    today = date(2026, 11, 30)  # a Monday
    assert [(a.isoformat(), b.isoformat()) for a, b in recall_index.relative_period(question, today)] == expected


def test_a_question_about_yesterday_ranks_yesterdays_line_first(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "2026-11-30T10:00:00-08:00")
    index = fresh()
    index.add(0, turn("I tried the climbing wall at the sports centre, it was brutal."), at="2026-11-29T18:00:00-08:00")
    index.add(1, turn("I tried the new climbing route at the sports centre, my arms are dead."),
              at="2026-11-10T18:00:00-08:00")
    index.add(2, turn("I did a climbing session at the sports centre with Priya again."), at="2026-11-16T18:00:00-08:00")
    asked = "What did I tell you yesterday about climbing?"
    assert index.search(asked, k=1)[0].turn_id == 0
    monkeypatch.setattr(recall_index, "TIME_WEIGHT", 0.0)
    assert index.search(asked, k=1)[0].turn_id != 0  # without the rule another session's line wins


def test_a_day_named_from_today_is_that_day_only():
    from datetime import date

    scores = {0: 1.0, 2: 1.0, 4: 1.0}
    days = {0: "2026-11-29", 1: "2026-11-30", 2: "2026-12-02"}  # yesterday, today, a later day
    out = by_named_time("What did I tell you yesterday?", scores, days, today=date(2026, 11, 30))
    assert out[0] > out[2] == out[4] == 1.0  # a named calendar day reaches a week on; "yesterday" does not


def test_a_stored_day_that_is_no_calendar_day_counts_as_undated():
    scores = {0: 1.0, 2: 1.0, 4: 1.0}
    days = {0: "2023-02-30", 1: "0001-01-05", 2: "2023-12-04"}
    out = by_named_time("Where did we go camping in December?", scores, days)
    assert out == {0: 1.0, 2: 1.0, 4: 2.0}


def test_a_days_strength_is_its_own_matches_not_their_context():
    # one match a day, equal; the first day also has two lines that are only context of its match
    matched = {0: 0.30, 10: 0.30}
    scores = {0: 0.30, 2: 0.12, 4: 0.12, 10: 0.30}
    days = {0: "2023-07-01", 1: "2023-07-01", 2: "2023-07-01", 5: "2023-08-09"}
    out = by_day(scores, days, matched)
    assert out[0] == out[10]
    assert by_day(scores, days)[0] > by_day(scores, days)[10]  # counted from the scores, context would count

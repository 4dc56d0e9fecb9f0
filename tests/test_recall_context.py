"""Recall by words and by exchange (issue 32, part 2): stop words and word forms in the lexical ranking, and a
line said beside a match, the same day, recalled as its context."""
from datetime import datetime, timedelta

import pytest

from helpers.core.words import STOP_WORDS, stem, terms
from helpers.llm.config import load_settings
from helpers.memory.recall_index import RecallIndex, _Lexical
from helpers.standin.server import make_offline_client

DAY = datetime(2024, 3, 4, 10, 0)


def turn(user, answer="Noted."):
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def fresh():
    return RecallIndex(client=make_offline_client(), settings=load_settings("offline"))


@pytest.mark.parametrize("a, b", [("painting", "painted"), ("paints", "paint"), ("swimming", "swims"),
                                  ("stories", "story"), ("planned", "plans"), ("boxes", "box")])
def test_forms_of_one_word_share_a_stem(a, b):
    assert stem(a) == stem(b)


@pytest.mark.parametrize("a, b", [("class", "clas"), ("bus", "bu"), ("analysis", "analysi"), ("sing", "s")])
def test_a_stem_keeps_words_that_only_look_inflected(a, b):
    assert stem(a) == a and stem(a) != b


def test_terms_leave_function_words_out():
    assert terms("When did Melanie run the charity race?") == ["melanie", "run", "charity", "race"]
    assert not {"when", "did", "the", "what", "my"} - STOP_WORDS


def test_the_lexical_ranking_matches_another_form_of_a_word():
    lexical = _Lexical()
    lexical.add(0, '[turn 0] user: "I painted the lake at dawn."')
    lexical.add(1, '[turn 1] user: "The lake was cold today."')
    scores = lexical.scores("Which painting did I finish?")
    assert set(scores) == {0}  # "painting" finds "painted"; "did", "which", "i" match nothing


def test_a_stop_word_alone_finds_nothing():
    lexical = _Lexical()
    lexical.add(0, '[turn 0] user: "What a day it was."')
    assert lexical.scores("what was it?") == {}


def _exchange(index, start, when, step=timedelta(minutes=1)):
    """Four turns about a canoe trip, said one after another from ``when`` (None: without a time)."""
    lines = [("We should plan the canoe trip on the Tarn river.", "The Tarn is lovely in May."),
             ("I booked two kayaks from the boathouse.", "Great, which day?"),
             ("Saturday the eleventh, leaving at seven.", "Noted."),
             ("Bring the dry bags too.", "Will do.")]
    for n, (user, answer) in enumerate(lines):
        index.add(start + n, turn(user, answer), at=None if when is None else when + n * step)


def _filler(index, start, count, when=None):
    for n in range(count):
        index.add(start + n, turn(f"The school trip number {n} went to the river museum by coach."),
                  at=None if when is None else when + timedelta(days=n + 3))


def test_a_line_said_beside_a_match_the_same_day_comes_as_its_context():
    index = fresh()
    _exchange(index, 0, DAY)
    _filler(index, 10, 12, DAY)
    found = index.search("When is the canoe trip on the Tarn?", k=2)
    # "I booked two kayaks..." shares no word with the question; it comes before a school trip as the exchange's
    assert [item.turn_id for item in found] == [0, 1]


def test_without_times_or_across_days_a_neighbour_is_no_context():
    undated, apart = fresh(), fresh()
    _exchange(undated, 0, None)
    _filler(undated, 10, 12)
    _exchange(apart, 0, DAY, step=timedelta(days=1))
    _filler(apart, 10, 12, DAY + timedelta(days=30))
    for index in (undated, apart):
        scores = {item.turn_id: item.score for item in index.search("When is the canoe trip on the Tarn?", k=6)}
        dated = {item.turn_id: item.score for item in _dated_search()}
        assert scores.get(1, 0.0) < dated[1]  # the same line scores less when it is not the same exchange


def _dated_search():
    index = fresh()
    _exchange(index, 0, DAY)
    _filler(index, 10, 12, DAY)
    return index.search("When is the canoe trip on the Tarn?", k=6)


def test_context_never_brings_back_a_turn_in_the_window():
    index = fresh()
    _exchange(index, 0, DAY)
    _filler(index, 10, 12, DAY)
    found = index.search("When is the canoe trip on the Tarn?", exclude=[1, 2], k=6)
    assert not {1, 2} & {item.turn_id for item in found}
    assert 0 in {item.turn_id for item in found}


def test_nothing_matching_brings_no_context():
    index = fresh()
    _exchange(index, 0, DAY)
    assert index.search("ok thanks", k=4) == []


def _sides(found, turn_id):
    item = next(item for item in found if item.turn_id == turn_id)
    return [line.split("] ", 1)[1].split(":", 1)[0] for line in item.text.split("\n")]


def test_a_weak_other_side_is_not_quoted_with_its_turn():
    index = fresh()
    index.add(0, turn("My canoe trip on the Tarn river is on Saturday.", "Pack a raincoat for the weekend."))
    index.add(1, turn("I packed the canoe paddles for the Tarn trip.", "The Tarn canoe trip sounds like fun."))
    index.add(2, turn("The museum trip was long.", "Museums are tiring."))
    # ranked lines (turn x 2 + side): turn 0's answer ranks last, at a fifth of its statement's score
    ranked = [(0, 0.20), (2, 0.19), (3, 0.18), (4, 0.10), (1, 0.04)]
    found = index._merged(ranked, k=3)
    assert _sides(found, 0) == ["user"]  # its tokens go to better lines
    assert _sides(found, 1) == ["user", "assistant"]  # both lines ranked near each other: both are quoted

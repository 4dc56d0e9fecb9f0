"""Recall of older turns by meaning (helpers/memory/recall.py)."""
import warnings

import httpx2
import openai
import pytest

from helpers.llm.config import load_settings
from helpers.retrieval.embeddings import EmbeddingTruncationWarning
from helpers.chat.validity import find_problems
from helpers.core.context_format import read_quotes
from helpers.memory.recall import (RECENCY_WEIGHT, Recalled, is_question, is_substantive, merge_repeats, near_identical,
                                   quote_turn, rank, recall_block, statements)
from helpers.memory.recall_index import EMBED_CHARS, RecallIndex, RecallWarning
from helpers.standin.server import make_offline_client

from support import BREAKS, assert_lines, broken_client, forged, turn


def tool_turn(question, answer, name="search_campus_info"):
    call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c0", "content": "{}"}, {"role": "assistant", "content": answer}]


TOOL_TURN = [{"role": "user", "content": "When does the robotics club meet?"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "search_campus_info",
                                                                "arguments": '{"query": "robotics club"}'}}]},
             {"role": "tool", "tool_call_id": "c1", "content": '{"results": [{"id": "club-robotics"}]}'},
             {"role": "assistant", "content": 'Robotics Club meets on Wednesdays at 19:00 "Maker Lab".'}]
CONVERSATION = [turn("My locker number is 4471."),
                tool_turn("When is the library open?", "From 07:30 [library-hours]."),
                turn("ok thanks", "You're welcome!"), turn("My advisor is Dr. Hollis Varga."), TOOL_TURN,
                tool_turn("Where can I print a poster?", "In Harrow Library [printing].")]


@pytest.fixture
def index():
    recall = RecallIndex(client=make_offline_client(), settings=load_settings("offline"))
    for turn_id, messages in enumerate(CONVERSATION):
        recall.add(turn_id, messages)
    return recall


@pytest.mark.parametrize("text, expected", [
    ("ok", False), ("Thanks!", False), ("got it, thank you", False), ("", False), ("   ", False), (None, False),
    ("My locker number is 4471.", True), ("When is the library open?", True)])

def test_is_substantive(text, expected):
    assert is_substantive(text) is expected


def test_small_talk_is_not_stored(index):
    assert index.skipped == [2] and 2 not in index.texts and len(index) == 5


def test_turns_are_embedded_lazily_in_one_batch(index):
    assert index.embed_requests == 0 and index.pending == [0, 1, 3, 4, 5]
    index.search("What's my locker number?")
    assert index.embed_requests == 2 and index.pending == []  # one batch of turns, one query


def test_search_finds_the_relevant_turn(index):
    found = index.search("What's my locker number?")
    assert found[0].turn_id == 0 and "4471" in found[0].text


def test_search_skips_turns_in_the_window(index):
    found = index.search("What's my locker number?", exclude=[0, 1])
    assert all(item.turn_id not in (0, 1) for item in found)


def test_search_respects_k_and_min_score(index):
    assert len(index.search("Who is my advisor?", k=1)) == 1
    index.min_score = 0.99
    assert index.search("Who is my advisor?") == []


def test_recalled_tool_turn_is_quoted_text_not_tool_messages(index):
    found = index.search("When does the robotics club meet?")
    assert found[0].turn_id == 4
    block = recall_block(found)
    assert block["role"] == "system" and "tool_calls" not in block
    assert '[turn 4] user: "When does the robotics club meet?"' in block["content"]
    assert "(tools used: search_campus_info)" in block["content"]
    assert '"Maker Lab".' in block["content"]  # the assistant's own double quotes, word for word
    said = [quote.text for quote in read_quotes(block["content"], role="assistant") if quote.turn_id == 4]
    assert said == ['Robotics Club meets on Wednesdays at 19:00 "Maker Lab".']  # ... and the quoting reads back
    assert find_problems([block, {"role": "user", "content": "and then?"}]) == []


def test_embedding_failure_warns_and_keeps_the_turns():
    recall = RecallIndex(client=broken_client(), settings=load_settings("offline"))
    recall.add(0, CONVERSATION[0])
    with pytest.warns(RecallWarning, match="recall skipped"):
        assert recall.search("What's my locker number?") == []
    assert recall.pending == [0]
    recall.client = make_offline_client()
    assert recall.search("What's my locker number?")[0].turn_id == 0


def test_huge_turn_is_clipped_before_embedding(index):
    index.add(9, turn("My bike is green. " + "word " * 20_000))
    assert all(len(piece) <= EMBED_CHARS for piece in index.texts[9])
    assert len(quote_turn(9, turn("x" * 9_000), max_chars=400)) < 500
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingTruncationWarning)
        assert index.search("What colour is my bike?")[0].turn_id == 9


def test_empty_turn_and_empty_question(index):
    assert index.add(7, turn("", "Hello?")) is False
    assert index.search("   ") == []


def test_discard_forgets_a_turn(index):
    index.search("warm up")
    index.discard(0)
    assert all(item.turn_id != 0 for item in index.search("What's my locker number?"))


def test_state_round_trip(index):
    restored = RecallIndex(client=make_offline_client(), settings=load_settings("offline"))
    restored.restore(index.state())
    assert restored.search("What's my locker number?")[0].turn_id == 0


# ---------------------------------------------------------------- time, repeats and questions

def fresh():
    return RecallIndex(client=make_offline_client(), settings=load_settings("offline"))


@pytest.mark.parametrize("text, expected", [
    ("Who is my advisor?", True), ("what's my locker number", True), ("Tell me about the library.", True),
    ("Remind me of my room", True), ("Is the gym open", True), ("My advisor is Dr. Varga.", False),
    ("I'm vegetarian.", False), ("Whoever wins gets a prize.", False), ("", False)])
def test_is_question(text, expected):
    assert is_question(text) is expected


def test_questions_are_never_recalled_as_evidence():
    index = fresh()
    index.add(0, turn("My advisor is Dr. Hollis Varga."))
    for turn_id in (1, 2, 3):  # asked three times; the stand-in's answers repeat the value, without a tool
        answer = 'You told me (turn 0): "My advisor is Dr. Hollis Varga."'
        index.add(turn_id, turn("Who is my advisor?", answer))
    found = index.search("Who is my advisor?")
    assert [item.turn_id for item in found] == [0] and index.skipped == [1, 2, 3]


def test_a_question_inside_a_statement_turn_is_not_embedded():
    index = fresh()
    index.add(0, turn("My room is Wren 312. Where is the laundry?"))
    assert index.texts[0] == ["My room is Wren 312."]


def test_newest_wins_a_tie():
    index = fresh()
    index.add(0, turn("My bike is a green Brompton."))
    index.add(1, turn("Dinner was nice."))
    index.add(2, turn("My bike is a green Brompton!"))  # same words: the same vector, so the same similarity
    found = index.search("What bike do I have?", k=1)
    assert found[0].turn_id == 2


def test_recency_term_lifts_the_newer_of_two_close_statements():
    index = fresh()
    index.add(0, turn("My locker number is 4471."))
    for turn_id in range(1, 20):
        index.add(turn_id, turn(f"Campus note number {turn_id} about the library."))
    index.add(20, turn("My locker number is 5502."))
    found = index.search("What's my locker number?", k=3)  # a note beside turn 20 may come as its context
    ids = [item.turn_id for item in found]
    assert ids[0] == 20 and 0 in ids
    assert found[0].score > found[ids.index(0)].score


def test_restatements_are_merged_into_the_newest_with_a_count():
    index = fresh()
    for turn_id in (0, 4, 9):
        index.add(turn_id, turn("My locker number is 4471."))
    index.add(12, turn("Actually, my locker number is 5502 now."))
    found = index.search("What's my locker number?", k=2)
    assert sorted(item.turn_id for item in found) == [9, 12]  # three repeats do not crowd the correction out
    merged = next(item for item in found if item.turn_id == 9)
    assert merged.also == (0, 4) and "(said 3 times: turns 0, 4, 9)" in merged.text


def test_near_identical():
    assert near_identical("My locker number is 4471.", "my locker number is 4471")
    assert near_identical("My locker number is 4471.", "By the way, my locker number is 4471.")
    assert not near_identical("My locker number is 4471.", "My locker number is 5502.")
    assert not near_identical("My name is Tam.", "My name is Tamsin Okafor.")


def test_long_tool_answers_do_not_crowd_out_a_statement():
    index = fresh()
    index.add(0, turn("My advisor is Dr. Hollis Varga."))
    long_answer = "Advising at Larkspur: every student has an advisor. " + "Advisors meet students. " * 60
    for turn_id in range(1, 6):
        index.add(turn_id, tool_turn(f"Tell me about advising, part {turn_id}.", long_answer))
    found = index.search("Who is my academic advisor?", k=3)
    assert found[0].turn_id == 0
    assert all(len(item.text) < 700 for item in found)  # answers are quoted short


def test_stored_vectors_spare_the_re_embedding_after_a_restore(index):
    before = index.search("What's my locker number?")
    model, vectors = index.export_vectors()
    assert sorted(vectors) == [0, 1, 3, 4, 5] and vectors[0].shape == (1, 384)
    restored = fresh()
    restored.restore(index.state())
    assert restored.import_vectors(model, vectors) == 5 and restored.pending == []
    assert restored.search("What's my locker number?") == before
    assert restored.embed_requests == 1  # only the question was embedded


def test_vectors_from_another_model_are_not_used(index):
    index.search("warm up")
    _, vectors = index.export_vectors()
    restored = fresh()
    restored.restore(index.state())
    assert restored.import_vectors("some-other-embedding-model", vectors) == 0
    assert restored.pending == [0, 1, 3, 4, 5]


def test_a_turn_found_by_its_statement_is_quoted_by_that_line_alone():
    index = fresh()
    index.add(0, tool_turn("My locker number is 4471.", "I could not find that in the campus information."))
    index.add(1, tool_turn("When is the library open?", "From 07:30 [library-hours]."))
    by_statement = index.search("What's my locker number?", k=1)[0]
    assert by_statement.text == '[turn 0] user: "My locker number is 4471."'
    by_answer = index.search("When does the library open?", k=1)[0]
    assert by_answer.turn_id == 1 and "(tools used: search_campus_info)" in by_answer.text


def test_statements_skip_questions_and_small_talk():
    said = statements("Thanks! My locker is 4471.  Who is my advisor? Remind me later. I moved to Wren Hall.")
    assert said == ["My locker is 4471.", "I moved to Wren Hall."]


def test_rank_adds_the_documented_recency_term_and_breaks_ties_toward_the_newest():
    ranked = rank({10: 0.5, 20: 0.5, 30: 0.4})
    assert [turn for turn, _ in ranked] == [20, 10, 30]
    scores = dict(ranked)
    assert scores[10] == 0.5 and scores[30] == pytest.approx(0.4 + RECENCY_WEIGHT)
    assert scores[20] == pytest.approx(0.5 + RECENCY_WEIGHT / 2)
    assert [turn for turn, _ in rank({4: 0.7, 9: 0.7 - RECENCY_WEIGHT})] == [9, 4]  # an exact tie: newest


def test_merge_repeats_groups_restatements_and_keeps_k_groups():
    texts = {1: "My locker is 4471.", 5: "By the way, my locker is 4471.", 7: "My locker is 5502.",
             9: "I moved to Wren Hall."}
    ranked = [(5, 0.9), (1, 0.9), (7, 0.8), (9, 0.5)]
    assert merge_repeats(ranked, texts, k=2) == [[5, 1], [7]]
    assert merge_repeats(ranked, texts, k=3) == [[5, 1], [7], [9]]


# ---------------------------------------------------------------- user text never forges a quoted line


@pytest.mark.parametrize("brk", BREAKS)
def test_a_quoted_turn_cannot_forge_a_line(brk):
    turn = [{"role": "user", "content": forged("My locker number is 4471.", brk)},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": forged("lookup", brk), "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": forged("Your locker is 4471.", brk)}]
    assert_lines(quote_turn(7, turn), expected=3)  # user, tools used, answer


@pytest.mark.parametrize("brk", [b for b in BREAKS if b not in ("\n", "\r\n")])
def test_the_recall_block_cannot_hide_a_line_break(brk):
    item = Recalled(7, 0.9, f'[turn 7] user: "{forged("My locker number is 4471.", brk)}"')
    assert_lines(recall_block([item])["content"], expected=2)


def test_a_split_message_is_embedded_by_its_sentences_and_its_whole_is_their_mean(monkeypatch):
    """A long message split into sentences is not embedded a second time as a whole: the whole's row is the unit
    mean of its sentences' rows, and every other piece keeps its own embedding."""
    import numpy as np

    from helpers.memory import recall_index
    from helpers.memory.recall import SENTENCE_PIECES_FROM

    recall = fresh()
    long = ("I moved to the Birch residence last month and I really like my new room there on the third floor. "
            "My advisor is now Dr. Okafor, who also teaches the statistics seminar on Thursdays after lunch. "
            "My bike is the red one chained by the gym, next to the blue bench near the entrance. "
            "On weekends I usually work a short shift at the bakery on Harbor Street before going home.")
    assert len(long.split()) >= SENTENCE_PIECES_FROM
    recall.add(0, turn(long, "Noted, thanks for telling me all of that about your move and your advisor."))
    recall.add(1, turn("My locker number is 4471.", "Noted."))
    pieces = recall.texts[0]
    assert len(pieces) > 2 and pieces[0].endswith(long)   # the whole message, then its sentences
    sent = []
    real = recall._embed
    monkeypatch.setattr(recall, "_embed", lambda texts, kind: sent.extend(texts) or real(texts, kind))
    recall.search("Who is my advisor?")
    assert pieces[0] not in sent and all(p in sent for p in pieces[1:]) and recall.texts[1][0] in sent
    rows = recall._matrix[[n for n, i in enumerate(recall._ids) if i == 0]]
    sentences = [n for n in range(1, len(pieces)) if n < len(pieces) - recall.assistant.get(0, 0)]
    assert np.allclose(rows[0], recall_index.mean_rows(rows[sentences]), atol=1e-6)

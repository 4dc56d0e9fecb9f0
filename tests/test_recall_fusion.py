"""Recall on real conversations (issue 32, part 2): the assistant's words, a budget-sized k, BM25 fused with
the embedding, speaker names and image captions, empty replies, and search work linear in the index."""
import pytest

import helpers.memory.recall as recall_module
from helpers.core.context_format import read_quotes
from helpers.llm.config import load_settings
from helpers.memory.assembler import MemoryAssembler, assemble_context
from helpers.memory.recall_index import MERGE_PEERS, RecallIndex
from helpers.standin.server import make_offline_client


def turn(user, answer="Noted."):
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def fresh(**kwargs):
    return RecallIndex(client=make_offline_client(), settings=load_settings("offline"), **kwargs)


def memory():
    return MemoryAssembler(summariser=False, client=make_offline_client(), settings=load_settings("offline"))


def test_what_the_assistant_said_is_found_and_quoted_as_its_words():
    index = fresh()
    index.add(0, turn("What should I pack for the ridge hike?",
                      "Pack the orange waterproof jacket and two litres of water."))
    index.add(1, turn("My bike is a green Brompton."))
    found = index.search("What did you tell me to pack for the hike?", k=1)
    assert [item.turn_id for item in found] == [0]
    said = read_quotes(found[0].text, "assistant")
    assert said and "orange waterproof jacket" in said[0].text
    assert read_quotes(found[0].text, "user") == []  # the question that was asked is not what matched
    assert index.turn_state(0)["assistant"] == 1  # its part says how many pieces are the assistant's


def test_the_assistants_claims_stay_out_of_the_profile():
    mem = memory()
    mem.remember(0, turn("Which locker should I use?", "Your locker number is 9912."))
    assert not any("9912" in line for line in mem.profile.lines())
    assert mem.recall.search("What locker number did you give me?", k=1)[0].turn_id == 0


def test_a_reply_that_only_repeats_memory_or_the_user_is_not_indexed():
    index = fresh()
    index.add(0, turn("Who is my advisor?", 'You told me (turn 0): "My advisor is Dr. Hollis Varga."'))
    index.add(1, turn("My bike is blue.", "Noted: blue."))
    assert index.skipped == [0] and index.texts[1] == ["My bike is blue."]


def test_k_follows_the_budget():
    mem = memory()
    for turn_id in range(60):
        mem.remember(turn_id, turn(f"My locker number {turn_id} is in corridor {turn_id + 100} of Wren Hall."))
    window = [(59, turn("My locker number 59 is in corridor 159 of Wren Hall."))]
    small = mem.build(None, window, "Where is my locker in Wren Hall?", budget=600).report.ids("recall")
    part = mem.last_report.part("recall")
    assert part.tokens <= part.cap and part.cap - part.tokens < 60  # the room is filled, not left empty
    large = mem.build(None, window, "Where is my locker in Wren Hall?", budget=4000).report.ids("recall")
    assert len(small) > 3 and len(large) > 2 * len(small)


def test_a_rare_word_is_ranked_in_by_the_lexical_ranking():
    index = fresh()
    for turn_id, text in enumerate([
            "My parcel from the bookshop arrived late.", "The courier left my parcel with a neighbour.",
            "I sent a parcel to my sister in Leeds.", "My parcel tracking number stopped updating.",
            "I need to post a parcel before Friday.", "The post office lost my parcel last spring.",
            "My parcel was damaged in the rain.", "I ordered a parcel of seeds for the garden."]):
        index.add(turn_id, turn(text))
    index.add(20, turn("The Quillbrook locker holds my spare keys."))
    question = "Which parcel did I leave at Quillbrook?"
    by_meaning = sorted(index.texts, key=lambda i: -index.similarity(question, index.texts[i])[0])
    assert 20 not in by_meaning[:2]  # the embedding alone misses it
    assert 20 in [item.turn_id for item in index.search(question, k=2)]


def test_speaker_names_and_image_captions_are_indexed_and_quoted():
    index = fresh()
    index.add(0, [{"role": "user", "name": "Caroline", "content": [
                      {"type": "text", "text": "Look at the mural I painted downtown."},
                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                      {"type": "text", "text": "It shows a sunflower field at dawn."}]},
                  {"role": "assistant", "name": "Melanie", "content": "I adopted a grey kitten called Pepper."}])
    quote = index.quotes[0]
    assert '[turn 0] user (Caroline): "Look at the mural I painted downtown. It shows a sunflower field' in quote
    assert read_quotes(quote, "assistant")[0].name == "Melanie"
    assert read_quotes(quote, "user")[0].name == "Caroline"
    assert any(piece.startswith("Caroline: ") for piece in index.texts[0])
    assert any(piece.startswith("Melanie: ") for piece in index.texts[0])
    found = index.search("What did Melanie adopt?", k=1)[0]
    assert "assistant (Melanie)" in found.text and "Pepper" in found.text


def test_an_empty_assistant_reply_is_accepted():
    window = [(0, [{"role": "user", "content": "My bike is blue."}, {"role": "assistant", "content": ""}]),
              (1, turn("My locker is 4471.", "Noted."))]
    assembly = assemble_context("You help.", window, "What colour is my bike?", budget=800)
    assert assembly.report.ids("window") == [0, 1]
    assert {"role": "user", "content": "My bike is blue."} in assembly.messages
    assert not any(m.get("role") == "assistant" and not m.get("content") for m in assembly.messages)
    assert any("turn 0" in note for note in assembly.report.warnings)


def test_merging_repeats_is_linear_in_the_index_not_k_times_n(monkeypatch):
    calls = []
    real = recall_module.near_identical

    def counted(a, b, *args):
        calls.append(1)
        return real(a, b, *args)

    monkeypatch.setattr(recall_module, "near_identical", counted)
    index = fresh(min_score=0.0)
    n = 240
    for turn_id in range(n):
        index.add(turn_id, turn(f"My locker note {turn_id}: corridor {turn_id * 7} by stairwell {turn_id * 13}."))
    found = index.search("Where is my locker?", k=120)
    assert len(found) == 120
    assert len(calls) <= MERGE_PEERS * n  # today's merge compared each of k x 16 candidates with up to k groups
    assert index.last_scored <= index.rows + 4 * len(index) * 2  # rows, plus the postings of the question's words


def test_restatements_still_merge():
    index = fresh()
    for turn_id in (0, 4, 9):
        index.add(turn_id, turn("My locker number is 4471."))
    index.add(12, turn("Actually, my locker number is 5502 now."))
    found = index.search("What's my locker number?", k=2)
    assert sorted(item.turn_id for item in found) == [9, 12]
    assert next(item for item in found if item.turn_id == 9).also == (0, 4)


def test_the_assistants_pieces_are_kept_per_turn_and_old_parts_still_load():
    mem = memory()
    mem.remember(0, turn("What should I pack?", "Pack the orange waterproof jacket and two litres of water."))
    mem.remember(1, turn("My bike is a green Brompton."))
    state = mem.state()
    assert state["turns"]["0"]["recall"]["assistant"] == 1
    again = memory()
    again.restore(state)
    assert again.state() == state
    assert again.recall.search("What did you tell me to pack?", k=1)[0].turn_id == 0
    old = {"summary": {}, "pending": [], "keep": [], "recall": {}, "profile": {"user_id": "local"}, "turns": {
        "0": {"recall": {"quote": '[turn 0] user: "My bike is blue."', "texts": ["My bike is blue."]}}}}
    older = memory()
    older.restore(old)  # a part stored before the assistant's words were indexed
    assert older.recall.search("What colour is my bike?", k=1)[0].turn_id == 0
    bad = {**old, "turns": {"0": {"recall": {**old["turns"]["0"]["recall"], "assistant": 5}}}}
    with pytest.raises(ValueError, match="turn 0 counts 5 assistant pieces"):
        memory().restore(bad)


def two_speakers(index):
    """Two people say something alike about the same subject, each on their own lines (a transcript)."""
    lines = [("Melanie", "I took the kids to the lake for a swim last weekend."),
             ("Caroline", "I went swimming at the lake with my friends last weekend."),
             ("Melanie", "We ate sandwiches by the water afterwards."),
             ("Caroline", "The water at the lake was colder than I expected.")]
    for turn_id in range(0, len(lines), 2):
        (a, said_a), (b, said_b) = lines[turn_id:turn_id + 2]
        index.add(turn_id // 2, turn(f"{a}: {said_a}", f"{b}: {said_b}"))
    for turn_id in range(2, 6):  # more of the conversation: each name starts several lines
        index.add(turn_id, turn(f"Melanie: My painting class starts at {turn_id} pm.",
                                f"Caroline: My guitar lesson moved to room {turn_id}."))


def test_a_question_that_names_a_speaker_ranks_that_speakers_lines_first():
    index = fresh()
    two_speakers(index)
    lexical = index._lexical_index()
    assert lexical.named_speaker("When did caroline go swimming at the lake?") == "Caroline"  # any case
    assert lexical.named_speaker("Who went to the lake, Melanie or Caroline?") is None  # two names: no rule
    assert lexical.named_speaker("When did Carolinea swim?") is None  # a whole word only
    for name, other in (("Caroline", "Melanie"), ("Melanie", "Caroline")):
        found = index.search(f"When did {name} swim at the lake?", k=1)
        quoted = read_quotes(found[0].text, "user") + read_quotes(found[0].text, "assistant")
        assert quoted and all(q.text.startswith(f"{name}:") for q in quoted), (name, found[0].text)


def test_a_name_the_messages_give_is_a_speaker_too_and_an_unnamed_line_is_left_alone():
    index = fresh()
    for turn_id, (name, said) in enumerate([("dana", "My bike is a green Brompton with a basket."),
                                            ("lee", "My bike is a red Brompton with a basket."),
                                            ("dana", "I park it by the library."), ("lee", "I park it at work.")]):
        index.add(turn_id, [{"role": "user", "name": name, "content": said},
                            {"role": "assistant", "content": "Good to know."}])
    index.add(9, turn("Update: my bike is a blue Brompton with a basket now."))  # one line: not a speaker
    assert index._lexical_index().named_speaker("What bike does Lee ride? Any update?") == "lee"
    top = index.search("What colour is Lee's Brompton with a basket?", k=1)[0]
    assert read_quotes(top.text)[0].name == "lee" and "red" in top.text
    unchanged = {1: 1.0, 2 * 9: 0.7}  # the unnamed line keeps its score
    assert index._lexical_index().by_named_speaker("what did lee say?", unchanged) == unchanged


def test_the_named_speakers_name_is_no_search_word():
    index = fresh()
    two_speakers(index)
    lexical = index._lexical_index()
    # the name starts every line Caroline said, so a question whose other words match nothing finds no line
    assert lexical.scores(lexical.search_words("What would CAROLINE pursue in her educaton?")) == {}
    assert lexical.scores("What would Caroline pursue in her educaton?")  # the name alone matches her lines
    # a question that names both keeps both names (no one speaker is asked about)
    both = "Did Melanie or Caroline swim?"
    assert lexical.search_words(both) == both
    # the words that are not the name still search: her lake line is found by words
    hits = lexical.scores(lexical.search_words("When did Caroline swim at the lake?"))
    assert 0 * 2 + 1 in hits and all(lexical.speaker.get(code) for code in hits)


def test_a_reply_that_only_sits_beside_a_match_is_not_quoted_with_it():
    """A line gains part of its neighbour's score (CONTEXT_WEIGHTS) but joins its turn's quote only with half the
    turn's best (JOIN_SHARE): an unrelated reply beside a matched statement stays out of the quote."""
    from datetime import datetime, timezone
    day = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)  # one day: the two sides are each other's context
    index = fresh()
    index.add(0, turn("My shuttle stop is the north gate, by the bakery.",
                      "The library closes at ten tonight, and the printers are on the second floor."), at=day)
    index.add(1, turn("I play cello in the campus orchestra."), at=datetime(2026, 12, 2, tzinfo=timezone.utc))
    found = index.search("Which shuttle stop do I use?", k=1)
    assert [item.turn_id for item in found] == [0]
    assert read_quotes(found[0].text, "user") and read_quotes(found[0].text, "assistant") == [], found[0].text

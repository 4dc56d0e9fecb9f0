"""The LoCoMo benchmark's harness (benchmarks/locomo_eval.py) on small conversations in LoCoMo's format.

The conversations are built here (the real data stays outside the project): two sessions with dates, an
image with a caption, a session with an odd number of lines, questions of every category with evidence.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import locomo_data as ld  # noqa: E402
import locomo_eval  # noqa: E402

DATE_1, DATE_2 = "1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023"


def locomo_json() -> dict:
    """One conversation as the release writes it (``<id>.json``)."""
    return {
        "speaker_a": "Alice", "speaker_b": "Bob",
        "session_1_date_time": DATE_1,
        "session_1": [
            {"speaker": "Alice", "dia_id": "D1:1", "text": "Hi Bob! I adopted a greyhound named Biscuit last week."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "That is wonderful news, Alice."},
            {"speaker": "Alice", "dia_id": "D1:3", "text": "Look at him!", "img_url": ["https://example.org/d.jpg"],
             "blip_caption": "a photo of a dog running on a beach", "query": "greyhound beach"},
        ],
        "session_2_date_time": DATE_2,
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I started learning the cello in March."},
            {"speaker": "Alice", "dia_id": "D2:2", "text": "How is the cello going so far?"},
            {"speaker": "Bob", "dia_id": "D2:3", "text": "My teacher Marguerite says my vibrato has improved a lot."},
            {"speaker": "Alice", "dia_id": "D2:4", "text": "That sounds great, keep practising."},
        ],
        "session_3_date_time": "3:00 pm on 1 July, 2023",  # a date without a session, as in the release
        "qa": [
            {"question": "When did Alice adopt Biscuit?", "answer": "The week before 8 May 2023",
             "evidence": ["D1:1"], "category": 2},
            {"question": "What instrument does Bob's teacher Marguerite teach?", "answer": "cello",
             "evidence": ["D2:1; D2:3"], "category": 1},
            {"question": "What kind of dog does Alice have?", "answer": "a greyhound", "evidence": ["D:1:1"],
             "category": 4},
            {"question": "What is in Alice's photo?", "answer": "a dog on a beach", "evidence": ["D1:3"],
             "category": 3},
            {"question": "What did Alice's teacher say about her vibrato?", "adversarial_answer": "improved",
             "evidence": ["D2:3"], "category": 5},
            {"question": "A question whose evidence the data names wrongly", "answer": "x",
             "evidence": ["D9:99"], "category": 4},
        ],
    }


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A LoCoMo-like folder with a tuning conversation (26) and a held-out one (44)."""
    target = tmp_path / "data" / "multimodal_dialog" / "locomo10_v2"
    target.mkdir(parents=True)
    for cid in (26, 44):
        (target / f"{cid}.json").write_text(json.dumps(locomo_json()), encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> locomo_eval.Result:
    """Both conversations through the real memory (offline stand-in, local MiniLM), at two small budgets."""
    root = tmp_path_factory.mktemp("locomo")
    target = root / "locomo10_v2"
    target.mkdir()
    for cid in (26, 44):
        (target / f"{cid}.json").write_text(json.dumps(locomo_json()), encoding="utf-8")
    result = locomo_eval.Result()
    for conversation in ld.load_folder(root):
        locomo_eval.evaluate(conversation, (110, 400), result=result, show_progress=False)
    return result


def test_turns_pair_lines_with_names_dates_and_captions():
    conversation = ld.parse_conversation(locomo_json(), 26)
    turns = ld.conversation_turns(conversation)
    assert [t.line_ids for t in turns] == [["D1:1", "D1:2"], ["D1:3"], ["D2:1", "D2:2"], ["D2:3", "D2:4"]]
    first = turns[0].messages
    assert [m["role"] for m in first] == ["user", "assistant"]
    assert first[0]["content"] == (f"[Session date: {DATE_1}]\n"
                                   "Alice: Hi Bob! I adopted a greyhound named Biscuit last week.")
    assert first[1]["content"] == "Bob: That is wonderful news, Alice."
    # an odd line ends its session as a turn of one user message; the caption is text
    assert turns[1].messages == [{"role": "user", "content":
                                  "Alice: Look at him! [shares an image: a photo of a dog running on a beach]"}]
    # the pair's first line is the user's even when the other person speaks first; a new session has its date
    assert turns[2].messages[0]["content"].startswith(f"[Session date: {DATE_2}]\nBob: I started")
    assert turns[2].messages[1]["content"].startswith("Alice: How is")
    assert turns[3].messages[0]["content"].startswith("Bob: My teacher")  # no date line inside a session
    assert turns[2].created_at.isoformat() == "2023-06-27T10:37:00+00:00"
    assert turns[3].created_at > turns[2].created_at


def test_evidence_ids_are_read_leniently_and_unknown_ones_dropped():
    conversation = ld.parse_conversation(locomo_json(), 26)
    assert ld.parse_evidence(["D2:1; D2:3", "D:11:26", "D10:19 D10:20"]) == ["D2:1", "D2:3", "D11:26",
                                                                            "D10:19", "D10:20"]
    by_question = {q.text: q.evidence for q in conversation.questions}
    assert by_question["What kind of dog does Alice have?"] == ["D1:1"]
    assert by_question["A question whose evidence the data names wrongly"] == []


def test_evidence_recall_counts_the_lines_whose_text_is_in_the_context():
    conversation = ld.parse_conversation(locomo_json(), 26)
    question = next(q for q in conversation.questions if q.category == 1)  # evidence D2:1 and D2:3
    messages = [{"role": "system", "content": "Recalled:\n[turn 2] user: Bob: I started   learning the CELLO "
                                              "in March."},
                {"role": "user", "content": "Bob: My teacher Marguerite says my vibrato"}]  # D2:3 cut short
    found = ld.evidence_found(question, conversation.by_id, locomo_eval.context_of(messages))
    assert found == [True, False]
    row = locomo_eval.Row(26, "tuning", 1, "hybrid", 900, found, None, 10, 100)
    assert row.recall == 0.5


def test_a_date_counts_in_any_usual_spelling():
    for written in (DATE_1, "8 May 2023", "May 8, 2023", "2023-05-08", "on 8 may, 2023 alice said"):
        assert ld.date_in_context(DATE_1, ld.normal(f"[turn 3, {written}] Alice: hi"))
    assert not ld.date_in_context(DATE_1, ld.normal("[27 June 2023] Bob: hi, 18 May 2023"))


def test_bm25_ranks_a_line_sharing_rare_words_first():
    documents = ["Bob: I love music and I practise every day.", "Bob: My teacher Marguerite praised my vibrato.",
                 "Alice: I love my dog and music.", "Alice: The weather is nice today."]
    bm25 = ld.BM25(documents)
    assert bm25.ranking("What did Marguerite say about Bob's vibrato?")[0] == 1
    scores = bm25.scores("Marguerite music")
    assert scores[1] > scores[3] and scores[0] > scores[3] == 0


def test_no_strategy_exceeds_its_budget(measured):
    assert measured.over_budget == []
    budgeted = [r for r in measured.rows if r.budget is not None]
    assert {r.strategy for r in budgeted} == {"hybrid", "window", "BM25", "cosine"}
    assert all(r.tokens <= r.budget for r in budgeted)
    assert max(r.tokens for r in budgeted if r.budget == 110) > 80  # the small budget is actually used
    full = [r for r in measured.rows if r.strategy == "full history"]
    assert full and all(r.recall == 1 and r.tokens == r.full for r in full)  # the scorer finds every line


def test_full_measurement_covers_every_question_with_evidence(measured):
    per_conversation = [r for r in measured.rows if r.conversation == 26 and r.strategy == "hybrid"
                        and r.budget == 400]
    assert sorted(r.category for r in per_conversation) == [1, 2, 3, 4, 5]  # the one without evidence left out
    assert measured.skipped == {"tuning": 1, "held-out": 1}
    temporal = [r for r in measured.rows if r.category == 2]
    assert all(r.date_ok is not None for r in temporal)
    assert all(r.date_ok is None for r in measured.rows if r.category != 2)
    assert {r.date_ok for r in temporal if r.strategy == "full history"} == {True}
    assert measured.ingest["tuning"][0][0] == 4 and measured.build_ms["held-out"]


def test_halves_are_kept_apart_and_category_5_is_reported_apart(measured):
    assert {r.half for r in measured.rows if r.conversation == 44} == {"held-out"}
    assert {r.conversation for r in measured.rows if r.half == "tuning"} == {26}
    text = locomo_eval.report(measured, (110, 400))
    tuning, held_out = text.split("### held-out half")
    assert "### tuning half: conversations 26 (" in tuning and "44" not in tuning.split("\n")[1]
    assert held_out.startswith(": conversations 44 (")
    assert "recall 5 (adversarial)" in text and "5 adversarial" in text
    # category 5 is never part of the 1-4 figures
    rows = [locomo_eval.Row(26, "tuning", 4, "BM25", 900, [False], None, 5, 50),
            locomo_eval.Row(26, "tuning", 5, "BM25", 900, [True], None, 5, 50),
            locomo_eval.Row(44, "held-out", 4, "BM25", 900, [True], None, 5, 50)]
    assert locomo_eval.summarise(rows, "tuning", "BM25", 900)["recall %"] == 0
    assert locomo_eval.summarise(rows, "tuning", "BM25", 900, "5")["recall %"] == 100
    assert locomo_eval.summarise(rows, "held-out", "BM25", 900)["recall %"] == 100
    table = locomo_eval.readme_table(measured, (110, 400))
    assert table.splitlines()[0].startswith("| half | strategy | recall @110 | recall @400 |")
    assert sum(line.startswith("| held-out |") for line in table.splitlines()) == len(locomo_eval.STRATEGIES)


def test_a_turn_time_is_passed_when_the_memory_takes_one():
    class Dated:
        window_turns = 2

        def __init__(self):
            self.remembered, self.forgotten = [], []

        def remember(self, turn_id, messages, *, created_at=None):
            self.remembered.append((turn_id, created_at))

        def forget(self, turns):
            self.forgotten += [i for i, _ in turns]

        def build(self, *args, **kwargs):
            return None

    memory = Dated()
    turns = ld.conversation_turns(ld.parse_conversation(locomo_json(), 26))
    window, _ = locomo_eval.ingest(memory, turns)
    assert locomo_eval.takes_created_at(memory)
    assert [i for i, _ in window] == [2, 3] and memory.forgotten == [0, 1]
    assert memory.remembered[0][1].isoformat() == "2023-05-08T13:56:00+00:00"

    class Undated(Dated):
        def remember(self, turn_id, messages):
            self.remembered.append((turn_id, None))

    assert not locomo_eval.takes_created_at(Undated())
    locomo_eval.ingest(Undated(), turns)  # today's signature: no keyword passed, no error


def test_answers_offline_say_they_need_a_model_and_run_nothing(folder, monkeypatch, capsys):
    monkeypatch.setenv("WORKSHOP_BACKEND", "offline")
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    monkeypatch.setattr(locomo_eval, "evaluate", lambda *a, **k: pytest.fail("ran without a model"))
    assert locomo_eval.main(["--data", str(folder), "--answers"]) == 0
    assert "needs a model" in capsys.readouterr().out


def test_the_command_prints_markdown_and_saves_the_plot(folder, tmp_path, capsys):
    plot = tmp_path / "plot.png"
    assert locomo_eval.main(["--data", str(folder), "--conversations", "44", "--budgets", "150", "400",
                             "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "| half | strategy | recall @150 | recall @400 |" in out and "| held-out | hybrid |" in out
    assert "tuning" not in out.split("For the README")[1]
    assert plot.stat().st_size > 1000


def test_answer_f1_follows_the_locomo_paper():
    assert ld.token_f1("The cello", "cello", 4) == 1
    assert ld.token_f1("a cello and a violin", "cello", 4) == pytest.approx(2 / 3)
    assert ld.token_f1("pottery, painting", "painting, pottery", 1) == 1
    assert ld.token_f1("hiking", "hiking; she likes the outdoors", 3) == 1


def test_answers_with_a_model_print_f1_the_judge_and_the_published_figures(folder, monkeypatch, capsys):
    from helpers.llm.client import make_client
    from helpers.llm.config import load_settings

    settings = load_settings("offline")  # the stand-in plays the model: only the plumbing is checked here
    monkeypatch.setattr(locomo_eval, "answer_model", lambda: (make_client(settings), settings))
    assert locomo_eval.main(["--data", str(folder), "--conversations", "26", "--budgets", "400", "--answers",
                             "--answer-budget", "400", "--answer-limit", "2", "--no-plot"]) == 0
    out = capsys.readouterr().out.split("Answer accuracy")[1]
    lines = [line for line in out.splitlines() if line.startswith("| tuning |")]
    assert [line.split(" | ")[1:3] for line in lines] == [["full history", "2"], ["hybrid", "2"]]
    assert "full context 72.9, Mem0 66.9, Zep 66.0, LangMem 58.1, OpenAI memory 52.9" in out


def test_a_longer_history_is_fed_end_to_end_and_timed(folder):
    conversations = ld.load_folder(folder)
    turns, seconds, ms, fed = locomo_eval.long_history_ms(conversations, target=5, budgets=(200, 400), questions=3)
    per_conversation = len(ld.conversation_turns(conversations[0]))
    assert turns == 2 * per_conversation  # one conversation is too short: the second is fed after it
    assert seconds > 0 and len(ms) == 3 * 2 and all(m > 0 for m in ms) and fed == [26, 44]
    assert locomo_eval.long_history_ms(conversations, target=1, budgets=(400,), questions=1)[3] == [26]
    line = locomo_eval.long_history_line(conversations, 5, (400,))
    assert f"{turns} turns, conversations 26, 44" in line and "p95" in line


def _contexts(n: int = 3) -> list[dict]:
    return [{"conversation": 26, "half": "tuning", "strategy": strategy, "category": 4, "question": f"Question {i}?",
             "answer": f"gold answer {i}", "messages": [{"role": "system", "content": f"context {i}"}]}
            for i in range(n) for strategy in ("hybrid", "full history")]


def _judge_reply(grade):
    """A fake ``_reply``: answers with the context's own words; the judge grades with ``grade(gold, answer)``."""
    def reply(messages, client, settings, max_tokens):
        text = messages[-1]["content"]
        if "gold answer" in text and "generated answer" in text.lower():
            gold = re.search(r"Gold answer: (.*)", text).group(1).strip()
            answer = re.search(r"Generated answer: (.*)", text).group(1).strip()
            return "CORRECT" if grade(gold, answer) else "WRONG"
        return messages[0]["content"].replace("context", "gold answer")
    return reply


def test_a_judge_that_says_correct_to_everything_is_left_out(monkeypatch):
    settings = type("S", (), {"chat_model": "tiny"})()
    monkeypatch.setattr(locomo_eval, "_reply", _judge_reply(lambda gold, answer: True))
    passed, said = locomo_eval.judge_passes(_contexts(), None, settings)
    assert not passed and "of 6 control verdicts right" in said
    out = locomo_eval.answer_accuracy(type("R", (), {"contexts": _contexts()})(), None, settings)
    assert "| tuning | hybrid | 3 | 0 | 100.0 | – |" in out and "The judge column is left out" in out


def test_a_judge_that_tells_right_from_wrong_is_reported_and_failed_requests_are_counted(monkeypatch):
    settings = type("S", (), {"chat_model": "able"})()
    monkeypatch.setattr(locomo_eval, "_reply", _judge_reply(lambda gold, answer: gold == answer))
    assert locomo_eval.judge_passes(_contexts(), None, settings) == (True, "6 of 6 control verdicts right")

    def failing(messages, client, settings, max_tokens):  # the server refuses every long-context request
        if any("context" in str(m.get("content")) for m in messages[:-1]) and messages[0]["content"] == "context 2":
            raise RuntimeError("The request needs 20300 tokens, more than the 2048-token context window")
        return _judge_reply(lambda gold, answer: gold == answer)(messages, client, settings, max_tokens)
    monkeypatch.setattr(locomo_eval, "_reply", failing)
    out = locomo_eval.answer_accuracy(type("R", (), {"contexts": _contexts()})(), None, settings)
    assert "| tuning | hybrid | 3 | 1 | 66.7 | 66.7 |" in out
    assert "tuning, hybrid: 1 request(s) failed, each scored as wrong; the first: RuntimeError: The request needs" in out
    assert "The judge column is left out" not in out

"""Rolling summaries (helpers/memory/summary.py) and the stand-in's summariser rule."""
import json

import httpx2
import openai
import pytest

from helpers.llm.config import load_settings
from helpers.memory.summary import (RollingSummary, Summariser, SummaryError, SummaryWarning, fold,
                                    missing_facts, render_turn, summary_model, summary_request,
                                    trim_summary_lines)
from helpers.core.context_format import format_turn_ids
from helpers.standin.policy import summarise_conversation

from scripted import ScriptedServer
from support import BREAKS, assert_lines, forged, turn


NAME = turn("My name is Priya Raman. I study physics. My budget is 40 dollars.", "Nice to meet you, Priya.")
CLUB = turn("When does the AI club meet?", "The AI Club meets on Thursdays at 18:00 [club-ai].")


class CaptureServer:
    """Records each request body and answers with the given texts (no validation: any model name)."""

    def __init__(self, replies):
        self.replies, self.bodies = list(replies), []

    def handle(self, request):
        self.bodies.append(json.loads(request.content))
        content = self.replies.pop(0)
        return httpx2.Response(200, json={
            "id": "x", "object": "chat.completion", "created": 0, "model": self.bodies[-1]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def client(self):
        return openai.OpenAI(api_key="x", base_url="http://capture/v1", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)))


@pytest.mark.parametrize("ids, text", [([3], "turn 3"), ([0, 1, 2, 5], "turns 0-2, 5"), ([7, 6], "turns 6-7"),
                                       ([], "no turns")])
def test_format_turn_ids(ids, text):
    assert format_turn_ids(ids) == text


def test_summary_model_defaults_to_the_chat_model(monkeypatch):
    monkeypatch.delenv("WORKSHOP_SUMMARY_MODEL", raising=False)
    settings = load_settings("offline").with_overrides(backend="nim", chat_model="meta/big")
    assert summary_model(settings) == "meta/big"


def test_summary_model_is_overridden_by_the_environment(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SUMMARY_MODEL", "meta/small")
    settings = load_settings("offline").with_overrides(backend="nim", chat_model="meta/big")
    assert summary_model(settings) == "meta/small"
    assert summary_model(load_settings("offline")) == "offline/stand-in"  # the stand-in serves one model


def test_the_summariser_asks_its_own_model(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SUMMARY_MODEL", "meta/small")
    server = CaptureServer(["[turn 0] the user is Priya."])
    settings = load_settings("offline").with_overrides(backend="nim", chat_model="meta/big")
    Summariser(client=server.client(), settings=settings).summarise(RollingSummary(), [(0, NAME)])
    assert server.bodies[0]["model"] == "meta/small"


def test_summary_is_a_system_block_citing_the_turns_it_covers(offline):
    update = Summariser(**offline).summarise(RollingSummary(), [(0, NAME), (1, CLUB)])
    block = update.summary.block()
    assert block["role"] == "system"
    assert block["content"].startswith("Summary of earlier turns (turns 0-1):")
    assert "[turn 0] user:" in block["content"] and "[turn 1] user:" in block["content"]
    assert update.summary.turn_ids == [0, 1] and update.attempts == 1


def test_summary_rolls_forward(offline):
    summariser = Summariser(**offline)
    first = summariser.summarise(RollingSummary(), [(0, NAME)]).summary
    second = summariser.summarise(first, [(4, CLUB)]).summary
    assert second.turn_ids == [0, 4] and "Priya Raman" in second.text and "[turn 4]" in second.text
    assert second.header() == "Summary of earlier turns (turns 0, 4):"


def test_missing_pinned_fact_is_re_asked_once(offline):
    summariser = Summariser(**offline)
    update = summariser.summarise(RollingSummary(), [(0, NAME)], keep=["budget is 40 dollars"])
    assert update.attempts == 2 and summariser.requests == 2  # the 3rd sentence was clipped, then re-asked
    assert missing_facts(update.summary.text, ["budget is 40 dollars"]) == [] and update.appended == []


def test_pinned_fact_already_present_costs_one_request(offline):
    summariser = Summariser(**offline)
    update = summariser.summarise(RollingSummary(), [(0, NAME)], keep=["Priya Raman"])
    assert update.attempts == 1 and summariser.requests == 1


def test_a_summariser_that_keeps_dropping_a_fact_gets_it_appended_with_a_warning():
    server = ScriptedServer([{"content": "[turn 0] The user introduced themselves."}] * 2)
    summariser = Summariser(**server.kwargs())
    with pytest.warns(SummaryWarning, match="appended verbatim"):
        update = summariser.summarise(RollingSummary(), [(0, NAME)], keep=["40 dollars", "Priya Raman"])
    assert update.attempts == 2 and update.appended == ["40 dollars", "Priya Raman"]
    assert update.summary.text.endswith("Pinned: 40 dollars; Priya Raman")
    assert "MISSING" in server.requests[1]["messages"][1]["content"]


def test_summariser_failure_is_a_summary_error():
    server = ScriptedServer([500])
    with pytest.raises(SummaryError, match="raw turns are kept"):
        Summariser(**server.kwargs()).summarise(RollingSummary(), [(0, NAME)])


def test_empty_summary_reply_is_a_summary_error():
    server = ScriptedServer([{"content": "  "}])
    with pytest.raises(SummaryError, match="empty summary"):
        Summariser(**server.kwargs()).summarise(RollingSummary(), [(0, NAME)])


def test_no_turns_means_no_request(offline):
    summariser = Summariser(**offline)
    previous = RollingSummary("text", [1])
    assert summariser.summarise(previous, []).summary is previous and summariser.requests == 0


def test_huge_and_empty_turns_are_rendered_safely():
    huge = render_turn(2, turn("x" * 50_000, "ok"), max_chars=600)
    assert len(huge[0]) < 700 and huge[0].endswith("…")
    assert render_turn(3, turn("", "Hello?"))[0] == "[turn 3] user: (empty message)"


def test_tool_calls_are_rendered_as_text_lines():
    messages = [{"role": "user", "content": "When?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "search_campus_info", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": '{"results": []}'},
                {"role": "assistant", "content": "Thursday."}]
    lines = render_turn(5, messages)
    assert lines[1].startswith("[turn 5] tool call: search_campus_info")
    assert lines[2].startswith("[turn 5] tool search_campus_info:") and lines[3] == "[turn 5] assistant: Thursday."


def test_trim_summary_lines_keeps_pinned_line():
    text = "[turn 0] one two three\n[turn 1] four five six\nPinned: 40 dollars"
    trimmed, dropped = trim_summary_lines(text, lambda t: len(t.split()) <= 8)
    assert trimmed == "[turn 1] four five six\nPinned: 40 dollars" and dropped == 1


# ---------------------------------------------------------------- the stand-in's rule

def rule_prompt(turns, previous="(none)", limit=120, missing=()):
    lines = [f"WORD LIMIT: {limit}", "PREVIOUS SUMMARY:", previous, "KEEP:"]
    if missing:
        lines += ["MISSING (include these):"] + [f"- {m}" for m in missing]
    lines.append("TURNS:")
    for turn_id, messages in turns:
        lines += render_turn(turn_id, messages)
    return "\n".join(lines)


def test_rule_keeps_user_words_and_final_answer_with_turn_ids():
    text = summarise_conversation(rule_prompt([(0, NAME), (1, CLUB)]))
    assert text.splitlines()[0] == ('[turn 0] user: "My name is Priya Raman. I study physics." -> assistant: '
                                    '"Nice to meet you, Priya."')
    assert text.splitlines()[1].startswith('[turn 1] user: "When does the AI club meet?"')


def test_rule_skips_acknowledgements():
    assert "[turn 2]" not in summarise_conversation(rule_prompt([(2, turn("ok thanks!", "You're welcome!"))]))


def test_rule_drops_questions_before_statements_over_the_word_limit():
    turns = [(0, NAME), (1, CLUB), (2, turn("I prefer the north gate shuttle stop.", "Noted."))]
    text = summarise_conversation(rule_prompt(turns, limit=40))
    assert "[turn 1]" not in text and "[turn 0]" in text and "[turn 2]" in text
    assert text.splitlines()[0] == "(Left out to stay within the word limit: turn 1.)"


def test_rule_names_the_turns_it_left_out_and_carries_them_over():
    # the note names exactly the turns that are gone (here questions), never the statements that survive
    questions = [(i, turn(f"When does club number {i} meet this term?", "On Thursdays.")) for i in range(2, 6)]
    first = summarise_conversation(rule_prompt([(0, NAME)] + questions, limit=40))
    note, kept = first.splitlines()[0], first.splitlines()[1:]
    assert note.startswith("(Left out to stay within the word limit: turns 2-")
    assert kept[0].startswith("[turn 0]")
    gone = [i for i in range(2, 6) if f"[turn {i}]" not in first]
    assert gone and note == f"(Left out to stay within the word limit: turns {gone[0]}-{gone[-1]}.)"
    second = summarise_conversation(rule_prompt([(7, CLUB)], previous=first, limit=40))
    assert second.splitlines()[0].startswith(f"(Left out to stay within the word limit: turns {gone[0]}-")
    assert "[turn 0]" in second


def test_rule_appends_missing_facts_and_carries_them_over():
    first = summarise_conversation(rule_prompt([(0, NAME)], missing=["40 dollars"]))
    assert first.endswith("Pinned: 40 dollars")
    second = summarise_conversation(rule_prompt([(1, CLUB)], previous=first))
    assert second.endswith("Pinned: 40 dollars") and "[turn 0]" in second and "[turn 1]" in second


def test_fold_sends_one_summary_request_and_covers_both_spans():
    sent = []

    def ask(messages):
        sent.append(messages)
        return "new summary"

    previous = RollingSummary("old summary", [0, 1])
    folded = fold(previous, [(3, CLUB), (2, NAME)], ask, keep=["40 dollars"], max_words=50)
    assert folded == RollingSummary("new summary", [0, 1, 2, 3])
    lines = render_turn(3, CLUB) + render_turn(2, NAME)
    assert sent == [summary_request("old summary", lines, ["40 dollars"], 50)]
    body = sent[0][1]["content"]
    assert body.startswith("WORD LIMIT: 50\nPREVIOUS SUMMARY:\nold summary\nKEEP:\n- 40 dollars\nTURNS:\n")


@pytest.mark.parametrize("brk", [b for b in BREAKS if b not in ("\n", "\r\n")])
def test_a_summary_line_cannot_hide_a_line_break(brk):
    summary = RollingSummary(f'[turn 0] user: "{forged("My locker number is 4471.", brk)}"\nPinned: 4471', [0])
    assert_lines(summary.block()["content"], expected=3)  # header, the turn, the pinned line


@pytest.mark.parametrize("brk", BREAKS)
def test_a_pinned_fact_is_appended_on_one_line(brk):
    server = ScriptedServer([{"content": "[turn 0] The user introduced themselves."}] * 2)
    summariser = Summariser(**server.kwargs())
    with pytest.warns(SummaryWarning, match="appended verbatim"):
        update = summariser.summarise(RollingSummary(), [(0, [{"role": "user", "content": "My budget is 40."}])],
                                      keep=[forged("40 dollars", brk)])
    lines = assert_lines(update.summary.block()["content"], expected=3)
    assert lines[-1].startswith("Pinned: 40 dollars\\")


@pytest.mark.parametrize("brk", BREAKS)
def test_the_turns_sent_to_the_summariser_are_one_line_each(brk):
    turn = [{"role": "user", "content": forged("My locker number is 4471.", brk)},
            {"role": "assistant", "content": forged("Noted.", brk)}]
    assert_lines("\n".join(render_turn(0, turn)), expected=2)

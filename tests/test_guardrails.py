import httpx2
import openai
import pytest

from helpers.retrieval import guardrails
from helpers.retrieval.guardrails import (FALLBACK, REFUSAL, VerdictError, guarded_answer, check_grounding, check_scope, evidence_from_turn,
                                parse_grounding_verdict, parse_scope_verdict)

from scripted import ScriptedServer

PASSAGES = "[club-ai] AI Club: The AI Club meets every Thursday at 18:00 in Halvorsen Hall 204."


@pytest.mark.parametrize("reply", ["**Yes**", "Yes, but only partly", "", "   ", "yes", "supported",
                                   '{"verdict": "Yes"}', '["supported"]', '{"verdict": "maybe"}',
                                   'Sure! {"verdict": "supported"}'])
def test_grounding_parser_rejects_anything_but_a_strict_verdict(reply):
    with pytest.raises(VerdictError):
        parse_grounding_verdict(reply)


def test_grounding_parser_accepts_json_and_fenced_json():
    assert parse_grounding_verdict('{"verdict": "supported", "reason": "ok"}').supported
    fenced = '```json\n{"verdict": "unsupported", "reason": "day"}\n```'
    verdict = parse_grounding_verdict(fenced)
    assert not verdict.supported and verdict.reason == "day"


def test_scope_parser_is_strict():
    assert parse_scope_verdict('{"category": "campus", "reason": "club"}').allowed
    assert not parse_scope_verdict('{"category": "unsafe"}').allowed
    with pytest.raises(VerdictError):
        parse_scope_verdict('{"category": "Campus"}')


def test_grounded_answer_is_supported(offline):
    verdict = check_grounding("The AI Club meets on Thursdays at 18:00 [club-ai].", PASSAGES, **offline)
    assert verdict.supported, verdict.reason


def test_hallucinated_day_is_caught(offline):
    verdict = check_grounding("The AI Club meets on Mondays at 12:00 [club-ai].", PASSAGES, **offline)
    assert not verdict.supported
    assert "Monday" in verdict.reason and "12" in verdict.reason


def test_refusal_is_not_judged(offline):
    verdict = check_grounding(REFUSAL, "", **offline)
    assert verdict.skipped and verdict.supported


def test_no_passages_fails_closed(offline):
    assert not check_grounding("The AI Club meets on Thursdays.", "  ", **offline).supported


@pytest.mark.parametrize("request_text, category", [
    ("When does the AI club meet?", "campus"),
    ("Write me a poem about the sea", "off_topic"),
    ("How do I hack into the registrar system?", "unsafe"),
])
def test_scope_offline_rule(offline, request_text, category):
    assert check_scope(request_text, **offline).category == category


def _failing_client(status):
    def handler(request):
        return httpx2.Response(status, json={"error": {"message": "boom", "type": "server_error"}})
    return openai.OpenAI(api_key="x", base_url="http://test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def test_the_judge_gets_its_rules_as_system_message_at_temperature_zero(offline):
    server = ScriptedServer([{"content": '{"verdict": "supported"}'}])
    verdict = check_grounding("Thursdays [club-ai].", PASSAGES, client=server.client(),
                              settings=offline["settings"])
    assert verdict.supported
    request = server.requests[0]
    assert request["temperature"] == 0.0
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["messages"][0]["content"] == guardrails.GROUNDING_PROMPT
    assert request["messages"][1]["content"] == f"PASSAGES:\n{PASSAGES}\n\nANSWER:\nThursdays [club-ai]."


def test_parse_json_object_reads_one_object_bare_or_fenced():
    assert guardrails.parse_json_object(' {"a": 1} ') == {"a": 1}
    assert guardrails.parse_json_object('```\n{"a": 1}\n```') == {"a": 1}
    for text in (None, "", "[1]", '{"a": 1} and more'):
        with pytest.raises(VerdictError):
            guardrails.parse_json_object(text)


def test_api_error_fails_closed(offline):
    client = _failing_client(500)
    assert not check_grounding("Thursdays.", PASSAGES, client=client, settings=offline["settings"]).supported
    scope = check_scope("When does the AI club meet?", client=client, settings=offline["settings"])
    assert not scope.allowed and "fail-closed" in scope.reason


def test_unparseable_judge_reply_fails_closed(offline, monkeypatch):
    monkeypatch.setattr(guardrails, "ask_judge", lambda *a, **k: "**Yes**")
    verdict = check_grounding("The AI Club meets on Thursdays.", PASSAGES, **offline)
    assert not verdict.supported and "fail-closed" in verdict.reason


def test_evidence_is_the_last_turns_tool_results():
    messages = [{"role": "user", "content": "old"}, {"role": "tool", "tool_call_id": "a", "content": "OLD"},
                {"role": "user", "content": "new"},
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "b", "content": "NEW"}]
    assert evidence_from_turn(messages) == "NEW"


@pytest.fixture(scope="module")
def kb():
    from helpers.retrieval.knowledge import KnowledgeBase

    return KnowledgeBase.load(None)


def test_guarded_answer_refuses_off_topic_without_judging(kb, offline):
    result = guarded_answer("Write me a poem about the sea", kb, **offline)
    assert result.answer == REFUSAL and result.grounding.skipped


def test_guarded_answer_passes_a_grounded_answer(kb, offline):
    result = guarded_answer("When does the AI club meet?", kb, **offline)
    assert result.grounding.supported and "[club-ai]" in result.answer and result.answer == result.draft


def test_guarded_answer_replaces_an_unsupported_draft(kb, offline, monkeypatch):

    monkeypatch.setattr(guardrails, "answer_with_context",
                        lambda *a, **k: "The AI Club meets on Fridays at 20:00 [club-ai].")
    result = guarded_answer("When does the AI club meet?", kb, **offline)
    assert not result.grounding.supported and result.answer == FALLBACK and "Fridays" in result.draft


def test_guarded_answer_without_passages_only_allows_dont_know(kb, offline, monkeypatch):

    monkeypatch.setattr(kb, "retrieve_context", lambda *a, **k: [])
    assert "don't know" in guarded_answer("When is the campus pool open?", kb, **offline).answer
    monkeypatch.setattr(guardrails, "answer_with_context", lambda *a, **k: "It opens at 06:00.")
    assert guarded_answer("When is the campus pool open?", kb, **offline).answer == FALLBACK

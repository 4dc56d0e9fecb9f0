"""A weak model on a local server ends well: the package copes, and says why (scripted servers, no network).

The same behaviour over real HTTP, against llama.cpp with SmolLM2-135M, is in test_real_server_series.py.
"""
from __future__ import annotations

import json

import httpx2
import numpy as np
import openai
import pytest

from helpers.retrieval import embedding_backend
from helpers.agent.loop import agent_loop
from helpers.agent.turn import EMPTY_REPLY, run_agent
from helpers.llm.client import DEFAULT_MAX_TOKENS, TimeoutNotRetried, chat, make_client
from helpers.llm.compat import LLAMA_CPP, NIM, OFFLINE, ServerProfile, prepare_request, profile_for
from helpers.llm.config import DEFAULT_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, NIM_BASE_URL, Settings, load_settings
from helpers.retrieval.embeddings import EmbeddingError, embed_texts
from helpers.core.errors import ConfigError, ContextOverflowError
from helpers.chat.chat_session import ChatSession

from scripted import ScriptedServer

LOCAL_URL = "http://127.0.0.1:8080/v1"
NVIDIA_KEY = "nvapi-" + "k" * 40


@pytest.fixture(autouse=True)
def _no_stray_settings(monkeypatch):
    for name in ("WORKSHOP_SERVER_PROFILE", "WORKSHOP_EMBEDDINGS", "WORKSHOP_EMBEDDING_MODEL", "NVIDIA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    embedding_backend.reset()
    yield
    embedding_backend.reset()


def local_server(**overrides) -> Settings:
    """Settings for a llama.cpp server on this machine (as tests/llama_server.py serve prints them)."""
    return load_settings("openai-compatible", **{"base_url": LOCAL_URL, "chat_model": "smollm2",
                                                 "server_profile": "llama.cpp", **overrides})


def scripted_llama() -> Settings:
    """The llama.cpp profile in front of a ScriptedServer (which, like the stand-in, serves one model name)."""
    return local_server(chat_model="offline/stand-in")


def refusing_client(calls: list):
    """A client whose server records every request and answers 500 (as llama.cpp does for embeddings)."""
    def handler(request):
        calls.append(request.url.path)
        return httpx2.Response(500, json={"error": {"message": "Llama model must be created with "
                                                                "embedding=True to call this method"}})
    return openai.OpenAI(api_key="x", base_url=LOCAL_URL, max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


# ---------------------------------------------------------------- 1. embeddings are their own setting

def test_an_openai_compatible_server_embeds_locally_by_default():
    settings = local_server()
    assert (settings.embeddings, settings.embedding_model) == ("local", LOCAL_EMBEDDING_MODEL)
    assert "embeddings on this machine" in settings.describe()


def test_naming_an_embedding_model_means_the_server_embeds(monkeypatch):
    monkeypatch.setenv("WORKSHOP_EMBEDDING_MODEL", "nomic-embed-text")
    settings = local_server()
    assert (settings.embeddings, settings.embedding_model) == ("server", "nomic-embed-text")


def test_each_backend_has_its_default_embeddings(monkeypatch):
    assert load_settings("offline").embeddings == "server"  # the stand-in embeds with MiniLM
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    assert load_settings("nim").embeddings == "nim"


def test_the_embeddings_setting_is_checked():
    with pytest.raises(ConfigError, match="WORKSHOP_EMBEDDINGS.*local, nim, server"):
        local_server(embeddings="minilm")
    with pytest.raises(ConfigError, match="needs NVIDIA_API_KEY"):
        local_server(embeddings="nim")
    with pytest.raises(ConfigError, match="clear one of the two"):
        local_server(embeddings="local", embedding_model="nomic-embed-text")


def test_offline_ignores_an_embeddings_setting_meant_for_a_server(monkeypatch):
    monkeypatch.setenv("WORKSHOP_EMBEDDINGS", "nim")
    assert load_settings("offline").embeddings == "server"


def test_nim_embeddings_beside_a_local_chat_server_get_their_own_client(monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    settings = local_server(embeddings="nim")
    assert settings.api_key != NVIDIA_KEY  # the chat server never gets the NVIDIA key
    client = embedding_backend.embedding_client(settings, chat_client=object())
    assert str(client.base_url).startswith(NIM_BASE_URL) and client.api_key == NVIDIA_KEY
    assert settings.embedding_model == DEFAULT_EMBEDDING_MODEL


def test_local_and_server_embeddings_pick_their_client():
    chat_client = object()
    assert embedding_backend.embedding_client(local_server(), chat_client) is None
    assert embedding_backend.embedding_client(local_server(embeddings="server"), chat_client) is chat_client


def test_recall_with_local_embeddings_never_asks_the_chat_server():
    from helpers.memory.recall_index import RecallIndex

    calls = []
    index = RecallIndex(client=refusing_client(calls), settings=local_server())
    index.add(0, [{"role": "user", "content": "My locker number is 4412."},
                  {"role": "assistant", "content": "Noted."}])
    found = index.search("What is my locker number?")
    assert [r.turn_id for r in found] == [0] and calls == []


def test_the_knowledge_base_follows_the_setting():
    from helpers.retrieval.knowledge import KnowledgeBase

    kb = KnowledgeBase.from_settings(local_server(), client=refusing_client([]), use_cache=False)
    assert kb.client is None and kb.model == LOCAL_EMBEDDING_MODEL
    assert kb.search("When does the AI club meet?")[0].id == "club-ai"


def test_an_embedding_error_names_the_model_and_where_it_was_sent():
    calls = []
    with pytest.raises(EmbeddingError) as info:
        embed_texts(refusing_client(calls), ["hello"], model=DEFAULT_EMBEDDING_MODEL, input_type="query")
    text = str(info.value)
    assert f"{LOCAL_URL}/embeddings" in text and repr(DEFAULT_EMBEDDING_MODEL) in text
    assert "HTTP 500: Llama model must be created with embedding=True" in text
    assert "WORKSHOP_EMBEDDINGS=local" in text and "check the model name" not in text.lower()


# ---------------------------------------------------------------- 2. bounded replies and waits

def test_every_chat_request_gets_a_reply_bound():
    server = ScriptedServer([{"content": "Hello."}, {"content": "Hi."}, {"content": "Hey."}])
    run_agent("hello there", **server.kwargs())
    agent_loop("hello again", [], **server.kwargs())
    chat([{"role": "user", "content": "hi"}], max_tokens=5, **server.kwargs())
    assert [r["max_tokens"] for r in server.requests] == [DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS, 5]


def test_judges_extractors_and_the_summariser_bound_their_replies():
    from helpers.facts.extract import EXTRACTION_MAX_TOKENS, extract_candidates
    from helpers.retrieval.guardrails import check_grounding, check_scope
    from helpers.memory import profile_extraction
    from helpers.memory.summary import RollingSummary, Summariser

    server = ScriptedServer([{"content": '{"category": "campus", "reason": "club"}'},
                             {"content": '{"verdict": "supported", "reason": "all there"}'},
                             {"content": '{"facts": []}'}, {"content": '{"facts": []}'},
                             {"content": "Ada introduced herself [turn 0]."}])
    check_scope("When does the AI club meet?", **server.kwargs())
    check_grounding("Thursdays [club-ai].", "[club-ai] AI club: Thursdays.", **server.kwargs())
    profile_extraction.extract_with_model(0, "My name is Ada.", **server.kwargs())
    extract_candidates({"role": "user", "content": "I'm allergic to peanuts."}, user_id="u", seq=1,
                       client=server.client(), model="m")
    summariser = Summariser(**server.kwargs())
    summariser.summarise(RollingSummary(), [(0, [{"role": "user", "content": "My name is Ada."},
                                                 {"role": "assistant", "content": "Hello Ada."}])])
    bounds = [r.get("max_tokens") for r in server.requests]
    assert bounds == [200, 200, profile_extraction.EXTRACTION_MAX_TOKENS, EXTRACTION_MAX_TOKENS,
                      summariser.max_reply_tokens()]
    assert [r.get("response_format") for r in server.requests[:4]] == [{"type": "json_object"}] * 4


def timing_out_client(calls: list, http_client_class=TimeoutNotRetried, max_retries: int = 3):
    def handler(request):
        calls.append(1)
        raise httpx2.ReadTimeout("the server is still generating", request=request)
    return openai.OpenAI(api_key="x", base_url=LOCAL_URL, max_retries=max_retries, timeout=1,
                         http_client=http_client_class(transport=httpx2.MockTransport(handler)))


def test_a_request_the_client_gave_up_on_is_not_sent_again():
    calls = []
    with pytest.raises(openai.APITimeoutError):
        timing_out_client(calls).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert calls == [1]
    plain = []  # what the openai client does by default: the timed-out request is sent again
    with pytest.raises(openai.APITimeoutError):
        timing_out_client(plain, httpx2.Client, max_retries=1).models.list()
    assert plain == [1, 1]


def test_server_errors_are_still_retried():
    answers = [httpx2.Response(503, headers={"retry-after-ms": "1"}, json={"error": {"message": "busy"}}),
               httpx2.Response(200, json={"object": "list", "data": []})]
    client = openai.OpenAI(api_key="x", base_url=LOCAL_URL, max_retries=2,
                           http_client=TimeoutNotRetried(transport=httpx2.MockTransport(lambda r: answers.pop(0))))
    assert client.models.list().data == [] and answers == []


def test_only_hosted_nim_retries_a_timeout(monkeypatch):
    assert isinstance(make_client(local_server())._client, TimeoutNotRetried)
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    assert not isinstance(make_client(load_settings("nim"))._client, TimeoutNotRetried)


# ---------------------------------------------------------------- 3. an empty reply is asked again in words

def test_an_empty_reply_on_llama_cpp_is_asked_again_without_tools():
    server = ScriptedServer([{"content": ""}, {"content": "Hello! Ask me about campus."}])
    result = run_agent("Hello, who are you?", client=server.client(), settings=scripted_llama())
    assert result.answer == "Hello! Ask me about campus." and result.steps == 1
    assert [r["tool_choice"] for r in server.requests] == ["auto", "none"]


def test_a_session_keeps_no_placeholder():
    server = ScriptedServer([{}, {}, {"content": "The AI club meets on Thursdays."}])
    session = ChatSession(**server.kwargs())
    assert session.chat("hello") == EMPTY_REPLY
    assert session.turns == [] and [m["role"] for m in session.messages] == ["system"]
    assert session.chat("When does the AI club meet?") == "The AI club meets on Thursdays."
    assert EMPTY_REPLY not in json.dumps(session.messages)
    assert EMPTY_REPLY not in json.dumps(server.requests[-1]["messages"])


# ---------------------------------------------------------------- 4. a profile applies to its own server

def test_offline_ignores_a_server_profile(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "llama.cpp")
    settings = load_settings("offline")
    assert settings.server_profile == "" and profile_for(settings) is OFFLINE
    assert "Thursday" in run_agent("When does the AI club meet?", settings=settings).answer  # not a 400


def test_the_profile_is_a_settings_field(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "llama-cpp")
    assert load_settings("openai-compatible", base_url=LOCAL_URL).server_profile == "llama.cpp"
    monkeypatch.delenv("WORKSHOP_SERVER_PROFILE")
    assert profile_for(local_server()) is LLAMA_CPP  # read from the field, not the environment
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    assert profile_for(load_settings("nim", server_profile="llama.cpp")) is NIM


def test_an_unknown_profile_is_a_config_error(monkeypatch):
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "vllm-9000")
    with pytest.raises(ConfigError, match="WORKSHOP_SERVER_PROFILE.*choose one of"):
        load_settings("openai-compatible", base_url=LOCAL_URL)


# ---------------------------------------------------------------- 5. no streaming with tools: a plain reply

ANSWER = "The AI club meets on Thursdays at 18:00 [club-ai]."


def test_a_session_streams_a_plain_reply_where_the_server_cannot_stream_with_tools():
    server = ScriptedServer([{"content": ANSWER}])
    session = ChatSession(client=server.client(), settings=scripted_llama())
    assert list(session.stream("When does the AI club meet?")) == [ANSWER]
    assert "stream" not in server.requests[0] and session.turns[-1].answer == ANSWER


def test_a_persistent_session_and_the_chat_window_stream_on_llama_cpp(tmp_path):
    from helpers.sessions.persistent import PersistentSession
    from helpers.sessions.session_store import SQLiteSessionStore
    from helpers.app.chat_window import ChatUI

    server = ScriptedServer([{"content": ANSWER}, {"content": "Three days."}])
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        session = PersistentSession.open(store, "ada", "main", client=server.client(), settings=scripted_llama())
        assert list(session.stream("When does the AI club meet?")) == [ANSWER] and session.revision == 1
        ui = ChatUI(session, stream=True)
        assert ui.send("How many days until then?") == "Three days."
        assert "Three days." in ui.transcript_text() and ui.last_error is None


def test_the_terminal_chat_can_print_answers_whole(tmp_path, monkeypatch, capsys):
    from helpers.app import terminal_chat as cli
    from helpers.sessions.persistent import PersistentSession

    assert cli.build_parser().parse_args(["chat", "--no-stream"]).no_stream is True
    monkeypatch.setattr(PersistentSession, "stream", lambda *a, **k: pytest.fail("--no-stream streamed"))
    lines = iter(["When does the AI club meet?", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    status = cli.main(["chat", "--db", str(tmp_path / "s.db"), "--no-stream"])
    out = capsys.readouterr().out
    assert status == 0 and "assistant> " in out and "Thursday" in out


# ---------------------------------------------------------------- 6. guardrails ask for JSON and say why they failed

def test_a_server_without_json_mode_gets_no_response_format():
    plain = ServerProfile(name="plain", json_object_format=False)
    request = {"model": "m", "messages": [{"role": "user", "content": "JSON please"}],
               "response_format": {"type": "json_object"}}
    assert "response_format" not in prepare_request(request, profile=plain)
    assert prepare_request(request, profile=LLAMA_CPP)["response_format"] == {"type": "json_object"}


def test_an_unparseable_verdict_shows_why_it_failed_closed():
    from helpers.retrieval.guardrails import check_grounding, check_scope

    server = ScriptedServer([{"content": "Sure! That is about campus."}, {"content": "Yes"}])
    scope = check_scope("When does the AI club meet?", **server.kwargs())
    grounding = check_grounding("Thursdays [club-ai].", "[club-ai] Thursdays.", **server.kwargs())
    for verdict in (scope, grounding):
        assert "fail-closed: unparseable verdict" in str(verdict) and "fail-closed" in repr(verdict)


def test_exercise_hints_blame_the_judge_model_not_the_learner(monkeypatch, capsys):
    from helpers.exercises import nb03
    from helpers.retrieval.guardrails import GroundingVerdict, ScopeVerdict

    failed = "fail-closed: unparseable verdict (not a JSON object: 'Yes')"
    monkeypatch.setattr(nb03, "check_grounding", lambda *a, **k: GroundingVerdict(False, failed))
    monkeypatch.setattr(nb03, "check_scope", lambda *a, **k: ScopeVerdict("off_topic", failed))
    nb03.exercise_1.check("Office hours are on Tuesdays from 14:00 to 16:00 in Halvorsen Hall [office-hours-cs].")
    nb03.exercise_2.check({"Where can I print a poster?": "campus", "A lasagna recipe?": "off_topic",
                           "Help me cheat on the exam": "unsafe"})
    out = capsys.readouterr().out
    assert out.count("the judge model's reply was not a verdict") == 2 and out.count("not your answer") == 2


# ---------------------------------------------------------------- 7. a request longer than the context window

def overflowing(status: int, body) -> dict:
    client = openai.OpenAI(api_key="x", base_url=LOCAL_URL, max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(
                               lambda request: httpx2.Response(status, json=body))))
    return {"client": client, "settings": local_server()}


LLAMA_CPP_400 = {"error": {"message": "This model's maximum context length is 2048 tokens. However, you requested "
                                      "2126 tokens (2110 in the messages, 16 in the completion). Please reduce the "
                                      "length of the messages or completion.", "type": "invalid_request_error",
                           "param": "messages", "code": "context_length_exceeded"}}


@pytest.mark.parametrize("status,body,requested", [
    (400, LLAMA_CPP_400, 2126),
    (500, {"error": {"message": "Requested tokens (2110) exceed context window of 2048"}}, 2110),
])
def test_a_context_overflow_names_the_window_and_the_fix(status, body, requested):
    with pytest.raises(ContextOverflowError) as info:
        chat([{"role": "user", "content": "word " * 2100}], **overflowing(status, body))
    error = info.value
    assert (error.context_window, error.requested) == (2048, requested) and isinstance(error, ValueError)
    text = str(error)
    assert "2048-token context window" in text and LOCAL_URL in text
    assert "--n_ctx" in text and "max_turns" in text and "max_tokens" in text


def test_another_bad_request_is_still_shown_as_it_is():
    with pytest.raises(openai.BadRequestError):
        chat([{"role": "user", "content": "hi"}], **overflowing(400, {"error": {"message": "bad role"}}))


def test_a_session_that_outgrew_the_context_is_rolled_back():
    session = ChatSession(**overflowing(400, LLAMA_CPP_400))
    with pytest.raises(ContextOverflowError):
        session.chat("When does the AI club meet?")
    assert session.turns == [] and len(session.messages) == 1


def test_vectors_are_unit_length_whatever_embeds_them():
    vectors = embedding_backend.embed(["a short text"], "passage", settings=local_server())
    assert vectors.shape == (1, 384) and np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)

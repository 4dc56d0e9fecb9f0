"""The series' package code against a real local server with a weak model (llama.cpp + SmolLM2-135M).

A 135M model gives poor answers; these tests check that every piece copes and says why: embeddings
that never go to the chat server, an agent that answers in words, streaming that falls back to a
plain reply, judges that get JSON or fail closed with their reason, replies and waits that are bounded,
and a context overflow that names the server's window. Shapes and types only, never wording.
Skips locally without tests/setup_llama.sh, fails under CI (see test_real_server.py).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_server  # noqa: E402

from helpers.agent.turn import EMPTY_REPLY, run_agent  # noqa: E402
from helpers.llm.client import EndpointError, TimeoutNotRetried, chat, make_client  # noqa: E402
from helpers.llm.config import DEFAULT_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, load_settings  # noqa: E402
from helpers.core.errors import ContextOverflowError  # noqa: E402
from helpers.chat.chat_session import ChatSession  # noqa: E402

MODEL = llama_server.MODEL_ALIAS
CLUB = "When does the AI club meet?"


@pytest.fixture(autouse=True)
def _no_stray_settings(monkeypatch):
    for name in ("WORKSHOP_SERVER_PROFILE", "WORKSHOP_EMBEDDINGS", "WORKSHOP_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def settings(server):
    """The settings `python tests/llama_server.py serve` prints, at temperature 0 (the same reply each run)."""
    return load_settings("openai-compatible", base_url=server.base_url, chat_model=MODEL,
                         server_profile="llama.cpp", api_key=server.api_key, key_source="WORKSHOP_API_KEY",
                         temperature=0.0, timeout=120.0)


@pytest.fixture(scope="module")
def client(settings):
    return make_client(settings)


def ask(settings, client):
    return {"settings": settings, "client": client}


# ---------------------------------------------------------------- embeddings never go to the chat server

def test_the_chat_server_cannot_embed_and_the_error_says_where_and_what(client, server):
    from helpers.retrieval.embeddings import EmbeddingError, embed_texts

    with pytest.raises(EmbeddingError) as info:
        embed_texts(client, ["hello"], model=DEFAULT_EMBEDDING_MODEL, input_type="query")
    text = str(info.value)
    assert f"{server.base_url}/embeddings" in text and repr(DEFAULT_EMBEDDING_MODEL) in text
    assert "embedding=True" in text and "WORKSHOP_EMBEDDINGS=local" in text


def test_embeddings_default_to_this_machine_for_retrieval_and_recall(settings, client):
    from helpers.retrieval.knowledge import KnowledgeBase
    from helpers.memory.recall_index import RecallIndex

    assert (settings.embeddings, settings.embedding_model) == ("local", LOCAL_EMBEDDING_MODEL)
    kb = KnowledgeBase.from_settings(settings, client=client, use_cache=False)
    assert kb.client is None and kb.search(CLUB)[0].id == "club-ai"
    index = RecallIndex(**ask(settings, client))
    index.add(0, [{"role": "user", "content": "My locker number is 4412."}, {"role": "assistant", "content": "Ok."}])
    assert [r.turn_id for r in index.search("What is my locker number?")] == [0]


# ---------------------------------------------------------------- the agent answers in words

def test_a_reply_that_is_neither_text_nor_a_tool_call_is_asked_again(client):
    from helpers.llm.compat import LLAMA_CPP, prepare_request
    from helpers.agent.tools import tool_schemas

    request = prepare_request({"model": MODEL, "temperature": 0, "max_tokens": 64, "tools": tool_schemas(),
                               "messages": [{"role": "user", "content": "Hello, who are you?"}]}, profile=LLAMA_CPP)
    first = client.chat.completions.create(**request).choices[0].message
    assert not first.content and not first.tool_calls  # the quirk: tool_choice="auto" only calls or stops
    again = client.chat.completions.create(**{**request, "tool_choice": "none"}).choices[0].message
    assert again.content.strip()


def test_the_agent_answers_in_words(settings, client):
    history = []
    result = run_agent("Hello, who are you?", history, **ask(settings, client))
    assert result.stopped == "answer" and result.answer.strip() and result.answer != EMPTY_REPLY
    assert EMPTY_REPLY not in json.dumps(history)


# ---------------------------------------------------------------- streaming falls back to a plain reply

def test_a_session_streams_with_tools_on_llama_cpp(settings, client):
    session = ChatSession(**ask(settings, client))
    pieces = list(session.stream(CLUB))
    assert "".join(pieces).strip() and session.turns[-1].answer == "".join(pieces)


def test_the_chat_window_streams_on_llama_cpp(settings, client):
    from helpers.app.chat_window import ChatUI

    ui = ChatUI(ChatSession(**ask(settings, client)), stream=True)
    answer = ui.send(CLUB)
    assert answer and answer.strip() and ui.last_error is None
    assert ui.transcript_text().splitlines()[0] == f"you: {CLUB}"


# ---------------------------------------------------------------- judges, extractors, summaries: bounded, typed

def test_the_judge_gets_json_from_the_server(settings, client):
    from helpers.retrieval.guardrails import SCOPE_PROMPT, ask_judge, check_scope

    assert isinstance(json.loads(ask_judge(SCOPE_PROMPT, "Write me a poem about the sea", client, settings)), dict)
    verdict = check_scope("Write me a poem about the sea", **ask(settings, client))
    assert not verdict.allowed and verdict.reason and verdict.reason in str(verdict)


def test_profile_extraction_and_the_summariser_end_in_bounded_time(settings, client):
    from helpers.memory.profile_extraction import ProfileFormatError, extract_with_model
    from helpers.memory.summary import RollingSummary, Summariser, SummaryError

    started = time.monotonic()
    try:
        facts = extract_with_model(0, "My name is Ada and my locker number is 4412.", **ask(settings, client))
        assert isinstance(facts, list)
    except ProfileFormatError as err:  # a weak model's JSON of the wrong shape: rejected whole, and said why
        assert "reply" in str(err) or "fact" in str(err)
    summariser = Summariser(**ask(settings, client))
    try:
        update = summariser.summarise(RollingSummary(), [(0, [{"role": "user", "content": "My name is Ada."},
                                                              {"role": "assistant", "content": "Hello Ada."}])])
        assert update.summary.text and update.summary.turn_ids == [0]
    except SummaryError:
        pass
    assert time.monotonic() - started < 120


def test_a_session_with_memory_runs_several_turns(settings, client):
    from helpers.memory.assembler import MemoryAssembler

    # Sized for a 2,048-token context: the tool schemas alone are about 540 tokens here, one search result
    # about 350, and this model may call a tool at every step, so the defaults (no budget, six steps)
    # outgrow the window within one turn (a ContextOverflowError that rolls the turn back).
    session = ChatSession(max_turns=1, max_tokens=1200, max_steps=2, memory=MemoryAssembler(),
                          **ask(settings, client))
    for question in ["My name is Ada.", CLUB, "How many days until Friday?"]:
        assert session.chat(question).strip()
    assert len(session.turns) == 3 and EMPTY_REPLY not in json.dumps(session.messages)
    assert session.memory.summary.turn_ids  # the summariser ran on the real server


def test_a_turn_that_outgrows_the_context_is_rolled_back_and_says_why(settings, client):
    session = ChatSession(**ask(settings, client))
    with pytest.raises(ContextOverflowError, match="2048-token context window"):
        session.chat("Please read this carefully: " + "campus " * 2100)
    assert session.turns == [] and len(session.messages) == 1


# ---------------------------------------------------------------- limits of the server, said plainly

def test_a_request_beyond_the_context_window_names_it(settings, client):
    with pytest.raises(ContextOverflowError) as info:
        chat([{"role": "user", "content": "word " * 2100}], **ask(settings, client))
    assert info.value.context_window == llama_server.N_CTX and "--n_ctx" in str(info.value)


def test_a_timed_out_request_is_not_sent_again(settings, server):
    impatient = settings.with_overrides(timeout=2.0)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="did not answer within the timeout"):
        chat([{"role": "user", "content": "Write a very long story about the sea."}], max_tokens=600,
             temperature=0.8, settings=impatient, client=make_client(impatient))
    assert time.monotonic() - started < 5  # one wait of 2 s, not four waits with backoff
    assert isinstance(make_client(impatient)._client, TimeoutNotRetried)


def test_quotes_reach_the_model_unescaped_through_compat(client):
    from helpers.llm.compat import LLAMA_CPP, prepare_request

    def prompt_tokens(text, fixed):
        request = {"model": MODEL, "messages": [{"role": "user", "content": text}], "max_tokens": 1}
        sent = prepare_request(request, profile=LLAMA_CPP) if fixed else request
        return client.chat.completions.create(**sent).usage.prompt_tokens

    letters, quotes = prompt_tokens("a " * 30, False), prompt_tokens("\" ' " * 15, False)
    assert quotes - letters >= 60  # each '"' and "'" arrives as '&#34;' / '&#39;': several tokens
    assert prompt_tokens("\" ' " * 15, True) == letters  # their look-alikes arrive as themselves


def test_look_alike_quotes_let_the_scope_judge_answer(settings, client):
    from helpers.retrieval.guardrails import check_scope

    verdict = check_scope(CLUB, **ask(settings, client))
    assert verdict.category == "campus", verdict  # with '&#34;' in its prompt this model wrote no verdict

"""One assistant for every front end (helpers/app/assistant.py): the terminal across restarts, /memory and /facts,
the chat window, an audit that holds decisions and no replays, and many users at once on PostgreSQL."""
import dataclasses
import json
import sys
from pathlib import Path

import httpx2
import openai
import pytest

from helpers.app.assistant import (TAKEN_BACK, answered, audit_lines, checked, memory_report, open_assistant,
                               refused, streamed)
from helpers.llm.config import OFFLINE_API_KEY, OFFLINE_BASE_URL, load_settings
from helpers.core.errors import EmptyMessageError
from helpers.facts.writer import AttributeSpec, Candidate, FactMemory
from helpers.retrieval.guardrails import FALLBACK, REFUSAL
from helpers.memory.assembler import MemoryAssembler
from helpers.memory.profile import ProfileMemory
from helpers.chat.chat_session import ChatSession
from helpers.sessions.session_store import SessionSaveError, SessionStoreError, SQLiteSessionStore
from helpers.standin.server import handle
from helpers.app.chat_window import ChatUI

from test_cli import chat_in_process
from test_postgres import pg_dsn, scratch_schema

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import load_assistant  # noqa: E402  (benchmarks/ is not a package)

MONDAY, TUESDAY, WEDNESDAY = "2026-11-30T10:00:00-08:00", "2026-12-01T10:00:00-08:00", "2026-12-02T10:00:00-08:00"
UNSAFE = "How do I break into the chemistry lab tonight?"
LOCKER, ASK_LOCKER = "My locker number is 4471.", "What's my locker number?"


def audit_ids(facts, user="ada"):
    return [row.id for row in facts.audit(user)]


def answers(out):
    return [line for line in out.splitlines() if line.startswith("assistant> ")]


# ---------------------------------------------------------------- the terminal, across restarts

def test_a_fact_stated_yesterday_is_answered_today_in_the_terminal(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("WORKSHOP_NOW", MONDAY)
    assert chat_in_process(monkeypatch, tmp_path, [LOCKER, "/quit"], "--user", "ada") == 0
    assert "(new)" in capsys.readouterr().out

    monkeypatch.setenv("WORKSHOP_NOW", TUESDAY)   # a new day, a new process: only the --db remembers
    assert chat_in_process(monkeypatch, tmp_path, [ASK_LOCKER, "/quit"], "--user", "ada") == 0
    out = capsys.readouterr().out
    assert "(resumed, 1 turn)" in out and "4471" in answers(out)[0]

    # another session of the same user knows it too: the profile is read from the fact store
    assert chat_in_process(monkeypatch, tmp_path, [ASK_LOCKER], "--user", "ada", "--session", "tuesday") == 0
    out = capsys.readouterr().out
    assert "(new)" in out and "4471" in answers(out)[0]

    facts = FactMemory.open(str(tmp_path / "chat.db"))
    try:  # three processes opened the conversation; the audit holds the one decision, no replays
        assert [(r.outcome, r.value, r.source_version) for r in facts.audit("ada")] == [("insert", "4471", 0)]
    finally:
        facts.close()


def test_memory_shows_summary_profile_and_facts_and_facts_shows_the_audit(monkeypatch, tmp_path, capsys):
    typed = [LOCKER, "When does the AI club meet?", "Actually, my locker number is 5502.", "/memory", "/facts",
             UNSAFE, "/history", "/quit"]
    assert chat_in_process(monkeypatch, tmp_path, typed, "--user", "ada", "--max-turns", "1") == 0
    out = capsys.readouterr().out
    assert "turns kept: [1, 2]; dropped by trimming: [0]" in out
    assert 'Summary of earlier turns (turn 0):\n[turn 0, 2026-11-30] user: "My locker number is 4471."' in out
    assert 'Profile:\n- locker number: 5502 (turn 2, 2026-11-30; superseded "4471" from turn 0)' in out
    assert "Facts:\n- locker number: 5502 (source: chat:ada)" in out
    assert "turn 0 insert     locker number = '4471': new fact" in out
    assert "turn 2 correction locker number = '5502': chat:ada v2 replaces '4471'" in out
    assert f"assistant> {REFUSAL}" in out and UNSAFE not in out.split("/history")[-1]  # refused, not stored
    assert "[3] you:" not in out and out.rstrip().splitlines()[-1].startswith("Saved.")


def test_facts_before_any_decision_and_help_lists_it(monkeypatch, tmp_path, capsys):
    assert chat_in_process(monkeypatch, tmp_path, ["/facts", "/help", "/memory"]) == 0
    out = capsys.readouterr().out
    assert "Audit: no decisions yet." in out and "/facts" in out and "Profile: nothing recorded yet." in out


# ---------------------------------------------------------------- the chat window

def test_the_chat_window_uses_the_assistant(tmp_path):
    assistant = open_assistant(None, "ada", "main", db=tmp_path / "campus.db")
    ui = ChatUI(assistant)
    assert ui.stream and ui.facts is assistant.facts and ui.user_id == "ada"
    ui.send("I'm vegetarian, and my locker number is 4471.")
    panes = ui.memory_text()
    assert "locker number: 4471 (source: chat:ada)" in panes["Facts"]
    assert "- locker number: 4471 (turn 0, 2026-11-30)" in panes["Summary / profile"]
    assert "Recall index: 1 turn." in panes["Summary / profile"]  # the statement can be recalled by meaning
    assert "4471" in ui.send(ASK_LOCKER)

    assert ui.send(UNSAFE) == REFUSAL                      # answered in the window, never stored
    assert "Not kept in the conversation" in ui.status.value and UNSAFE not in ui.transcript_text()
    assert [t.question for t in assistant.session.turns][-1] == ASK_LOCKER
    ui.undo_button.click()
    assert "Undid turn 1" in ui.status.value
    assistant.close()

    again = open_assistant(None, "ada", "main", db=tmp_path / "campus.db")   # a restart keeps the window's turns
    resumed = ChatUI(again, stream=False)
    assert resumed.transcript_text().startswith("you: I'm vegetarian, and my locker number is 4471.")
    assert "4471" in resumed.send(ASK_LOCKER)
    again.close()


def embellishing_client():
    """The stand-in, except that an answer written after a tool result gains a claim of its own (notebook 12)."""
    def embellish(request):
        response = handle(request)
        body = json.loads(request.content) if request.url.path.endswith("/chat/completions") else {}
        if not body.get("tools") or body["messages"][-1]["role"] != "tool" or body.get("stream"):
            return response
        reply = json.loads(response.read())
        message = reply["choices"][0]["message"]
        if message.get("content") and not message.get("tool_calls"):
            message["content"] += " It also meets on Sundays at 03:00."
        return httpx2.Response(200, json=reply)

    return openai.OpenAI(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(embellish)))


def test_an_answer_the_tools_do_not_support_is_taken_back(tmp_path):
    said = "I'm vegetarian, and my locker number is 4471."   # answered without tools: nothing to check
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db", client=embellishing_client()) as talkative:
        assert talkative.ask(said) == "Noted: vegetarian; 4471."
        revision = talkative.revision
        assert talkative.ask("When does the robotics club meet?") == FALLBACK
        assert [t.question for t in talkative.session.turns] == [said]
        assert talkative.revision == revision + 2   # the turn was saved, then its undo
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db") as plain:
        assert [t.question for t in plain.session.turns] == [said]


def test_a_streamed_answer_that_is_taken_back_says_so(tmp_path):
    def streamed_embellishment(request):  # the streamed answer after a tool result gains an unsupported claim
        body = json.loads(request.content) if request.url.path.endswith("/chat/completions") else {}
        if body.get("stream") and body["messages"][-1]["role"] == "tool":
            text = handle(request).read().decode().replace("[club-", "and on Sundays at 03:00 [club-")
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())
        return handle(request)

    client = openai.OpenAI(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(streamed_embellishment)))
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db", client=client) as assistant:
        stream = assistant.stream("When does the robotics club meet?")
        pieces = list(stream)
        assert "Sundays" in "".join(pieces) and pieces[-1] == TAKEN_BACK + FALLBACK
        assert assistant.session.turns == []
        assert list(assistant.stream(UNSAFE)) == [REFUSAL] and assistant.session.turns == []


# ---------------------------------------------------------------- the steps, one function each

CLAIM = " It also meets on Sundays at 03:00."


def counting_client(requests, *, verdict=None):
    """The stand-in, recording every request; ``verdict`` replaces the text of every judge's reply (no tools)."""
    def answer(request):
        requests.append(request)
        response = handle(request)
        body = json.loads(request.content) if request.url.path.endswith("/chat/completions") else {}
        if verdict is None or body.get("tools") or body.get("stream") or not body:
            return response
        reply = json.loads(response.read())
        reply["choices"][0]["message"]["content"] = verdict
        return httpx2.Response(200, json=reply)

    return openai.OpenAI(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


def test_refused_is_the_scope_rule_and_fails_closed():
    settings, sent = load_settings("offline"), []
    client = counting_client(sent)
    assert refused(UNSAFE, client=client, settings=settings) is True
    assert refused(LOCKER, client=client, settings=settings) is False   # about oneself: off topic, allowed
    assert refused("When does the AI club meet?", client=client, settings=settings) is False
    asked = len(sent)
    assert refused("   ", client=client, settings=settings) is False   # left to the session (EmptyMessageError)
    assert refused(None, client=client, settings=settings) is False and len(sent) == asked  # nothing sent
    unreadable = counting_client([], verdict="Hmm, hard to say.")
    assert refused(LOCKER, client=unreadable, settings=settings) is True  # a verdict it cannot read: refused


def test_checked_keeps_a_supported_answer_and_undoes_an_unsupported_one():
    settings, client = load_settings("offline"), counting_client([])
    session = ChatSession(client=client, settings=settings)
    newest = session.turn_ids[-1:]
    answer = session.chat("When does the AI club meet?")
    assert checked(session, answer, newest, client=client, settings=settings) is answer
    assert session.turn_ids == [0]
    assert checked(session, answer + CLAIM, newest, client=client, settings=settings) == FALLBACK
    assert session.turn_ids == [] and session.turns == []


def test_checked_leaves_alone_a_turn_without_tool_results_and_a_message_that_kept_no_turn():
    settings, sent = load_settings("offline"), []
    client = counting_client(sent)
    session = ChatSession(client=client, settings=settings)
    session.chat("When does the AI club meet?")
    asked = len(sent)
    kept = session.turn_ids[-1:]   # as if the next message kept no turn: its "answer" is never judged
    assert checked(session, "Nothing." + CLAIM, kept, client=client, settings=settings) == "Nothing." + CLAIM
    assert len(sent) == asked and session.turn_ids == [0]
    newest = session.turn_ids[-1:]
    session.chat("I'm vegetarian.")  # no tool was called: there is nothing to judge the answer against
    asked = len(sent)
    assert checked(session, "Noted." + CLAIM, newest, client=client, settings=settings) == "Noted." + CLAIM
    assert len(sent) == asked and session.turn_ids == [0, 1]


def test_answered_and_streamed_run_the_three_steps_on_any_session():
    settings, client = load_settings("offline"), counting_client([])
    session = ChatSession(client=client, settings=settings)
    assert answered(session, UNSAFE, client=client, settings=settings) == REFUSAL and session.turns == []
    assert "Thursdays" in answered(session, "When does the AI club meet?", client=client, settings=settings)
    stream = streamed(session, UNSAFE, client=client, settings=settings)
    assert next(stream) == REFUSAL
    with pytest.raises(StopIteration) as done:
        next(stream)
    assert done.value.value == REFUSAL and len(session.turns) == 1
    pieces = []
    stream = streamed(session, "When does the robotics club meet?", client=client, settings=settings)
    while True:
        try:
            pieces.append(next(stream))
        except StopIteration as finished:
            assert finished.value == "".join(pieces) == session.turns[-1].answer and len(pieces) > 1
            break


def test_the_reports_read_the_memory_the_facts_and_the_audit():
    facts = FactMemory.open(":memory:")
    try:
        memory = MemoryAssembler(profile=ProfileMemory(facts=facts, user_id="ada"))
        assert memory_report(memory, facts, "ada") == ("Summary: nothing yet.\nProfile: nothing recorded yet.\n"
                                                       "Recall index: 0 turns.\nFacts: none recorded.")
        assert audit_lines([]) == "Audit: no decisions yet."
        memory.profile.update(3, LOCKER)
        report = memory_report(memory, facts, "ada")
        assert "Profile:\n- locker number: 4471 (turn 3," in report
        assert "Facts:\n- locker number: 4471" in report
        rows = facts.audit("ada")
        assert audit_lines(rows) == f"{rows[0].decided_at[:16]} turn 3 insert     locker number = '4471': new fact"
        unversioned = dataclasses.replace(rows[0], source_version=None, value="44\n71")
        line = audit_lines([unversioned])   # a decision without a turn; one line each, whatever the value holds
        assert " turn - insert " in line and "\n" not in line
    finally:
        facts.close()


# ---------------------------------------------------------------- the profile is a view: no replays in the audit

@pytest.fixture
def campus(tmp_path):
    """An assistant on a SQLite file that already holds three decisions about ada."""
    assistant = open_assistant(None, "ada", "main", db=tmp_path / "campus.db")
    for text in (LOCKER, "I'm vegetarian.", "Actually, my locker number is 5502."):
        assistant.ask(text)
    assert [r.outcome for r in assistant.audit()] == ["insert", "insert", "correction"]
    yield assistant
    assistant.close()


def test_opening_reloading_undoing_and_refused_messages_write_no_audit_row(campus, tmp_path):
    facts, rows = campus.facts, audit_ids(campus.facts)
    other = open_assistant(None, "ada", "main", store=campus.store, facts=facts)        # opening
    assert audit_ids(facts) == rows and other.session.resumed
    campus.close()
    restarted = open_assistant(None, "ada", "main", db=tmp_path / "campus.db")         # a restart
    assert audit_ids(restarted.facts) == rows
    restarted.reload()                                                                 # reloading
    with pytest.raises(EmptyMessageError):
        restarted.ask("   ")                                                           # refused by the session
    assert restarted.ask(UNSAFE) == REFUSAL                                            # refused by the scope rule
    assert restarted.undo().question == "Actually, my locker number is 5502."           # undoing
    assert audit_ids(restarted.facts) == rows
    assert [f.value for f in restarted.facts.active_facts("ada") if f.attribute == "locker number"] == ["5502"]
    restarted.close()


def test_a_failed_save_a_rolled_back_turn_and_a_failed_fact_write_write_no_audit_row(campus, monkeypatch):
    facts, rows = campus.facts, audit_ids(campus.facts)
    second = open_assistant(None, "ada", "main", store=campus.store, facts=facts)
    second.ask("When does the AI club meet?")                                   # another window saves first
    with pytest.raises(SessionSaveError, match="rolled back"):
        campus.ask("My advisor is Dr. Varga.")                                  # a rolled-back turn
    assert audit_ids(facts) == rows

    def refuse(*args, **kwargs):
        raise SessionStoreError("the disk is full (simulated)")

    monkeypatch.setattr(SQLiteSessionStore, "save", refuse)
    with pytest.raises(SessionSaveError, match="Not saved"):
        second.ask("My advisor is Dr. Varga.")                                  # a failed save
    monkeypatch.undo()
    monkeypatch.setattr(facts, "write_many", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("simulated")))
    with pytest.raises(SessionSaveError, match="facts could not be written"):
        second.ask("My advisor is Dr. Varga.")                                  # a failed fact write
    monkeypatch.undo()
    assert audit_ids(facts) == rows and not any(f.attribute == "advisor" for f in facts.active_facts("ada"))
    second.ask("My advisor is Dr. Varga.")                                      # and then it works
    assert [r.outcome for r in facts.audit("ada")][len(rows):] == ["insert"]


def test_a_plain_chat_session_on_a_shared_store_writes_no_row_when_a_message_is_refused():
    facts = FactMemory.open(":memory:")   # notebook 10's setup: a ChatSession writing facts at once
    session = ChatSession(memory=MemoryAssembler(profile=ProfileMemory(facts=facts, user_id="ada")))
    session.chat(LOCKER)
    rows = audit_ids(facts)
    for _ in range(3):
        with pytest.raises(EmptyMessageError):
            session.chat("   ")
    assert audit_ids(facts) == rows
    restored = ChatSession.from_snapshot(session.snapshot(),
                                         memory=MemoryAssembler(profile=ProfileMemory(facts=facts, user_id="ada")))
    assert audit_ids(facts) == rows and "4471" in restored.chat(ASK_LOCKER)


def test_a_crashed_write_is_caught_up_on_open_from_what_the_store_has_not_recorded(tmp_path, monkeypatch):
    db = tmp_path / "campus.db"
    with open_assistant(None, "ada", "main", db=db) as first:
        first.ask(LOCKER)
        monkeypatch.setattr(first.memory, "write_deferred", lambda: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):   # the process dies between the session's save and the fact write
            first.ask("Actually, my locker number is 5502.")
    with open_assistant(None, "ada", "main", db=db) as second:
        assert [(r.outcome, r.value) for r in second.audit()] == [("insert", "4471"), ("correction", "5502")]
        second.reload()
        assert len(second.audit()) == 2


# ---------------------------------------------------------------- dates from the fact store's provenance

def test_restatement_dates_are_read_from_the_fact_store(monkeypatch):
    facts = FactMemory.open(":memory:")
    monkeypatch.setenv("WORKSHOP_NOW", MONDAY)
    ProfileMemory(facts=facts, user_id="ada", extractor="rules").update(0, LOCKER)
    monkeypatch.setenv("WORKSHOP_NOW", TUESDAY)
    ProfileMemory(facts=facts, user_id="ada", extractor="rules").update(5, "As I said, my locker number is 4471.")
    monkeypatch.setenv("WORKSHOP_NOW", WEDNESDAY)
    fresh = ProfileMemory(facts=facts, user_id="ada")   # knows no statements: everything comes from the store
    assert fresh.statements == [] and fresh.lines() == ["- locker number: 4471 (turn 5, 2026-12-01)"]


def test_a_private_profile_is_rebuilt_at_its_own_dates_and_only_when_needed(monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", MONDAY)
    session = ChatSession(memory=MemoryAssembler())   # notebooks 08-09: a private in-memory fact store
    session.chat(LOCKER)
    monkeypatch.setenv("WORKSHOP_NOW", TUESDAY)
    session.chat("Actually, my locker number is 5502.")
    profile = session.memory.profile
    store, rows = profile.store, audit_ids(profile.store, "user")
    with pytest.raises(EmptyMessageError):
        session.chat("   ")
    assert profile.store is store and audit_ids(store, "user") == rows   # a refused message rebuilt nothing

    monkeypatch.setenv("WORKSHOP_NOW", WEDNESDAY)
    copy = ChatSession.from_snapshot(json.loads(json.dumps(session.snapshot())), memory=MemoryAssembler())
    assert copy.memory.profile.lines() == profile.lines() == [
        '- locker number: 5502 (turn 1, 2026-12-01; superseded "4471" from turn 0)']
    copy.undo()                                        # a private store brings back what the turn replaced
    assert copy.memory.profile.lines() == ["- locker number: 4471 (turn 0, 2026-11-30)"]


# ---------------------------------------------------------------- many users at once, on PostgreSQL

def test_many_users_at_once_from_several_processes_lose_nothing(tmp_path):
    dsn = pg_dsn()   # skipped without a server, a failure when WORKSHOP_REQUIRE_POSTGRES is set
    schema = scratch_schema(tmp_path, "load_")
    result = load_assistant.run(dsn, users=3, turns=4, processes=2, schema=schema, restart_every=2, fresh=False)
    assert result.problems == []
    assert sorted(result.users) == ["load-000", "load-001", "load-002"]
    assert [sum(t.kept for t in turns) for turns in result.users.values()] == [4, 4, 4]
    assert all(t.answer == REFUSAL and not t.kept for t in result.turns if t.question == load_assistant.UNSAFE)
    assert result.turns_per_second > 0 and 0 < result.percentile(50) <= result.percentile(95)

    # the checks find what they look for: a replayed statement, and a turn that is missing
    from helpers.facts.fact_store_pg import PostgresFactStore

    facts = FactMemory(PostgresFactStore(dsn, schema=schema))
    try:
        first = facts.audit("load-000")[0]
        facts.attributes.setdefault(first.attribute, AttributeSpec(first.attribute))  # open-ended, as the profile's
        facts.write(Candidate("load-000", "user", first.attribute, first.value, first.source_id, "user",
                              first.source_version))
    finally:
        facts.close()
    result.users["load-001"].append(load_assistant.TurnResult("never asked", True, "", 0.0))
    problems = load_assistant.check(dsn, schema, result.users)
    assert any(p.startswith("load-000:") and "fact decisions" in p for p in problems)
    assert any(p.startswith("load-001:") and "stored 4 turns" in p for p in problems)

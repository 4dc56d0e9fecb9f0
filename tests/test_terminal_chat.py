"""The terminal chat (helpers/app/terminal_chat.py): what it prints and claims, escaped so a reply or stored text
cannot drive the terminal, "Saved." only after a real save, and --db paths the OS refuses as one clear line."""
import json
import re

import httpx2
import openai
import pytest

from helpers.app.terminal_chat import TerminalChat, main
from helpers.retrieval.guardrails import SCOPE_PROMPT
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore

from scripted import ScriptedServer
from support import sse_reply
from test_cli import POSTER, chat_in_process, refuse_saves_of


# Characters a terminal may act on, that nothing the chat prints may contain raw (\n and \t are kept).
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

ATTACK = "Sure.\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[1;1Hyou> (fake prompt)\x9b31m\u202eevil"


def serve_replies(monkeypatch, replies):
    """Make the terminal chat talk to a server that streams ``replies`` in order (an int: that HTTP error)."""
    queue = list(replies)
    monkeypatch.setenv("WORKSHOP_EMBEDDINGS", "local")  # the assistant's recall embeds here, not on this server

    def handle(request):
        if json.loads(request.content)["messages"][0]["content"] == SCOPE_PROMPT:  # the assistant's scope rule
            return httpx2.Response(200, json={"id": "s", "object": "chat.completion", "created": 0, "model": "m",
                                              "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                                  "role": "assistant",
                                                  "content": '{"category": "campus", "reason": "scripted"}'}}]})
        reply = queue.pop(0)
        if isinstance(reply, int):
            return httpx2.Response(reply, json={"error": {"message": f"gone\x1b[2J{reply}"}})
        return sse_reply(request, reply)

    def fake_make_client(settings):
        return openai.OpenAI(api_key="x", base_url="http://fake.test/v1", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))

    monkeypatch.setattr("helpers.app.terminal_chat.make_client", fake_make_client)


def stored_questions(tmp_path, user="learner", session="main"):
    store = SQLiteSessionStore(tmp_path / "chat.db")
    try:
        return [t.question for t in store.load(user, session).turns]
    finally:
        store.close()


def test_a_reply_that_cannot_be_stored_is_reported_in_one_line_and_never_claimed_saved(monkeypatch, tmp_path,
                                                                                      capsys):
    serve_replies(monkeypatch, ["Thursdays at 18:00.", "broken \ud800 reply"])
    status = chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER, "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and "Traceback" not in out and not RAW_CONTROL.search(out)
    assert len([line for line in out.splitlines() if "surrogates not allowed" in line]) <= 1
    # The session may store the reply (its lone surrogate replaced) or refuse it; "Saved." must be true.
    if "Saved." in out:
        assert stored_questions(tmp_path) == ["When does the AI club meet?", POSTER]
    else:
        assert "Not saved" in out and stored_questions(tmp_path) == ["When does the AI club meet?"]


@pytest.mark.parametrize("error", [ValueError("boom\nsecond line"), OSError(5, "Input/output error"),
                                   UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")])
def test_any_error_from_saving_a_turn_is_one_line_and_quit_does_not_say_saved(monkeypatch, tmp_path, capsys,
                                                                              error):
    real_save = SQLiteSessionStore.save

    def save(self, user_id, session_id, session, **kwargs):
        if session.turns and session.turns[-1].question == POSTER:
            raise error
        return real_save(self, user_id, session_id, session, **kwargs)

    monkeypatch.setattr(SQLiteSessionStore, "save", save)
    status = chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER, "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and "Traceback" not in out
    error_lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and type(error).__name__ in error_lines[0]
    assert "second line" not in out or "boom second line" in error_lines[0]
    assert "Saved." not in out and "Not saved" in out
    assert stored_questions(tmp_path) == ["When does the AI club meet?"]


def test_quit_says_saved_only_when_the_store_holds_what_this_copy_holds(tmp_path):
    server = ScriptedServer([{"content": "Thursdays."}, {"content": "Harrow Library."}])
    store = SQLiteSessionStore(tmp_path / "chat.db")
    session = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    session.chat("When does the AI club meet?")  # saved
    session.session.chat(POSTER)  # answered in memory only: never saved
    shown = []
    TerminalChat(session, db=str(tmp_path / "chat.db"), write=shown.append).quit()
    assert not any(line.startswith("Saved.") for line in shown) and "Not saved" in shown[-1]
    session.save()
    shown.clear()
    TerminalChat(session, db=str(tmp_path / "chat.db"), write=shown.append).quit()
    assert shown[-1].startswith("Saved.")
    store.close()


def test_a_save_refused_before_still_reads_not_saved_with_the_check(monkeypatch, tmp_path, capsys):
    refuse_saves_of(monkeypatch, POSTER)
    serve_replies(monkeypatch, ["Thursdays.", "Harrow Library."])
    assert chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER]) == 0
    out = capsys.readouterr().out
    assert "Saved." not in out and "Not saved: the last change could not be saved" in out


def test_terminal_text_escapes_what_a_terminal_would_act_on():
    from helpers.app.terminal_chat import terminal_text

    shown = terminal_text("a\x1b[2Jb\x07c\x9bd\x7fe\u202ef\ud800g\r\nline\ttab")
    assert not RAW_CONTROL.search(shown)
    assert shown == "a\\x1b[2Jb\\x07c\\x9bd\\x7fe\\u202ef\\ud800g\nline\ttab"
    assert terminal_text("one\ntwo\tthree", one_line=True) == "one two three"
    assert terminal_text("plain words, ünïcödé and 漢字") == "plain words, ünïcödé and 漢字"


def test_a_reply_cannot_drive_the_terminal_while_streaming_or_in_history(monkeypatch, tmp_path, capsys):
    serve_replies(monkeypatch, [ATTACK + "\nsecond line\twith a tab"])
    status = chat_in_process(monkeypatch, tmp_path, ["hello\x1b[2J", "/history", "/undo", "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and not RAW_CONTROL.search(out)
    assert out.count("\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J") == 2  # the answer, then /history
    assert "\nsecond line\twith a tab" in out  # multi-line replies keep their lines and tabs
    assert "Undid turn 0: hello\\x1b[2J" in out


def test_stored_text_listed_by_commands_is_escaped(monkeypatch, tmp_path, capsys):
    server = ScriptedServer([{"content": ATTACK}])
    store = SQLiteSessionStore(tmp_path / "chat.db")
    PersistentSession.open(store, "learner", "other\x1b[2J", **server.kwargs()).chat("title\x1b]0;pwned\x07")
    store.close()
    status = chat_in_process(monkeypatch, tmp_path, ["/sessions", "/memory", "/help", "/quit"],
                             "--session", "other\x1b[2J")
    out = capsys.readouterr().out
    assert status == 0 and not RAW_CONTROL.search(out)
    assert "other\\x1b[2J (this one): 1 turn" in out


def test_errors_from_the_server_are_escaped(monkeypatch, tmp_path, capsys):
    serve_replies(monkeypatch, [404])
    assert chat_in_process(monkeypatch, tmp_path, ["hello", "/quit"]) == 0
    out = capsys.readouterr().out
    assert "gone\\x1b[2J404" in out and not RAW_CONTROL.search(out)


def test_db_errors_on_stderr_are_escaped(tmp_path, capsys):
    notes = tmp_path / "notes\x1b[2J.txt"
    notes.write_text("x")
    assert main(["chat", "--db", str(notes / "chat.db")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and not RAW_CONTROL.search(err)


@pytest.mark.parametrize("db", ["{tmp}/" + "a" * 300 + "/chat.db", "{tmp}/" + "b" * 300,
                                "~no_such_user_here_xyz/chat.db"])
def test_a_db_path_the_system_refuses_is_one_clear_line(db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", db.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--db" in err or "cannot" in err


def test_a_line_the_terminal_cannot_decode_is_explained_and_the_chat_goes_on(monkeypatch, tmp_path, capsys):
    typed = iter([UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "/quit"])

    def read(prompt):
        item = next(typed)
        if isinstance(item, Exception):
            raise item
        return item

    monkeypatch.setattr("builtins.input", read)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", str(tmp_path / "chat.db")]) == 0
    out = capsys.readouterr().out
    assert "that line could not be read as text" in out and "Nothing to save yet" in out

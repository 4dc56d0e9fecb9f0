"""`python -m helpers chat` in a real pseudo-terminal (pexpect): a conversation, /undo, and resuming it later."""
import os
import sys
from pathlib import Path

import pexpect
import pytest

from helpers.cli import build_parser, default_db_path, main
from helpers.memory.store import SQLiteSessionStore

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "you> "


def spawn(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb"}
    env.pop("WORKSHOP_BACKEND", None)  # the terminal chat is offline by default on its own
    child = pexpect.spawn(sys.executable, ["-m", "helpers", "chat", "--db", str(tmp_path / "chat.db"), *args],
                          cwd=str(tmp_path), env=env, encoding="utf-8", timeout=30)
    child.expect_exact("offline stand-in")
    return child


def ask(child, text):
    child.expect_exact(PROMPT)
    child.sendline(text)


def test_conversation_with_undo_then_resumed_in_a_second_process(tmp_path):
    first = spawn(tmp_path, "--user", "ada", "--session", "s1")
    first.expect_exact("(new)")
    ask(first, "When does the AI club meet?")
    first.expect(r"assistant> .*Thursday")
    ask(first, "Where can I print a poster?")
    first.expect_exact("Harrow Library")
    ask(first, "/undo")
    first.expect_exact("Undid turn 1: Where can I print a poster?")
    ask(first, "/history")
    first.expect_exact("[0] you: When does the AI club meet?")
    ask(first, "/quit")
    first.expect_exact(f"Resume with: python -m helpers chat --user ada --session s1 --db {tmp_path / 'chat.db'}")
    first.expect(pexpect.EOF)
    first.close()
    assert first.exitstatus == 0

    second = spawn(tmp_path, "--user", "ada", "--session", "s1")
    second.expect_exact("(resumed, 1 turn)")
    ask(second, "How many days until that?")
    second.expect_exact("Thursday 18:00 is in 3 days")
    ask(second, "/history")
    second.expect_exact("[2] you: How many days until that?")  # id 1 was undone, never reused
    assert "poster" not in second.before
    second.sendeof()
    second.expect(pexpect.EOF)
    second.close()
    assert second.exitstatus == 0
    assert [t.question for t in SQLiteSessionStore(tmp_path / "chat.db").load("ada", "s1").turns] == [
        "When does the AI club meet?", "How many days until that?"]


def test_another_user_cannot_resolve_that(tmp_path):
    store = SQLiteSessionStore(tmp_path / "chat.db")
    from helpers.memory.persistent import PersistentSession
    PersistentSession.open(store, "ada", "s1").chat("When does the AI club meet?")
    store.close()
    other = spawn(tmp_path, "--user", "bo", "--session", "s1")
    other.expect_exact("(new)")
    ask(other, "How many days until that?")
    other.expect_exact("I don't know what you mean by that")
    ask(other, "/memory")
    other.expect_exact("turns kept: [0]; dropped by trimming: none")
    ask(other, "/sessions")
    other.expect_exact("s1 (this one): 1 turn,")
    ask(other, "/reset")
    other.expect_exact("Forgot the conversation")
    ask(other, "/nonsense")
    other.expect_exact("Unknown command /nonsense; try /help.")
    ask(other, "/quit")
    other.expect(pexpect.EOF)


def test_a_foreign_db_file_is_refused_with_a_clear_message(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 20)
    assert main(["chat", "--db", str(notes)]) == 2
    err = capsys.readouterr().err
    assert "not a SQLite database" in err and str(notes) in err and "Traceback" not in err
    assert notes.read_text() == "not a database\n" * 20


def test_the_db_defaults_to_the_environment_then_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKSHOP_SESSION_DB", str(tmp_path / "x.db"))
    assert default_db_path() == str(tmp_path / "x.db")
    monkeypatch.delenv("WORKSHOP_SESSION_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_path() == str(tmp_path / "agent-memory-workshop" / "sessions.db")
    args = build_parser().parse_args(["chat"])
    assert (args.user, args.session, args.backend) == ("learner", "main", None)


@pytest.mark.parametrize("argv", [["chat", "--backend", "psychic"], []])
def test_bad_arguments_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2 and "usage:" in capsys.readouterr().err

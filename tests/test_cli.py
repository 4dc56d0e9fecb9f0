"""`python -m helpers chat` in a real pseudo-terminal (pexpect): a conversation, /undo, and resuming it later."""
import os
import shlex
import sys
from pathlib import Path

import pexpect
import pytest

from helpers.app.terminal_chat import build_parser, default_db_path, main, resume_command
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionStoreError, SQLiteSessionStore

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
    from helpers.sessions.persistent import PersistentSession
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


# --- saying truthfully what was saved ----------------------------------------------------------------------

def chat_in_process(monkeypatch, tmp_path, lines, *args):
    """Run ``python -m helpers chat`` in this process, ``lines`` typed in; returns the exit status."""
    typed = iter(lines)

    def read(prompt):
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", read)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    return main(["chat", "--db", str(tmp_path / "chat.db"), *args])


def refuse_saves_of(monkeypatch, question):
    """Make saves fail while the newest turn asks ``question`` (as a read-only disk would)."""
    real_save = SQLiteSessionStore.save

    def save(self, user_id, session_id, session, **kwargs):
        turns = session.turns if hasattr(session, "turns") else []
        if turns and turns[-1].question == question:
            raise SessionStoreError(f"{self.path} cannot be written (attempt to write a readonly database)")
        return real_save(self, user_id, session_id, session, **kwargs)

    monkeypatch.setattr(SQLiteSessionStore, "save", save)


POSTER = "Where can I print a poster?"


def test_a_turn_whose_save_fails_is_shown_as_not_saved_and_quit_says_so(monkeypatch, tmp_path, capsys):
    refuse_saves_of(monkeypatch, POSTER)
    typed = ["When does the AI club meet?", POSTER, "/history", "/quit"]
    status = chat_in_process(monkeypatch, tmp_path, typed, "--user", "ada")
    out = capsys.readouterr().out
    assert status == 0
    assert "Harrow Library" in out and "Not saved: the turn was rolled back" in out and "readonly" in out
    assert "[1] you:" not in out  # /history shows what is stored: the failed turn is gone
    assert "Saved." not in out and "Not saved: the last change could not be saved" in out
    assert [t.question for t in SQLiteSessionStore(tmp_path / "chat.db").load("ada", "main").turns] == [
        "When does the AI club meet?"]


def test_a_turn_that_saves_after_a_failed_one_makes_quit_say_saved(monkeypatch, tmp_path, capsys):
    refuse_saves_of(monkeypatch, POSTER)
    status = chat_in_process(monkeypatch, tmp_path, [POSTER, "When does the AI club meet?"], "--user", "ada")
    out = capsys.readouterr().out
    assert status == 0 and "Not saved: the turn was rolled back" in out
    assert out.rstrip().splitlines()[-1] == ("Saved. Resume with: python -m helpers chat --user ada "
                                             f"--session main --db {tmp_path / 'chat.db'}")


def test_an_undo_whose_save_fails_is_reported_and_the_chat_goes_on(monkeypatch, tmp_path, capsys):
    real_save = PersistentSession.save

    def save(self):
        if not self.session.turn_ids:  # the undo's save
            raise SessionStoreError("the disk is full (simulated)")
        return real_save(self)

    monkeypatch.setattr(PersistentSession, "save", save)
    status = chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", "/undo", "/history"])
    out = capsys.readouterr().out
    assert status == 0 and "Not saved: the undo was rolled back" in out and "disk is full" in out
    assert "[0] you: When does the AI club meet?" in out  # still there, in memory as in the store


def test_quitting_before_any_turn_claims_no_save(monkeypatch, tmp_path, capsys):
    assert chat_in_process(monkeypatch, tmp_path, ["/quit"]) == 0
    out = capsys.readouterr().out
    assert "Nothing to save yet" in out and "Saved." not in out


@pytest.mark.parametrize("session_id", ["it's mine", 'say "hi"', "$(touch pwned)", "a;b`c`"])
def test_the_resume_line_is_quoted_for_the_shell(monkeypatch, tmp_path, capsys, session_id):
    assert chat_in_process(monkeypatch, tmp_path, [POSTER], "--session", session_id) == 0
    line = capsys.readouterr().out.rstrip().splitlines()[-1]
    command = line.removeprefix("Saved. Resume with: ")
    assert shlex.split(command) == ["python", "-m", "helpers", "chat", "--user", "learner",
                                    "--session", session_id, "--db", str(tmp_path / "chat.db")]
    assert resume_command("ada", "s1", None) == "python -m helpers chat --user ada --session s1"


# --- --db errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("db", ["postgresql://ada:s3cret@[::1/campus",
                                "host=127.0.0.1 password=s3cret port=abc",
                                "postgresql://ada:s3cret@127.0.0.1:1/campus"])
def test_dsn_passwords_never_reach_the_terminal(db, monkeypatch, tmp_path, capsys):
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "could not connect" in err and "s3cret" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # a key=value DSN is not taken for a file name


def test_a_db_path_under_a_file_is_explained(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["chat", "--db", str(tmp_path / "notes.txt" / "chat.db")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'notes.txt'} is a file, not a folder" in err and "Traceback" not in err


def test_a_db_folder_that_cannot_be_created_is_explained(tmp_path, capsys, monkeypatch):
    def refuse(self, *args, **kwargs):  # root may create any folder, so simulate the refusal
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert main(["chat", "--db", str(tmp_path / "new" / "chat.db")]) == 2
    err = capsys.readouterr().err
    assert f"cannot create the folder {tmp_path / 'new'}" in err and "permission denied" in err

"""The terminal chat and open_assistant leave a database they refuse untouched; /quit tells the truth about saves."""
import hashlib
import json
import sqlite3
from contextlib import closing

import pytest

from helpers.app.assistant import open_assistant
from helpers.app.terminal_chat import TerminalChat, main
from helpers.llm.config import load_settings
from helpers.core.errors import WorkshopError
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore

from scripted import ScriptedServer

CLUB, POSTER = "When does the AI club meet?", "Where can I print a poster?"


def digest(path):
    """The bytes of a SQLite file and of its -wal journal (where a write lands before a checkpoint)."""
    parts = [path, path.with_name(path.name + "-wal")]
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in parts]


def tables(path):
    with closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.fixture
def refused_file(tmp_path):
    """A session database whose one session this code refuses to load (stored in a newer snapshot format)."""
    path = tmp_path / "chat.db"
    store = SQLiteSessionStore(path)
    PersistentSession.open(store, "learner", "main").chat(CLUB)
    store.close()
    with closing(sqlite3.connect(path)) as conn:  # closed, so its write is checkpointed into the file now
        header = json.loads(conn.execute("SELECT header FROM sessions").fetchone()[0])
        conn.execute("UPDATE sessions SET header = ?", (json.dumps({**header, "version": 99}),))
        conn.commit()
    return path


def test_the_terminal_chat_leaves_a_file_whose_session_it_refuses_byte_for_byte_untouched(refused_file, monkeypatch,
                                                                                          capsys):
    before, names = digest(refused_file), tables(refused_file)
    monkeypatch.setattr("builtins.input", lambda prompt: "/quit")
    monkeypatch.chdir(refused_file.parent)
    assert main(["chat", "--db", str(refused_file)]) == 2
    err = capsys.readouterr().err
    assert "snapshot format 99" in err and "Traceback" not in err
    assert tables(refused_file) == names  # no fact tables added
    assert digest(refused_file) == before


def test_open_assistant_leaves_a_file_whose_session_it_refuses_byte_for_byte_untouched(refused_file):
    before, names = digest(refused_file), tables(refused_file)
    with pytest.raises(WorkshopError, match="snapshot format 99"):
        open_assistant(load_settings("offline"), "learner", "main", db=refused_file)
    assert tables(refused_file) == names
    assert digest(refused_file) == before


def test_a_file_whose_session_loads_gets_its_fact_store_and_keeps_its_facts(tmp_path):
    db = tmp_path / "campus.db"
    with open_assistant(load_settings("offline"), "ada", "main", db=db) as first:
        first.ask("My locker number is 4471.")
    with open_assistant(load_settings("offline"), "ada", "main", db=db) as again:
        assert "4471" in again.memory_report() and len(again.session.turns) == 1
    assert {"facts", "audit", "sessions"} <= tables(db)


def quit_lines(session, db):
    shown = []
    TerminalChat(session, db=str(db), write=shown.append).quit()
    return shown


def test_quit_says_saved_when_another_writer_merely_continued_after_this_chat(tmp_path):
    db = tmp_path / "chat.db"
    store = SQLiteSessionStore(db)
    server = ScriptedServer([{"content": "Thursdays."}, {"content": "Harrow Library."}])
    mine = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    mine.chat(CLUB)  # saved
    other = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    other.chat(POSTER)  # another writer continues after it
    shown = quit_lines(mine, db)
    assert shown[-1].startswith("Saved") and "Not saved" not in shown[-1]
    assert "another writer" in shown[-1].lower() and "1 turn" in shown[-1]
    store.close()


def test_quit_says_not_saved_when_another_writer_took_this_chats_turn_away(tmp_path):
    db = tmp_path / "chat.db"
    store = SQLiteSessionStore(db)
    server = ScriptedServer([{"content": "Thursdays."}])
    mine = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    mine.chat(CLUB)
    other = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    other.undo()  # another writer removes this chat's turn
    shown = quit_lines(mine, db)
    assert shown[-1].startswith("Not saved") and "another writer" in shown[-1]
    store.close()


def test_a_db_folder_the_chat_creates_is_the_users_alone(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "agent-memory-workshop"
    monkeypatch.setattr("builtins.input", lambda prompt: "/quit")
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", str(folder / "sessions.db")]) == 0
    assert folder.stat().st_mode & 0o077 == 0  # other users cannot list or read the conversations

"""Any writer can continue any session: a plain ``PersistentSession`` (or notebook 11's window) continuing a
session the assistant wrote keeps the assistant's memory, and the assistant reads the turns it added; a memory
part that was removed or changed, or odd stored rows, give a store error naming the session, never a traceback."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import warnings

import numpy as np
import pytest

from helpers.app.assistant import open_assistant
from helpers.memory.assembler import MemoryAssembler, _split_turns
from helpers.memory.profile import ProfileMemory
from helpers.memory.recall_index import RecallWarning
from helpers.sessions.encoding import import_stored_vectors, pieces_digest
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionStoreError, SQLiteSessionStore

from test_cli import chat_in_process
from test_store import any_store, recalling, run_sql, stored_vector_turns  # noqa: F401  (fixture)

LOCKER, VEGETARIAN, BIKE = "My locker number is 4471.", "I'm vegetarian.", "My bike is blue."


def bodies(db, session_id="main") -> dict[int, dict]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT turn_id, body FROM session_turns WHERE session_id = ?", (session_id,)).fetchall()
    return {turn_id: json.loads(body) for turn_id, body in rows}


def header_memory(db, session_id="main") -> dict:
    with sqlite3.connect(db) as conn:
        (header,) = conn.execute("SELECT header FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return json.loads(header)["memory"]


def tamper(db, sql, *params, digest=False):
    """Change turn rows outside the store; ``digest=True`` also writes the digest that matches the new body."""
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)
        if digest:
            for turn_id, body in conn.execute("SELECT turn_id, body FROM session_turns").fetchall():
                conn.execute("UPDATE session_turns SET digest = ? WHERE turn_id = ?",
                             (hashlib.sha256(body.encode()).hexdigest(), turn_id))
    conn.close()


def assistant_turns(db, *texts):
    with open_assistant(None, "ada", "main", db=db) as assistant:
        for text in texts:
            assistant.ask(text)


# ---------------------------------------------------------------- item 2: a plain writer in between

def test_a_session_the_assistant_wrote_continues_after_a_plain_writer_and_keeps_every_part(tmp_path):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER, VEGETARIAN)
    parts_before = {i: body["memory"] for i, body in bodies(db).items()}
    assert set(parts_before) == {0, 1}

    with SQLiteSessionStore(db) as store:
        plain = PersistentSession.open(store, "ada", "main")
        plain.chat(BIKE)
        assert plain.snapshot()["memory"]["turns"] == {str(i): p for i, p in parts_before.items()}
        again = PersistentSession.open(store, "ada", "main")  # a plain writer reopens it too
        assert again.snapshot() == plain.snapshot()
    stored = bodies(db)
    assert {i: stored[i]["memory"] for i in (0, 1)} == parts_before  # carried through, not dropped
    assert "memory" not in stored[2]  # written without a part: the turn its memory never saw

    with open_assistant(None, "ada", "main", db=db) as assistant:  # no "damaged ... delete that session"
        memory = assistant.memory
        assert memory.recall.texts[0] == parts_before[0]["recall"]["texts"]
        assert memory.recall.texts[2] == [BIKE]  # the plain writer's turn, read again
        assert memory.profile.get("bike").value == "blue"
        assert assistant.session.rebuilt_turns == [2]
        assistant.ask("When does the AI club meet?")
    stored = bodies(db)
    assert stored[2]["memory"]["recall"]["texts"] == [BIKE]  # the rebuilt part is stored with its turn
    assert "unread" not in header_memory(db)
    with open_assistant(None, "ada", "main", db=db) as assistant:
        assert assistant.session.rebuilt_turns == [] and assistant.memory.recall.texts[2] == [BIKE]


def test_a_plain_writers_undo_and_reset_take_the_carried_parts_with_them(tmp_path):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER, VEGETARIAN)
    with SQLiteSessionStore(db) as store:
        plain = PersistentSession.open(store, "ada", "main")
        plain.chat(BIKE)
        plain.undo()  # its own turn: no longer unread
        assert "unread" not in plain.snapshot()["memory"]
        plain.undo()  # the assistant's turn 1: its part goes with it
        assert set(plain.snapshot()["memory"]["turns"]) == {"0"}
        reopened = PersistentSession.open(store, "ada", "main")
        assert reopened.snapshot() == plain.snapshot()
        plain.reset()
        assert plain.snapshot()["memory"] == {} and PersistentSession.open(store, "ada", "main").snapshot() == \
            plain.snapshot()


def test_the_terminal_chat_continues_a_session_a_plain_window_saved_in_between(monkeypatch, tmp_path, capsys):
    assert chat_in_process(monkeypatch, tmp_path, [LOCKER, VEGETARIAN, "/quit"], "--user", "ada") == 0
    with SQLiteSessionStore(tmp_path / "chat.db") as store:
        PersistentSession.open(store, "ada", "main").chat(BIKE)  # notebook 11's window: a plain session
    capsys.readouterr()
    assert chat_in_process(monkeypatch, tmp_path, ["What's my locker number?", "/quit"], "--user", "ada") == 0
    out = capsys.readouterr().out
    assert "damaged" not in out and "4471" in out


def test_a_session_whose_memory_an_older_plain_writer_dropped_still_opens_with_its_parts(tmp_path):
    """Saved before writers carried the memory through: header memory {}, parts still in the rows."""
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER, VEGETARIAN)
    with SQLiteSessionStore(db) as store:
        state = store.load_state("ada", "main").state
        plain = PersistentSession.open(store, "ada", "main")
        plain.chat(BIKE)
    with sqlite3.connect(db) as conn:  # the header as the older plain writer left it
        (header,) = conn.execute("SELECT header FROM sessions").fetchone()
        conn.execute("UPDATE sessions SET header = ?", (json.dumps({**json.loads(header), "memory": {}}),))
    conn.close()
    with open_assistant(None, "ada", "main", db=db) as assistant:
        assert assistant.memory.recall.texts[1] == state["memory"]["turns"]["1"]["recall"]["texts"]
        assert assistant.memory.recall.texts[2] == [BIKE] and assistant.session.rebuilt_turns == [2]


# ---------------------------------------------------------------- item 3: the older whole-state layout

def test_a_plain_writer_keeps_the_summary_and_recall_of_the_older_whole_state_layout(tmp_path):
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    memory = lambda: MemoryAssembler(profile=ProfileMemory(user_id="ada"), window_turns=2)  # noqa: E731
    session = PersistentSession.open(store, "ada", "s1", memory=memory(), max_turns=2)
    for text in (LOCKER, VEGETARIAN, "My advisor is Dr. Okafor.", "I want to join the robotics club."):
        session.chat(text)
    state = session.snapshot()
    assert state["memory"]["summary"]["turn_runs"]  # the summary covers the dropped turns
    recall, profile, _ = _split_turns(state["memory"].pop("turns"), {}, {"user_id": "ada"})
    state["memory"].update(recall=recall, profile=profile)  # the layout older saves wrote: all in the header
    store.save("ada", "s1", state)
    old = header_memory(db, "s1")

    plain = PersistentSession.open(store, "ada", "s1")
    plain.chat(BIKE)
    kept = header_memory(db, "s1")
    assert kept["summary"] == old["summary"] and kept["recall"] == old["recall"]
    assert kept["profile"] == old["profile"] and kept["unread"] == [4]

    reopened = PersistentSession.open(store, "ada", "s1", memory=memory(), max_turns=2)
    rebuilt = reopened.session.memory
    assert rebuilt.summary.to_dict() == old["summary"]
    assert {i: rebuilt.recall.texts[i] for i in (0, 1, 2, 3)} == {int(k): v for k, v in old["recall"]["texts"].items()}
    assert rebuilt.recall.texts[4] == [BIKE]
    store.close()


# ---------------------------------------------------------------- item 4: a part removed or changed

@pytest.mark.parametrize("change", [
    "json_remove(body, '$.memory')",
    "json_set(body, '$.memory.profile[0].value', '9999')",
    "json_set(body, '$.kept[0].content', 'My locker number is 9999.')",
])
def test_a_memory_part_removed_or_changed_after_it_was_saved_is_reported_naming_the_session(tmp_path, change):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER, VEGETARIAN)
    tamper(db, f"UPDATE session_turns SET body = {change} WHERE turn_id = 0")
    for opening in (lambda: open_assistant(None, "ada", "main", db=db),
                    lambda: PersistentSession.open(SQLiteSessionStore(db), "ada", "main")):
        with pytest.raises(SessionStoreError) as caught:
            opening()
        message = str(caught.value)
        assert "session ada/main" in message and "turn 0" in message and "digest" in message


def test_a_reload_refuses_a_changed_row_and_keeps_this_copy(tmp_path):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER)
    with SQLiteSessionStore(db) as store:
        copy = PersistentSession.open(store, "ada", "main")
        before = copy.snapshot()
        tamper(db, "UPDATE session_turns SET body = json_remove(body, '$.memory')")
        with pytest.raises(SessionStoreError, match="session ada/main.*turn 0.*digest"):
            copy.reload()
        assert copy.snapshot() == before


# ---------------------------------------------------------------- item 7: a memory part that is not one

@pytest.mark.parametrize("digest", [False, True])
@pytest.mark.parametrize("value", ["'x'", "json('[1]')", "json('{\"recall\": \"x\"}')"])
def test_an_odd_memory_part_is_a_store_error_naming_the_session(tmp_path, value, digest):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER, VEGETARIAN)
    tamper(db, f"UPDATE session_turns SET body = json_set(body, '$.memory', {value}) WHERE turn_id = 1",
           digest=digest)
    with pytest.raises(SessionStoreError, match="ada/main") as caught:
        open_assistant(None, "ada", "main", db=db)
    assert "turn 1" in str(caught.value) or "memory" in str(caught.value)


def test_the_terminal_chat_reports_an_odd_memory_part_in_one_line(monkeypatch, tmp_path, capsys):
    assert chat_in_process(monkeypatch, tmp_path, [LOCKER, "/quit"], "--user", "ada") == 0
    tamper(tmp_path / "chat.db", "UPDATE session_turns SET body = json_set(body, '$.memory', 'x')", digest=True)
    capsys.readouterr()
    status = chat_in_process(monkeypatch, tmp_path, ["/quit"], "--user", "ada")
    captured = capsys.readouterr()
    assert status not in (0, None) and "Traceback" not in captured.err + captured.out
    assert "ada/main" in captured.err + captured.out


# ---------------------------------------------------------------- item 8: odd recall-vector rows

def test_odd_vector_rows_are_ignored_with_a_warning():
    memory = MemoryAssembler(profile=False)
    memory.recall.add(0, [{"role": "user", "content": LOCKER}, {"role": "assistant", "content": "Noted."}])

    class Session:  # what import_stored_vectors reads: the memory's recall index
        pass

    session = Session()
    session.memory = memory
    source = pieces_digest(memory.recall.texts[0])
    good = np.ones((1, 4), dtype="<f4").tobytes()
    for dim, blob in [("x", good), (1.5, good), (None, good), (True, good), (4, good.hex()), (4, 7),
                      (4, np.full((1, 4), np.nan, dtype="<f4").tobytes()), (4, good * 2)]:
        with pytest.warns(RecallWarning, match="recall vectors of turn 0 are damaged"):
            assert import_stored_vectors(session, [(0, "model", dim, source, blob)]) == 0
        assert memory.recall.pending == [0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert import_stored_vectors(session, [("0", "model", 4, source, good)]) == 0  # not this turn's row


@pytest.mark.parametrize("column, value", [("dim", "x"), ("dim", 1.5), ("vector", "text, not bytes")])
def test_an_odd_stored_vector_row_is_embedded_again(any_store, column, value):  # noqa: F811
    import psycopg

    session = recalling(any_store)
    for text in (LOCKER, VEGETARIAN, "What's my locker number?"):
        session.chat(text)
    assert 1 in stored_vector_turns(any_store)
    try:
        run_sql(any_store, f"UPDATE recall_vectors SET {column} = ? WHERE turn_id = 1", value)
    except psycopg.Error:
        pytest.skip(f"PostgreSQL's column types refuse {column} = {value!r}")
    with pytest.warns(RecallWarning, match="recall vectors of turn 1 are damaged"):
        restored = recalling(any_store)
    assert restored.session.memory.recall.pending == [1]


# ---------------------------------------------------------------- the chat window after a conflict

@pytest.mark.parametrize("how", ["button", "typed"])
def test_the_chat_window_reloads_after_a_conflict_and_says_how(tmp_path, how):
    from helpers.app.chat_window import ChatUI

    store = SQLiteSessionStore(tmp_path / "s.db")
    ui = ChatUI(PersistentSession.open(store, "ada", "window"))
    ui.send("When does the AI club meet?")
    PersistentSession.open(store, "ada", "window").chat("Where can I print a poster?")  # another window
    assert ui.send("When is the library open?") is None
    assert "reload()" not in ui.last_error and "Reload" in ui.last_error and "/reload" in ui.last_error
    if how == "button":
        ui.reload_button.click()
    else:
        ui.entry.value = "/reload\n"
    assert ui.last_error is None and "Reloaded" in ui.status.value
    assert [t.question for t in ui.session.turns] == ["When does the AI club meet?", "Where can I print a poster?"]
    assert ui.send("When is the library open?")
    assert [t.question for t in store.load("ada", "window").turns][-1] == "When is the library open?"
    store.close()


def test_pinned_facts_that_are_not_texts_are_a_store_error_naming_the_session(tmp_path):
    db = tmp_path / "campus.db"
    assistant_turns(db, LOCKER)
    with sqlite3.connect(db) as conn:
        (header,) = conn.execute("SELECT header FROM sessions").fetchone()
        header = json.loads(header)
        header["memory"]["keep"] = [1]
        conn.execute("UPDATE sessions SET header = ?", (json.dumps(header),))
    conn.close()
    with pytest.raises(SessionStoreError, match="ada/main.*pinned facts"):
        open_assistant(None, "ada", "main", db=db).ask("What's my locker number?")

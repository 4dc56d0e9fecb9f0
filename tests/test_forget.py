"""Forgetting for real (helpers.memory.forget, the fact stores' deletions, Assistant.forget / forget_me).

After "forget my sister" no table of either backend holds what was said about her (every column of every row of
the user is searched), the audit records the deletion without its value, and what was not about her stays.
After forget_me no row of the user is left in any table, and another user's rows are untouched."""
from __future__ import annotations

import sqlite3

import pytest

from helpers.app.assistant import open_assistant
from helpers.facts.fact_store import FORGOTTEN, FORGOTTEN_OUTCOME, OWNED_TABLES, USER_ROWS, forget_user_rows
from helpers.memory.forget import Topic, forget_request, gather, scrub_value

SECRET_WORDS = ("Maya", "June 3", "sister")  # what "forget my sister" must leave nowhere
KEPT = "on Tuesday at 15:00"  # the dentist appointment, which must stay


SCHEMAS: dict[str, str] = {}  # tmp_path -> its PostgreSQL schema


def _open(backend, tmp_path, user="ada", session="main"):
    if backend == "sqlite":
        return open_assistant(db=str(tmp_path / "memory.db"), user_id=user, session_id=session)
    from test_postgres import pg_dsn, scratch_schema

    if str(tmp_path) not in SCHEMAS:  # one fresh schema per test, reopened by every later call
        SCHEMAS[str(tmp_path)] = scratch_schema(tmp_path, "forget_")
    schema = SCHEMAS[str(tmp_path)]
    return open_assistant(db=pg_dsn(), schema=schema, user_id=user, session_id=session)


def _all_rows(backend, tmp_path) -> dict[str, list[tuple]]:
    """Every row of every table of the database (table -> rows), read as text."""
    if backend == "sqlite":
        con = sqlite3.connect(tmp_path / "memory.db")
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {t: [tuple(str(v) for v in row) for row in con.execute(f'SELECT * FROM "{t}"')] for t in tables}
        con.close()
        return rows
    import psycopg
    from test_postgres import pg_dsn

    schema = SCHEMAS[str(tmp_path)]
    with psycopg.connect(pg_dsn()) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                                            (schema,))]
        return {t: [tuple(str(v) for v in row) for row in con.execute(f'SELECT * FROM "{schema}"."{t}"')]
                for t in tables}


def _talk(assistant):
    """A conversation that states facts about the user's sister (also written as facts with their evidence, as
    an extractor would: whichever rule reads them, they are in the store) and one about a dentist appointment."""
    from helpers.facts.schema import AttributeSpec, Candidate

    for text in ("My sister's name is Maya and her birthday is June 3.", "My dentist appointment is on Tuesday at 15:00.",
                 "Where is the chess club?", "When is my sister's birthday?", "When is my dentist appointment?"):
        assistant.ask(text)
    turn = assistant.turn_ids[0]
    for attribute, value in (("sister's name", "Maya"), ("sister's birthday", "June 3")):
        assistant.facts.attributes.setdefault(attribute, AttributeSpec(attribute))
        assistant.facts.write(Candidate(assistant.user_id, "user", attribute, value, f"chat:{assistant.user_id}",
                                        "user", 1000 + len(value), "My sister's name is Maya and her birthday is June 3."))


def _holding(rows, words, user="ada"):
    return [(table, row) for table, table_rows in rows.items() for row in table_rows
            for word in words if word.lower() in " ".join(row).lower()]


def test_forget_x_leaves_it_in_no_table_of_either_backend(backend, tmp_path):
    a = _open(backend, tmp_path)
    _talk(a)
    a.close()
    other = _open(backend, tmp_path, session="second")  # another conversation of the same user
    other.ask("Maya is visiting on Friday.")  # names her without saying "sister"
    before = _all_rows(backend, tmp_path)
    assert _holding(before, ("Maya",)), "the test must first store what it forgets"
    assert _holding({"recall_lines": before["recall_lines"]}, ("Maya",)), \
        "the test must first index what it forgets for search in the database"
    reply = other.ask("Forget what I told you about my sister.")
    assert "Forgotten" in reply and "deleted" in reply
    other.close()
    rows = _all_rows(backend, tmp_path)
    assert _holding(rows, SECRET_WORDS) == []
    assert any(KEPT in " ".join(r) for r in rows["facts"]), "a fact not about her was deleted"
    reopened = _open(backend, tmp_path)
    assert "15:00" in reopened.ask("When is my dentist appointment?")
    audit = reopened.audit()
    deleted = [e for e in audit if e.outcome == FORGOTTEN_OUTCOME]
    assert deleted and all(e.value == FORGOTTEN for e in deleted)
    assert len(deleted) >= 2 and all("Maya" not in e.value + e.reason + e.attribute for e in audit)  # 2 written here, and any the profile read
    reopened.close()


def test_forget_me_deletes_every_row_of_the_user_and_no_other(backend, tmp_path):
    a = _open(backend, tmp_path)
    _talk(a)
    a.instructions.learn(99, "No bullet points, please.")
    a.close()
    b = _open(backend, tmp_path, user="bo")
    b.ask("My locker number is 1234.")
    b.close()
    assert _holding({"recall_lines": _all_rows(backend, tmp_path)["recall_lines"]}, ("Maya",)), \
        "the test must first index what it forgets for search in the database"
    a = _open(backend, tmp_path)
    gone = a.forget_me()
    assert gone["sessions"] == 1 and gone["fact rows"] > 0
    a.close()
    rows = _all_rows(backend, tmp_path)
    left = [(t, r) for t, table_rows in rows.items() for r in table_rows if "ada" in r]
    assert left == []
    assert _holding(rows, ("Maya",)) == []  # nor a word of hers in any table, the full-text index's own included
    assert any("bo" in r for r in rows["facts"]) and any("bo" in r for r in rows["sessions"])


def test_every_fact_table_is_reached_by_forget_user_rows(tmp_path):
    con = sqlite3.connect(tmp_path / "f.db")
    from helpers.facts.fact_store import SQLiteFactStore

    SQLiteFactStore(str(tmp_path / "f.db")).close()
    for table in OWNED_TABLES:
        columns = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        assert "user_id" in columns or table in USER_ROWS, f"{table}: forget_user_rows cannot find a user's rows"
    deleted = []
    forget_user_rows(lambda sql, params: deleted.append(sql) or type("C", (), {"rowcount": 0})(), "ada")
    assert {sql.split()[2] for sql in deleted} == set(OWNED_TABLES)
    assert deleted[0].split()[2] == "provenance"  # children before the facts they point to


@pytest.mark.parametrize("text,topic", [
    ("Forget what I told you about my sister.", "my sister"),
    ("please forget my locker number", "my locker number"),
    ("Delete everything I said about the dentist!", "the dentist"),
    ("Forget that I have a cat", "I have a cat"),
])
def test_forget_requests_name_their_topic(text, topic):
    assert forget_request(text) == topic


@pytest.mark.parametrize("text", ["Forget me.", "forget it", "Where is the chess club?", "I always forget my keys",
                                  "Don't forget the meeting"])
def test_other_messages_are_not_forget_requests(text):
    assert forget_request(text) is None


def test_a_topic_grows_by_the_names_and_values_its_sentences_give():
    topic = Topic.of("my sister")
    found = gather(topic, ["My sister Maya's birthday is June 3. I like chess.", "Maya called me.",
                           "Chess Club meets on Saturdays."])
    assert "My sister Maya's birthday is June 3." in found and "Maya called me." in found
    assert not any("Chess" in s or "chess" in s for s in found)
    assert scrub_value({"a": ["I like chess. Maya called."], "b": '{"q": "Maya"}'}, topic) == \
        {"a": [f"I like chess. {FORGOTTEN}"], "b": f'{{"q": "{FORGOTTEN}"}}'}


def test_forgetting_nothing_changes_nothing(tmp_path):
    a = open_assistant(db=str(tmp_path / "m.db"), user_id="ada")
    a.ask("My locker number is 4471.")
    revision, audit = a.revision, len(a.audit())
    reply = a.ask("Forget what I told you about my dentist.")
    assert "Nothing" in reply and a.revision == revision and len(a.audit()) == audit
    a.close()


def test_the_terminal_chat_lists_undoes_and_forgets(monkeypatch, tmp_path, capsys):
    from test_cli import chat_in_process

    status = chat_in_process(monkeypatch, tmp_path, [
        "Please use bullet points from now on.", "No bullet points, please.", "/instructions",
        "/instructions undo", "/instructions", "/instructions forget 1", "/instructions",
        "My dentist appointment is on Tuesday at 15:00.", "/forget my dentist appointment", "/forget me", "/quit"])
    out = capsys.readouterr().out
    assert status == 0
    assert '1. answer format: "No bullet points, please"' in out
    assert 'Taken back: "No bullet points, please".' in out and '1. answer format: "Please use bullet points' in out
    assert 'Forgotten: "Please use bullet points from now on".' in out and "Instructions: none yet" in out
    assert "Forgotten: 'my dentist appointment' - 1 fact deleted" in out
    assert "Deleted everything stored about" in out
    rows = [r for t in ("facts", "audit", "sessions", "session_turns")
            for r in sqlite3.connect(tmp_path / "chat.db").execute(f"SELECT * FROM {t}")]
    assert rows == []


def test_a_streamed_request_to_forget_is_carried_out_and_not_stored(tmp_path):
    a = open_assistant(db=str(tmp_path / "m.db"), user_id="ada")
    a.ask("My dentist appointment is on Tuesday at 15:00.")
    turns = list(a.turn_ids)
    shown = "".join(a.stream("Please forget my dentist appointment."))
    assert shown.startswith("Forgotten: 'my dentist appointment' - 1 fact deleted")
    assert a.turn_ids == turns and not any("dentist" in str(m.get("content")) for m in a.messages)
    assert "15:00" not in a.ask("When is my dentist appointment?")
    a.close()

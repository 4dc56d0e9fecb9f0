"""Save and load one session, as notebook 11 builds it: a session's ``snapshot()`` as JSON in a SQLite table.

A ``ChatSession`` already describes itself as plain data (``snapshot()``) and comes back from it
(``ChatSession.from_snapshot``). Saving is storing that data under a user id and a session id;
loading is reading it back. ``chat_and_save`` saves only after a turn completed, so a turn that
fails saves nothing.

``helpers.sessions.session_store`` keeps the same idea (the same snapshot, keyed the same way, saved after
each completed turn) and adds what a real application needs: one row per turn, revisions that
refuse to overwrite another writer's turns, rollback in memory when a save fails, undo and forks
that are saved, refusal of files that are not its own, and the same protocol on PostgreSQL.
tests/test_store.py checks that both restore exactly the same snapshot.
"""
from __future__ import annotations

import json
import sqlite3

from helpers.chat.chat_session import ChatSession


def open_db(path):
    """Open or create a SQLite file with one table: a session's snapshot as JSON, per user and session id."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE IF NOT EXISTS saved_sessions (user_id TEXT NOT NULL, session_id TEXT NOT NULL, "
               "snapshot TEXT NOT NULL, PRIMARY KEY (user_id, session_id))")
    return db


def save_session(db, user_id, session_id, session):
    """Store session.snapshot() as JSON under the two ids, replacing an older one, in one transaction."""
    with db:  # commits when the block succeeds, rolls back if it raises
        db.execute("INSERT INTO saved_sessions (user_id, session_id, snapshot) VALUES (?, ?, ?) "
                   "ON CONFLICT (user_id, session_id) DO UPDATE SET snapshot = excluded.snapshot",
                   (user_id, session_id, json.dumps(session.snapshot())))


def load_session(db, user_id, session_id, **session_options):
    """A ChatSession continuing the stored conversation, or None when nothing is stored under these ids."""
    row = db.execute("SELECT snapshot FROM saved_sessions WHERE user_id = ? AND session_id = ?",
                     (user_id, session_id)).fetchone()
    if row is None:
        return None
    return ChatSession.from_snapshot(json.loads(row[0]), **session_options)


def chat_and_save(db, user_id, session_id, session, text):
    """Ask one question; save only once the turn is complete (a turn that raises saves nothing)."""
    answer = session.chat(text)
    save_session(db, user_id, session_id, session)
    return answer

"""Snapshot support beside the session (helpers/chat/snapshot.py): a mark puts back turns, dropped records and
memory."""
from __future__ import annotations

from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import Snapshots

from support import QUESTIONS
from test_store import NotingSession


def test_restore_mark_puts_back_turns_dropped_records_and_memory():
    session = NotingSession(max_turns=1)
    session.chat(QUESTIONS[0])
    session.chat(QUESTIONS[1])
    before, mark = session.snapshot(), session.mark()
    session.chat(QUESTIONS[2])
    session.undo()
    session.reset()
    assert session.snapshot_at(mark) == before
    session.restore_mark(mark)
    assert session.snapshot() == before and session.notes == before["memory"]["summary"].split(" / ")
    assert session.changes_since(mark).turns == {}  # nothing changed since


def test_snapshot_support_lives_with_the_session_and_the_old_path_still_works():
    from helpers.chat import snapshot as old_path

    assert issubclass(ChatSession, Snapshots) and Snapshots.__module__ == "helpers.chat.snapshot"
    assert old_path.Snapshots is Snapshots and old_path.TurnRecord.__module__ == "helpers.chat.snapshot"

"""Saving a ChatSession as plain data and continuing from it (notebook 11).

The snapshot support lives with the session it serves, in ``helpers.session_snapshot`` (the session
layer of notebook 07): ``snapshot()`` is everything needed to continue the conversation later, as
JSON-ready data; ``ChatSession.from_snapshot(data)`` continues it in a new session, and
``load_snapshot(data)`` in place. This module keeps the old import path working;
``helpers.sessions.store`` keeps snapshots in SQLite or PostgreSQL, turn by turn.
"""
from __future__ import annotations

from helpers.session_snapshot import (SnapshotChanges, SnapshotMark, Snapshots, TurnRecord,  # noqa: F401
                                      resume_arguments)

__all__ = ["SnapshotChanges", "SnapshotMark", "Snapshots", "TurnRecord", "resume_arguments"]

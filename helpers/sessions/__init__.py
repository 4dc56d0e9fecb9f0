"""Sessions that survive restarts (notebook 11).

``snapshot`` gives ``ChatSession`` its ``snapshot()`` / ``from_snapshot()``: a conversation as plain data;
``basic`` is the save and load the notebook builds (one JSON snapshot per session in one SQLite table);
``store`` is the ``SessionStore`` protocol on SQLite with per-turn rows, revisions and forks; ``postgres``
is the same protocol on PostgreSQL; ``persistent`` has ``PersistentSession``, a ChatSession that saves
itself after every turn, undo and reset, and rolls back a change whose save failed.
"""

"""Sessions that survive restarts (notebook 11).

``basic`` is the save and load the notebook builds (one JSON snapshot per session in one SQLite table);
``store`` is the ``SessionStore`` protocol on SQLite with per-turn rows, revisions and forks, split by job
into ``protocol`` (the protocol, its errors, the id checks), ``encoding`` (a snapshot - or what changed
since the stored revision - as rows, and back) and ``base`` (the SQL of a save, load and fork, shared with
``postgres``, the same protocol on PostgreSQL); ``persistent`` has ``PersistentSession``, a ChatSession
that saves itself after every turn, undo and reset (writing only what changed), and rolls back a change
whose save failed. ``snapshot`` re-exports the snapshot support, which lives with the session
(``helpers.chat.snapshot``).
"""

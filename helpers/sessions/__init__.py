"""Sessions that survive restarts (notebook 11): a ``SessionStore`` protocol on SQLite (``store``) and
PostgreSQL (``postgres``), and ``PersistentSession``, a ChatSession that saves itself after every turn.
"""

"""Durable memory (notebook 10): facts with provenance, reconciled on every write, and an audit of each decision.

``writer`` decides (replay, correction, conflict, assistant claim); ``store`` keeps facts on SQLite behind the
``FactStore`` protocol; ``postgres`` is the same protocol on PostgreSQL; ``extract`` turns turns into candidates.
"""

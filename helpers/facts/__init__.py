"""Durable memory (notebook 10): facts with provenance, reconciled on every write, each decision audited.

``writer`` opens with the rules (``decide``) and runs them in transactions; ``schema`` says what a
candidate must be; ``store`` keeps facts on SQLite behind the ``FactStore`` protocol and ``postgres``
on PostgreSQL; ``extract`` turns conversation turns into candidates; ``prompt`` puts facts in the
agent's context.
"""

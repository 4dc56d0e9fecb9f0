"""Durable memory (notebook 10): facts with provenance, reconciled on every write, each decision audited.

``writer`` opens with the rules (``decide``) and runs them in transactions; ``decisions`` is what
each decision records and its reason in words; ``schema`` says what a candidate must be; ``store``
keeps facts on SQLite behind the ``FactStore`` protocol and ``postgres`` on PostgreSQL; ``extract``
turns conversation turns into candidates and ``background`` queues them for batched writes;
``prompt`` puts facts in the agent's context.
"""

"""Durable memory (notebook 10): facts with provenance, reconciled on every write, each decision audited.

``writer`` opens with the rules (``decide``) and runs them in transactions; ``decisions`` is what
each decision records and its reason in words; ``schema`` says what a candidate must be; ``store``
keeps facts on SQLite behind the ``FactStore`` protocol and ``postgres`` on PostgreSQL; ``pipeline`` is
the one extractor interface (a turn in, candidates out) over pluggable attribute sets, ``extract``
turns conversation turns into candidates with the delivery and contact set, and ``background`` queues
them for batched writes;
``prompt`` puts facts in the agent's context.
"""

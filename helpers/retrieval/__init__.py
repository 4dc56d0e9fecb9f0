"""Notebooks 02 and 03: embeddings (local MiniLM or NIM), the checked knowledge base and cached top-k retrieval, its evaluation, and the guardrails (scope and grounding)."""

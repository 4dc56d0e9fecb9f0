"""Notebooks 05 and 06: tools with schemas and one registry; the plan-act-observe loop (``loop``) and the same loop hardened (``turn``)."""

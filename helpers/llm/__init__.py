"""Notebooks 01 and 04: one place that decides backend, endpoint, models and key; the `.env` file; the client and its one normalising call path; server quirks; the health check; the stream reader."""

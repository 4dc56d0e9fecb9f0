"""Database passwords kept out of every message: ``redact_dsn`` (all notebooks that open a database).

A PostgreSQL DSN may carry a password (``postgresql://ada:s3cret@host/db`` or ``password=s3cret``),
and libpq quotes pieces of a DSN it cannot parse in its error messages. Anything shown to a person
(an exception, the terminal chat) goes through ``redact_dsn`` first. It lives at the bottom of the
package, beside ``api_key``, so the shared PostgreSQL plumbing (``helpers.postgres``), the session
and fact stores and the terminal chat can all use it without importing each other.
"""
from __future__ import annotations

import re

_URL_PASSWORD = re.compile(r"(\w+://[^\s:/@\"']*):([^\s@\"']*)@")
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[^\s&\"']+)", re.IGNORECASE)


def redact_dsn(text: str, dsn: str | None = None) -> str:
    """``text`` with every database password replaced by ``***`` (URL and ``password=`` forms).

    With ``dsn``, the passwords found in it are also removed wherever they appear in ``text``
    (libpq quotes pieces of a DSN it cannot parse).
    """
    secrets = set()
    if dsn:
        secrets |= {m.group(2) for m in _URL_PASSWORD.finditer(dsn)}
        secrets |= {m.group(2).strip("'\"") for m in _KEY_PASSWORD.finditer(dsn)}
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:***@", str(text))
    text = _KEY_PASSWORD.sub(lambda m: f"{m.group(1)}***", text)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:  # shorter ones would blank out ordinary words
            text = text.replace(secret, "***")
    return text

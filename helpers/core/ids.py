"""The one rule for user ids and session ids, shared by every store (sessions and facts, SQLite and PostgreSQL).

An id is keyed in its *canonical form*: Unicode NFKC (so NFD and NFC spellings, and full-width or
other compatibility forms, are one id), then surrounding whitespace removed. Case is kept: "Ada"
and "ada" are two users, in every store. An id is refused (``InvalidIdError``) when it is not a
string, holds a NUL character or a lone surrogate (no database can store either), or is empty or
longer than ``MAX_ID_CHARS`` once canonical. Characters inside the id are otherwise kept as they are.

``helpers.sessions`` raises ``SessionIdError`` for a refused id (an ``InvalidIdError``, so a ``ValueError``, and
a ``SessionStoreError`` as it always was); ``helpers.facts`` rejects the candidate (audited, never stored), and
its reads of such an id find nothing.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from helpers.core.errors import WorkshopError

MAX_ID_CHARS = 200
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # NUL (PostgreSQL text cannot hold it); lone surrogates


class InvalidIdError(WorkshopError, ValueError):
    """An id that no store accepts; the message names it and says why."""


def canonical_id(value: str) -> str:
    """``value`` as every store keys it: NFKC, surrounding whitespace removed (no checks; see ``check_id``)."""
    return unicodedata.normalize("NFKC", value).strip()


def id_problem(value: Any, name: str = "id") -> str | None:
    """Why ``value`` is not a usable id (a sentence naming ``name``), or None when it is one."""
    rule = (f"{name} must be a non-empty string of at most {MAX_ID_CHARS} characters (once normalised) "
            "without NUL characters or lone surrogates")
    if not isinstance(value, str):
        return f"{rule}; got {type(value).__name__} {_shown(value)}"
    found = _UNSTORABLE.search(value)
    if found:
        what = "a NUL character" if found.group() == "\x00" else "a lone surrogate (not valid Unicode text)"
        return f"{rule}; {ascii(value)[:80]} holds {what} at character {found.start()}, which no store can keep"
    canonical = canonical_id(value)
    if not canonical:
        return f"{rule}; got {value!r:.60}, which is empty or only whitespace"
    if len(canonical) > MAX_ID_CHARS:
        return f"{rule}; got {len(canonical)} characters ({value[:30]!r}...)"
    return None


def _shown(value: Any) -> str:
    """ascii() of a value that is not an id, cut short; never an exception of its own (an int too long to print)."""
    try:
        return ascii(value)[:60]
    except Exception:  # a huge int, a broken __repr__: the message names the type alone
        return "(that cannot be printed)"


def check_id(value: Any, name: str = "id", error: type[InvalidIdError] = InvalidIdError) -> str:
    """The canonical form of ``value``, or ``error`` (``InvalidIdError`` or a subclass) saying why it is refused."""
    problem = id_problem(value, name)
    if problem is not None:
        raise error(problem)
    return canonical_id(value)

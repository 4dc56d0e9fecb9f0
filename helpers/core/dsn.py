"""Where a store lives, read from one string, and database passwords kept out of every message.

``parse_database(db)`` decides what ``db`` names, the same way for the assistant (``helpers.app.assistant``),
the terminal chat and the notebooks:

* a PostgreSQL DSN in any form libpq accepts: a ``postgresql://`` or ``postgres://`` URL, or
  ``key=value`` pairs (in any order, ``key = value`` with spaces, values in single quotes with ``\\'``
  and ``\\\\`` escapes, such as ``sslmode=disable host=db password='s3 cret' dbname=campus``);
* anything else is a SQLite file path (``~`` expanded).

A string that starts like a DSN (a URL of any scheme, ``word=...``), or that holds a DSN setting such as
``password=`` after a space, is never taken for a file name: it is read as a DSN or refused with a
``ConfigError`` that says why, so a password never becomes part of a file's name. ``Database.shown``
and ``Database.describe`` say what it really is, with every password replaced by ``***``.

A PostgreSQL DSN may carry a password (``postgresql://ada:s3cret@host/db`` or ``password=s3cret``),
and libpq quotes pieces of a DSN it cannot parse in its error messages. Anything shown to a person
(an exception, the terminal chat) goes through ``redact_dsn`` first. It lives at the bottom of the
package, beside ``api_key``, so the shared PostgreSQL plumbing (``helpers.core.postgres``), the session
and fact stores and the terminal chat can all use it without importing each other.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from helpers.core.errors import ConfigError

_URL_PASSWORD = re.compile(r"(\w+://[^\s:/@\"']*):([^\s@/]*)@")
_SECRET_KEY = r"(?:(?:ssl)?password|oauth_client_secret|scram_client_key|scram_server_key)"
_KEY_PASSWORD = re.compile(rf"({_SECRET_KEY}\s*=\s*)('(?:[^'\\]|\\.)*'?|\"[^\"]*\"|[^\s&]+)", re.IGNORECASE)
SECRET_KEYS = ("password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key")

_POSTGRES_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_ANY_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_KEY_VALUE_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*=")
# A DSN setting after a space: "mydb host=h password=pw" is a DSN with a typo, never a file name.
_DSN_SETTING = re.compile(r"(?:^|\s)(?:host|hostaddr|port|dbname|user|passfile|sslmode|service|options|"
                          rf"application_name|connect_timeout|{_SECRET_KEY})\s*=", re.IGNORECASE)


def redact_dsn(text: str, dsn: str | None = None) -> str:
    """``text`` with every database password replaced by ``***`` (URL and ``password=`` forms).

    With ``dsn``, the passwords found in it are also removed wherever they appear in ``text``
    (libpq quotes pieces of a DSN it cannot parse).
    """
    secrets = set(dsn_secrets(dsn)) if dsn else set()
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:***@", str(text))
    text = _KEY_PASSWORD.sub(lambda m: f"{m.group(1)}***", text)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:  # shorter ones would blank out ordinary words
            text = text.replace(secret, "***")
    return text


def dsn_secrets(dsn: str) -> list[str]:
    """Every password-like value in ``dsn``, as written and as decoded (also from a DSN libpq would refuse)."""
    dsn = str(dsn)
    found = [m.group(2) for m in _URL_PASSWORD.finditer(dsn)]
    found += [m.group(2).strip("'\"") for m in _KEY_PASSWORD.finditer(dsn)]
    if _POSTGRES_URL.match(dsn.strip()):
        found += [value for key, value in parse_qsl(dsn.partition("?")[2]) if key.lower() in SECRET_KEYS]
    else:
        try:
            found += [value for key, value in _key_value_pairs(dsn) if key.lower() in SECRET_KEYS]
        except ConfigError:
            pass
    found += [unquote(secret) for secret in found]
    return [secret for secret in dict.fromkeys(found) if secret]


# ---------------------------------------------------------------- what a --db / db= string names

@dataclass(frozen=True)
class Database:
    """What a ``db`` string names: ``kind`` is ``"sqlite"`` or ``"postgresql"``.

    ``target`` is what the store is opened with: the SQLite path, or the DSN exactly as given (it may
    hold a password, so it is left out of ``repr``; show ``shown()`` or ``describe()`` instead).
    """

    kind: str
    target: str = field(repr=False)
    settings: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # a DSN's settings, as libpq reads them

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def shown(self) -> str:
        """The address in its own form, fit to print: a SQLite path, or the DSN with every password as ***."""
        if not self.is_postgres:
            return self.target
        if _POSTGRES_URL.match(self.target.strip()):
            return _shown_url(self.target.strip())
        return " ".join(f"{key}={'***' if key.lower() in SECRET_KEYS else _quoted(value)}"
                        for key, value in self.settings)

    def describe(self) -> str:
        """What it is, in words: ``SQLite file PATH`` or ``PostgreSQL database D on HOST:PORT as USER``."""
        if not self.is_postgres:
            return f"SQLite file {self.target}"
        found = dict(self.settings)
        user = f" as {found['user']}" if found.get("user") else ""
        host = found.get("host") or found.get("hostaddr") or "localhost"
        return f"PostgreSQL database {found.get('dbname') or found.get('user') or '(default)'} on " \
               f"{host}:{found.get('port') or 5432}{user}"

    def __str__(self) -> str:
        return self.shown()


def parse_database(db: str | os.PathLike) -> Database:
    """What ``db`` names: a PostgreSQL DSN (URL or key=value) or a SQLite file; ConfigError if it cannot be told.

    A ``Path`` is always a file. A DSN is checked with libpq itself when psycopg is installed; without it
    the DSN is still recognised (and opening it then says that psycopg is needed).
    """
    if isinstance(db, os.PathLike):
        return Database("sqlite", str(Path(db).expanduser()))
    if not isinstance(db, str):
        raise ConfigError(f"db must be a SQLite file path or a PostgreSQL DSN (text); got {type(db).__name__}")
    text = db.strip()
    if not text:
        raise ConfigError("db is empty: give a SQLite file path or a PostgreSQL DSN")
    if _POSTGRES_URL.match(text):
        if not text.startswith(("postgresql://", "postgres://")):
            raise ConfigError("could not connect to PostgreSQL: the DSN's scheme must be written in lowercase "
                              "(postgresql:// or postgres://); nothing was opened")
        return Database("postgresql", text, _url_settings(text, _libpq_check(text)))
    if _ANY_URL.match(text):
        scheme = text.split(":", 1)[0]
        raise ConfigError(f"db {scheme}://... is not a database this workshop opens: give a SQLite file path, or a "
                          "PostgreSQL DSN (postgresql://..., postgres://... or key=value pairs such as "
                          "'host=... dbname=...')")
    if _KEY_VALUE_START.match(text) or _DSN_SETTING.search(text):
        pairs = _key_value_pairs(text)  # the settings in the order written (libpq reads them the same way)
        _libpq_check(text)
        return Database("postgresql", text, tuple(pairs))
    try:
        return Database("sqlite", str(Path(db).expanduser()))
    except RuntimeError:  # ~name of a user this system does not know
        raise ConfigError(f"cannot use the SQLite file {db}: no home folder is known for its ~user; give the "
                          "full path") from None


def _refused(why: str) -> ConfigError:
    return ConfigError(f"could not connect to PostgreSQL: the DSN cannot be read ({why}); nothing was opened - "
                       "write it as key=value pairs separated by spaces (a value with spaces or quotes inside "
                       "in single quotes: password='a b'), or as a postgresql:// URL")


def _key_value_pairs(text: str) -> list[tuple[str, str]]:
    """libpq's key=value form read as libpq reads it (its parser's rules); the messages never quote a value."""
    pairs, i, n = [], 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return pairs
        start = i
        while i < n and text[i] != "=" and not text[i].isspace():
            i += 1
        key = text[start:i]
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] != "=":
            after = f" after the setting {pairs[-1][0]!r}" if pairs else " at its start"
            raise _refused(f"a piece{after} has no '=' (a value with spaces must be quoted)")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise _refused("a setting's name is not a word (letters, digits and _)")
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value = []
        if i < n and text[i] == "'":
            i += 1
            while i < n and text[i] != "'":
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise _refused(f"the value of {key!r} opens a quote that is never closed")
            i += 1
        else:
            while i < n and not text[i].isspace():
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
        pairs.append((key, "".join(value)))


def _libpq_check(dsn: str) -> dict[str, str] | None:
    """The DSN's settings as libpq parses them (None without psycopg); ConfigError if libpq refuses it."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        return {key: str(value) for key, value in conninfo_to_dict(dsn).items()}
    except psycopg.Error as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _refused(f"libpq: {redact_dsn(reason, dsn)}") from None


def _url_settings(url: str, checked: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    if checked is not None:
        return tuple(checked.items())
    try:
        parts = urlsplit(url)
        found = {"user": unquote(parts.username or ""), "host": parts.hostname or "",
                 "port": str(parts.port or ""), "dbname": unquote(parts.path.lstrip("/"))}
    except ValueError:
        raise _refused("the URL's address cannot be read") from None
    return tuple((key, value) for key, value in found.items() if value)


def _shown_url(url: str) -> str:
    """``url`` with the password in its user part and any password-like query value replaced by ***."""
    base, mark, query = url.partition("?")
    shown = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:***@", base)
    if mark:
        pieces = [f"{key}={'***' if key.lower() in SECRET_KEYS else value}" for key, _, value in
                  (piece.partition("=") for piece in query.split("&"))]
        shown += "?" + "&".join(pieces)
    return shown


def _quoted(value: str) -> str:
    """A key=value DSN value as libpq reads it back: quoted when empty or holding spaces, quotes or backslashes."""
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

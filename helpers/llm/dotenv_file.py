"""The settings a ``.env`` file may hold, and the only places such a file is read from.

Where: the working directory's ``.env``, else - when the working directory is inside this project (the
folder holding the ``helpers`` package, e.g. when a notebook runs in ``notebooks/``) - the project root's
``.env``. No other folder is searched: a ``.env`` in a folder above, which anyone may have put there (a
shared ``/tmp``, a parent owned by someone else), is never read.

Whose: a ``.env`` is read only when it is the user's own. On POSIX systems a file is ignored, with one
``DotenvWarning`` naming its path and why (never its content), when it belongs to neither the current
user nor root (root can already change anything the user runs; a process running as root trusts only
root's files), when its group or other users may write to it, or when it lives in a folder that every
user may write to or that belongs to another user. The checks are made on the opened file, so it cannot
be swapped between the check and the read. (On Windows, files carry no such modes: not checked.)

``.env.example`` documents every setting the workshop reads; anything else in a ``.env`` is ignored. A real
environment variable wins over the file. ``copy_to_environment`` copies the file's non-secret settings into
``os.environ`` (only those not set there already) so every module sees them; the API keys stay in the file.
"""
from __future__ import annotations

import io
import os
import stat
import warnings
from pathlib import Path

from dotenv import dotenv_values

from helpers.core.errors import ConfigError, WorkshopWarning

# Every setting .env.example documents (a test keeps the two lists equal).
DOCUMENTED_SETTINGS = (
    "NVIDIA_API_KEY", "WORKSHOP_BACKEND", "WORKSHOP_BASE_URL", "WORKSHOP_API_KEY", "OPENAI_API_KEY",
    "WORKSHOP_CHAT_MODEL", "WORKSHOP_EMBEDDING_MODEL", "WORKSHOP_EMBEDDINGS", "WORKSHOP_TEMPERATURE",
    "WORKSHOP_TIMEOUT", "WORKSHOP_MAX_RETRIES", "WORKSHOP_NOW", "WORKSHOP_SERVER_PROFILE",
    "WORKSHOP_SUMMARY_MODEL", "WORKSHOP_SESSION_DB", "WORKSHOP_NO_PROMPT", "WORKSHOP_CACHE_DIR", "WORKSHOP_USER",
)
# The API keys (a test keeps them equal to api_key.KEY_NAME and config.OTHER_KEY_NAMES): read from .env,
# never copied into os.environ.
SECRET_SETTINGS = ("NVIDIA_API_KEY", "WORKSHOP_API_KEY", "OPENAI_API_KEY")

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the folder holding the helpers package
_warned: set[tuple[str, str]] = set()  # (path, reason) already warned about in this process


class DotenvWarning(WorkshopWarning):
    """A .env file was ignored because another user could have written it (the message says why)."""


def dotenv_places(cwd: str | Path | None = None) -> list[Path]:
    """Where a .env is looked for, in order: the working directory, then the project root if cwd is inside it."""
    here = Path(cwd if cwd is not None else os.getcwd())
    places = [here / ".env"]
    try:
        inside = here.resolve().is_relative_to(PROJECT_ROOT) and here.resolve() != PROJECT_ROOT
    except OSError:
        inside = False
    if inside:
        places.append(PROJECT_ROOT / ".env")
    return places


def _owner_ok(uid: int) -> bool:
    me = os.geteuid()
    return uid in (me, 0)


def _folder_problem(folder: Path) -> str:
    info = os.stat(folder)
    if info.st_mode & stat.S_IWOTH:
        return f"its folder {folder} may be written by every user"
    if not _owner_ok(info.st_uid):
        return f"its folder {folder} belongs to another user (uid {info.st_uid})"
    return ""


def untrusted_reason(path: str | Path, opened: os.stat_result | None = None) -> str:
    """Why the .env at ``path`` may have been written by someone else ("" when it is the user's own).

    ``opened``: the ``fstat`` of the file as opened (else it is stat'ed here).
    """
    if not hasattr(os, "geteuid"):  # Windows: no owners and modes to check
        return ""
    path = Path(path)
    info = opened if opened is not None else os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if not _owner_ok(info.st_uid):
        return f"it belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users may write to it (mode {stat.filemode(info.st_mode)}; chmod go-w fixes that)"
    for folder in dict.fromkeys([path.absolute().parent, path.resolve().parent]):  # a link's folder and its target's
        problem = _folder_problem(folder)
        if problem:
            return problem
    return ""


def _warn_ignored(path: Path, reason: str) -> None:
    if (str(path), reason) in _warned:
        return
    _warned.add((str(path), reason))
    warnings.warn(f"ignored the settings file {path}: {reason}, so another user may have written it; none of "
                  "its settings were used. If it is yours, make it yours alone (owned by you, chmod 600) in a "
                  "folder only you may write to.", DotenvWarning, stacklevel=3)


def _read_trusted(path: Path) -> str | None:
    """The text of the .env at ``path``; None when it is absent or ignored (then a warning was given)."""
    problem = ""
    try:
        with open(path, "rb") as handle:
            reason = untrusted_reason(path, os.fstat(handle.fileno()))
            if reason:
                _warn_ignored(path, reason)
                return None
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as error:
        try:  # a file this user may not even open is someone else's: ignored like one it may open
            reason = untrusted_reason(path) if isinstance(error, PermissionError) else ""
        except OSError:
            reason = ""
        if reason:
            _warn_ignored(path, reason)
            return None
        problem = f"cannot be read ({error.strerror or type(error).__name__})"
    if problem:
        raise ConfigError(f"the settings file {path} {problem}")
    try:
        # utf-8-sig: Notepad and other Windows editors may save a BOM, which would hide the first line
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problem = f"is not UTF-8 text (byte {error.start + 1} cannot be read); save it as UTF-8"
    # raised here, outside the except block, so no chained error carries the file's bytes
    raise ConfigError(f"the settings file {path} {problem}")


def find_dotenv_file() -> tuple[Path, str] | None:
    """The .env that counts, and its text: the first of ``dotenv_places()`` that exists and is the user's own."""
    for place in dotenv_places():
        text = _read_trusted(place)
        if text is not None:
            return place, text
    return None


def read_dotenv(path: str | None = None) -> dict[str, str]:
    """The documented settings a .env file sets, non-empty only (``path``, else see ``dotenv_places``)."""
    if path:
        text = _read_trusted(Path(path))
    else:
        found = find_dotenv_file()
        text = found[1] if found else None
    if text is None:
        return {}
    values = dotenv_values(stream=io.StringIO(text))
    return {name: value.strip() for name, value in values.items()
            if name in DOCUMENTED_SETTINGS and value and value.strip()}


def copy_to_environment(dotenv: dict[str, str]) -> dict[str, str]:
    """Copy these settings, keys excepted, into os.environ where not set already; return what was copied."""
    copied = {name: value for name, value in dotenv.items()
              if name not in SECRET_SETTINGS and not os.environ.get(name, "").strip()}
    os.environ.update(copied)
    return copied


def apply_dotenv(path: str | None = None) -> dict[str, str]:
    """Read .env and copy its settings, keys excepted, into os.environ where not set already."""
    return copy_to_environment(read_dotenv(path))


def read_setting(name: str, dotenv: dict[str, str]) -> str:
    """A setting from the environment, else from .env, else empty."""
    return os.environ.get(name, "").strip() or dotenv.get(name, "")

"""The settings a ``.env`` file may hold, read from the one nearest the working directory.

``.env.example`` documents every setting the workshop reads; anything else in a ``.env`` is ignored. A real
environment variable wins over the file. ``copy_to_environment`` copies the file's non-secret settings into
``os.environ`` (only those not set there already) so every module sees them; the API keys stay in the file.
"""
from __future__ import annotations

import os

from dotenv import dotenv_values, find_dotenv

from helpers.errors import ConfigError

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


def read_dotenv(path: str | None = None) -> dict[str, str]:
    """The documented settings a .env file sets, non-empty only (the file is searched upward from the cwd)."""
    path = path or find_dotenv(usecwd=True)
    if not path or not os.path.isfile(path):
        return {}
    problem = ""
    try:
        # utf-8-sig: Notepad and other Windows editors may save a BOM, which would hide the first line
        values = dotenv_values(path, encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        problem = f"is not UTF-8 text (byte {error.start + 1} cannot be read); save it as UTF-8"
    except OSError as error:
        problem = f"cannot be read ({error.strerror or type(error).__name__})"
    if problem:  # raised here, outside the except block, so no chained error carries the file's bytes
        raise ConfigError(f"the settings file {path} {problem}")
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

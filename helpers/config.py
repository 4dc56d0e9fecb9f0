"""Where the workshop talks to: one place decides the backend, endpoint, models and key.

Backends:
- ``nim``: hosted NVIDIA NIM at https://integrate.api.nvidia.com/v1 (needs a key).
- ``openai-compatible``: any OpenAI-compatible server at ``WORKSHOP_BASE_URL``
  (a local NIM container, vLLM, Ollama, a llama.cpp server).
- ``offline``: the in-process stand-in in ``helpers.offline`` (not a model).

Without an explicit ``WORKSHOP_BACKEND``, a key means ``nim`` and no key means
``offline``. The key itself is never printed: ``Settings`` hides it from ``repr``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace

NIM_BASE_URL = "https://integrate.api.nvidia.com/v1"
OFFLINE_BASE_URL = "http://offline.stand-in/v1"
DEFAULT_CHAT_MODEL = "meta/llama-3.3-70b-instruct"
DEFAULT_EMBEDDING_MODEL = "nvidia/nv-embedqa-e5-v5"
OFFLINE_CHAT_MODEL = "offline/stand-in"
OFFLINE_EMBEDDING_MODEL = "local/all-minilm-l6-v2"
OFFLINE_API_KEY = "no-key-needed"  # the stand-in checks no key; the client needs some string
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
KEY_NAME = "NVIDIA_API_KEY"
BACKENDS = ("nim", "openai-compatible", "offline")


class ConfigError(ValueError):
    """A setting is missing or contradictory; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    """Everything a client needs. ``api_key`` is excluded from repr so it never lands in an output."""

    backend: str
    base_url: str
    chat_model: str
    embedding_model: str
    temperature: float = DEFAULT_TEMPERATURE
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    key_source: str = "none"
    api_key: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """One line saying where requests go, without the key."""
        if self.backend == "offline":
            return ("Backend: offline stand-in (NOT a language model: deterministic rules that read only "
                    "the messages sent). Set NVIDIA_API_KEY to use NVIDIA NIM.")
        key = (f"key from {self.key_source}" if self.key_source not in ("none", "placeholder")
               else "no key")
        return f"Backend: {self.backend} at {self.base_url}, model {self.chat_model} ({key})"

    def with_overrides(self, **changes) -> "Settings":
        """A copy with some fields changed (for example another model)."""
        return replace(self, **changes)


# ---------------------------------------------------------------- key lookup

def _key_from_colab() -> str | None:
    """The Colab secret NVIDIA_API_KEY, or None outside Colab / when absent or not shared."""
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import userdata  # type: ignore
    except ImportError:
        return None
    try:
        value = userdata.get(KEY_NAME)
    except Exception as exc:  # SecretNotFoundError, NotebookAccessError, TimeoutException...
        name = type(exc).__name__
        if "NotFound" in name or "Access" in name or "Timeout" in name:
            return None
        raise
    return value or None


def _key_from_dotenv(path: str | None = None) -> str | None:
    """The key from a .env file (searched upward from the working directory), if any."""
    try:
        from dotenv import dotenv_values, find_dotenv
    except ImportError:
        return None
    env_path = path or find_dotenv(usecwd=True)
    if not env_path or not os.path.exists(env_path):
        return None
    return (dotenv_values(env_path).get(KEY_NAME) or "").strip() or None


def is_interactive() -> bool:
    """True only when a person can answer a prompt (never under CI, nbval or a pipe)."""
    if os.environ.get("WORKSHOP_NO_PROMPT") or os.environ.get("CI"):
        return False
    try:
        from IPython import get_ipython  # type: ignore

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        kernel = getattr(shell, "kernel", None)
        return bool(getattr(kernel, "_allow_stdin", False))
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _key_from_prompt() -> str | None:
    """Ask once with getpass; an empty answer or any failure means 'stay offline'."""
    import getpass

    try:
        value = getpass.getpass(f"{KEY_NAME} (press Enter to stay offline): ")
    except Exception:
        return None
    return value.strip() or None


def find_api_key(prompt: bool | None = None) -> tuple[str | None, str]:
    """Return (key, where it came from): environment, Colab secret, .env, then an interactive prompt."""
    value = os.environ.get(KEY_NAME, "").strip()
    if value:
        return value, "environment"
    value = _key_from_colab()
    if value:
        return value, "Colab secret"
    value = _key_from_dotenv()
    if value:
        return value, ".env file"
    if prompt is None:
        prompt = is_interactive()
    if prompt:
        value = _key_from_prompt()
        if value:
            return value, "prompt"
    return None, "none"


# ---------------------------------------------------------------- settings

def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _retries_env() -> int:
    raw = os.environ.get("WORKSHOP_MAX_RETRIES", "").strip()
    if not raw:
        return DEFAULT_MAX_RETRIES
    if not raw.isdigit():
        raise ConfigError(f"WORKSHOP_MAX_RETRIES={raw!r} must be a whole number >= 0")
    return int(raw)


def load_settings(backend: str | None = None, *, prompt: bool | None = None, **overrides) -> Settings:
    """Decide backend, URL, models and key from arguments, then environment, then defaults.

    ``base_url``, ``chat_model`` and ``embedding_model`` may be given as keyword arguments;
    any other keyword replaces that field of the result (e.g. ``timeout=10``).

    An explicit ``backend`` argument or ``WORKSHOP_BACKEND`` always wins over the automatic
    choice (key present -> nim, no key -> offline).
    """
    chosen = (backend or os.environ.get("WORKSHOP_BACKEND", "")).strip().lower() or None
    if chosen is not None and chosen not in BACKENDS:
        raise ConfigError(f"unknown backend {chosen!r}; choose one of {', '.join(BACKENDS)}")

    key, source = (None, "none")
    if chosen != "offline":
        # Only ask a person for a key when the key could actually be used.
        key, source = find_api_key(prompt=prompt if chosen in (None, "nim") else False)
    if chosen is None:
        chosen = "nim" if key else "offline"

    base_url = (overrides.pop("base_url", None) or os.environ.get("WORKSHOP_BASE_URL", "")).strip()
    chat_model = (overrides.pop("chat_model", None) or os.environ.get("WORKSHOP_CHAT_MODEL", "")).strip()
    embedding_model = (overrides.pop("embedding_model", None)
                       or os.environ.get("WORKSHOP_EMBEDDING_MODEL", "")).strip()
    if chosen == "nim":
        if not key:
            raise ConfigError(
                "backend 'nim' needs NVIDIA_API_KEY: set it in the environment, a Colab secret or .env "
                "(get one at build.nvidia.com), or use WORKSHOP_BACKEND=offline"
            )
        base_url = base_url or NIM_BASE_URL
    elif chosen == "openai-compatible":
        if not base_url:
            raise ConfigError(
                "backend 'openai-compatible' needs WORKSHOP_BASE_URL, e.g. http://localhost:8000/v1"
            )
        # The NVIDIA key goes only to NVIDIA's hosts; any other server gets its own key or none.
        from urllib.parse import urlparse

        host = urlparse(base_url).hostname or ""
        if not (host == "nvidia.com" or host.endswith(".nvidia.com")):
            key, source = None, "none"
        for name in ("WORKSHOP_API_KEY", "OPENAI_API_KEY"):
            if not key and os.environ.get(name, "").strip():
                key, source = os.environ[name].strip(), name
        if not key:
            key, source = "not-needed", "placeholder"
    else:  # offline
        base_url, key, source = OFFLINE_BASE_URL, OFFLINE_API_KEY, "none"
        chat_model = chat_model if chat_model.startswith("offline") else OFFLINE_CHAT_MODEL
        embedding_model = OFFLINE_EMBEDDING_MODEL

    settings = Settings(
        backend=chosen,
        base_url=base_url.rstrip("/"),
        chat_model=chat_model or DEFAULT_CHAT_MODEL,
        embedding_model=embedding_model or DEFAULT_EMBEDDING_MODEL,
        temperature=_float_env("WORKSHOP_TEMPERATURE", DEFAULT_TEMPERATURE),
        timeout=_float_env("WORKSHOP_TIMEOUT", DEFAULT_TIMEOUT),
        max_retries=_retries_env(),
        key_source=source,
        api_key=key,
    )
    return replace(settings, **overrides) if overrides else settings

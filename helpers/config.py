"""Where the workshop talks to: one place decides the backend, endpoint, models and key.

Backends:
- ``nim``: hosted NVIDIA NIM at https://integrate.api.nvidia.com/v1 (needs a key).
- ``openai-compatible``: any OpenAI-compatible server at ``WORKSHOP_BASE_URL``
  (a local NIM container, vLLM, Ollama, a llama.cpp server).
- ``offline``: the in-process stand-in in ``helpers.standin.server`` (not a model).

Without an explicit ``WORKSHOP_BACKEND``, a key means ``nim`` and no key means ``offline``.

Where the key comes from: ``NVIDIA_API_KEY`` in the environment, then a Colab secret of that
name, then a ``.env`` file (searched upward from the working directory). Nothing ever prompts
unless you ask: with no key the workshop runs offline, so "Run All" never stops at a question.
To type a key instead, run ``ask_for_key()`` in a cell of its own (or ``load_settings(prompt=True)``).

Where the key may go: the NVIDIA key is sent only over https to ``nvidia.com`` or a subdomain of
it, whatever the backend and whatever ``WORKSHOP_BASE_URL`` says. Backend ``nim`` with any other
address is a ``ConfigError``; an ``openai-compatible`` server elsewhere gets its own key
(``WORKSHOP_API_KEY``, else ``OPENAI_API_KEY``) or a placeholder. ``make_client`` checks this
again just before a client is built. The key itself is never printed.

Every setting documented in ``.env.example`` may also come from ``.env``; a real environment
variable wins over the file. ``load_settings`` copies the file's non-secret settings into
``os.environ`` (only those not set there already) so every module sees them; keys stay in the file.
"""
from __future__ import annotations

import getpass
import math
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import httpx2
from dotenv import dotenv_values, find_dotenv

from helpers.errors import WorkshopError

NIM_BASE_URL = "https://integrate.api.nvidia.com/v1"
OFFLINE_BASE_URL = "http://offline.stand-in/v1"
DEFAULT_CHAT_MODEL = "meta/llama-3.3-70b-instruct"
DEFAULT_EMBEDDING_MODEL = "nvidia/nv-embedqa-e5-v5"
OFFLINE_CHAT_MODEL = "offline/stand-in"
OFFLINE_EMBEDDING_MODEL = "local/all-minilm-l6-v2"
OFFLINE_API_KEY = "no-key-needed"  # the stand-in checks no key; the client needs some string
PLACEHOLDER_KEY = "not-needed"     # sent to an openai-compatible server that was given no key
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
MAX_TEMPERATURE = 2.0
MAX_RETRIES_LIMIT = 10
KEY_NAME = "NVIDIA_API_KEY"
OTHER_KEY_NAMES = ("WORKSHOP_API_KEY", "OPENAI_API_KEY")  # an openai-compatible server's own key
BACKENDS = ("nim", "openai-compatible", "offline")
NVIDIA_KEY_SOURCES = ("environment", "Colab secret", ".env file", "prompt")
NVIDIA_KEY_PREFIX = "nvapi-"  # every key from build.nvidia.com starts with it

# Every setting .env.example documents (a test keeps the two lists equal).
DOCUMENTED_SETTINGS = (
    KEY_NAME, "WORKSHOP_BACKEND", "WORKSHOP_BASE_URL", *OTHER_KEY_NAMES, "WORKSHOP_CHAT_MODEL",
    "WORKSHOP_EMBEDDING_MODEL", "WORKSHOP_TEMPERATURE", "WORKSHOP_TIMEOUT", "WORKSHOP_MAX_RETRIES",
    "WORKSHOP_NOW", "WORKSHOP_SERVER_PROFILE", "WORKSHOP_SUMMARY_MODEL", "WORKSHOP_SESSION_DB",
    "WORKSHOP_NO_PROMPT", "WORKSHOP_CACHE_DIR", "WORKSHOP_USER",
)
SECRET_SETTINGS = (KEY_NAME, *OTHER_KEY_NAMES)  # read from .env, never copied into os.environ

_NVIDIA_HOST = re.compile(r"(?:[a-z0-9-]+\.)*nvidia\.com")


class ConfigError(WorkshopError, ValueError):
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

    def __post_init__(self):
        _check_range("WORKSHOP_TEMPERATURE", "temperature", self.temperature, 0.0, MAX_TEMPERATURE)
        _check_range("WORKSHOP_TIMEOUT", "timeout", self.timeout, 0.0, math.inf, above=True)
        if (isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int)
                or not 0 <= self.max_retries <= MAX_RETRIES_LIMIT):
            raise ConfigError(f"WORKSHOP_MAX_RETRIES (max_retries) must be a whole number from 0 to "
                              f"{MAX_RETRIES_LIMIT}; got {self.max_retries!r}")
        if self.api_key is not None:
            name = self.key_name or "the API key"
            if check_key_format(self.api_key, name) != self.api_key:
                raise ConfigError(f"{name} has spaces or line breaks around it; remove them")

    @property
    def key_name(self) -> str | None:
        """The variable the key came from (NVIDIA_API_KEY, WORKSHOP_API_KEY, OPENAI_API_KEY), or None."""
        if self.key_source in NVIDIA_KEY_SOURCES:
            return KEY_NAME
        return self.key_source if self.key_source in OTHER_KEY_NAMES else None

    def describe(self) -> str:
        """One line saying where requests go, without the key."""
        if self.backend == "offline":
            return ("Backend: offline stand-in (NOT a language model: deterministic rules that read only "
                    "the messages sent). Set NVIDIA_API_KEY to use NVIDIA NIM.")
        if self.key_name == KEY_NAME:
            key = f"{KEY_NAME} from {self.key_source}"
        elif self.key_name:
            key = f"key from {self.key_name}"
        else:
            key = "no key"
        return f"Backend: {self.backend} at {safe_url(self.base_url)}, model {self.chat_model} ({key})"

    def with_overrides(self, **changes) -> "Settings":
        """A copy with some fields changed (for example another model)."""
        return replace(self, **changes)


def _check_range(name: str, keyword: str, value, low: float, high: float, *, above: bool = False) -> None:
    """ConfigError naming the setting unless ``value`` is a finite number in range."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if above else value >= low) and value <= high
    if not ok:
        allowed = f"above {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
        raise ConfigError(f"{name} ({keyword}) must be a finite number {allowed}; got {value!r}")


# ---------------------------------------------------------------- where a key may go

def safe_url(url: str) -> str:
    """``url`` fit to print: no user name, password, query or fragment."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return "(an address that cannot be read)"
    netloc = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc + parts.path


def nvidia_url_problem(url: str) -> str:
    """Why the NVIDIA key may not go to ``url`` (empty when it may: https to nvidia.com or a subdomain)."""
    if not url:
        return "no address was given"
    if not url.isascii() or any(not char.isprintable() or char.isspace() or char == "\\" for char in url):
        return "the address holds spaces, backslashes or non-ASCII characters"
    try:
        parts, sent = urlsplit(url), httpx2.URL(url)  # httpx2 parses the address the client will use
        port = parts.port
    except (ValueError, httpx2.InvalidURL):
        return "the address cannot be read"
    if parts.scheme != "https" or sent.scheme != "https":
        return "it is not https"
    if "@" in parts.netloc or sent.userinfo:
        return "the address holds a user name"
    host = parts.hostname or ""
    if not _NVIDIA_HOST.fullmatch(host) or sent.host != host:
        return "the host is not nvidia.com or a subdomain of it"
    if port not in (None, 443):
        return f"it uses port {port} instead of https's 443"
    return ""


def is_nvidia_url(url: str) -> bool:
    """True only for an https address on nvidia.com or a subdomain (default port, no user name)."""
    return not nvidia_url_problem(url)


def is_nvidia_key(settings: Settings) -> bool:
    """True when ``settings.api_key`` is (or looks like) the NVIDIA key."""
    key = settings.api_key
    if not key:
        return False
    return (settings.key_source in NVIDIA_KEY_SOURCES or key.startswith(NVIDIA_KEY_PREFIX)
            or key == os.environ.get(KEY_NAME, "").strip() or key == _typed_key)


def check_key_destination(settings: Settings) -> None:
    """ConfigError unless the NVIDIA key, if these settings carry it, goes only to an NVIDIA https host."""
    if settings.backend == "offline" or not is_nvidia_key(settings):
        return
    problem = nvidia_url_problem(settings.base_url)
    if problem:
        raise ConfigError(
            f"{KEY_NAME} is only ever sent over https to nvidia.com or its subdomains, and these settings "
            f"would send it to {safe_url(settings.base_url)} ({problem}). For hosted NIM leave "
            "WORKSHOP_BASE_URL empty; for another server use WORKSHOP_BACKEND=openai-compatible, with "
            "WORKSHOP_API_KEY set to that server's own key if it needs one."
        )


# ---------------------------------------------------------------- key format

def _describe_char(char: str) -> str:
    if char in "\r\n":
        return "a line break"
    if char in " \t":
        return "a space or tab"
    if char.isascii():
        return "a control character"
    invisible = unicodedata.category(char) in ("Cf", "Zs", "Zl", "Zp")
    return f"the {'invisible ' if invisible else ''}non-ASCII character U+{ord(char):04X}"


def check_key_format(value: str, name: str) -> str:
    """``value`` stripped; a ConfigError that never shows the key if it cannot be an API key."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be text; got {type(value).__name__}")
    key = value.strip()
    for position, char in enumerate(key, 1):
        if not "!" <= char <= "~":
            raise ConfigError(
                f"{name} cannot be an API key: character {position} of {len(key)} is {_describe_char(char)}. "
                "A key is one line of visible ASCII characters; copy it again and paste it with nothing "
                "around it. (The key is not shown here.)"
            )
    return key


# ---------------------------------------------------------------- .env

def read_dotenv(path: str | None = None) -> dict[str, str]:
    """The documented settings a .env file sets, non-empty only (the file is searched upward from the cwd)."""
    path = path or find_dotenv(usecwd=True)
    if not path or not os.path.isfile(path):
        return {}
    problem = ""
    try:
        values = dotenv_values(path, encoding="utf-8")
    except UnicodeDecodeError as error:
        problem = f"is not UTF-8 text (byte {error.start + 1} cannot be read); save it as UTF-8"
    except OSError as error:
        problem = f"cannot be read ({error.strerror or type(error).__name__})"
    if problem:  # raised here, outside the except block, so no chained error carries the file's bytes
        raise ConfigError(f"the settings file {path} {problem}")
    return {name: value.strip() for name, value in values.items()
            if name in DOCUMENTED_SETTINGS and value and value.strip()}


def apply_dotenv(path: str | None = None) -> dict[str, str]:
    """Copy .env's non-secret settings into os.environ where not set already; return what was copied."""
    return _export(read_dotenv(path))


def _export(dotenv: dict[str, str]) -> dict[str, str]:
    copied = {name: value for name, value in dotenv.items()
              if name not in SECRET_SETTINGS and not os.environ.get(name, "").strip()}
    os.environ.update(copied)
    return copied


def _setting(name: str, dotenv: dict[str, str]) -> str:
    """A setting from the environment, else from .env, else empty."""
    return os.environ.get(name, "").strip() or dotenv.get(name, "")


# ---------------------------------------------------------------- key lookup

_typed_key: str | None = None  # a key typed into ask_for_key() in this process


def _key_from_colab() -> str | None:
    """The Colab secret NVIDIA_API_KEY, or None outside Colab / when absent or not shared."""
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import userdata  # type: ignore  (exists only inside Colab)
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
    return read_dotenv(path).get(KEY_NAME)


def is_interactive() -> bool:
    """True only when a person can answer a prompt (never under CI, nbval or a pipe)."""
    if os.environ.get("WORKSHOP_NO_PROMPT") or os.environ.get("CI"):
        return False
    try:
        from IPython import get_ipython  # type: ignore  (only present where a notebook kernel may run)

        shell = get_ipython()
    except ImportError:
        shell = None
    kernel = getattr(shell, "kernel", None)  # Jupyter, JupyterLab, Colab: a kernel that may allow input
    if kernel is not None:
        return bool(getattr(kernel, "_allow_stdin", False))
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _key_from_prompt() -> str | None:
    """Ask once with getpass; an empty answer or any failure means 'stay offline'."""
    try:
        value = getpass.getpass(f"{KEY_NAME} (input hidden; press Enter to stay offline): ")
    except Exception:
        return None
    return value.strip() or None


def find_api_key(prompt: bool = False) -> tuple[str | None, str]:
    """Return (key, where it came from): a key typed earlier, environment, Colab secret, .env, then a prompt.

    The prompt happens only with ``prompt=True``. A key that cannot be one (a line break, a space,
    a non-ASCII or invisible character inside) is a ConfigError that names the source, not the key.
    """
    sources = (("prompt", lambda: _typed_key), ("environment", lambda: os.environ.get(KEY_NAME)),
               ("Colab secret", _key_from_colab), (".env file", _key_from_dotenv))
    for source, lookup in sources:
        value = lookup()
        if value and value.strip():
            return check_key_format(value, f"{KEY_NAME} (from {source})"), source
    if prompt:
        value = _key_from_prompt()
        if value:
            return check_key_format(value, f"{KEY_NAME} (typed)"), "prompt"
    return None, "none"


def ask_for_key() -> None:
    """Ask for NVIDIA_API_KEY once (input hidden) and use it from now on; run it in a cell of its own."""
    global _typed_key
    if not is_interactive():
        print("Not asking for a key here: no one can answer (CI, WORKSHOP_NO_PROMPT, or no input). "
              f"Set {KEY_NAME} in the environment, a Colab secret or .env instead.")
        return
    value = _key_from_prompt()
    if not value:
        print("No key typed: staying offline.")
        return
    _typed_key = check_key_format(value, f"{KEY_NAME} (typed)")
    shared = sys.modules.get("helpers.client")  # forget a client made before the key was known
    if shared is not None:
        shared.reset_default()
    print(load_settings().describe())


# ---------------------------------------------------------------- settings

def _float_setting(name: str, default: float, dotenv: dict[str, str]) -> float:
    raw = _setting(name, dotenv)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _retries_setting(dotenv: dict[str, str]) -> int:
    raw = _setting("WORKSHOP_MAX_RETRIES", dotenv)
    if not raw:
        return DEFAULT_MAX_RETRIES
    if not raw.isdigit():
        raise ConfigError(f"WORKSHOP_MAX_RETRIES={raw!r} must be a whole number from 0 to "
                          f"{MAX_RETRIES_LIMIT}")
    return int(raw)


def _other_key(dotenv: dict[str, str]) -> tuple[str, str] | None:
    """An openai-compatible server's own key: (key, its variable's name), or None."""
    for name in OTHER_KEY_NAMES:
        value = _setting(name, dotenv)
        if value:
            return check_key_format(value, name), name
    return None


def load_settings(backend: str | None = None, *, prompt: bool = False, **overrides) -> Settings:
    """Decide backend, URL, models and key from arguments, then environment, then .env, then defaults.

    ``base_url``, ``chat_model`` and ``embedding_model`` may be given as keyword arguments;
    any other keyword replaces that field of the result (e.g. ``timeout=10``).

    An explicit ``backend`` argument or ``WORKSHOP_BACKEND`` always wins over the automatic
    choice (key present -> nim, no key -> offline). ``prompt=True`` asks for a key when none is found.
    """
    dotenv = read_dotenv()
    _export(dotenv)
    chosen = (backend or _setting("WORKSHOP_BACKEND", dotenv)).strip().lower() or None
    if chosen is not None and chosen not in BACKENDS:
        raise ConfigError(f"unknown backend {chosen!r}; choose one of {', '.join(BACKENDS)}")
    automatic = chosen is None

    key, source = (None, "none")
    if chosen != "offline":
        # Only ask a person for a key when the key could actually be used.
        key, source = find_api_key(prompt=prompt and chosen in (None, "nim"))
    if chosen is None:
        chosen = "nim" if key else "offline"

    base_url = (overrides.pop("base_url", None) or _setting("WORKSHOP_BASE_URL", dotenv)).strip()
    chat_model = (overrides.pop("chat_model", None) or _setting("WORKSHOP_CHAT_MODEL", dotenv)).strip()
    embedding_model = (overrides.pop("embedding_model", None)
                       or _setting("WORKSHOP_EMBEDDING_MODEL", dotenv)).strip()
    if chosen == "nim":
        if not key:
            raise ConfigError(
                "backend 'nim' needs NVIDIA_API_KEY: set it in the environment, a Colab secret or .env "
                "(get one at build.nvidia.com), or use WORKSHOP_BACKEND=offline"
            )
        base_url = base_url or NIM_BASE_URL
        problem = nvidia_url_problem(base_url)
        if problem:
            why = " (chosen because NVIDIA_API_KEY is set)" if automatic else ""
            raise ConfigError(
                f"backend 'nim'{why} sends NVIDIA_API_KEY, which only ever goes over https to nvidia.com "
                f"or its subdomains, but the base URL is {safe_url(base_url)} ({problem}). For hosted NIM "
                "leave WORKSHOP_BASE_URL empty; for another server set WORKSHOP_BACKEND=openai-compatible, "
                "with WORKSHOP_API_KEY set to that server's own key if it needs one."
            )
    elif chosen == "openai-compatible":
        if not base_url:
            raise ConfigError(
                "backend 'openai-compatible' needs WORKSHOP_BASE_URL, e.g. http://localhost:8000/v1"
            )
        if not is_nvidia_url(base_url):  # the NVIDIA key goes to NVIDIA's hosts only
            key, source = None, "none"
        own = None if key else _other_key(dotenv)
        if own:
            key, source = own
        elif not key:
            key, source = PLACEHOLDER_KEY, "placeholder"
    else:  # offline
        base_url, key, source = OFFLINE_BASE_URL, OFFLINE_API_KEY, "none"
        chat_model = chat_model if chat_model.startswith("offline") else OFFLINE_CHAT_MODEL
        embedding_model = OFFLINE_EMBEDDING_MODEL

    fields = dict(
        backend=chosen,
        base_url=base_url.rstrip("/"),
        chat_model=chat_model or DEFAULT_CHAT_MODEL,
        embedding_model=embedding_model or DEFAULT_EMBEDDING_MODEL,
        key_source=source,
        api_key=key,
    )
    if "temperature" not in overrides:
        fields["temperature"] = _float_setting("WORKSHOP_TEMPERATURE", DEFAULT_TEMPERATURE, dotenv)
    if "timeout" not in overrides:
        fields["timeout"] = _float_setting("WORKSHOP_TIMEOUT", DEFAULT_TIMEOUT, dotenv)
    if "max_retries" not in overrides:
        fields["max_retries"] = _retries_setting(dotenv)
    settings = Settings(**{**fields, **overrides})  # a keyword wins over its environment variable
    check_key_destination(settings)
    return settings

"""Where the workshop talks to: one place decides the backend, endpoint, models and key.

Backends:
- ``nim``: hosted NVIDIA NIM at https://integrate.api.nvidia.com/v1 (needs a key).
- ``openai-compatible``: any OpenAI-compatible server at ``WORKSHOP_BASE_URL``
  (a local NIM container, vLLM, Ollama, a llama.cpp server).
- ``offline``: the in-process stand-in in ``helpers.standin.server`` (not a model).

Without an explicit ``WORKSHOP_BACKEND``, a key means ``nim`` and no key means ``offline``.

The NVIDIA key is looked up, checked and kept to NVIDIA's hosts by ``helpers.llm.api_key``: from the
environment, then a Colab secret, then a ``.env`` file. Nothing ever prompts unless you ask: with no key
the workshop runs offline, so "Run All" never stops at a question. To type a key instead, run
``ask_for_key()`` in a cell of its own (or ``load_settings(prompt=True)``). Backend ``nim`` with an address
that is not https on nvidia.com is a ``ConfigError``; an ``openai-compatible`` server elsewhere gets its own
key (``WORKSHOP_API_KEY``, else ``OPENAI_API_KEY``) or a placeholder. The key itself is never printed.

Every setting documented in ``.env.example`` may also come from ``.env`` (``helpers.llm.dotenv_file``: the
working directory's or the project root's, and only the user's own file); a real environment variable wins
over the file. ``load_settings`` copies the file's non-secret settings into
``os.environ`` (only those not set there already) so every module sees them; keys stay in the file.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field, replace

from helpers.llm.api_key import (KEY_NAME, NVIDIA_KEY_SOURCES, check_key_destination, check_key_format,
                             find_api_key, is_nvidia_url, nvidia_url_problem, prompt_for_key,
                             remember_typed_key, safe_url)
from helpers.llm.dotenv_file import copy_to_environment, read_dotenv, read_setting
from helpers.core.errors import ConfigError

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
OTHER_KEY_NAMES = ("WORKSHOP_API_KEY", "OPENAI_API_KEY")  # an openai-compatible server's own key
BACKENDS = ("nim", "openai-compatible", "offline")
# Where texts are embedded (WORKSHOP_EMBEDDINGS): MiniLM on this machine, hosted NIM, or the chat server's
# own /v1/embeddings. Default: nim for nim, local for an openai-compatible server (local chat servers rarely
# serve an embedding model) unless WORKSHOP_EMBEDDING_MODEL names one, server for offline (the stand-in).
EMBEDDINGS = ("local", "nim", "server")
LOCAL_EMBEDDING_MODEL = OFFLINE_EMBEDDING_MODEL  # helpers.retrieval.embeddings.LOCAL_MODEL_NAME


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
    server_profile: str = ""  # WORKSHOP_SERVER_PROFILE: an openai-compatible server's quirks (helpers.llm.compat)
    embeddings: str = ""  # WORKSHOP_EMBEDDINGS: local | nim | server ("" picks the backend's default)
    summary_model: str = ""  # WORKSHOP_SUMMARY_MODEL: the summariser's model ("": the chat model; helpers.memory)

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
        self._settle_embeddings()

    def _settle_embeddings(self) -> None:
        """Fill in the embedding backend's default and keep ``embedding_model`` consistent with it."""
        chosen = str(self.embeddings or default_embeddings(self.backend, self.embedding_model)).strip().lower()
        if chosen not in EMBEDDINGS:
            raise ConfigError(f"WORKSHOP_EMBEDDINGS (embeddings) must be one of {', '.join(EMBEDDINGS)}; "
                              f"got {self.embeddings!r}")
        if chosen == "nim" and self.backend == "offline":
            raise ConfigError("WORKSHOP_EMBEDDINGS=nim cannot be used with the offline backend; "
                              "use local or server (the stand-in), or backend nim / openai-compatible")
        model = self.embedding_model
        if chosen == "local":
            model = LOCAL_EMBEDDING_MODEL
        elif model == LOCAL_EMBEDDING_MODEL and self.backend != "offline":
            model = DEFAULT_EMBEDDING_MODEL  # MiniLM runs only on this machine (or in the stand-in)
        object.__setattr__(self, "embeddings", chosen)
        object.__setattr__(self, "embedding_model", model)

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
        where = {"local": "; embeddings on this machine (local MiniLM)",
                 "nim": "; embeddings from hosted NIM" if self.backend != "nim" else ""}.get(self.embeddings, "")
        return f"Backend: {self.backend} at {safe_url(self.base_url)}, model {self.chat_model} ({key}){where}"

    def with_overrides(self, **changes) -> "Settings":
        """A copy with some fields changed (for example another model)."""
        return replace(self, **changes)


def default_embeddings(backend: str, embedding_model: str = "") -> str:
    """The embedding backend used when WORKSHOP_EMBEDDINGS is not set (see EMBEDDINGS)."""
    if backend == "nim":
        return "nim"
    if backend == "openai-compatible":
        return "server" if embedding_model and embedding_model != LOCAL_EMBEDDING_MODEL else "local"
    return "server"


def _check_range(name: str, keyword: str, value, low: float, high: float, *, above: bool = False) -> None:
    """ConfigError naming the setting unless ``value`` is a finite number in range."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if above else value >= low) and value <= high
    if not ok:
        allowed = f"above {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
        raise ConfigError(f"{name} ({keyword}) must be a finite number {allowed}; got {value!r}")


# ---------------------------------------------------------------- typing a key

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


def ask_for_key() -> None:
    """Ask for NVIDIA_API_KEY once (input hidden) and use it from now on; run it in a cell of its own."""
    if not is_interactive():
        print("Not asking for a key here: no one can answer (CI, WORKSHOP_NO_PROMPT, or no input). "
              f"Set {KEY_NAME} in the environment, a Colab secret or .env instead.")
        return
    value = prompt_for_key()
    if not value:
        print("No key typed: staying offline.")
        return
    remember_typed_key(value)
    shared = sys.modules.get("helpers.llm.client")  # forget a client made before the key was known
    if shared is not None:
        shared.reset_default()
    print(load_settings().describe())


# ---------------------------------------------------------------- settings

def _float_setting(name: str, default: float, dotenv: dict[str, str]) -> float:
    raw = read_setting(name, dotenv)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _retries_setting(dotenv: dict[str, str]) -> int:
    raw = read_setting("WORKSHOP_MAX_RETRIES", dotenv)
    if not raw:
        return DEFAULT_MAX_RETRIES
    if not raw.isdigit():
        raise ConfigError(f"WORKSHOP_MAX_RETRIES={raw!r} must be a whole number from 0 to "
                          f"{MAX_RETRIES_LIMIT}")
    return int(raw)


def _other_key(dotenv: dict[str, str]) -> tuple[str, str] | None:
    """An openai-compatible server's own key: (key, its variable's name), or None."""
    for name in OTHER_KEY_NAMES:
        value = read_setting(name, dotenv)
        if value:
            return check_key_format(value, name), name
    return None


@dataclass
class _Draft:
    """The settings ``load_settings`` is deciding: what was asked for, then what each backend's rule makes of it."""

    backend: str
    automatic: bool          # no backend was named: a key chose nim, no key offline
    key: str | None
    source: str              # where the key came from (``key_source``)
    base_url: str
    chat_model: str
    embedding_model: str
    embeddings: str
    explicit_embeddings: object  # the ``embeddings=`` argument, if any (offline keeps it as given)
    server_profile: str
    nvidia_key: str | None   # the NVIDIA key, for WORKSHOP_EMBEDDINGS=nim


def _chosen_backend(backend: str | None, dotenv: dict[str, str]) -> str | None:
    """The backend named by the argument or WORKSHOP_BACKEND, or None for the automatic choice."""
    chosen = (backend or read_setting("WORKSHOP_BACKEND", dotenv)).strip().lower() or None
    if chosen is not None and chosen not in BACKENDS:
        raise ConfigError(f"unknown backend {chosen!r}; choose one of {', '.join(BACKENDS)}")
    return chosen


def _draft(chosen: str | None, prompt: bool, overrides: dict, dotenv: dict[str, str]) -> _Draft:
    """The key (looked up unless offline is named; asked for only when it could be used), the backend it
    decides when none is named, and the URL, models, embeddings and profile asked for (a keyword argument,
    popped from ``overrides``, else the environment or .env)."""
    key, source = (None, "none")
    if chosen != "offline":
        key, source = find_api_key(prompt=prompt and chosen in (None, "nim"))
    explicit_embeddings = overrides.pop("embeddings", None)
    return _Draft(
        backend=chosen or ("nim" if key else "offline"),
        automatic=chosen is None,
        key=key,
        source=source,
        base_url=(overrides.pop("base_url", None) or read_setting("WORKSHOP_BASE_URL", dotenv)).strip(),
        chat_model=(overrides.pop("chat_model", None) or read_setting("WORKSHOP_CHAT_MODEL", dotenv)).strip(),
        embedding_model=(overrides.pop("embedding_model", None)
                         or read_setting("WORKSHOP_EMBEDDING_MODEL", dotenv)).strip(),
        embeddings=str(explicit_embeddings or read_setting("WORKSHOP_EMBEDDINGS", dotenv)).strip().lower(),
        explicit_embeddings=explicit_embeddings,
        server_profile=str(overrides.pop("server_profile", None)
                           or read_setting("WORKSHOP_SERVER_PROFILE", dotenv)).strip(),
        nvidia_key=key if source in NVIDIA_KEY_SOURCES else None,
    )


def _nim_backend(draft: _Draft, dotenv: dict[str, str]) -> None:
    """nim: needs the NVIDIA key, and sends it only over https to nvidia.com (hosted NIM by default)."""
    if not draft.key:
        raise ConfigError(
            "backend 'nim' needs NVIDIA_API_KEY: set it in the environment, a Colab secret or .env "
            "(get one at build.nvidia.com), or use WORKSHOP_BACKEND=offline"
        )
    draft.base_url = draft.base_url or NIM_BASE_URL
    problem = nvidia_url_problem(draft.base_url)
    if problem:
        why = " (chosen because NVIDIA_API_KEY is set)" if draft.automatic else ""
        raise ConfigError(
            f"backend 'nim'{why} sends NVIDIA_API_KEY, which only ever goes over https to nvidia.com "
            f"or its subdomains, but the base URL is {safe_url(draft.base_url)} ({problem}). For hosted NIM "
            "leave WORKSHOP_BASE_URL empty; for another server set WORKSHOP_BACKEND=openai-compatible, "
            "with WORKSHOP_API_KEY set to that server's own key if it needs one."
        )


def _openai_compatible_backend(draft: _Draft, dotenv: dict[str, str]) -> None:
    """openai-compatible: needs WORKSHOP_BASE_URL; the NVIDIA key goes to NVIDIA's hosts only, another server
    gets its own key (WORKSHOP_API_KEY, else OPENAI_API_KEY) or a placeholder; a server profile is checked."""
    if not draft.base_url:
        raise ConfigError(
            "backend 'openai-compatible' needs WORKSHOP_BASE_URL, e.g. http://localhost:8000/v1"
        )
    if not is_nvidia_url(draft.base_url):
        draft.key, draft.source = None, "none"
    own = None if draft.key else _other_key(dotenv)
    if own:
        draft.key, draft.source = own
    elif not draft.key:
        draft.key, draft.source = PLACEHOLDER_KEY, "placeholder"
    if draft.server_profile:
        from helpers.llm.compat import get_profile  # imported here: compat is not needed to load settings
        from helpers.llm.message_format import CompatError

        try:
            draft.server_profile = get_profile(draft.server_profile).name
        except CompatError as err:
            raise ConfigError(f"WORKSHOP_SERVER_PROFILE: {err}") from None


def _offline_backend(draft: _Draft, dotenv: dict[str, str]) -> None:
    """offline: the in-process stand-in's address, key and models (an ``offline...`` chat model is kept); it
    embeds with MiniLM, so only ``local`` (or an explicit ``embeddings=``) is kept."""
    draft.base_url, draft.key, draft.source = OFFLINE_BASE_URL, OFFLINE_API_KEY, "none"
    draft.chat_model = draft.chat_model if draft.chat_model.startswith("offline") else OFFLINE_CHAT_MODEL
    draft.embedding_model = OFFLINE_EMBEDDING_MODEL
    if not draft.explicit_embeddings and draft.embeddings != "local":
        draft.embeddings = ""


_BACKEND_RULES = {"nim": _nim_backend, "openai-compatible": _openai_compatible_backend,
                  "offline": _offline_backend}


def _check_embeddings(draft: _Draft) -> None:
    """WORKSHOP_EMBEDDINGS against the embedding model and key, then its default for the backend."""
    if draft.embeddings == "local" and draft.embedding_model and draft.embedding_model != LOCAL_EMBEDDING_MODEL:
        raise ConfigError(f"WORKSHOP_EMBEDDINGS=local embeds with {LOCAL_EMBEDDING_MODEL} on this machine, but "
                          f"WORKSHOP_EMBEDDING_MODEL is {draft.embedding_model!r}; clear one of the two")
    if draft.embeddings == "nim" and draft.backend == "openai-compatible" and not draft.nvidia_key:
        raise ConfigError("WORKSHOP_EMBEDDINGS=nim embeds with hosted NIM and needs NVIDIA_API_KEY; set it, "
                          "or use WORKSHOP_EMBEDDINGS=local (MiniLM on this machine)")
    draft.embeddings = draft.embeddings or default_embeddings(draft.backend, draft.embedding_model)


def _fields(draft: _Draft, overrides: dict, dotenv: dict[str, str]) -> dict:
    """The Settings fields: the draft's, with defaults, and the numbers not given as keywords."""
    fields = dict(
        backend=draft.backend,
        base_url=draft.base_url.rstrip("/"),
        chat_model=draft.chat_model or DEFAULT_CHAT_MODEL,
        embedding_model=draft.embedding_model or DEFAULT_EMBEDDING_MODEL,
        key_source=draft.source,
        api_key=draft.key,
        server_profile=draft.server_profile,
        embeddings=draft.embeddings,
        summary_model=read_setting("WORKSHOP_SUMMARY_MODEL", dotenv),
    )
    if "temperature" not in overrides:
        fields["temperature"] = _float_setting("WORKSHOP_TEMPERATURE", DEFAULT_TEMPERATURE, dotenv)
    if "timeout" not in overrides:
        fields["timeout"] = _float_setting("WORKSHOP_TIMEOUT", DEFAULT_TIMEOUT, dotenv)
    if "max_retries" not in overrides:
        fields["max_retries"] = _retries_setting(dotenv)
    return fields


def load_settings(backend: str | None = None, *, prompt: bool = False, **overrides) -> Settings:
    """Decide backend, URL, models and key from arguments, then environment, then .env, then defaults.

    ``base_url``, ``chat_model`` and ``embedding_model`` may be given as keyword arguments;
    any other keyword replaces that field of the result (e.g. ``timeout=10``).

    An explicit ``backend`` argument or ``WORKSHOP_BACKEND`` always wins over the automatic
    choice (key present -> nim, no key -> offline). ``prompt=True`` asks for a key when none is found.
    Each backend's own rule is ``_nim_backend``, ``_openai_compatible_backend`` or ``_offline_backend``.
    """
    dotenv = read_dotenv()
    copy_to_environment(dotenv)
    draft = _draft(_chosen_backend(backend, dotenv), prompt, overrides, dotenv)
    _BACKEND_RULES[draft.backend](draft, dotenv)
    if draft.backend != "openai-compatible":
        draft.server_profile = ""  # a profile describes an openai-compatible server; nim and offline are their own
    _check_embeddings(draft)
    settings = Settings(**{**_fields(draft, overrides, dotenv), **overrides})  # a keyword wins over its variable
    check_key_destination(settings)
    return settings

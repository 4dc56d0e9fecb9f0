"""The NVIDIA API key: where it is found, what it may look like, and where it may be sent.

Where it comes from (``find_api_key``): a key typed into ``helpers.llm.config.ask_for_key()`` earlier in this
process, then ``NVIDIA_API_KEY`` in the environment, then a Colab secret of that name, then a ``.env`` file
(the user's own, in the working directory or the project root: ``helpers.llm.dotenv_file``). Nothing prompts unless asked (``prompt=True``).

What it may look like (``check_key_format``): one line of visible ASCII characters. Anything else is a
``ConfigError`` naming the variable, its source and the character's position, never the key.

Where it may go (``check_key_destination``): the key is sent only over https to ``nvidia.com`` or a
subdomain of it, on the default port, with no user name in the address, whatever the backend and whatever
``WORKSHOP_BASE_URL`` says. ``load_settings`` refuses settings that break this rule, and ``make_client``
checks again just before a client is built. The key itself is never printed.
"""
from __future__ import annotations

import getpass
import os
import re
import sys
import unicodedata
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx2

from helpers.llm.dotenv_file import read_dotenv
from helpers.core.errors import ConfigError

KEY_NAME = "NVIDIA_API_KEY"
NVIDIA_KEY_SOURCES = ("environment", "Colab secret", ".env file", "prompt")
NVIDIA_KEY_PREFIX = "nvapi-"  # every key from build.nvidia.com starts with it

_NVIDIA_HOST = re.compile(r"(?:[a-z0-9-]+\.)*nvidia\.com")
_typed_key: str | None = None  # a key typed into ask_for_key() in this process


# ---------------------------------------------------------------- where a key may go

_URL_PREFIX = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?[/\\]{2,}")  # scheme:// or a bare //


def safe_url(url: str) -> str:
    """``url`` fit to print: no user name, password, query, fragment or ``;parameters``.

    Read as leniently as a browser reads it, not only as ``urlsplit`` does: everything before the last
    ``@`` of the address part is a user name and password, also without ``//`` (``alice:pw@host/v1``) or
    with extra slashes. Characters that are not printable are shown escaped (``\\x1b``).
    """
    text = re.split(r"[?#]", str(url), maxsplit=1)[0]
    prefix = _URL_PREFIX.match(text)
    start = prefix.group(0).lower() if prefix else ""
    address, *rest = re.split(r"([/\\])", text[len(start):], maxsplit=1)
    path = re.sub(r";[^/\\]*", "", "".join(rest))  # ;jsessionid=... and the like
    return printable(start + address.rpartition("@")[2] + path)


def printable(text: str) -> str:
    """``text`` with every character that is not printable escaped as Python writes it (``\\x1b``)."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in str(text))


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be credentials: the user name and password, the query's values."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return []
    found = [parts.password or "", parts.username or ""]  # a token may be given as the user name alone
    found += [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]
    found += [unquote(secret) for secret in found]  # as written in the URL, and as a server may echo it
    return [secret for secret in dict.fromkeys(found) if len(secret) >= 4]


def hide_secret(text: str, *secrets) -> str:
    """``text`` with each secret (a key, a password...) replaced by ***, in case a server echoes it back.

    Each of ``secrets`` is a string or a list of strings; None and strings shorter than 4 characters
    (which would blank out ordinary words) are skipped.
    """
    flat = []
    for secret in secrets:
        flat += secret if isinstance(secret, (list, tuple, set)) else [secret]
    for secret in sorted({s for s in flat if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


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


def is_nvidia_key(settings: Any) -> bool:
    """True when ``settings.api_key`` (a ``helpers.llm.config.Settings``) is, or looks like, the NVIDIA key."""
    key = settings.api_key
    if not key:
        return False
    return (settings.key_source in NVIDIA_KEY_SOURCES or key.startswith(NVIDIA_KEY_PREFIX)
            or key == os.environ.get(KEY_NAME, "").strip() or key == _typed_key)


def check_key_destination(settings: Any) -> None:
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


# ---------------------------------------------------------------- what a key may look like

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


# ---------------------------------------------------------------- where the key comes from

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
    """The key from the user's own .env file (working directory, else project root; ``helpers.llm.dotenv_file``)."""
    return read_dotenv(path).get(KEY_NAME)


def prompt_for_key() -> str | None:
    """Ask once with getpass; an empty answer or any failure means 'stay offline'."""
    try:
        value = getpass.getpass(f"{KEY_NAME} (input hidden; press Enter to stay offline): ")
    except Exception:  # no terminal, a closed stdin, a kernel without input: no key, so the workshop stays offline
        return None
    return value.strip() or None


def remember_typed_key(value: str) -> None:
    """Check a key a person typed and use it as NVIDIA_API_KEY from now on, in this process."""
    global _typed_key
    _typed_key = check_key_format(value, f"{KEY_NAME} (typed)")


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
        value = prompt_for_key()
        if value:
            return check_key_format(value, f"{KEY_NAME} (typed)"), "prompt"
    return None, "none"

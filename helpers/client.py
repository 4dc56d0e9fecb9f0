"""One client for every notebook: hosted NIM, any OpenAI-compatible server, or the offline stand-in.

``get_client()`` returns a real ``openai.OpenAI`` client with explicit timeouts and
retries. ``chat()`` is the one call path the lessons use: it normalises outgoing
messages (``helpers.compat``), applies the server's request fixes, and turns the
errors a workshop attendee meets into one plain sentence each.
"""
from __future__ import annotations

import json
import re

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from helpers.compat import prepare_request, profile_for
from helpers.api_key import KEY_NAME, check_key_destination, safe_url
from helpers.config import PLACEHOLDER_KEY, Settings, load_settings
from helpers.errors import WorkshopError
from helpers.standin.server import make_offline_client


class EndpointError(WorkshopError, RuntimeError):
    """A request failed for a reason the user can act on; the message says what to do."""


class ResponseFormatError(EndpointError):
    """The server answered HTTP 200 with something that is not a chat completion (HTML, an error...)."""


_announced: set[str] = set()
_default: tuple[Settings, openai.OpenAI] | None = None


def make_client(settings: Settings) -> openai.OpenAI:
    """A client for these settings (timeouts and retries explicit; the key never printed).

    Raises ConfigError if the settings would send the NVIDIA key anywhere but https to an
    NVIDIA host, however they were built (``load_settings``, ``with_overrides``, by hand).
    """
    if settings.backend == "offline":
        return make_offline_client(timeout=settings.timeout)
    check_key_destination(settings)
    # Never None: the openai client would then fall back to OPENAI_API_KEY on its own.
    return openai.OpenAI(
        api_key=settings.api_key or PLACEHOLDER_KEY, base_url=settings.base_url,
        timeout=settings.timeout, max_retries=settings.max_retries,
    )


def get_client(settings: Settings | None = None, *, quiet: bool = False) -> openai.OpenAI:
    """The shared client for the current settings; says once, in one line, which backend is in use."""
    global _default
    if settings is None:
        if _default is None:
            loaded = load_settings()
            _default = (loaded, make_client(loaded))
        settings, client = _default
    else:
        client = make_client(settings)
    line = settings.describe()
    if not quiet and line not in _announced:
        _announced.add(line)
        print(line)
    return client


_clients: dict[Settings, openai.OpenAI] = {}


def _client_for(settings: Settings) -> openai.OpenAI:
    """One client per distinct settings (so ``chat(settings=...)`` goes where those settings say)."""
    if settings not in _clients:
        _clients[settings] = make_client(settings)
    return _clients[settings]


def get_settings() -> Settings:
    """The settings behind ``get_client()`` (loaded on first use)."""
    if _default is None:
        get_client(quiet=True)
    return _default[0]


def reset_default() -> None:
    """Forget the shared client so the next call re-reads the environment (used by tests)."""
    global _default
    _default = None
    _announced.clear()
    _clients.clear()


def _key_advice(settings: Settings | None) -> str:
    """Which key to check after a 401, named after the variable it came from."""
    if settings is None:
        return "Check the API key the client was made with."
    if settings.key_name == KEY_NAME:
        return (f"Check {KEY_NAME} (from {settings.key_source}): it may be mistyped, expired, or for "
                "another service.")
    if settings.key_name:
        return f"Check {settings.key_name}: it must be this server's own key."
    return (f"No key was sent, and this server wants one: set WORKSHOP_API_KEY to its key "
            f"({KEY_NAME} is only ever sent to NVIDIA's https hosts).")


def explain(error: Exception, settings: Settings | None = None) -> EndpointError:
    """Turn an openai error into an EndpointError with one plain sentence about what to do (key hidden)."""
    explained = _explain(error, settings)
    return EndpointError(hide_secret(str(explained), settings.api_key)) if settings else explained


def _explain(error: Exception, settings: Settings | None) -> EndpointError:
    where = safe_url(settings.base_url) if settings else "the endpoint"
    if isinstance(error, openai.AuthenticationError):
        return EndpointError(f"Your key was rejected by {where} (HTTP 401). {_key_advice(settings)}")
    if isinstance(error, openai.PermissionDeniedError):
        return EndpointError(f"Your key is valid but may not use this model at {where} (HTTP 403).")
    if isinstance(error, openai.NotFoundError):
        return EndpointError(f"{where} does not know this model or path (HTTP 404): {error_text(error)}. "
                             "List the models with check_endpoint() or client.models.list().")
    if isinstance(error, openai.RateLimitError):
        retries = settings.max_retries if settings else "several"
        return EndpointError(f"{where} is rate-limiting requests (HTTP 429) and still was after {retries} "
                             "retries with backoff. Wait a minute, or lower the request rate.")
    if isinstance(error, openai.InternalServerError):
        return EndpointError(f"{where} had a server error (HTTP {error.status_code}) after retries with "
                             "backoff. Try again shortly, or switch backend.")
    if isinstance(error, openai.APITimeoutError):
        return EndpointError(f"{where} did not answer within the timeout. Raise WORKSHOP_TIMEOUT, or "
                             "check the server.")
    if isinstance(error, openai.APIConnectionError):
        return EndpointError(f"Cannot reach {where}. Check the URL (WORKSHOP_BASE_URL), that the server "
                             "is running, and your network.")
    return EndpointError(str(error))


def error_text(error: openai.APIStatusError, width: int = 200) -> str:
    """The server's own words from an error response, on one line (used here and by check_endpoint)."""
    body = error.body
    message = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if not message and isinstance(body.get("detail"), (str, list)):  # FastAPI-style servers
            message = body["detail"]
    return _one_line(str(message or error.message or error), width)


def hide_secret(text: str, secret: str | None) -> str:
    """``text`` with the key replaced by ***, in case a server echoes it back."""
    return text.replace(secret, "***") if secret and len(secret) >= 4 else text


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------- HTTP 200 that is not a completion

FORMAT_ADVICE = ("Check that WORKSHOP_BASE_URL is the server's OpenAI-compatible /v1 address (a login page, "
                 "a proxy or a web page answers with HTML).")


def describe_body(body, *, secret: str | None = None) -> str:
    """A few words on what a response body holds (an error, an HTML page, other JSON), key-free, one line."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body.strip()
        if not text:
            return "an empty body"
        title = re.search(r"<title[^>]*>(.*?)</title>", text[:65_536], re.IGNORECASE | re.DOTALL)
        if text[:200].lower().lstrip().startswith(("<!doctype html", "<html")) or title:
            named = f" titled {_preview(title.group(1), secret)}" if title else ""
            return f"an HTML page{named}"
        return f"plain text: {_preview(text, secret)}"
    if isinstance(body, dict) and body.get("error"):
        error = body["error"]
        said = error.get("message", error) if isinstance(error, dict) else error
        return f"an error: {_preview(said, secret)}"
    return f"JSON: {_preview(body, secret)}"


def _preview(value, secret: str | None, width: int = 120) -> str:
    """The start of what the server sent, quoted, on one line, with the key hidden."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return repr(_one_line(hide_secret(text, secret)[: width * 4], width))


def _as_data(response):
    """What the server sent, as plain JSON data (the openai client keeps unknown fields)."""
    if isinstance(response, ChatCompletion):
        return response.model_dump(mode="json", exclude_unset=True, warnings=False)
    return response


def completion_problem(response, secret: str | None = None) -> str:
    """What is wrong with a non-streamed reply (empty when it is a chat completion with a message)."""
    if not isinstance(response, ChatCompletion) or getattr(response, "error", None):
        return describe_body(_as_data(response), secret=secret)
    if not isinstance(response.choices, list) or not response.choices:
        return f"a completion without choices: {_preview(_as_data(response), secret)}"
    message = getattr(response.choices[0], "message", None)
    if not isinstance(message, ChatCompletionMessage):
        return f"a choice without a message: {_preview(_as_data(response), secret)}"
    if not (message.content is None or isinstance(message.content, str)) or not (
            message.tool_calls is None or isinstance(message.tool_calls, list)):
        return f"a message in an unexpected shape: {_preview(_as_data(response), secret)}"
    return ""


def check_completion(response, settings: Settings | None = None):
    """``response`` if it is a chat completion with a message; else a ResponseFormatError saying what came."""
    problem = completion_problem(response, settings.api_key if settings else None)
    if problem:
        where = f"The server at {safe_url(settings.base_url)}" if settings else "The server"
        raise ResponseFormatError(f"{where} answered HTTP 200 with {problem} instead of a chat completion. "
                                  f"{FORMAT_ADVICE}")
    return response


def chat(messages: list, *, client: openai.OpenAI | None = None, settings: Settings | None = None,
         tools: list | None = None, **kwargs):
    """Send one chat completion request through the one normalising call path; return the response.

    ``openai.BadRequestError`` (HTTP 400: the request itself is wrong, e.g. an orphaned
    tool result) is raised as-is so lessons can show it; connection, key, rate-limit and
    server errors become an ``EndpointError`` with a plain explanation, and an HTTP 200 that
    is not a chat completion (HTML, an error, no choices) a ``ResponseFormatError``.
    """
    if client is None:
        client = get_client() if settings is None else _client_for(settings)
    settings = settings or get_settings()
    request = {"model": settings.chat_model, "temperature": settings.temperature,
               "messages": messages}
    if tools:
        request["tools"] = tools
    request.update(kwargs)
    request = prepare_request(request, profile=profile_for(settings))
    unreadable = None
    try:
        response = client.chat.completions.create(**request)
    except openai.BadRequestError:
        raise
    except openai.APIError as error:
        raise explain(error, settings) from error
    except json.JSONDecodeError as error:  # a body labelled JSON that is not JSON
        unreadable = error.doc
    if unreadable is not None:  # raised outside the except block: no chained error repeats the body
        raise ResponseFormatError(
            f"The server at {safe_url(settings.base_url)} answered HTTP 200 with a body labelled JSON that "
            f"is not JSON: {describe_body(unreadable, secret=settings.api_key)}. {FORMAT_ADVICE}")
    if request.get("stream"):
        return response  # a stream is checked chunk by chunk by whoever reads it
    return check_completion(response, settings)

"""One client for every notebook: hosted NIM, any OpenAI-compatible server, or the offline stand-in.

``get_client()`` returns a real ``openai.OpenAI`` client with explicit timeouts and
retries. ``chat()`` is the one call path the lessons use: it normalises outgoing
messages (``helpers.compat``), applies the server's request fixes, and turns the
errors a workshop attendee meets into one plain sentence each.
"""
from __future__ import annotations

import openai

from helpers.compat import prepare_request, profile_for
from helpers.config import Settings, load_settings


class EndpointError(RuntimeError):
    """A request failed for a reason the user can act on; the message says what to do."""


class ResponseFormatError(EndpointError):
    """The server answered HTTP 200 with something that is not a chat completion (HTML, an error, no choices)."""


_announced: set[str] = set()
_default: tuple[Settings, openai.OpenAI] | None = None


def make_client(settings: Settings) -> openai.OpenAI:
    """A client for these settings (timeouts and retries explicit; the key never printed)."""
    if settings.backend == "offline":
        from helpers.offline import make_offline_client

        return make_offline_client(timeout=settings.timeout)
    return openai.OpenAI(
        api_key=settings.api_key, base_url=settings.base_url,
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


def explain(error: Exception, settings: Settings | None = None) -> EndpointError:
    """Turn an openai error into an EndpointError with one plain sentence about what to do."""
    where = settings.base_url if settings else "the endpoint"
    if isinstance(error, openai.AuthenticationError):
        return EndpointError(f"Your key was rejected by {where} (HTTP 401). Check NVIDIA_API_KEY: it may be "
                             "mistyped, expired, or for another service.")
    if isinstance(error, openai.PermissionDeniedError):
        return EndpointError(f"Your key is valid but may not use this model at {where} (HTTP 403).")
    if isinstance(error, openai.NotFoundError):
        return EndpointError(f"{where} does not know this model or path (HTTP 404): {_message(error)}. "
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


def _message(error: openai.APIStatusError) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    return (inner.get("message") if isinstance(inner, dict) else None) or str(error)


def chat(messages: list, *, client: openai.OpenAI | None = None, settings: Settings | None = None,
         tools: list | None = None, **kwargs):
    """Send one chat completion request through the one normalising call path; return the response.

    ``openai.BadRequestError`` (HTTP 400: the request itself is wrong, e.g. an orphaned
    tool result) is raised as-is so lessons can show it; connection, key, rate-limit and
    server errors become an ``EndpointError`` with a plain explanation.
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
    try:
        return client.chat.completions.create(**request)
    except openai.BadRequestError:
        raise
    except openai.APIError as error:
        raise explain(error, settings) from error

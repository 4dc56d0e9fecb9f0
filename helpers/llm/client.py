"""One client for every notebook: hosted NIM, any OpenAI-compatible server, or the offline stand-in.

``get_client()`` returns a real ``openai.OpenAI`` client with explicit timeouts and
retries. ``chat()`` is the one call path the lessons use: it normalises outgoing
messages (``helpers.llm.compat``), applies the server's request fixes, and turns the
errors a workshop attendee meets into one plain sentence each.
"""
from __future__ import annotations

import json
import re
import time
from typing import Any, Callable, Iterator, Sequence

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from helpers.llm.compat import prepare_request, profile_for
from helpers.llm.api_key import KEY_NAME, check_key_destination, hide_secret, safe_url, url_secrets
from helpers.llm.config import PLACEHOLDER_KEY, Settings, load_settings
from helpers.core.errors import ContextOverflowError, WorkshopError
from helpers.standin.server import handle as offline_handle, make_offline_client
from helpers.core.text import shorten


class EndpointError(WorkshopError, RuntimeError):
    """A request failed for a reason the user can act on; the message says what to do."""


class ResponseFormatError(EndpointError):
    """The server answered HTTP 200 with something that is not a chat completion (HTML, an error...)."""


_announced: set[str] = set()
_default: tuple[Settings, openai.OpenAI] | None = None
DEFAULT_MAX_TOKENS = 1024  # chat() bounds every reply that names no max_tokens / max_completion_tokens


class TimeoutNotRetried(openai.DefaultHttpxClient):
    """An HTTP client whose timeouts the openai client does not retry (it still retries 429 and 5xx).

    A local server (llama.cpp, Ollama) goes on generating a reply the client stopped waiting for, and
    serves one request at a time: a retry would only queue behind it and time out again.
    """

    def send(self, request, **kwargs):
        try:
            return super().send(request, **kwargs)
        except httpx2.TimeoutException as err:  # as an OpenAIError, the openai client raises it unretried
            raise openai.APITimeoutError(request=request) from err


class WorkshopOpenAI(openai.OpenAI):
    """``openai.OpenAI`` that sends the configured key and nothing the environment adds for OpenAI.

    The SDK reads ``OPENAI_CUSTOM_HEADERS`` (whose ``Authorization:`` line replaces the key),
    ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID`` and ``OPENAI_ADMIN_KEY`` from the environment and sends them
    with requests, to any host. Meant for api.openai.com, they would reach NIM or a local server here,
    so this client drops them: the Authorization header is the key it was made with, and the only extra
    headers are those passed on purpose (``default_headers``). Copies (``with_options``) follow the same
    rule, since the SDK builds them through this class.
    """

    def __init__(self, *, organization: str | None = None, project: str | None = None,
                 admin_api_key: str | None = None, default_headers=None, **options):
        super().__init__(organization=organization, project=project, admin_api_key=admin_api_key,
                         default_headers=default_headers, **options)
        # Whatever the SDK took from the environment is replaced by what was passed (None: nothing).
        self.organization, self.project, self.admin_api_key = organization, project, admin_api_key
        self._custom_headers = dict(default_headers or {})
        self._ambient_authorizations = frozenset()


def make_client(settings: Settings) -> openai.OpenAI:
    """A client for these settings (timeouts and retries explicit; the key never printed).

    Raises ConfigError if the settings would send the NVIDIA key anywhere but https to an
    NVIDIA host, however they were built (``load_settings``, ``with_overrides``, by hand).
    A timeout is retried only on hosted NIM; any other server gets one wait of ``timeout`` seconds.
    Requests carry this key and no ambient OpenAI headers from the environment (``WorkshopOpenAI``).
    """
    if settings.backend == "offline":
        return make_offline_client(timeout=settings.timeout)
    check_key_destination(settings)
    # Never None: the openai client would then fall back to OPENAI_API_KEY on its own.
    return WorkshopOpenAI(
        api_key=settings.api_key or PLACEHOLDER_KEY, base_url=settings.base_url,
        timeout=settings.timeout, max_retries=settings.max_retries,
        http_client=None if settings.backend == "nim" else TimeoutNotRetried(),
    )


def offline_transport() -> httpx2.BaseTransport:
    """The offline stand-in as an httpx transport, for a harness that wraps it to watch or change requests
    (``helpers.memory.evaluation``): the layers above reach the stand-in through the client, never directly."""
    return httpx2.MockTransport(offline_handle)


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


PACE_SECONDS = 45  # a cell that asks many questions stops asking after this long on a real server


def paced(questions: Sequence[str], seconds: float = PACE_SECONDS, *, settings: Settings | None = None,
          say: Callable[[str], Any] = print) -> Iterator[str]:
    """The questions in order. Offline, all of them. On a real server (a small local model takes seconds a
    request), only those asked within ``seconds`` of the first, then one line saying how many were left out,
    so that a notebook cell stays under two minutes."""
    offline = (settings or get_settings()).backend == "offline"
    questions = list(questions)
    started = time.monotonic()
    for n, question in enumerate(questions):
        if n and not offline and time.monotonic() - started > seconds:
            say(f"(this server took {time.monotonic() - started:.0f} s for {n} question(s); "
                f"the other {len(questions) - n} are left out to keep the cell short)")
            return
        yield question


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
    """Turn an openai error into an EndpointError with one plain sentence about what to do.

    The key, and any password or query value in the base URL, are hidden in case the server echoed
    them. Raise the result outside the ``except`` block that caught ``error`` (as ``chat`` does): raised
    inside it, the traceback would show ``error``, with the server's unhidden words, as its context.
    """
    explained = _explain(error, settings)
    return EndpointError(hide_secret(str(explained), _secrets(settings))) if settings else explained


def _secrets(settings: Settings | None) -> list[str]:
    """What no error may show: the key, and credentials written into the base URL."""
    return [settings.api_key or ""] + url_secrets(settings.base_url) if settings else []


def _hidden(value, secrets: list[str]):
    """``value`` (a response body: text, dicts, lists) with every secret replaced by ***."""
    if isinstance(value, str):
        return hide_secret(value, secrets)
    if isinstance(value, dict):
        return {_hidden(k, secrets): _hidden(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(item, secrets) for item in value]
    return value


def _without_secrets(error: openai.BadRequestError, settings: Settings | None) -> openai.BadRequestError:
    """The same HTTP 400 error (class, status, message, body, response) with the key and URL credentials
    hidden, and no chained errors (raise it outside the ``except`` block)."""
    secrets, message = _secrets(settings), hide_secret(error.message, _secrets(settings))
    try:
        return type(error)(message, response=error.response, body=_hidden(error.body, secrets))
    except TypeError:  # a subclass made differently: the plain class carries the same facts
        return openai.BadRequestError(message, response=error.response, body=_hidden(error.body, secrets))


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


_OVERFLOW_PATTERNS = (  # (regex, group of the context size, group of the tokens requested)
    (re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)"), 2, 1),   # llama-cpp-python
    (re.compile(r"maximum context length is (\d+) tokens.*?requested (\d+) tokens", re.S), 1, 2),  # OpenAI, vLLM
    (re.compile(r"exceeds the available context size", re.I), None, None),              # llama.cpp llama-server
    (re.compile(r"context length|context window|context_length_exceeded", re.I), None, None),
)


def context_overflow(error: openai.APIStatusError,
                     settings: Settings | None = None) -> ContextOverflowError | None:
    """A ContextOverflowError when the server refused a request longer than its context window, else None."""
    if error.status_code not in (400, 413, 500):
        return None
    text = f"{error_text(error, 2000)} {getattr(error, 'code', '') or ''}"
    body = error.body.get("error", error.body) if isinstance(error.body, dict) else {}
    for pattern, window_group, requested_group in _OVERFLOW_PATTERNS:
        match = pattern.search(text)
        if match:
            break
    else:
        return None
    window = int(match.group(window_group)) if window_group else None
    requested = int(match.group(requested_group)) if requested_group else None
    if isinstance(body, dict):  # llama-server reports both numbers as fields
        window = window or (body.get("n_ctx") if isinstance(body.get("n_ctx"), int) else None)
        requested = requested or (body.get("n_prompt_tokens") if isinstance(body.get("n_prompt_tokens"), int)
                                  else None)
    where = f"the server at {safe_url(settings.base_url)}" if settings else "the server"
    size = f"the {window}-token context window" if window else "the context window"
    needed = f"needs {requested} tokens, more than" if requested else "does not fit"
    return ContextOverflowError(
        f"The request {needed} {size} of {where} (prompt and reply together). Start the server with a "
        "larger context (llama.cpp: --n_ctx 4096), or send less: a smaller max_turns or max_tokens for the "
        "session, or a smaller max_tokens for the reply.", context_window=window, requested=requested)


def error_text(error: openai.APIStatusError, width: int = 200) -> str:
    """The server's own words from an error response, on one line (used here and by check_endpoint)."""
    body = error.body
    message = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if not message and isinstance(body.get("detail"), (str, list)):  # FastAPI-style servers
            message = body["detail"]
    return shorten(str(message or error.message or error), width)


# ---------------------------------------------------------------- HTTP 200 that is not a completion

FORMAT_ADVICE = ("Check that WORKSHOP_BASE_URL is the server's OpenAI-compatible /v1 address (a login page, "
                 "a proxy or a web page answers with HTML).")


def describe_body(body, *, secret: str | list[str] | None = None) -> str:
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


def _preview(value, secret: str | list[str] | None, width: int = 120) -> str:
    """The start of what the server sent, quoted, on one line, with the key hidden."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return repr(shorten(hide_secret(text, secret)[: width * 4], width))


def _as_data(response):
    """What the server sent, as plain JSON data (the openai client keeps unknown fields)."""
    if isinstance(response, ChatCompletion):
        return response.model_dump(mode="json", exclude_unset=True, warnings=False)
    return response


def completion_problem(response, secret: str | list[str] | None = None) -> str:
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
    problem = completion_problem(response, _secrets(settings) or None)
    if problem:
        where = f"The server at {safe_url(settings.base_url)}" if settings else "The server"
        raise ResponseFormatError(f"{where} answered HTTP 200 with {problem} instead of a chat completion. "
                                  f"{FORMAT_ADVICE}")
    return response


def chat(messages: list, *, client: openai.OpenAI | None = None, settings: Settings | None = None,
         tools: list | None = None, **kwargs):
    """Send one chat completion request through the one normalising call path; return the response.

    ``openai.BadRequestError`` (HTTP 400: the request itself is wrong, e.g. an orphaned
    tool result) is raised as the server sent it (key hidden) so lessons can show it, except a request longer than the
    server's context window: a ``ContextOverflowError`` naming its size and what to change.
    Connection, key, rate-limit and server errors become an ``EndpointError`` with a plain
    explanation, and an HTTP 200 that is not a chat completion (HTML, an error, no choices) a
    ``ResponseFormatError``. A request that names no ``max_tokens`` (or ``max_completion_tokens``)
    gets ``DEFAULT_MAX_TOKENS``: no reply is unbounded.
    """
    if client is None:
        client = get_client() if settings is None else _client_for(settings)
    settings = settings or get_settings()
    request = {"model": settings.chat_model, "temperature": settings.temperature,
               "messages": messages}
    if tools:
        request["tools"] = tools
    request.update(kwargs)
    if request.get("max_tokens") is None and request.get("max_completion_tokens") is None:
        request["max_tokens"] = DEFAULT_MAX_TOKENS
    request = prepare_request(request, profile=profile_for(settings))
    unreadable, failure = None, None
    try:
        response = client.chat.completions.create(**request)
    except openai.APIStatusError as error:
        failure = context_overflow(error, settings)
        if failure is None:
            failure = (_without_secrets(error, settings) if isinstance(error, openai.BadRequestError)
                       else explain(error, settings))
    except openai.APIError as error:
        failure = explain(error, settings)
    except json.JSONDecodeError as error:  # a body labelled JSON that is not JSON
        unreadable = error.doc
    # Raised outside the except blocks, so no chained error repeats what the server sent (it may echo
    # the key): the one place every chat request's errors leave from.
    if failure is not None:
        raise failure
    if unreadable is not None:
        raise ResponseFormatError(
            f"The server at {safe_url(settings.base_url)} answered HTTP 200 with a body labelled JSON that "
            f"is not JSON: {describe_body(unreadable, secret=_secrets(settings))}. {FORMAT_ADVICE}")
    if request.get("stream"):
        return response  # a stream is checked chunk by chunk by whoever reads it
    return check_completion(response, settings)

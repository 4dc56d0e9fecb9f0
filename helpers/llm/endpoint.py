"""Check an endpoint in one line: is it reachable, is the key accepted, does the model exist?

``check_endpoint(client, model)`` asks the server for its model list, then sends a
one-token chat completion. ``str()`` of the result is one line meant for a
notebook output; it names the server and the model but never the key, and shows the server's
address as ``safe_url`` does: no user name, password or query (a token may be written there).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx2
import openai

from helpers.llm.api_key import hide_secret, safe_url, url_secrets
from helpers.llm.client import EndpointError, completion_problem, describe_body, error_text

_SHOWN_MODELS = 5
_NOT_OPENAI = "check that the URL is the server's OpenAI-compatible /v1 address"


class EndpointNotReadyError(EndpointError, TimeoutError):
    """``wait_until_ready`` gave up: the server did not answer ready in time (also a TimeoutError)."""


@dataclass(frozen=True)
class EndpointStatus:
    """What check_endpoint found; ``ok`` is True only when a real chat request worked."""

    base_url: str                        # as safe_url shows it: no user name, password or query
    model: str
    reachable: bool = False
    key_accepted: bool | None = None     # None: not reached far enough to tell
    model_found: bool | None = None      # None: not reached far enough to tell
    chat_works: bool = False
    available_models: tuple[str, ...] = field(default=(), repr=False)
    problem: str = ""                    # what went wrong and what to do, empty when ok

    @property
    def ok(self) -> bool:
        """True when the endpoint answered a chat completion for this model."""
        return self.chat_works

    def __str__(self) -> str:
        where = f"{self.base_url} model {self.model}"
        if self.ok:
            return f"OK: {where}: reachable, key accepted, model answers"
        return f"PROBLEM: {where}: {self.problem}"


def _model_ids(body) -> tuple[str, ...] | None:
    """The model ids of a /models answer, or None when the body is not a model list."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str)
                                             for m in data):
        return None
    return tuple(sorted(m["id"] for m in data))


def _body(response):
    """A response's JSON, else its text (for describe_body)."""
    try:
        return response.json()
    except ValueError:
        return response.text


def _models_hint(models: tuple[str, ...]) -> str:
    if not models:
        return "the server lists no models"
    shown = ", ".join(models[:_SHOWN_MODELS])
    more = f" (+{len(models) - _SHOWN_MODELS} more)" if len(models) > _SHOWN_MODELS else ""
    return f"available: {shown}{more}"


def check_endpoint(client: openai.OpenAI, model: str, *, timeout: float = 30.0) -> EndpointStatus:
    """Diagnose ``client`` for ``model``: reachability, key, model listed, and a 1-token chat reply."""
    address = str(client.base_url)
    secrets = [getattr(client, "api_key", None) or ""] + url_secrets(address)  # what a server may echo
    quick = client.with_options(max_retries=0, timeout=timeout)
    status = dict(base_url=safe_url(address).rstrip("/"), model=model)

    def result(**found) -> EndpointStatus:
        if "problem" in found:
            found["problem"] = hide_secret(found["problem"], secrets)
        return EndpointStatus(**{**status, **found})

    # Step 1: the model list (some servers do not implement it; then only the chat call decides).
    models: tuple[str, ...] = ()
    listed = False
    try:
        body = _body(quick.models.with_raw_response.list().http_response)
        ids = _model_ids(body)
        if ids is None:
            return result(reachable=True, problem=f"the model list came back HTTP 200 with "
                                                  f"{describe_body(body)}; {_NOT_OPENAI}")
        models, listed = ids, True
    except (openai.APITimeoutError, openai.APIConnectionError):
        return result(problem="cannot reach the server; check the URL and that the server is running")
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        return result(reachable=True, key_accepted=False,
                      problem=f"key rejected (HTTP {error.status_code}); check the API key")
    except (openai.NotFoundError, openai.UnprocessableEntityError, openai.BadRequestError):
        pass  # no /models endpoint here: fall through to the chat request
    except openai.APIStatusError as error:
        return result(reachable=True, problem=f"listing models failed with HTTP {error.status_code}: "
                                              f"{error_text(error)}")
    status.update(reachable=True, key_accepted=True if listed else None, available_models=models)
    if listed and model not in models:
        return result(model_found=False, problem=f"model not found; {_models_hint(models)}")

    # Step 2: one token of a real chat completion.
    try:
        reply = quick.chat.completions.create(model=model, max_tokens=1, temperature=0,
                                              messages=[{"role": "user", "content": "Say OK."}])
    except json.JSONDecodeError as error:
        return result(problem=f"the chat request came back HTTP 200 with a body labelled JSON that is not "
                              f"JSON: {describe_body(error.doc)}; {_NOT_OPENAI}")
    except (openai.APITimeoutError, openai.APIConnectionError):
        return result(problem="the model list answered but the chat request did not come back; "
                              "the server may be overloaded or still loading the model")
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        return result(key_accepted=False, problem=f"key rejected for chat (HTTP {error.status_code}); "
                                                  "check the API key and that it may use this model")
    except openai.NotFoundError as error:
        return result(model_found=False, problem=f"model not found (HTTP 404: {error_text(error)}); "
                                                 f"{_models_hint(models)}")
    except openai.APIStatusError as error:
        return result(model_found=True if listed else None,
                      problem=f"chat request failed with HTTP {error.status_code}: {error_text(error)}")
    problem = completion_problem(reply)
    if problem:
        return result(problem=f"the chat request came back HTTP 200 with {problem}; {_NOT_OPENAI}")
    return result(key_accepted=True, model_found=True, chat_works=True)


def wait_until_ready(base_url: str, *, timeout: float = 600.0, interval: float = 5.0,
                     path: str = "/health/ready", sleep=None, get=None) -> str:
    """Poll a local NIM container's readiness endpoint until it answers 200; return one line.

    ``base_url`` is the OpenAI base URL (``http://localhost:8000/v1``); NIM answers
    ``GET /v1/health/ready`` with 200 only once the model is loaded. Raises EndpointNotReadyError
    (a TimeoutError) with a plain explanation when it is not ready in time.
    """
    sleep = sleep or time.sleep
    get = get or (lambda url: httpx2.get(url, timeout=min(interval, 10.0)).status_code)
    url = base_url.rstrip("/") + path
    shown = safe_url(url)  # a user name, password or token in the address is not shown
    waited, last = 0.0, "no answer yet"
    while True:
        try:
            status = get(url)
            if status == 200:
                return f"READY: {shown} after {waited:.0f} s"
            last = f"HTTP {status}"
        except (httpx2.TransportError, OSError) as error:  # connection refused while the container starts
            last = type(error).__name__
        if waited >= timeout:
            raise EndpointNotReadyError(f"{shown} was not ready after {timeout:.0f} s (last: {last}). The first "
                                        "start downloads the model into the cache directory and can take many "
                                        "minutes; check `docker logs` for progress.")
        sleep(interval)
        waited += interval

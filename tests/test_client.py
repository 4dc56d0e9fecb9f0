"""The one call path: the right endpoint, model and key reach the wire; errors are explained in plain words."""
import json

import httpx2
import openai
import pytest

from helpers.client import EndpointError, chat, explain, make_client
from helpers.config import NIM_BASE_URL, load_settings

FAKE_KEY = "nvapi-" + "k" * 24


@pytest.fixture
def nim_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    monkeypatch.chdir(tmp_path)
    return load_settings()


def recording_client(client, replies):
    """The same client, its HTTP answered by ``replies`` (status codes or dicts) and every request kept."""
    seen = []

    def handler(request):
        seen.append(request)
        reply = replies[min(len(seen), len(replies)) - 1]
        if isinstance(reply, int):
            return httpx2.Response(reply, headers={"retry-after-ms": "1"},
                                   json={"error": {"message": f"status {reply}", "type": "error"}})
        return httpx2.Response(200, json=reply)

    return client.with_options(http_client=httpx2.Client(transport=httpx2.MockTransport(handler))), seen


COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def test_key_means_nim_url_model_and_key_reach_the_request(nim_settings):
    client = make_client(nim_settings)
    assert str(client.base_url).rstrip("/") == NIM_BASE_URL
    assert client.api_key == FAKE_KEY and client.max_retries == 3 and client.timeout == 60.0
    client, seen = recording_client(client, [COMPLETION])
    chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    request = seen[0]
    assert str(request.url) == NIM_BASE_URL + "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    body = json.loads(request.content)
    assert body["model"] == "meta/llama-3.3-70b-instruct" and body["temperature"] == 0.2


def test_base_url_variables_redirect_the_same_code(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKSHOP_BACKEND", "openai-compatible")
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "smollm2")
    settings = load_settings()
    client, seen = recording_client(make_client(settings), [COMPLETION])
    chat([{"role": "user", "content": "hello"}], client=client, settings=settings)
    assert str(seen[0].url) == "http://127.0.0.1:8080/v1/chat/completions"
    assert json.loads(seen[0].content)["model"] == "smollm2"


def test_rejected_key_is_said_in_plain_words(nim_settings):
    client, seen = recording_client(make_client(nim_settings), [401])
    with pytest.raises(EndpointError, match="Your key was rejected") as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert FAKE_KEY not in str(info.value) and len(seen) == 1  # a 401 is not retried


@pytest.mark.parametrize("status, words", [(429, "rate-limiting"), (503, "server error")])
def test_rate_limits_and_server_errors_are_retried_then_explained(nim_settings, status, words):
    client, seen = recording_client(make_client(nim_settings), [status])
    with pytest.raises(EndpointError, match=words):
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert len(seen) == 1 + nim_settings.max_retries


def test_retry_that_succeeds_is_invisible(nim_settings):
    client, seen = recording_client(make_client(nim_settings), [503, COMPLETION])
    reply = chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert reply.choices[0].message.content == "hi" and len(seen) == 2


def test_bad_request_is_raised_as_is_for_the_lessons():
    settings = load_settings("offline")
    with pytest.raises(openai.BadRequestError):
        chat([{"role": "tool", "tool_call_id": "x", "content": "{}"}], settings=settings,
             client=make_client(settings))


def test_unreachable_endpoint_is_explained(nim_settings):
    def refuse(request):
        raise httpx2.ConnectError("connection refused")

    client = make_client(nim_settings.with_overrides(max_retries=0)).with_options(
        http_client=httpx2.Client(transport=httpx2.MockTransport(refuse)))
    with pytest.raises(EndpointError, match="Cannot reach"):
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)


def test_explain_names_the_missing_model():
    request = httpx2.Request("POST", "http://x/v1/chat/completions")
    response = httpx2.Response(404, request=request, json={"error": {"message": "model foo not found"}})
    error = openai.NotFoundError("not found", response=response, body={"error": {"message": "model foo not found"}})
    assert "model foo not found" in str(explain(error))


def test_settings_without_a_client_go_where_the_settings_say():
    elsewhere = load_settings("openai-compatible", base_url="http://127.0.0.1:9/v1", chat_model="m", max_retries=0)
    with pytest.raises(EndpointError, match="127.0.0.1:9"):
        chat([{"role": "user", "content": "hello"}], settings=elsewhere)

"""The one call path: the right endpoint, model and key reach the wire; errors are explained in plain words."""
import ast
import json
from pathlib import Path

import httpx2
import openai
import pytest

from helpers.llm import config
from helpers.llm.client import EndpointError, ResponseFormatError, chat, explain, make_client
from helpers.llm.config import NIM_BASE_URL, Settings, load_settings
from helpers.core.errors import ConfigError
from helpers.retrieval.embeddings import embed_texts
from helpers.llm.endpoint import check_endpoint
from helpers.llm.stream_reader import read_streamed_reply
from helpers.llm import client as llm_client
from helpers.llm.client import make_offline_client
from helpers.llm.config import OFFLINE_BASE_URL
from helpers.standin import server

from support import assert_no_secret, echoing_client, sse_reply

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
        if isinstance(reply, httpx2.Response):
            return reply
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


# ---------------------------------------------------------------- the NVIDIA key reaches NVIDIA only

def test_openai_compatible_server_elsewhere_never_sees_the_nvidia_key(nim_settings, monkeypatch):
    monkeypatch.setenv("WORKSHOP_BACKEND", "openai-compatible")
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:8080/v1")
    settings = load_settings()
    client, seen = recording_client(make_client(settings), [COMPLETION])
    chat([{"role": "user", "content": "hello"}], client=client, settings=settings)
    assert seen[0].headers["authorization"] == "Bearer not-needed"
    assert FAKE_KEY not in str(seen[0].headers) + seen[0].content.decode()


@pytest.mark.parametrize("url", ["https://evil.example/v1", "http://integrate.api.nvidia.com/v1",
                                 "https://integrate.api.nvidia.com@evil.example/v1", ""])
def test_make_client_refuses_to_send_the_nvidia_key_elsewhere(nim_settings, url):
    moved = nim_settings.with_overrides(base_url=url)
    with pytest.raises(ConfigError, match="only ever sent over https"):
        make_client(moved)
    with pytest.raises(ConfigError):
        chat([{"role": "user", "content": "hello"}], settings=moved)


def test_make_client_refuses_settings_built_by_hand_with_the_key(nim_settings):
    by_hand = Settings(backend="openai-compatible", base_url="http://localhost:8000/v1", chat_model="m",
                       embedding_model="e", api_key=FAKE_KEY)  # key_source left at "none"
    with pytest.raises(ConfigError, match="NVIDIA_API_KEY"):
        make_client(by_hand)


def test_settings_without_a_key_do_not_borrow_openais(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    settings = Settings(backend="openai-compatible", base_url="http://127.0.0.1:8080/v1", chat_model="m",
                        embedding_model="e")
    assert make_client(settings).api_key == config.PLACEHOLDER_KEY


# ---------------------------------------------------------------- the 401 names the key that was sent

def test_rejected_nvidia_key_is_named(nim_settings):
    client, _ = recording_client(make_client(nim_settings), [401])
    with pytest.raises(EndpointError, match=r"Check NVIDIA_API_KEY \(from environment\)"):
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)


@pytest.mark.parametrize("name", ["WORKSHOP_API_KEY", "OPENAI_API_KEY"])
def test_rejected_server_key_is_named_not_nvidias(nim_settings, monkeypatch, name):
    monkeypatch.setenv(name, "sk-local")
    settings = load_settings("openai-compatible", base_url="http://127.0.0.1:8080/v1")
    client, _ = recording_client(make_client(settings), [401])
    with pytest.raises(EndpointError, match=f"Check {name}: it must be this server's own key") as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=settings)
    assert "Check NVIDIA_API_KEY" not in str(info.value) and "sk-local" not in str(info.value)


def test_401_without_a_key_says_none_was_sent(nim_settings):
    settings = load_settings("openai-compatible", base_url="http://127.0.0.1:8080/v1")
    client, _ = recording_client(make_client(settings), [401])
    with pytest.raises(EndpointError, match="No key was sent.*set WORKSHOP_API_KEY"):
        chat([{"role": "user", "content": "hello"}], client=client, settings=settings)


# ---------------------------------------------------------------- HTTP 200 that is not a completion

def html(text, content_type="text/html"):
    return httpx2.Response(200, text=text, headers={"content-type": content_type})


GARBAGE = {
    "html page": (html("<!DOCTYPE html><html><title>Sign in</title><body>Login</body></html>"),
                  "an HTML page titled 'Sign in'"),
    "html labelled json": (html("<html>proxy</html>", "application/json"),
                           "a body labelled JSON that is not JSON: an HTML page"),
    "error json": ({"error": {"message": "model is loading", "code": 503}}, "an error: 'model is loading'"),
    "error string": ({"error": "model is loading"}, "an error: 'model is loading'"),
    "no choices": ({"id": "x", "object": "chat.completion", "choices": []}, "a completion without choices"),
    "choices null": ({"id": "x", "choices": None}, "a completion without choices"),
    "choice without message": ({"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]},
                               "a choice without a message"),
    "message is text": ({"choices": [{"index": 0, "message": "hi"}]}, "a choice without a message"),
    "content is a number": ({"choices": [{"message": {"role": "assistant", "content": 5}}]},
                            "a message in an unexpected shape"),
    "a list": ([1, 2, 3], "JSON: '\\[1, 2, 3\\]'"),
    "empty body": (html("", "text/plain"), "an empty body"),
    "plain text": (html("Service Unavailable", "text/plain"), "plain text: 'Service Unavailable'"),
}


@pytest.mark.parametrize("case", GARBAGE)
def test_a_200_that_is_not_a_completion_is_named(nim_settings, case):
    reply, words = GARBAGE[case]
    client, seen = recording_client(make_client(nim_settings), [reply])
    with pytest.raises(ResponseFormatError, match=words) as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert str(info.value).startswith(f"The server at {NIM_BASE_URL} answered HTTP 200 with ")
    assert isinstance(info.value, EndpointError) and len(seen) == 1


def test_a_garbage_200_that_echoes_the_key_does_not_show_it(nim_settings):
    echo = {"error": {"message": f"bad token {FAKE_KEY}"}}
    client, _ = recording_client(make_client(nim_settings), [echo])
    with pytest.raises(ResponseFormatError) as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert FAKE_KEY not in str(info.value) and "bad token ***" in str(info.value)


def test_a_garbage_200_chain_holds_no_body(nim_settings):
    client, _ = recording_client(make_client(nim_settings), [html(f"<p>{FAKE_KEY}", "application/json")])
    with pytest.raises(ResponseFormatError) as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert info.value.__context__ is None and FAKE_KEY not in str(info.value)


def test_explain_reads_fastapi_style_detail():
    request = httpx2.Request("POST", "http://x/v1/chat/completions")
    body = {"detail": "The model `foo` does not exist."}
    error = openai.NotFoundError("Error code: 404", response=httpx2.Response(404, request=request), body=body)
    assert "The model `foo` does not exist." in str(explain(error))


def test_an_error_that_echoes_the_key_does_not_show_it(nim_settings):
    echo = httpx2.Response(404, json={"error": {"message": f"no model for token {FAKE_KEY}"}})
    client, _ = recording_client(make_client(nim_settings), [echo])
    with pytest.raises(EndpointError, match=r"no model for token \*\*\*") as info:
        chat([{"role": "user", "content": "hello"}], client=client, settings=nim_settings)
    assert FAKE_KEY not in str(info.value)


# ---------------------------------------------------------------- a server that echoes the key (the keyed fixture: conftest.py)

@pytest.mark.parametrize("stream", [False, True])
def test_a_401_that_echoes_the_key_leaves_it_nowhere_in_the_chain(keyed, stream):
    settings, secret = keyed
    with pytest.raises(EndpointError) as info:
        chat([{"role": "user", "content": "hi"}], client=echoing_client(settings), settings=settings,
             stream=stream)
    assert "HTTP 401" in str(info.value)
    assert_no_secret(info.value, secret)


def test_an_error_event_inside_a_stream_that_echoes_the_key_leaves_it_nowhere_in_the_chain(keyed):
    settings, secret = keyed

    def handle(request):
        said = json.dumps({"error": {"message": f"bad key {request.headers.get('authorization')}",
                                     "type": "invalid_request_error"}})
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=f"data: {said}\n\n".encode())

    client = make_client(settings).with_options(
        max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    stream = chat([{"role": "user", "content": "hi"}], client=client, settings=settings, stream=True)
    with pytest.raises(ResponseFormatError) as info:
        list(read_streamed_reply(stream, settings))
    assert "error inside the stream" in str(info.value)
    assert_no_secret(info.value, secret)


def test_a_400_that_echoes_the_key_is_still_a_bad_request_without_it(keyed):
    settings, secret = keyed
    with pytest.raises(openai.BadRequestError) as info:
        chat([{"role": "user", "content": "hi"}], client=echoing_client(settings, 400), settings=settings)
    assert info.value.status_code == 400 and "invalid credentials: Bearer ***" in info.value.message
    assert_no_secret(info.value, secret)

# ---------------------------------------------------------------- ambient OpenAI headers

AMBIENT = {"OPENAI_CUSTOM_HEADERS": "Authorization: Bearer ambient-token\nX-Ambient: yes",
           "OPENAI_ORG_ID": "org-ambient", "OPENAI_PROJECT_ID": "proj-ambient",
           "OPENAI_ADMIN_KEY": "admin-ambient"}


@pytest.fixture
def captured_headers(monkeypatch):
    """Every request the default HTTP transport would send (answered here, never sent)."""
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    seen = []

    def handle_request(self, request):
        seen.append(request.headers)
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        if request.url.path.endswith("/embeddings"):
            return httpx2.Response(200, json={"object": "list", "model": "m", "usage": {"prompt_tokens": 1,
                                   "total_tokens": 1}, "data": [{"object": "embedding", "index": 0,
                                                                 "embedding": [0.6, 0.8]}]})
        if json.loads(request.content).get("stream"):
            return sse_reply(request, "fine")
        return httpx2.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                          "choices": [{"index": 0, "finish_reason": "stop",
                                                       "message": {"role": "assistant", "content": "hi"}}]})

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", handle_request)
    return seen


def test_requests_carry_the_configured_key_and_no_ambient_openai_headers(keyed, captured_headers):
    settings, secret = keyed
    client = make_client(settings)
    messages = [{"role": "user", "content": "hi"}]
    chat(messages, client=client, settings=settings)
    list(chat(messages, client=client, settings=settings, stream=True))
    embed_texts(client, ["a text"], model="m", input_type=None)
    chat(messages, client=client.with_options(max_retries=0), settings=settings)  # copies keep the rule
    check_endpoint(client, "m")
    assert len(captured_headers) >= 5
    for headers in captured_headers:
        assert headers["authorization"] == f"Bearer {secret}"
        assert not {"openai-organization", "openai-project", "x-ambient"} & {k.lower() for k in headers}
    assert client.admin_api_key is None and client.organization is None and client.project is None


def test_headers_passed_on_purpose_are_still_sent(keyed, captured_headers):
    settings, secret = keyed
    client = make_client(settings).with_options(default_headers={"X-Trace": "on-purpose"})
    chat([{"role": "user", "content": "hi"}], client=client, settings=settings)
    assert captured_headers[-1]["x-trace"] == "on-purpose"
    assert captured_headers[-1]["authorization"] == f"Bearer {secret}"


def test_a_200_that_echoes_a_password_from_the_base_url_does_not_show_it(monkeypatch, tmp_path):
    from helpers.llm.client import ResponseFormatError

    monkeypatch.chdir(tmp_path)
    settings = load_settings("openai-compatible", base_url="http://alice:PASSWORD1@echo.test/v1")
    echo = httpx2.MockTransport(lambda request: httpx2.Response(
        200, json={"error": {"message": "who is PASSWORD1?"}}))
    client = make_client(settings).with_options(http_client=httpx2.Client(transport=echo))
    with pytest.raises(ResponseFormatError) as info:
        chat([{"role": "user", "content": "hi"}], client=client, settings=settings)
    assert "who is ***?" in str(info.value)
    assert_no_secret(info.value, "PASSWORD1")


ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the offline client: one builder

def test_the_client_layer_hands_out_the_stand_ins_one_builder():
    assert llm_client.make_offline_client is server.make_offline_client


def test_the_default_client_is_answered_by_the_stand_in():
    client = make_offline_client()
    assert str(client.base_url).rstrip("/") == OFFLINE_BASE_URL and client.max_retries == 0
    reply = client.chat.completions.create(model="offline/stand-in", messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.role == "assistant"


def test_a_harness_passes_its_own_answer():
    seen = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        return server.handle(request)

    client = make_offline_client(answer, timeout=5)
    client.chat.completions.create(model="offline/stand-in", messages=[{"role": "user", "content": "hello"}])
    assert seen == ["/v1/chat/completions"] and client.timeout == 5


def test_the_offline_settings_build_the_same_client():
    client = make_client(load_settings("offline"))
    assert str(client.base_url).rstrip("/") == OFFLINE_BASE_URL and client.max_retries == 0


def test_no_other_module_builds_an_offline_client_itself():
    builders = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        if path == ROOT / "helpers" / "standin" / "server.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("httpx2.MockTransport", "openai.OpenAI"):
                builders.append((str(path.relative_to(ROOT)), ast.unparse(node)))
    # the one other: the stand-in as a bare transport, for a harness that wraps it (memory/evaluation.py)
    assert builders == [("helpers/llm/client.py", "httpx2.MockTransport(offline_handle)")], builders


def test_paced_asks_everything_offline_and_stops_in_time_on_a_real_server(monkeypatch):
    from helpers.llm import client as client_module

    offline = load_settings("offline")
    said = []
    assert list(client_module.paced(["a", "b", "c"], 0, settings=offline, say=said.append)) == ["a", "b", "c"]
    assert said == []
    clock = iter([0.0, 10.0, 50.0, 50.0])   # started, before "b", before "c", the line that says so
    monkeypatch.setattr(client_module.time, "monotonic", lambda: next(clock))
    real = load_settings("openai-compatible", base_url="http://127.0.0.1:8080/v1", chat_model="m")
    asked = list(client_module.paced(["a", "b", "c"], 45, settings=real, say=said.append))
    assert asked == ["a", "b"]   # "c" would start 50 s after the first question: left out, and said
    assert len(said) == 1 and "2 question(s)" in said[0] and "other 1" in said[0]

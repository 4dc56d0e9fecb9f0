import httpx2
import openai
import pytest

from helpers.llm.endpoint import check_endpoint, wait_until_ready
from helpers.llm.config import load_settings

MODELS = {"object": "list", "data": [{"id": "m", "object": "model"}]}
PAGE = "<!DOCTYPE html><html><head><title>Sign in</title></head><body>proxy</body></html>"


def fake_server(models, chat):
    """A client whose /models and /chat/completions answer with the given responses."""
    def handler(request):
        answer = models if request.url.path.endswith("/models") else chat
        return answer if isinstance(answer, httpx2.Response) else httpx2.Response(200, json=answer)

    return openai.OpenAI(api_key="sk-test-secret", base_url="http://fake.test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def test_waits_until_ready():
    answers = iter([ConnectionError(), 503, 503, 200])
    slept = []

    def get(url):
        assert url == "http://localhost:8000/v1/health/ready"
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    line = wait_until_ready("http://localhost:8000/v1/", interval=5, sleep=slept.append, get=get)
    assert line.startswith("READY") and "15 s" in line and slept == [5, 5, 5]


def test_gives_up_with_an_explanation():
    with pytest.raises(TimeoutError, match="not ready after 10 s .last: HTTP 503"):
        wait_until_ready("http://localhost:8000/v1", timeout=10, interval=5, sleep=lambda s: None,
                         get=lambda url: 503)


@pytest.mark.parametrize("models, words", [
    (httpx2.Response(200, text=PAGE, headers={"content-type": "text/html"}), "an HTML page titled 'Sign in'"),
    ({"error": {"message": "gateway says no"}}, "an error: 'gateway says no'"),
    ({"data": "m"}, "JSON: "),
    (httpx2.Response(200, text="<html>", headers={"content-type": "application/json"}), "an HTML page"),
])
def test_a_model_list_that_is_not_one_is_named(models, words):
    status = check_endpoint(fake_server(models, {}), "m")
    assert not status.ok and status.problem.startswith("the model list came back HTTP 200 with " + words)


@pytest.mark.parametrize("chat, words", [
    (httpx2.Response(200, text=PAGE, headers={"content-type": "text/html"}), "an HTML page titled 'Sign in'"),
    ({"id": "x", "choices": []}, "a completion without choices"),
    ({"error": {"message": "sk-test-secret is not allowed"}}, "an error: '*** is not allowed'"),
    (httpx2.Response(200, text="<p>", headers={"content-type": "application/json"}),
     "a body labelled JSON that is not JSON"),
])
def test_a_chat_reply_that_is_not_a_completion_is_not_ok(chat, words):
    status = check_endpoint(fake_server(MODELS, chat), "m")
    assert not status.ok and status.problem.startswith("the chat request came back HTTP 200 with " + words)
    assert "sk-test-secret" not in str(status)


def test_a_working_server_is_ok():
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "length",
                               "message": {"role": "assistant", "content": "OK"}}]}
    assert check_endpoint(fake_server(MODELS, completion), "m").ok


def test_error_text_is_read_like_the_call_path_reads_it():
    detail = httpx2.Response(500, json={"detail": "CUDA out of memory\n  on device 0"})
    status = check_endpoint(fake_server(MODELS, detail), "m")
    assert status.problem == "chat request failed with HTTP 500: CUDA out of memory on device 0"


def test_notebook_04_settings_check_tries_a_configured_key_and_restores_the_environment(monkeypatch, capsys):
    import os

    from helpers.exercises import nb04

    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    solution = {}
    exec(nb04.exercise_1.solution_code, nb04.exercise_1.context() | solution, solution)  # noqa: S102
    assert nb04.exercise_1.check(solution["vllm_settings"])

    def automatic(base_url, model):  # right without a key; with one, leaves the choice to the key
        from helpers.llm.config import load_settings
        return load_settings("openai-compatible" if "NVIDIA_API_KEY" not in os.environ else None,
                             base_url=base_url, chat_model=model)

    capsys.readouterr()
    assert not nb04.exercise_1.check(automatic)
    said = capsys.readouterr().out
    assert said.startswith("✗ when NVIDIA_API_KEY is set") and "nvapi-" not in said
    assert "NVIDIA_API_KEY" not in os.environ


def test_notebook_04_diagnosis_check_needs_ok_before_the_model_list():
    from helpers.exercises import nb04

    def by_model_list(status):  # reads model_found before ok: wrong for servers that list no models
        if not status.reachable:
            return "unreachable"
        if status.key_accepted is False:
            return "key rejected"
        if not status.model_found:
            return "no such model"
        return "ok" if status.ok else "no chat reply"

    assert not nb04.exercise_2.check(by_model_list)


def test_notebook_04_hosted_nim_cell_counts_a_key_from_dotenv(tmp_path, monkeypatch, capsys):
    """A key in .env (or a Colab secret) counts, not only the environment variable; nothing prompts."""
    import json as _json
    from pathlib import Path

    from helpers.llm.api_key import find_api_key
    from helpers.llm.config import load_settings

    notebook = Path(__file__).resolve().parents[1] / "notebooks/04_portability.ipynb"
    cells = _json.loads(notebook.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells
                  if c["cell_type"] == "code" and "skipped: no NVIDIA_API_KEY" in "".join(c["source"]))
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("NVIDIA_API_KEY=nvapi-from-dotenv-example\n")
    asked = []
    namespace = {"find_api_key": find_api_key, "load_settings": load_settings, "ask": asked.append,
                 "os": __import__("os")}
    exec(compile(source, "04-hosted-nim", "exec"), namespace)  # noqa: S102 - the notebook's own cell
    assert [s.key_source for s in asked] == [".env file"] and asked[0].backend == "nim"
    assert "nvapi-from-dotenv" not in capsys.readouterr().out


def test_check_endpoint_never_shows_credentials_from_the_url():
    def handle(request):
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        return httpx2.Response(500, json={"error": {"message": f"upstream failed for {request.url}"}})

    client = openai.OpenAI(api_key="sk-endpoint-key", max_retries=0,
                           base_url="http://alice:PASSWORD@fake.test/v1/?token=TOKEN123",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    status = check_endpoint(client, "m")
    assert not status.ok and "HTTP 500" in status.problem
    for text in (str(status), repr(status), status.base_url, status.problem):
        assert "PASSWORD" not in text and "TOKEN123" not in text and "alice" not in text


def test_wait_until_ready_never_shows_credentials_from_the_url():
    from helpers.llm.endpoint import wait_until_ready

    base = "http://alice:PASSWORD@localhost:8000/v1"
    line = wait_until_ready(base, sleep=lambda s: None, get=lambda url: 200)
    assert line == "READY: http://localhost:8000/v1/health/ready after 0 s"
    with pytest.raises(TimeoutError) as info:
        wait_until_ready(base, timeout=5, interval=5, sleep=lambda s: None, get=lambda url: 503)
    assert "PASSWORD" not in str(info.value) and "alice" not in str(info.value)

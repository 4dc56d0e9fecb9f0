"""One way to build the offline client: ``make_offline_client`` (from ``helpers.llm.client``), with the stand-in's
own answer or a harness's own, and every place that needs an offline client uses it."""
import ast
from pathlib import Path

import httpx2

from helpers.llm import client as llm_client
from helpers.llm.client import make_client, make_offline_client
from helpers.llm.config import OFFLINE_BASE_URL, load_settings
from helpers.standin import server

ROOT = Path(__file__).resolve().parents[1]


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

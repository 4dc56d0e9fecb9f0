"""Test-wide settings: see workshop_env.py (offline backend, frozen clock, no prompts, no real key)."""
import pytest

import workshop_env

workshop_env.apply()
FROZEN_NOW = workshop_env.FROZEN_NOW


@pytest.fixture(autouse=True)
def _fresh_default_client():
    """Each test starts with no shared client, so environment changes take effect."""
    from helpers.llm import client

    client.reset_default()
    yield
    client.reset_default()



@pytest.fixture(scope="module")
def server():
    """One real llama.cpp server for the module, on a free loopback port; its process group is ended afterwards."""
    import llama_server

    llama_server.require_installed()
    with llama_server.LlamaServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _real_server_still_running(request):
    """Once a real server has died, every test using it says why (signal, log tail), not a connection error."""
    if "server" not in request.fixturenames:
        yield
        return
    import llama_server

    running = request.getfixturevalue("server")
    try:
        running.check_alive()
    except llama_server.ServerError as err:
        pytest.fail(str(err), pytrace=False)
    yield
    try:
        running.check_alive()
    except llama_server.ServerError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def client():
    """The offline client (the stand-in behind the real openai client), one per test module."""
    from helpers.standin.server import make_offline_client

    return make_offline_client()


@pytest.fixture(scope="module")
def offline():
    """What a notebook passes to the package offline: the offline client and the offline settings."""
    from helpers.llm.config import load_settings
    from helpers.standin.server import make_offline_client

    return {"client": make_offline_client(), "settings": load_settings("offline")}


@pytest.fixture(params=["openai-compatible", "nim"])
def keyed(request, monkeypatch, tmp_path):
    """Settings holding a key a server may echo back (support.SECRET or support.NIM_KEY), and that key."""
    from helpers.llm.config import load_settings
    from support import NIM_KEY, SECRET

    monkeypatch.chdir(tmp_path)
    if request.param == "nim":
        monkeypatch.setenv("NVIDIA_API_KEY", NIM_KEY)
        return load_settings("nim"), NIM_KEY
    monkeypatch.setenv("WORKSHOP_API_KEY", SECRET)
    return load_settings("openai-compatible", base_url="http://echo.test/v1"), SECRET


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    """Each storage backend in turn (the PostgreSQL rows need ``bash tests/setup_postgres.sh``: they skip
    without a server, and fail instead with ``WORKSHOP_REQUIRE_POSTGRES=1``)."""
    return request.param


@pytest.fixture
def sessions(backend, tmp_path):
    """A session store on ``backend``, closed afterwards."""
    from support import session_store

    store = session_store(backend, tmp_path)
    yield store
    store.close()


@pytest.fixture
def facts(backend, tmp_path):
    """A fact memory over a fact store on the same ``backend`` as ``sessions``, closed afterwards."""
    from helpers.facts.writer import FactMemory
    from support import fact_store

    memory = FactMemory(fact_store(backend, tmp_path))
    yield memory
    memory.close()

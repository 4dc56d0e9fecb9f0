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

import sys
import types

import pytest

from helpers import config
from helpers.config import ConfigError, find_api_key, load_settings

FAKE_KEY = "nvapi-" + "x" * 20


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No key anywhere: empty environment, no Colab, an empty working directory."""
    for name in ("NVIDIA_API_KEY", "WORKSHOP_BACKEND", "WORKSHOP_BASE_URL", "WORKSHOP_CHAT_MODEL",
                 "WORKSHOP_EMBEDDING_MODEL", "OPENAI_API_KEY", "WORKSHOP_TEMPERATURE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORKSHOP_NO_PROMPT", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return tmp_path


def fake_colab(monkeypatch, behaviour):
    """Install a fake google.colab.userdata whose get() runs ``behaviour``."""
    userdata = types.SimpleNamespace(get=behaviour)
    colab = types.ModuleType("google.colab")
    colab.userdata = userdata
    google = types.ModuleType("google")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)


def test_no_key_means_offline(clean_env):
    settings = load_settings()
    assert settings.backend == "offline"
    assert "NOT a language model" in settings.describe()


def test_environment_key_means_nim(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    settings = load_settings()
    assert (settings.backend, settings.base_url) == ("nim", config.NIM_BASE_URL)
    assert settings.chat_model == "meta/llama-3.3-70b-instruct"
    assert settings.embedding_model == "nvidia/nv-embedqa-e5-v5"
    assert settings.temperature == 0.2
    assert settings.key_source == "environment"


def test_explicit_backend_wins_over_key(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    assert load_settings("offline").backend == "offline"
    monkeypatch.setenv("WORKSHOP_BACKEND", "offline")
    assert load_settings().backend == "offline"


def test_models_overridable_by_environment(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "meta/llama-3.1-8b-instruct")
    monkeypatch.setenv("WORKSHOP_EMBEDDING_MODEL", "nvidia/llama-3.2-nv-embedqa-1b-v2")
    settings = load_settings()
    assert settings.chat_model == "meta/llama-3.1-8b-instruct"
    assert settings.embedding_model == "nvidia/llama-3.2-nv-embedqa-1b-v2"


def test_colab_secret_is_second(clean_env, monkeypatch):
    fake_colab(monkeypatch, lambda name: FAKE_KEY if name == "NVIDIA_API_KEY" else None)
    assert find_api_key() == (FAKE_KEY, "Colab secret")
    monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-from-env")
    assert find_api_key() == ("nvapi-from-env", "environment")


@pytest.mark.parametrize("error_name", ["SecretNotFoundError", "NotebookAccessError"])
def test_colab_secret_errors_fall_through(clean_env, monkeypatch, error_name):
    error = type(error_name, (Exception,), {})

    def refuse(name):
        raise error(name)

    fake_colab(monkeypatch, refuse)
    assert find_api_key() == (None, "none")


def test_dotenv_is_third(clean_env):
    (clean_env / ".env").write_text(f"NVIDIA_API_KEY={FAKE_KEY}\n")
    assert find_api_key() == (FAKE_KEY, ".env file")


def test_no_prompt_when_not_interactive(clean_env, monkeypatch):
    asked = []
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: asked.append(1) or FAKE_KEY)
    assert load_settings().backend == "offline"
    assert asked == []


def test_prompt_only_when_interactive(clean_env, monkeypatch):
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: FAKE_KEY)
    assert find_api_key(prompt=True) == (FAKE_KEY, "prompt")


def test_prompt_failure_stays_offline(clean_env, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("stdin not available")

    monkeypatch.setattr("getpass.getpass", broken)
    assert find_api_key(prompt=True) == (None, "none")


def test_nim_without_key_is_explained(clean_env):
    with pytest.raises(ConfigError, match="NVIDIA_API_KEY"):
        load_settings("nim")


def test_openai_compatible_needs_base_url(clean_env):
    with pytest.raises(ConfigError, match="WORKSHOP_BASE_URL"):
        load_settings("openai-compatible")


def test_openai_compatible_uses_base_url(clean_env, monkeypatch):
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:8000/v1/")
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "smollm2")
    settings = load_settings("openai-compatible")
    assert (settings.base_url, settings.chat_model) == ("http://127.0.0.1:8000/v1", "smollm2")


def test_unknown_backend_is_named(clean_env):
    with pytest.raises(ConfigError, match="'cloud'"):
        load_settings("cloud")


def test_key_is_not_in_repr_or_description(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    settings = load_settings()
    assert FAKE_KEY not in repr(settings)
    assert FAKE_KEY not in settings.describe()


def test_bad_number_is_explained(clean_env, monkeypatch):
    monkeypatch.setenv("WORKSHOP_TEMPERATURE", "warm")
    with pytest.raises(ConfigError, match="WORKSHOP_TEMPERATURE"):
        load_settings()


def test_arguments_take_the_place_of_environment(clean_env):
    settings = load_settings("openai-compatible", base_url="http://localhost:8001/v1", chat_model="m", timeout=5)
    assert (settings.base_url, settings.chat_model, settings.timeout) == ("http://localhost:8001/v1", "m", 5)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "two"])
def test_bad_retry_count_is_explained(clean_env, value, monkeypatch):
    monkeypatch.setenv("WORKSHOP_MAX_RETRIES", value)
    with pytest.raises(ConfigError, match="WORKSHOP_MAX_RETRIES"):
        load_settings()


def test_nvidia_key_is_not_sent_to_other_servers(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", FAKE_KEY)
    other = load_settings("openai-compatible", base_url="http://third-party.example/v1")
    assert other.api_key == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    assert load_settings("openai-compatible", base_url="http://third-party.example/v1").api_key == "sk-other"
    nvidia = load_settings("openai-compatible", base_url="https://ai.api.nvidia.com/v1")
    assert nvidia.api_key == FAKE_KEY

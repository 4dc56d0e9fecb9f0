import os
import re
import sys
import traceback
import types
from pathlib import Path

import pytest

from helpers.llm import api_key, config, dotenv_file
from helpers.llm.api_key import KEY_NAME, check_key_destination, find_api_key
from helpers.llm.config import OTHER_KEY_NAMES, Settings, load_settings
from helpers.core.errors import ConfigError

FAKE_KEY = "nvapi-" + "x" * 20
SECRET = "nvapi-Q7rT9zLm4Kp2Wx8Vb3NcHd6F"  # looks like a real key, so leaks are easy to search for


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No key anywhere: no documented setting in the environment, no Colab, an empty working directory."""
    for name in dotenv_file.DOCUMENTED_SETTINGS + ("CI",):
        monkeypatch.setenv(name, "")  # recorded, so whatever load_settings copies from .env is undone
        monkeypatch.delenv(name)
    monkeypatch.setenv("WORKSHOP_NO_PROMPT", "1")
    monkeypatch.setattr(api_key, "_typed_key", None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return tmp_path


def chain_text(error: BaseException) -> str:
    """Everything an exception and its chain can show: messages, reprs, arguments and the traceback."""
    parts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts += [str(error), repr(error), repr(error.args), repr(vars(error))]
        error = error.__cause__ or error.__context__
    return "\n".join(parts)


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


# ---------------------------------------------------------------- the NVIDIA key: https to NVIDIA only

NOT_NVIDIA = [
    "http://integrate.api.nvidia.com/v1",              # not https
    "https://integrate.api.nvidia.com@evil.example/v1",  # user info: the host is evil.example
    "https://evil.example\\@integrate.api.nvidia.com/v1",
    "https://integrate.api.nvidia.com./v1",            # trailing dot
    "https://evilnvidia.com/v1",
    "https://nvidia.com.evil.example/v1",
    "https://evil.example\\.nvidia.com/v1",
    "https://evil.example/.nvidia.com/v1",
    "https://evil.example?.nvidia.com",
    "https://nvidia.com\u3002evil.example/v1",         # an ideographic full stop becomes a dot on the wire
    "https://integrate.api.nvidia.com:8443/v1",
    "https://user:pw@integrate.api.nvidia.com/v1",
    "http://localhost:8000/v1",
    "https://api.openai.com/v1",
]
NVIDIA = ["https://integrate.api.nvidia.com/v1", "https://INTEGRATE.API.NVIDIA.COM/v1",
          "https://ai.api.nvidia.com/v1", "https://integrate.api.nvidia.com:443/v1", "https://nvidia.com/v1"]


@pytest.mark.parametrize("url", NOT_NVIDIA)
def test_nim_refuses_any_address_but_nvidia_over_https(clean_env, monkeypatch, url):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    with pytest.raises(ConfigError, match="only ever goes over https to nvidia.com") as info:
        load_settings("nim", base_url=url)
    assert "WORKSHOP_BACKEND=openai-compatible" in str(info.value) and SECRET not in chain_text(info.value)
    assert "pw" not in str(info.value).replace("https", "")  # no password from the address either


def test_base_url_variable_with_a_key_is_refused_and_says_why(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://localhost:8000/v1")
    with pytest.raises(ConfigError, match=r"chosen because NVIDIA_API_KEY is set.*not https"):
        load_settings()


@pytest.mark.parametrize("url", NVIDIA)
def test_nvidia_https_addresses_get_the_key(clean_env, monkeypatch, url):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    assert load_settings("nim", base_url=url).api_key == SECRET
    assert load_settings("openai-compatible", base_url=url).api_key == SECRET


@pytest.mark.parametrize("url", NOT_NVIDIA)
def test_openai_compatible_elsewhere_never_gets_the_nvidia_key(clean_env, monkeypatch, url):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    settings = load_settings("openai-compatible", base_url=url)
    assert settings.api_key == config.PLACEHOLDER_KEY and settings.key_name is None
    monkeypatch.setenv("WORKSHOP_API_KEY", "sk-local")
    settings = load_settings("openai-compatible", base_url=url)
    assert (settings.api_key, settings.key_name) == ("sk-local", "WORKSHOP_API_KEY")


@pytest.mark.parametrize("changes", [
    {"base_url": "https://evil.example/v1"},
    {"base_url": "http://integrate.api.nvidia.com/v1"},
    {"base_url": ""},  # the openai client would fall back to OPENAI_BASE_URL or api.openai.com
])
def test_settings_changed_afterwards_are_checked_again(clean_env, monkeypatch, changes):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    moved = load_settings().with_overrides(**changes)
    with pytest.raises(ConfigError, match="only ever sent over https") as info:
        check_key_destination(moved)
    assert SECRET not in chain_text(info.value)


def test_a_key_that_looks_like_nvidias_is_refused_elsewhere_whatever_its_label(clean_env):
    by_hand = Settings(backend="openai-compatible", base_url="http://localhost:8000/v1", chat_model="m",
                       embedding_model="e", api_key=SECRET, key_source="WORKSHOP_API_KEY")
    with pytest.raises(ConfigError, match="NVIDIA_API_KEY"):
        check_key_destination(by_hand)
    with pytest.raises(ConfigError):
        load_settings("openai-compatible", base_url="http://localhost:8000/v1", api_key=SECRET)


# ---------------------------------------------------------------- .env supplies every documented setting

def documented_in_env_example() -> set[str]:
    text = (Path(__file__).resolve().parents[1] / ".env.example").read_text()
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))


def test_every_documented_setting_is_known(clean_env):
    assert documented_in_env_example() == set(dotenv_file.DOCUMENTED_SETTINGS)


def test_every_key_variable_is_kept_out_of_the_environment():
    assert dotenv_file.SECRET_SETTINGS == (KEY_NAME, *OTHER_KEY_NAMES)


def test_dotenv_supplies_every_documented_setting(clean_env):
    (clean_env / ".env").write_text(
        "WORKSHOP_BACKEND=openai-compatible\nWORKSHOP_BASE_URL=http://127.0.0.1:8080/v1\n"
        "WORKSHOP_API_KEY=sk-local\nWORKSHOP_CHAT_MODEL=smollm2\nWORKSHOP_EMBEDDING_MODEL=emb\n"
        "WORKSHOP_TEMPERATURE=0.7\nWORKSHOP_TIMEOUT=12\nWORKSHOP_MAX_RETRIES=1\n"
        "WORKSHOP_NOW=2026-01-02T03:04:05+00:00\nWORKSHOP_SERVER_PROFILE=llama.cpp\n"
        "WORKSHOP_SUMMARY_MODEL=summ\nWORKSHOP_SESSION_DB=/tmp/s.db\nWORKSHOP_CACHE_DIR=/tmp/c\n"
        "WORKSHOP_USER=ada\n"
    )
    settings = load_settings()
    assert (settings.backend, settings.base_url, settings.chat_model, settings.embedding_model) == (
        "openai-compatible", "http://127.0.0.1:8080/v1", "smollm2", "emb")
    assert (settings.temperature, settings.timeout, settings.max_retries) == (0.7, 12.0, 1)
    assert (settings.api_key, settings.key_source) == ("sk-local", "WORKSHOP_API_KEY")
    # Settings read by other modules reach them through the environment; keys never do.
    assert os.environ["WORKSHOP_NOW"] == "2026-01-02T03:04:05+00:00"
    assert os.environ["WORKSHOP_USER"] == "ada" and os.environ["WORKSHOP_SERVER_PROFILE"] == "llama.cpp"
    assert "WORKSHOP_API_KEY" not in os.environ


def test_environment_wins_over_dotenv(clean_env, monkeypatch):
    (clean_env / ".env").write_text("WORKSHOP_BACKEND=openai-compatible\nWORKSHOP_TIMEOUT=12\n"
                                    "WORKSHOP_USER=ada\n")
    monkeypatch.setenv("WORKSHOP_BACKEND", "offline")
    monkeypatch.setenv("WORKSHOP_TIMEOUT", "7")
    monkeypatch.setenv("WORKSHOP_USER", "grace")
    settings = load_settings()
    assert (settings.backend, settings.timeout, os.environ["WORKSHOP_USER"]) == ("offline", 7.0, "grace")


def test_dotenv_key_is_not_copied_into_the_environment(clean_env):
    (clean_env / ".env").write_text(f"NVIDIA_API_KEY={SECRET}\n")
    settings = load_settings()
    assert (settings.backend, settings.key_source) == ("nim", ".env file")
    assert "NVIDIA_API_KEY" not in os.environ


def test_a_dotenv_that_is_not_utf8_names_the_file(clean_env):
    (clean_env / ".env").write_bytes(f"NVIDIA_API_KEY={SECRET}\nWORKSHOP_USER=J\xfcrgen\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"\.env is not UTF-8") as info:
        load_settings()
    assert str(clean_env / ".env") in str(info.value)
    assert SECRET not in chain_text(info.value) and info.value.__context__ is None


# ---------------------------------------------------------------- malformed keys

MALFORMED = {
    "line break": SECRET[:12] + "\n" + SECRET[12:],
    "space or tab": SECRET[:12] + " " + SECRET[12:],
    "invisible non-ASCII character U+200B": SECRET[:12] + "\u200b" + SECRET[12:],
    "non-ASCII character U+00E9": SECRET[:12] + "\u00e9" + SECRET[12:],
    "control character": SECRET[:12] + "\x07" + SECRET[12:],
}


def leaked(error: BaseException) -> bool:
    """Whether any part of the secret longer than a few characters shows anywhere in the error chain."""
    text = chain_text(error) + "".join(traceback.format_exception(error))
    return SECRET[:12] in text or SECRET[12:] in text


@pytest.mark.parametrize("what", MALFORMED)
@pytest.mark.parametrize("where", ["environment", ".env file", "WORKSHOP_API_KEY"])
def test_malformed_keys_are_refused_early_without_showing_them(clean_env, monkeypatch, what, where):
    bad = MALFORMED[what]
    if where == "environment":
        monkeypatch.setenv("NVIDIA_API_KEY", bad)
    elif where == ".env file":
        (clean_env / ".env").write_text(f'NVIDIA_API_KEY="{bad}"\n', encoding="utf-8")
    else:
        monkeypatch.setenv("WORKSHOP_API_KEY", bad)
    words = f"cannot be an API key: character 13 of {len(bad)} is .*{re.escape(what)}"
    with pytest.raises(ConfigError, match=words) as info:
        load_settings("openai-compatible" if where == "WORKSHOP_API_KEY" else None,
                      base_url="http://localhost:8000/v1" if where == "WORKSHOP_API_KEY" else None)
    assert not leaked(info.value)
    assert (where if where != ".env file" else "NVIDIA_API_KEY (from .env file)") in str(info.value)


@pytest.mark.parametrize("bad", list(MALFORMED.values()) + [SECRET + "\n"])
def test_settings_built_by_hand_refuse_malformed_keys(clean_env, bad):
    with pytest.raises(ConfigError) as info:
        Settings(backend="nim", base_url=config.NIM_BASE_URL, chat_model="m", embedding_model="e",
                 key_source="environment", api_key=bad)
    assert not leaked(info.value) and "NVIDIA_API_KEY" in str(info.value)


def test_surrounding_whitespace_of_a_pasted_key_is_forgiven(clean_env, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", f"  {SECRET}\n")
    assert load_settings().api_key == SECRET


# ---------------------------------------------------------------- numeric ranges

@pytest.mark.parametrize("name, value, allowed", [
    ("WORKSHOP_TIMEOUT", "0", "above 0"), ("WORKSHOP_TIMEOUT", "-1", "above 0"),
    ("WORKSHOP_TIMEOUT", "nan", "above 0"), ("WORKSHOP_TIMEOUT", "inf", "above 0"),
    ("WORKSHOP_TEMPERATURE", "nan", "from 0 to 2"), ("WORKSHOP_TEMPERATURE", "-0.1", "from 0 to 2"),
    ("WORKSHOP_TEMPERATURE", "2.5", "from 0 to 2"), ("WORKSHOP_TEMPERATURE", "inf", "from 0 to 2"),
    ("WORKSHOP_MAX_RETRIES", "11", "from 0 to 10"), ("WORKSHOP_MAX_RETRIES", "1000000000", "from 0 to 10"),
])
def test_numeric_settings_out_of_range_are_named(clean_env, monkeypatch, name, value, allowed):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=f"{name}.*{allowed}"):
        load_settings()


@pytest.mark.parametrize("change", [{"timeout": 0}, {"timeout": float("inf")}, {"temperature": float("nan")},
                                    {"max_retries": -1}, {"max_retries": 11}, {"max_retries": 2.5}])
def test_out_of_range_keywords_are_refused_too(clean_env, change):
    with pytest.raises(ConfigError, match=next(iter(change))):
        load_settings("offline", **change)
    with pytest.raises(ConfigError, match=next(iter(change))):
        load_settings("offline").with_overrides(**change)


def test_range_edges_are_allowed(clean_env, monkeypatch):
    monkeypatch.setenv("WORKSHOP_TEMPERATURE", "2")
    monkeypatch.setenv("WORKSHOP_MAX_RETRIES", "10")
    monkeypatch.setenv("WORKSHOP_TIMEOUT", "0.5")
    settings = load_settings()
    assert (settings.temperature, settings.max_retries, settings.timeout) == (2.0, 10, 0.5)
    assert load_settings(temperature=0, max_retries=0).temperature == 0


# ---------------------------------------------------------------- nothing prompts unless asked

@pytest.fixture
def a_person_at_the_keyboard(clean_env, monkeypatch):
    """A session where someone could answer (a browser kernel with stdin); records every prompt."""
    monkeypatch.delenv("WORKSHOP_NO_PROMPT")
    monkeypatch.setattr(config, "is_interactive", lambda: True)
    asked = []
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: asked.append(a) or SECRET)
    return asked


def test_no_key_never_prompts_even_when_someone_could_answer(a_person_at_the_keyboard):
    from helpers.llm.client import get_client, get_settings

    assert load_settings().backend == "offline"
    get_client(quiet=True)
    assert get_settings().backend == "offline" and find_api_key() == (None, "none")
    assert a_person_at_the_keyboard == []


def test_prompt_only_when_asked_for(a_person_at_the_keyboard):
    settings = load_settings(prompt=True)
    assert (settings.backend, settings.key_source, settings.api_key) == ("nim", "prompt", SECRET)
    assert len(a_person_at_the_keyboard) == 1


def test_ask_for_key_uses_the_typed_key_from_then_on(a_person_at_the_keyboard, capsys):
    from helpers.llm.client import get_settings

    assert get_settings().backend == "offline"
    config.ask_for_key()
    assert get_settings().backend == "nim" and get_settings().key_source == "prompt"
    out = capsys.readouterr().out
    assert "Backend: nim" in out and "NVIDIA_API_KEY from prompt" in out and SECRET not in out


def test_ask_for_key_does_not_wait_where_no_one_can_answer(clean_env, monkeypatch, capsys):
    asked = []
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: asked.append(a) or SECRET)
    config.ask_for_key()
    assert asked == [] and "Not asking" in capsys.readouterr().out
    assert load_settings().backend == "offline"


def test_ask_for_key_refuses_a_malformed_answer(a_person_at_the_keyboard, monkeypatch):
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: MALFORMED["line break"])
    with pytest.raises(ConfigError, match="line break") as info:
        config.ask_for_key()
    assert not leaked(info.value) and api_key._typed_key is None


def test_terminal_chat_defaults_come_from_dotenv(clean_env, monkeypatch):
    from helpers.app import terminal_chat as cli

    (clean_env / ".env").write_text("WORKSHOP_USER=ada\nWORKSHOP_SESSION_DB=from-dotenv.db\n")
    seen = []
    monkeypatch.setattr(cli, "run_chat", lambda args: seen.append(args) or 0)
    assert cli.main(["chat"]) == 0
    assert seen[0].user == "ada" and cli.default_db_path() == "from-dotenv.db"


@pytest.mark.parametrize("allow_stdin", [True, False])
def test_a_kernel_counts_as_interactive_only_when_it_takes_input(clean_env, monkeypatch, allow_stdin):
    import IPython

    monkeypatch.delenv("WORKSHOP_NO_PROMPT")
    shell = type("Shell", (), {"kernel": types.SimpleNamespace(_allow_stdin=allow_stdin)})()  # Colab's name
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert config.is_interactive() is allow_stdin


def test_a_keyword_replaces_a_bad_environment_number(clean_env, monkeypatch):
    monkeypatch.setenv("WORKSHOP_TIMEOUT", "0")
    assert load_settings("offline", timeout=5).timeout == 5


# ---------------------------------------------------------------- Settings is the one place for settings

SETTINGS_MODULES = {"helpers/llm/config.py", "helpers/llm/dotenv_file.py", "helpers/llm/api_key.py"}  # they build Settings
# (file, variable): why that module reads the environment itself instead of taking it from Settings.
ENVIRONMENT_READS = {
    ("helpers/core/clock.py", "WORKSHOP_NOW"): "the frozen clock is read on every call: tools ask for the time with no "
                                          "settings in reach, and a test that sets it must move the clock at once",
    ("helpers/retrieval/knowledge.py", "WORKSHOP_CACHE_DIR"): "a local knowledge base (client=None) is built without settings",
    ("helpers/retrieval/embeddings.py", "TQDM_DISABLE"): "tqdm's own switch for progress bars, not a workshop setting",
    ("helpers/app/terminal_chat.py", "WORKSHOP_SESSION_DB"): "the terminal chat's default --db, before any settings are loaded",
    ("helpers/app/terminal_chat.py", "XDG_DATA_HOME"): "where the desktop keeps user data: the default --db's folder",
    ("helpers/app/terminal_chat.py", "WORKSHOP_USER"): "the terminal chat's default --user",
    ("helpers/app/terminal_chat.py", "WORKSHOP_BACKEND"): "the terminal chat defaults to offline unless a backend is named",
}


def environment_reads():
    """(file, variable or None) for every use of os.environ / os.getenv in helpers/ (exercises left out)."""
    import ast
    import importlib

    helpers_dir = Path(config.__file__).resolve().parents[1]
    found = []
    for path in sorted(helpers_dir.rglob("*.py")):
        relative = str(path.relative_to(helpers_dir.parent))
        if "exercises" in path.relative_to(helpers_dir).parts or relative in SETTINGS_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            is_env = (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv", "unsetenv")
                      and isinstance(node.value, ast.Name) and node.value.id == "os")
            is_env = is_env or (isinstance(node, ast.Name) and node.id in ("environ", "getenv"))
            if not is_env:
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.attr == "get":  # os.environ.get(NAME, ...)
                parent = parents.get(parent)
            key = None
            if isinstance(parent, ast.Call) and parent.args:
                key = parent.args[0]
            elif isinstance(parent, ast.Subscript):  # os.environ[NAME]
                key = parent.slice
            name = None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                name = key.value
            elif isinstance(key, ast.Name):  # a module constant such as ENV_VAR
                module = importlib.import_module(".".join(path.relative_to(helpers_dir.parent).with_suffix("").parts))
                name = getattr(module, key.id, None)
            found.append((relative, name))
    return found


def test_only_the_settings_modules_read_the_environment():
    unexpected = sorted({read for read in environment_reads() if read not in ENVIRONMENT_READS}, key=str)
    assert not unexpected, ("read these through Settings (helpers.llm.config.load_settings / get_settings), "
                            f"or list them in ENVIRONMENT_READS with the reason: {unexpected}")


def test_every_listed_environment_read_is_still_there():
    assert set(ENVIRONMENT_READS) <= set(environment_reads())


def test_the_summary_model_and_server_profile_come_from_settings(clean_env, monkeypatch):
    from types import SimpleNamespace

    from helpers.llm.compat import LLAMA_CPP, profile_for
    from helpers.memory.summary import summary_model

    monkeypatch.setenv("WORKSHOP_SUMMARY_MODEL", "meta/small")
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "llama.cpp")
    settings = load_settings("openai-compatible", base_url="http://127.0.0.1:8080/v1")
    assert settings.summary_model == "meta/small" and summary_model(settings) == "meta/small"
    assert settings.server_profile == "llama.cpp" and profile_for(settings) is LLAMA_CPP
    by_hand = SimpleNamespace(backend="openai-compatible", chat_model="m")  # not loaded: the environment is not read
    assert summary_model(by_hand) == "m" and profile_for(by_hand).name == "openai-compatible"

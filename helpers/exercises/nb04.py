"""Exercises of notebook 04 (portability). Nothing here contacts a server except the offline stand-in,
and no check depends on the day or on the backend the notebook is configured for: the settings check lets
``load_settings`` see only the environment it sets (no ``.env`` file, Colab secret or typed key)."""
from __future__ import annotations

import os
from contextlib import contextmanager

from helpers.llm.api_key import KEY_NAME
from helpers.llm.config import load_settings
from helpers.llm.endpoint import EndpointStatus, check_endpoint
from helpers.core.errors import ConfigError
from helpers.exercises import Exercise, Hint
from helpers.llm.client import make_client

# A stand-in for a real key: the check sets it so that the lesson's case (a key is configured) is tried.
_EXAMPLE_KEY = "nvapi-exercise-example-not-a-real-key"
_SERVERS = (("http://localhost:8001/v1", "meta-llama/Llama-3.1-8B-Instruct"),
            ("http://10.0.0.7:8000/v1", "Qwen/Qwen2.5-7B-Instruct"))


@contextmanager
def _only_the_environment():
    """While the block runs, load_settings reads os.environ alone: no .env file, Colab secret or typed key.

    Otherwise a learner's .env (WORKSHOP_BACKEND=openai-compatible, written for a local server) would make a
    settings function that leaves the backend to the automatic choice look right.
    """
    import helpers.llm.config as config

    def key_from_the_environment(prompt: bool = False):
        key = os.environ.get(KEY_NAME)
        return (key, "environment") if key else (None, "none")

    saved = config.read_dotenv, config.find_api_key
    config.read_dotenv, config.find_api_key = (lambda path=None: {}), key_from_the_environment
    try:
        yield
    finally:
        config.read_dotenv, config.find_api_key = saved


@contextmanager
def _environment(**values: str | None):
    """Set (or, with None, remove) environment variables for the duration of the block."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def _restore(saved: dict[str, str], names: list[str]) -> None:
    """Put these environment variables back as they were in ``saved``."""
    for name in names:
        os.environ.pop(name, None) if name not in saved else os.environ.__setitem__(name, saved[name])


_SETTING_NAMES = ("WORKSHOP_BACKEND", "WORKSHOP_BASE_URL", "WORKSHOP_CHAT_MODEL", "WORKSHOP_SERVER_PROFILE",
                  "WORKSHOP_EMBEDDINGS", "WORKSHOP_EMBEDDING_MODEL", "WORKSHOP_API_KEY")


def _check_settings(vllm_settings) -> str:
    if not callable(vllm_settings):
        raise Hint("vllm_settings must be a function: def vllm_settings(base_url, model): ...")
    set_in_environment: set[str] = set()  # the WORKSHOP_ settings the function wrote (put back after each call)
    for with_key in (False, True):
        key = _EXAMPLE_KEY if with_key else None
        with _only_the_environment(), _environment(**{
                KEY_NAME: key, "WORKSHOP_BACKEND": None, "WORKSHOP_BASE_URL": None, "WORKSHOP_CHAT_MODEL": None,
                "WORKSHOP_SERVER_PROFILE": None, "WORKSHOP_EMBEDDINGS": None, "WORKSHOP_EMBEDDING_MODEL": None}):
            for base_url, model in _SERVERS:
                situation = ("when NVIDIA_API_KEY is set" if with_key
                             else "with no NVIDIA_API_KEY in the environment")
                before = dict(os.environ)
                try:
                    settings = vllm_settings(base_url, model)
                except ConfigError as error:
                    raise Hint(f"{situation}, load_settings refused: {error}") from None
                finally:
                    changed = sorted(name for name in set(before) | set(os.environ)
                                     if before.get(name) != os.environ.get(name))
                    _restore(before, changed)
                if set(changed) - set(_SETTING_NAMES):
                    raise Hint(f"vllm_settings changed {', '.join(sorted(set(changed) - set(_SETTING_NAMES)))} "
                               "in os.environ; only the WORKSHOP_ settings choose a server, so leave the rest "
                               "(the NVIDIA key above all) as it is")
                set_in_environment.update(changed)
                if not hasattr(settings, "backend"):
                    raise Hint(f"vllm_settings returned {type(settings).__name__}; return the Settings "
                               "that load_settings gives you")
                if settings.backend != "openai-compatible":
                    raise Hint(f"{situation} the backend is {settings.backend!r}: the automatic choice "
                               "follows the key, so name the backend 'openai-compatible' yourself")
                if (settings.base_url, settings.chat_model) != (base_url, model):
                    raise Hint(f"for {base_url} serving {model} the settings say {settings.base_url} serving "
                               f"{settings.chat_model}: pass base_url= and chat_model=")
                if settings.api_key == _EXAMPLE_KEY:
                    raise Hint("the NVIDIA key would go to a server that is not NVIDIA's")
    done = "the same notebooks would talk to any vLLM server, with or without an NVIDIA key configured"
    if set_in_environment:
        return (f"{done}. Your function sets {', '.join(sorted(set_in_environment))} in os.environ, as a .env "
                "file would; in a notebook that switches every later cell to that server (the check put "
                "them back), while arguments to load_settings change only the settings it returns")
    return done


exercise_1 = Exercise(
    "04.1", "point the workshop at a vLLM server",
    stub='''def vllm_settings(base_url, model):
    """Settings for an OpenAI-compatible server at ``base_url`` serving ``model``."""
    return load_settings(base_url=base_url, chat_model=model)''',
    solution_code='''def vllm_settings(base_url, model):
    """Settings for an OpenAI-compatible server at ``base_url`` serving ``model``."""
    return load_settings("openai-compatible", base_url=base_url, chat_model=model)''',
    checker=_check_settings, answers=("vllm_settings",),
    hints=("Without a backend name, load_settings picks 'nim' when a key is found and 'offline' otherwise.",
           "Pass the backend as the first argument: load_settings('openai-compatible', base_url=..., ...)."),
    context=lambda: {"load_settings": load_settings},
)


def _statuses():
    """Pairs (status, what is wrong) covering each field, plus one real check of the stand-in."""
    where = dict(base_url="http://server/v1", model="m")
    offline = load_settings("offline")
    return [
        (EndpointStatus(**where, reachable=True, key_accepted=True, model_found=True, chat_works=True), "ok"),
        (EndpointStatus(**where), "unreachable"),
        (EndpointStatus(**where, reachable=True, key_accepted=False), "key rejected"),
        (EndpointStatus(**where, reachable=True, key_accepted=True, model_found=False), "no such model"),
        # some servers list no models at all, yet answer: the chat request is what counts
        (EndpointStatus(**where, reachable=True, key_accepted=True, model_found=None, chat_works=True), "ok"),
        (EndpointStatus(**where, reachable=True, key_accepted=True, model_found=True), "no chat reply"),
        # no model list to ask (a 404), then the chat request failed: the key was never tested either way
        (EndpointStatus(**where, reachable=True, key_accepted=None, model_found=None), "no chat reply"),
        (EndpointStatus(**where, reachable=True, key_accepted=None, model_found=True), "no chat reply"),
        (check_endpoint(make_client(offline), "my-favourite-model"), "no such model"),
    ]


def _check_diagnosis(what_is_wrong) -> str:
    if not callable(what_is_wrong):
        raise Hint("what_is_wrong must be a function: def what_is_wrong(status): ...")
    for status, expected in _statuses():
        said = what_is_wrong(status)
        if said != expected:
            fields = (f"reachable={status.reachable}, key_accepted={status.key_accepted}, "
                      f"model_found={status.model_found}, ok={status.ok}")
            untested = [name for name in ("key_accepted", "model_found") if getattr(status, name) is None]
            why = ""
            if said in ("key rejected", "no such model") and untested:
                why = (f" ({', '.join(untested)} is None: the check never got that far, which is not the same "
                       "as False)")
            raise Hint(f"for a status with {fields} you said {said!r}; it should be {expected!r}{why}")
    return "every kind of failure named from the status fields, not from the text"


exercise_2 = Exercise(
    "04.2", "read the health line",
    stub='''def what_is_wrong(status):
    """'ok', 'unreachable', 'key rejected', 'no such model' or 'no chat reply', from the status fields."""
    return "ok"''',
    solution_code='''def what_is_wrong(status):
    """'ok', 'unreachable', 'key rejected', 'no such model' or 'no chat reply', from the status fields."""
    if status.ok:
        return "ok"
    if not status.reachable:
        return "unreachable"
    if status.key_accepted is False:
        return "key rejected"
    if status.model_found is False:
        return "no such model"
    return "no chat reply"''',
    checker=_check_diagnosis, answers=("what_is_wrong",),
    hints=("Check status.ok first: a server may list no models (model_found is None) and still answer.",
           "Then go in the order check_endpoint does: reachable, key_accepted, model_found; False means "
           "it failed, None means it was not reached."),
)

"""The exercises of notebooks 04-06: each plausible wrong answer gets the hint about its own mistake, answers
written independently of the package's solution pass, and the verdicts do not depend on the backend the
notebook is configured for (the checks judge on the offline stand-in, with only the environment they set)."""
import os

import pytest
from exercise_support import run

from helpers.exercises import nb04, nb05, nb06


def verdict(exercise, code: str) -> tuple[bool, str]:
    """(passed, the check's ✓/✗ line): the last line printed (an answer that makes a client may announce it)."""
    passed, said = run(exercise, code)
    return passed, said.strip().splitlines()[-1]

# ---------------------------------------------------------------- 04.1: settings for a vLLM server

VLLM_WRONG = {
    "the stub: the backend left to the automatic choice": (
        "def vllm_settings(base_url, model):\n    return load_settings(base_url=base_url, chat_model=model)",
        "with no NVIDIA_API_KEY in the environment the backend is 'offline'"),
    "automatic only when a key is configured": (
        "import os\n"
        "def vllm_settings(base_url, model):\n"
        "    backend = None if os.environ.get('NVIDIA_API_KEY') else 'openai-compatible'\n"
        "    return load_settings(backend, base_url=base_url, chat_model=model)",
        "when NVIDIA_API_KEY is set, load_settings refused: backend 'nim' (chosen because NVIDIA_API_KEY is set)"),
    "no model name": (
        "def vllm_settings(base_url, model):\n    return load_settings('openai-compatible', base_url=base_url)",
        "serving meta/llama-3.3-70b-instruct: pass base_url= and chat_model="),
    "no base URL": (
        "def vllm_settings(base_url, model):\n    return load_settings('openai-compatible', chat_model=model)",
        "load_settings refused: backend 'openai-compatible' needs WORKSHOP_BASE_URL"),
    "the backend named nim": (
        "def vllm_settings(base_url, model):\n    return load_settings('nim', base_url=base_url, chat_model=model)",
        "load_settings refused: backend 'nim' needs NVIDIA_API_KEY"),
    "the NVIDIA key removed from the environment": (
        "import os\n"
        "def vllm_settings(base_url, model):\n"
        "    os.environ.pop('NVIDIA_API_KEY', None)  # so that the key cannot go to the server\n"
        "    return load_settings('openai-compatible', base_url=base_url, chat_model=model)",
        "vllm_settings changed NVIDIA_API_KEY in os.environ; only the WORKSHOP_ settings choose a server"),
    "the NVIDIA key handed to the server": (
        "import os\nfrom helpers.llm.config import Settings\n"
        "def vllm_settings(base_url, model):\n"
        "    return Settings(backend='openai-compatible', base_url=base_url, chat_model=model,\n"
        "                    embedding_model='local/all-minilm-l6-v2', api_key=os.environ.get('NVIDIA_API_KEY'))",
        "the NVIDIA key would go to a server that is not NVIDIA's"),
    "URL and model swapped": (
        "def vllm_settings(base_url, model):\n"
        "    return load_settings('openai-compatible', base_url=model, chat_model=base_url)",
        "pass base_url= and chat_model="),
}

VLLM_RIGHT = {
    "the backend set in os.environ, as the summary says": (
        "import os\n"
        "def vllm_settings(base_url, model):\n"
        "    os.environ['WORKSHOP_BACKEND'] = 'openai-compatible'\n"
        "    return load_settings(base_url=base_url, chat_model=model)"),
    "every setting in os.environ": (
        "import os\n"
        "def vllm_settings(base_url, model):\n"
        "    os.environ.update(WORKSHOP_BACKEND='openai-compatible', WORKSHOP_BASE_URL=base_url,\n"
        "                      WORKSHOP_CHAT_MODEL=model)\n"
        "    return load_settings()"),
    "by keyword": "def vllm_settings(base_url, model):\n"
                  "    return load_settings(backend='openai-compatible', chat_model=model, base_url=base_url)",
    "Settings by hand": "from helpers.llm.config import Settings\n"
                        "def vllm_settings(base_url, model):\n"
                        "    return Settings(backend='openai-compatible', base_url=base_url, chat_model=model,\n"
                        "                    embedding_model='local/all-minilm-l6-v2')",
    "the offline settings, overridden": "def vllm_settings(base_url, model):\n"
                                        "    offline = load_settings('offline')\n"
                                        "    return offline.with_overrides(backend='openai-compatible',\n"
                                        "                                  base_url=base_url, chat_model=model)",
}


@pytest.mark.parametrize("name", VLLM_WRONG)
def test_04_1_a_wrong_settings_function_gets_its_own_hint(name, monkeypatch):
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    code, hint = VLLM_WRONG[name]
    passed, said = verdict(nb04.exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said
    assert "nvapi-" not in said and "NVIDIA_API_KEY" not in os.environ
    assert os.environ.get("WORKSHOP_BACKEND") == "offline"  # the check put the environment back


@pytest.mark.parametrize("name", VLLM_RIGHT)
def test_04_1_independent_right_answers_pass(name, monkeypatch):
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    passed, said = verdict(nb04.exercise_1, VLLM_RIGHT[name])
    assert passed and said.startswith("✓"), said
    assert ("in os.environ" in said) == ("os.environ" in VLLM_RIGHT[name]), said  # says what the environment does
    assert os.environ.get("WORKSHOP_BACKEND") == "offline" and "WORKSHOP_CHAT_MODEL" not in os.environ


def test_04_1_a_dotenv_written_for_a_local_server_does_not_pass_the_automatic_choice(tmp_path, monkeypatch):
    """A learner's .env with WORKSHOP_BACKEND=openai-compatible (and a key) is not what the check judges."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("WORKSHOP_BACKEND=openai-compatible\nWORKSHOP_BASE_URL=http://127.0.0.1:8080/v1\n"
                                   "NVIDIA_API_KEY=nvapi-from-dotenv-example\n")
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    code, hint = VLLM_WRONG["the stub: the backend left to the automatic choice"]
    passed, said = verdict(nb04.exercise_1, code)
    assert not passed and hint in said, said
    assert verdict(nb04.exercise_1, nb04.exercise_1.solution_code)[0]
    assert "WORKSHOP_BACKEND" not in os.environ and "WORKSHOP_BASE_URL" not in os.environ


# ---------------------------------------------------------------- 04.2: read the health line

DIAGNOSIS_WRONG = {
    "the stub": ('def what_is_wrong(status):\n    return "ok"',
                 "reachable=False, key_accepted=None, model_found=None, ok=False you said 'ok'; "
                 "it should be 'unreachable'"),
    "the model list before ok": (
        "def what_is_wrong(status):\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if status.key_accepted is False:\n        return 'key rejected'\n"
        "    if not status.model_found:\n        return 'no such model'\n"
        "    return 'ok' if status.ok else 'no chat reply'",
        "model_found=None, ok=True you said 'no such model'; it should be 'ok'"),
    "a listed model taken for a working one": (
        "def what_is_wrong(status):\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if status.key_accepted is False:\n        return 'key rejected'\n"
        "    if status.model_found is False:\n        return 'no such model'\n"
        "    return 'ok'",
        "model_found=True, ok=False you said 'ok'; it should be 'no chat reply'"),
    "None read as a rejected key": (
        "def what_is_wrong(status):\n"
        "    if status.ok:\n        return 'ok'\n"
        "    if not status.key_accepted:\n        return 'key rejected'\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if status.model_found is False:\n        return 'no such model'\n"
        "    return 'no chat reply'",
        "reachable=False, key_accepted=None, model_found=None, ok=False you said 'key rejected'; "
        "it should be 'unreachable'"),
    "the wrong words": (
        "def what_is_wrong(status):\n"
        "    if status.ok:\n        return 'ok'\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if status.key_accepted is False:\n        return 'key rejected'\n"
        "    if status.model_found is False:\n        return 'model not found'\n"
        "    return 'no chat reply'",
        "you said 'model not found'; it should be 'no such model'"),
    "the status's own text": ("def what_is_wrong(status):\n    return status.problem",
                              "ok=True you said ''; it should be 'ok'"),
    "a key never tested read as rejected": (
        "def what_is_wrong(status):\n"
        "    if status.ok:\n        return 'ok'\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if not status.key_accepted:\n        return 'key rejected'\n"
        "    if status.model_found is False:\n        return 'no such model'\n"
        "    return 'no chat reply'",
        "you said 'key rejected'; it should be 'no chat reply' (key_accepted, model_found is None: the check "
        "never got that far"),
    "a model never looked up read as missing": (
        "def what_is_wrong(status):\n"
        "    if status.ok:\n        return 'ok'\n"
        "    if not status.reachable:\n        return 'unreachable'\n"
        "    if status.key_accepted is False:\n        return 'key rejected'\n"
        "    if not status.model_found:\n        return 'no such model'\n"
        "    return 'no chat reply'",
        "you said 'no such model'; it should be 'no chat reply' (key_accepted, model_found is None"),
}

DIAGNOSIS_RIGHT = {
    "a table of fields": (
        "def what_is_wrong(status):\n"
        "    if status.ok:\n        return 'ok'\n"
        "    for field, name in (('reachable', 'unreachable'), ('key_accepted', 'key rejected'),\n"
        "                        ('model_found', 'no such model')):\n"
        "        if getattr(status, field) is False:\n            return name\n"
        "    return 'no chat reply'"),
    "nested conditions": (
        "def what_is_wrong(status):\n"
        "    if status.reachable:\n"
        "        if status.key_accepted is False:\n            return 'key rejected'\n"
        "        if status.chat_works:\n            return 'ok'\n"
        "        return 'no such model' if status.model_found is False else 'no chat reply'\n"
        "    return 'unreachable'"),
}


@pytest.mark.parametrize("name", DIAGNOSIS_WRONG)
def test_04_2_a_wrong_diagnosis_names_the_status_it_got_wrong(name):
    code, hint = DIAGNOSIS_WRONG[name]
    passed, said = verdict(nb04.exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", DIAGNOSIS_RIGHT)
def test_04_2_independent_right_answers_pass(name):
    passed, said = verdict(nb04.exercise_2, DIAGNOSIS_RIGHT[name])
    assert passed and said.startswith("✓"), said


# ---------------------------------------------------------------- 05.1: a schema for get_current_time

def time_tool(parameters: str, name: str = "get_current_time") -> str:
    return ("my_time_tool = {'type': 'function', 'function': {'name': %r,\n"
            "    'description': 'The current date, weekday and time in a time zone.',\n"
            "    'parameters': %s}}" % (name, parameters))


SCHEMA_WRONG = {
    "the stub: the argument not described": (nb05.exercise_1.stub, "parameters.properties needs 'timezone'"),
    "the optional argument required": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string'}}, 'required': ['timezone']}"),
        "timezone has a default (America/Los_Angeles), so it is optional"),
    "an argument the function does not take, required": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string'}, 'city': {'type': 'string'}},"
                  " 'required': ['city']}"),
        "the schema offers 'city' (and lists it as required), but get_current_time takes only timezone"),
    "an optional argument the function does not take": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string'}, "
                  "'format': {'type': 'string', 'enum': ['12h', '24h']}}, 'required': []}"),
        "the schema offers 'format', but get_current_time takes only timezone"),
    "the argument under another name": (
        time_tool("{'type': 'object', 'properties': {'tz': {'type': 'string'}}, 'required': []}"),
        "parameters.properties needs 'timezone' with type 'string'"),
    "a number for a time zone": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'integer'}}, 'required': []}"),
        "needs 'timezone' with type 'string'"),
    "an enum that shuts out the default": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string', 'enum': ['UTC']}}, "
                  "'required': []}"), "the enum lets the model ask only for ['UTC']"),
    "another name": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string'}}, 'required': []}",
                  name="current_time"), "it must be the function's name, 'get_current_time'"),
    "required names a property that is not there": (
        time_tool("{'type': 'object', 'properties': {'timezone': {'type': 'string'}}, 'required': ['zone']}"),
        "a strict server would refuse this schema"),
}

SCHEMA_RIGHT = {
    "a dict by hand, with a default and no extra properties": time_tool(
        "{'type': 'object', 'properties': {'timezone': {'type': 'string', 'default': 'America/Los_Angeles',\n"
        "    'description': 'An IANA zone name such as Europe/Paris'}}, 'additionalProperties': False}"),
    "function_schema, required left out": (
        "my_time_tool = function_schema('get_current_time', 'What time and day it is now, in a given zone.',\n"
        "                               {'timezone': {'type': 'string'}}, required=[])"),
}


@pytest.mark.parametrize("name", SCHEMA_WRONG)
def test_05_1_a_wrong_schema_gets_its_own_hint(name):
    code, hint = SCHEMA_WRONG[name]
    passed, said = verdict(nb05.exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", SCHEMA_RIGHT)
def test_05_1_independent_right_answers_pass(name):
    passed, said = verdict(nb05.exercise_1, SCHEMA_RIGHT[name])
    assert passed and said.startswith("✓") and "called get_current_time" in said, said


# ---------------------------------------------------------------- 05.2: the tool message

TOOL_MESSAGE_WRONG = {
    "the stub: no tool_call_id": ('def tool_message(call_id, result):\n    return {"role": "tool", "content": result}',
                                  "for call 'call_1' the message has tool_call_id None"),
    "the id under the key 'id'": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return {'role': 'tool', 'id': call_id, 'content': json.dumps(result)}",
        "for call 'call_1' the message has tool_call_id None; it must quote the id of the call it answers"),
    "one id for every call": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return {'role': 'tool', 'tool_call_id': 'call_1', 'content': json.dumps(result)}",
        "for call 'call_abc' the message has tool_call_id 'call_1'"),
    "the dict itself as content": (
        "def tool_message(call_id, result):\n    return {'role': 'tool', 'tool_call_id': call_id, 'content': result}",
        "content is a dict; a strict server accepts only text"),
    "Python's repr instead of JSON": (
        "def tool_message(call_id, result):\n"
        "    return {'role': 'tool', 'tool_call_id': call_id, 'content': str(result)}",
        "content does not read back as the result: use json.dumps(result)"),
    "only the day count": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return {'role': 'tool', 'tool_call_id': call_id, 'content': json.dumps(result.get('days'))}",
        "content does not read back as the result"),
    "the role of a user": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return {'role': 'user', 'tool_call_id': call_id, 'content': json.dumps(result)}",
        "return a dict with 'role': 'tool'"),
    "the result wrapped in another object": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return {'role': 'tool', 'tool_call_id': call_id, 'content': json.dumps({'result': result})}",
        "content does not read back as the result"),
}

TOOL_MESSAGE_RIGHT = {
    "dict() with keywords, non-ASCII kept": (
        "import json\ndef tool_message(call_id, result):\n"
        "    return dict(content=json.dumps(result, ensure_ascii=False), tool_call_id=call_id, role='tool')"),
    "indented JSON built up step by step": (
        "from json import dumps\ndef tool_message(call_id, result):\n"
        "    message = {'role': 'tool'}\n    message['tool_call_id'] = str(call_id)\n"
        "    message['content'] = dumps(result, indent=2, sort_keys=True)\n    return message"),
}


@pytest.mark.parametrize("name", TOOL_MESSAGE_WRONG)
def test_05_2_a_wrong_tool_message_gets_its_own_hint(name):
    code, hint = TOOL_MESSAGE_WRONG[name]
    passed, said = verdict(nb05.exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", TOOL_MESSAGE_RIGHT)
def test_05_2_independent_right_answers_pass(name):
    passed, said = verdict(nb05.exercise_2, TOOL_MESSAGE_RIGHT[name])
    assert passed and said.startswith("✓") and "2026-12-03" in said, said


# ---------------------------------------------------------------- 06.1: the smallest set of tools

TOOLS_WRONG = {
    "the stub: only the clock": ('my_tools = ["get_current_time"]',
                                 "cannot both find when the club meets and count the days to it"),
    "only the day counter": ('my_tools = ["days_until_weekday"]',
                             "cannot both find when the club meets and count the days to it"),
    "only the search": ('my_tools = ["search_campus_info"]',
                        "finds when the club meets, but nothing counts the days to it"),
    "the search and the clock": ('my_tools = ["search_campus_info", "get_current_time"]',
                                 "finds when the club meets, but nothing counts the days to it"),
    "every tool": ("from helpers.agent.tools import REGISTRY\nmy_tools = list(REGISTRY)",
                   "a smaller set also answers: ['search_campus_info', 'days_until_weekday']"),
    "one tool too many": ('my_tools = ["search_campus_info", "days_until_weekday", "next_campus_event"]',
                          "a smaller set also answers"),
    "a tool offered twice": ('my_tools = ["search_campus_info", "days_until_weekday", "days_until_weekday"]',
                             "a tool name appears twice"),
    "names that are not tools": ('my_tools = ["search", "days"]', "search, days are not tools; choose from"),
    "one string": ('my_tools = "search_campus_info, days_until_weekday"', "my_tools must be a list of tool names"),
}

TOOLS_RIGHT = {
    "count first, then search": 'my_tools = ["days_until_weekday", "search_campus_info"]',
    "a tuple": 'my_tools = ("search_campus_info", "days_until_weekday")',
}


@pytest.mark.parametrize("name", TOOLS_WRONG)
def test_06_1_a_wrong_set_of_tools_gets_its_own_hint(name):
    code, hint = TOOLS_WRONG[name]
    passed, said = verdict(nb06.exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", TOOLS_RIGHT)
def test_06_1_independent_right_answers_pass(name):
    passed, said = verdict(nb06.exercise_1, TOOLS_RIGHT[name])
    assert passed and said.startswith("✓"), said


# ---------------------------------------------------------------- 06.2: the smallest step budget

STEPS_WRONG = {
    "the stub: one step": ("def smallest_max_steps(question, **options):\n    return 1",
                           "your function never ran the agent with the options it was given"),
    "options not passed on": (
        "def smallest_max_steps(question, **options):\n"
        "    for n in range(1, MAX_STEPS + 1):\n"
        "        if run_agent(question, max_steps=n).stopped == 'answer':\n            return n",
        "never ran the agent with the options it was given: call run_agent(question, max_steps=n, **options)"),
    "one more than needed": (
        "def smallest_max_steps(question, **options):\n    return run_agent(question, **options).steps + 1",
        "for 'How many days until Thursday?' you said 3, but max_steps=2 already answers. Try each max_steps"),
    "tool calls counted instead of requests": (
        "def smallest_max_steps(question, **options):\n"
        "    result = run_agent(question, **options)\n"
        "    return sum(1 for m in result.added if m['role'] == 'tool')",
        "for 'How many days until Thursday?' you said 1, but with max_steps=1 the agent stops before answering"),
    "tool results plus the answer": (
        "def smallest_max_steps(question, **options):\n"
        "    result = run_agent(question, **options)\n"
        "    return sum(1 for m in result.added if m['role'] == 'tool') + 1",
        "you said 3, but max_steps=2 already answers. Several tool calls in one reply are one step."),
    "searching down from the limit": (
        "def smallest_max_steps(question, **options):\n"
        "    for n in range(MAX_STEPS, 0, -1):\n"
        "        if run_agent(question, max_steps=n, **options).stopped == 'answer':\n            return n",
        "you said 6, but max_steps=2 already answers"),
    "the messages counted": (
        "def smallest_max_steps(question, **options):\n    return len(run_agent(question, **options).added)",
        "you said 4, but max_steps=2 already answers"),
    "a table of the notebook's questions": (
        "def smallest_max_steps(question, **options):\n"
        "    run_agent(question, **options)\n"
        "    return {'How many days until Thursday?': 2, 'When does the AI club meet?': 2,\n"
        "            'When does the AI club meet, and how many days is that from now?': 3,\n"
        "            'Which is sooner, Tuesday at 14:00 or Thursday at 18:00?': 2}.get(question, 1)",
        "for 'How many days until Monday?' you said 1, but with max_steps=1 the agent stops"),
    "the result instead of a number": (
        "def smallest_max_steps(question, **options):\n    return run_agent(question, **options)",
        "smallest_max_steps returned AgentResult("),
}

STEPS_RIGHT = {
    "an unlimited run's step count": ("def smallest_max_steps(question, **options):\n"
                                      "    return run_agent(question, **options).steps"),
    "the assistant messages counted": (
        "def smallest_max_steps(question, **options):\n"
        "    added = run_agent(question, max_steps=10, **options).added\n"
        "    return len([m for m in added if m['role'] == 'assistant'])"),
    "a while loop": ("def smallest_max_steps(question, **options):\n"
                     "    n = 1\n"
                     "    while run_agent(question, max_steps=n, **options).stopped != 'answer':\n        n += 1\n"
                     "    return n"),
}


@pytest.mark.parametrize("name", STEPS_WRONG)
def test_06_2_a_wrong_step_budget_gets_its_own_hint(name):
    code, hint = STEPS_WRONG[name]
    passed, said = verdict(nb06.exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", STEPS_RIGHT)
def test_06_2_independent_right_answers_pass(name):
    passed, said = verdict(nb06.exercise_2, STEPS_RIGHT[name])
    assert passed and said.startswith("✓"), said


# ---------------------------------------------------------------- the same verdicts with a server configured

CONFIGURED_SERVER = {"WORKSHOP_BACKEND": "openai-compatible", "WORKSHOP_BASE_URL": "http://127.0.0.1:9/v1",
                     "WORKSHOP_CHAT_MODEL": "smollm2-135m-instruct", "WORKSHOP_SERVER_PROFILE": "llama.cpp"}


@pytest.mark.parametrize("exercise", [nb04.exercise_1, nb04.exercise_2, nb05.exercise_1, nb05.exercise_2,
                                      nb06.exercise_1, nb06.exercise_2], ids=lambda e: e.key)
def test_verdicts_are_the_same_when_the_notebook_talks_to_a_local_server(exercise, monkeypatch):
    """Nothing reaches the configured server (none listens on port 9): the checks judge on the stand-in."""
    for name, value in CONFIGURED_SERVER.items():
        monkeypatch.setenv(name, value)
    assert verdict(exercise, exercise.solution_code)[1].startswith("✓")
    assert verdict(exercise, exercise.stub)[1].startswith("✗")
    for name, value in CONFIGURED_SERVER.items():
        assert os.environ[name] == value


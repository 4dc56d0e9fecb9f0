import json
import sys

import pytest
from hypothesis import given, settings as hyp_settings, strategies as st

from helpers.agent import tools
from helpers.core.text import bracket_depth
from helpers.agent.tools import (ToolInputError, days_until_weekday, get_current_time, parse_weekday, run_tool,
                           tool_schemas)

# conftest freezes the clock at Monday 2026-11-30 10:00 in Los Angeles.


def test_current_time_in_default_zone():
    now = get_current_time()
    assert (now["date"], now["time"], now["weekday"]) == ("2026-11-30", "10:00", "Monday")


def test_current_time_in_other_zone():
    tokyo = get_current_time("Asia/Tokyo")
    assert (tokyo["date"], tokyo["time"], tokyo["weekday"]) == ("2026-12-01", "03:00", "Tuesday")


def test_unknown_zone_is_an_error_not_utc():
    result = json.loads(run_tool("get_current_time", '{"timezone": "Mars/Olympus"}'))
    assert "Mars/Olympus" in result["error"]


@pytest.mark.parametrize("name", ["Thursday", "thursday", "Thu", "THU", "thurs", "Thursdays", " thu. "])
def test_weekday_spellings(name):
    assert parse_weekday(name) == "Thursday"


@pytest.mark.parametrize("name", ["Funday", "", "T", "42"])
def test_bad_weekday_is_explained(name):
    with pytest.raises(ToolInputError, match="unknown weekday"):
        parse_weekday(name)


def test_days_until_later_this_week():
    assert days_until_weekday("Thursday")["days"] == 3
    assert days_until_weekday("Tue")["days"] == 1
    assert days_until_weekday("Sunday")["date"] == "2026-12-06"


def test_today_without_time_is_zero_days():
    assert days_until_weekday("Monday")["days"] == 0


def test_today_but_time_passed_is_next_week():
    result = days_until_weekday("Monday", "09:00")
    assert (result["days"], result["date"]) == (7, "2026-12-07")


def test_today_and_time_still_ahead_is_today():
    assert days_until_weekday("Monday", "18:00")["days"] == 0


def test_bad_time_is_explained():
    with pytest.raises(ToolInputError, match="HH:MM"):
        days_until_weekday("Monday", "6pm")


def test_days_until_respects_time_zone():
    # 03:00 Tuesday in Tokyo: Thursday is 2 days away there.
    assert days_until_weekday("Thursday", timezone="Asia/Tokyo")["days"] == 2


def test_weekday_schema_uses_enum():
    schema = {t["function"]["name"]: t for t in tool_schemas()}["days_until_weekday"]
    assert schema["function"]["parameters"]["properties"]["weekday"]["enum"][3] == "Thursday"


def test_unknown_tool_is_an_error_result():
    assert "unknown tool 'teleport'" in json.loads(run_tool("teleport", "{}"))["error"]


def test_malformed_json_arguments_are_an_error_result():
    error = json.loads(run_tool("days_until_weekday", '{"weekday": "Thu"'))["error"]
    assert "not valid JSON" in error and "weekday" in error


def test_non_object_arguments_are_an_error_result():
    assert "JSON object" in json.loads(run_tool("days_until_weekday", '["Thu"]'))["error"]


def test_wrong_argument_name_is_an_error_result():
    error = json.loads(run_tool("days_until_weekday", '{"day": "Thu"}'))["error"]
    assert "wrong arguments" in error and "weekday" in error


def test_missing_argument_is_an_error_result():
    assert "wrong arguments" in json.loads(run_tool("days_until_weekday", "{}"))["error"]


def test_tool_that_raises_is_an_error_result():
    def explode():
        raise RuntimeError("database on fire")

    registry = {"explode": tools.Tool("explode", explode, tools.function_schema("explode", "x", {}, []))}
    error = json.loads(run_tool("explode", "{}", registry))["error"]
    assert "RuntimeError" in error and "database on fire" in error


def test_unknown_tool_name_in_schema_request():
    with pytest.raises(KeyError, match="nope"):
        tool_schemas(["nope"])


def test_results_are_json_text():
    assert json.loads(run_tool("days_until_weekday", {"weekday": "Fri"}))["days"] == 4


def test_local_servers_search_with_the_local_embedding_model(monkeypatch):
    from helpers.llm import client as client_module
    from helpers.llm.config import load_settings
    from helpers.retrieval.embeddings import LOCAL_MODEL_NAME

    settings = load_settings("openai-compatible", base_url="http://127.0.0.1:9/v1", chat_model="smollm2")
    monkeypatch.delenv("WORKSHOP_EMBEDDING_MODEL", raising=False)
    monkeypatch.setattr(client_module, "_default", (settings, None))
    monkeypatch.setattr(tools, "_KB", None)
    kb = tools.campus_knowledge_base()
    assert kb.model == LOCAL_MODEL_NAME and kb.client is None
    assert json.loads(run_tool("search_campus_info", {"query": "AI club"}))["results"][0]["id"] == "club-ai"
    monkeypatch.setattr(tools, "_KB", None)


def test_a_result_that_is_not_json_is_an_error_result():
    from datetime import date

    registry = {"today": tools.Tool("today", lambda: {"day": date(2026, 11, 30)},
                                    tools.function_schema("today", "x", {}, []))}
    assert "not JSON" in json.loads(run_tool("today", "{}", registry))["error"]


def test_an_empty_tool_list_means_no_tools():
    assert tool_schemas([]) == [] and len(tool_schemas()) == len(tools.REGISTRY)


def _too_deep():
    """A nesting depth past the interpreter's recursion limit (1,000 by default; some tools raise it)."""
    return 2 * sys.getrecursionlimit()


def _nested(depth):
    value = "Thursday"
    for _ in range(depth):
        value = [value]
    return value


def _spy_registry():
    """The real registry plus a tool that records whether it ran."""
    ran = []
    spy = tools.Tool("forget_everything", lambda: ran.append(True) or {"done": True},
                     tools.function_schema("forget_everything", "x", {}, []))
    return dict(tools.REGISTRY, forget_everything=spy), ran


def test_deeply_nested_json_arguments_are_an_error_result():
    for depth in (1000, _too_deep()):
        arguments = '{"weekday": ' + "[" * depth + '"Thu"' + "]" * depth + "}"
        assert "nested too deeply" in json.loads(run_tool("days_until_weekday", arguments))["error"]


def test_nesting_is_counted_up_to_the_limit_and_brackets_in_strings_do_not_count():
    def nested_weekday(depth):
        return '{"weekday": ' + "[" * (depth - 1) + '"Thu"' + "]" * (depth - 1) + "}"

    limit = tools.MAX_ARGUMENT_DEPTH
    assert "unknown weekday" in json.loads(run_tool("days_until_weekday", nested_weekday(limit)))["error"]
    too_deep = json.loads(run_tool("days_until_weekday", nested_weekday(limit + 1)))["error"]
    assert "nested too deeply" in too_deep
    quoted = json.dumps({"query": "[" * 500 + '\\"{' * 200})  # brackets and escaped quotes inside a string
    assert bracket_depth(quoted) == 1


def test_deeply_nested_dict_arguments_are_an_error_result():
    error = json.loads(run_tool("days_until_weekday", {"weekday": _nested(_too_deep())}))["error"]
    assert "nested too deeply" in error


def test_a_deeply_nested_result_is_an_error_result():
    deep = tools.Tool("deep", lambda: {"x": _nested(_too_deep())}, tools.function_schema("deep", "x", {}, []))
    registry = {"deep": deep}
    assert "not JSON" in json.loads(run_tool("deep", "{}", registry))["error"]


def test_huge_arguments_are_refused_before_parsing():
    arguments = json.dumps({"weekday": "Thu", "padding": "x" * (tools.MAX_ARGUMENT_CHARS + 1)})
    assert "too long" in json.loads(run_tool("days_until_weekday", arguments))["error"]


@pytest.mark.parametrize("name, arguments, expected", [
    (["days_until_weekday"], "{}", "unknown tool"),
    (None, None, "unknown tool"),
    ("days_until_weekday", 42, "must be JSON text"),
    ("days_until_weekday", ["Thu"], "must be JSON text"),
    ("days_until_weekday", "[1, 2]", "must be a JSON object"),
    ("days_until_weekday", '"\\ud800"', "must be a JSON object"),
    ("days_until_weekday", {1: "Thu", "weekday": "Thu"}, "unknown argument"),
    ("search_campus_info", {"query": "AI club", "k": "three"}, "ValueError"),
])
def test_odd_inputs_are_error_results(name, arguments, expected):
    assert expected in json.loads(run_tool(name, arguments))["error"]


def test_error_results_stay_short():
    error = json.loads(run_tool("x" * 100_000, "{}"))["error"]
    assert len(error) < 2_000 and error.startswith("unknown tool 'xxx")


def test_a_tool_that_was_not_offered_is_refused_and_not_run():
    registry, ran = _spy_registry()
    error = json.loads(run_tool("forget_everything", "{}", registry, offered=["days_until_weekday"]))["error"]
    assert "not offered" in error and "days_until_weekday" in error and not ran
    assert json.loads(run_tool("forget_everything", "{}", registry)) == {"done": True}  # offered: all of them


def test_an_empty_offer_refuses_every_tool():
    error = json.loads(run_tool("days_until_weekday", '{"weekday": "Thu"}', offered=[]))["error"]
    assert "not offered" in error and "(none)" in error


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3), max_leaves=20)


@hyp_settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["days_until_weekday", "get_current_time", "nope"]) | st.text()
       | st.none() | st.integers(),
       arguments=st.none() | st.text() | st.binary() | st.integers() | _json | _json.map(json.dumps)
       | st.dictionaries(st.text(max_size=12) | st.integers(), _json, max_size=4),
       depth=st.sampled_from([0, 0, 0, 2_000]))
def test_run_tool_never_raises(name, arguments, depth):
    deep = bool(depth) and isinstance(arguments, str)
    if deep:
        arguments = "[" * depth + arguments + "]" * depth
    result = json.loads(run_tool(name, arguments))
    assert isinstance(result, dict)
    if name not in ("days_until_weekday", "get_current_time") or deep:
        assert "error" in result


def test_function_schema_builds_the_registry_schemas():
    from helpers.agent.tools import REGISTRY, function_schema

    timezone = {"type": "string", "description": "IANA time zone, e.g. America/Los_Angeles"}
    built = function_schema("get_current_time", "The current date, weekday and time in a time zone.",
                            {"timezone": timezone}, [])
    assert built == REGISTRY["get_current_time"].schema


@pytest.mark.parametrize("now", ["2026-12-02T10:00:00-08:00", "2026-12-03T19:30:00-08:00"])
def test_notebook_05_checks_pass_on_other_days(now, monkeypatch):
    from helpers.exercises import nb05

    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (nb05.exercise_1, nb05.exercise_2):
        namespace = dict(exercise.context())
        exec(exercise.solution_code, namespace)  # noqa: S102 - the package's own solution
        assert exercise.check(*(namespace[name] for name in exercise.answers))

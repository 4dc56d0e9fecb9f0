"""Exercises of notebook 05 (one tool). The checks talk to the offline stand-in whatever backend is
configured (a small local model may answer without calling the tool, so a server could not decide them),
and compare day counts with the tool's own result, so they pass on any day."""
from __future__ import annotations

import inspect
import json

from helpers.llm.client import chat
from helpers.llm.config import load_settings
from helpers.exercises import Exercise, Hint
from helpers.llm.message_format import assistant_message_to_dict
from helpers.standin.server import validate_tools
from helpers.agent.tools import REGISTRY, days_until_weekday, function_schema, run_tool, tool_schemas


def _check_schema(my_time_tool) -> str:
    if not isinstance(my_time_tool, dict):
        raise Hint("my_time_tool must be a dict like the days_tool printed above")
    problems = validate_tools([my_time_tool])
    if problems:
        raise Hint(f"a strict server would refuse this schema: {problems[0]}")
    function = my_time_tool["function"]
    if function.get("name") != "get_current_time":
        raise Hint(f"the name is {function.get('name')!r}; it must be the function's name, "
                   "'get_current_time'")
    parameters = function.get("parameters") or {}
    timezone = (parameters.get("properties") or {}).get("timezone")
    if not isinstance(timezone, dict) or timezone.get("type") != "string":
        raise Hint("describe the argument: parameters.properties needs 'timezone' with type 'string'")
    taken = inspect.signature(REGISTRY["get_current_time"].function).parameters
    extra = [name for name in parameters.get("properties") or {} if name not in taken]
    if extra:
        needed = " (and lists it as required)" if set(extra) & set(parameters.get("required") or []) else ""
        raise Hint(f"the schema offers {', '.join(map(repr, extra))}{needed}, but get_current_time takes only "
                   f"{', '.join(taken)}: a model would send that argument and the call would fail. Describe the "
                   "arguments the function has, no more")
    if "timezone" in (parameters.get("required") or []):
        raise Hint("timezone has a default (America/Los_Angeles), so it is optional: "
                   "leave it out of 'required'")
    allowed = timezone.get("enum")
    if allowed is not None and "America/Los_Angeles" not in allowed:
        raise Hint(f"the enum lets the model ask only for {allowed!r}, but the function takes any IANA time "
                   "zone: leave the enum out and say in the description what a time zone looks like")
    asked = chat([{"role": "user", "content": "What time is it?"}], settings=load_settings("offline"),
                 tools=[my_time_tool]).choices[0].message
    if not asked.tool_calls or asked.tool_calls[0].function.name != "get_current_time":
        raise Hint("the stand-in did not call the tool: check the name and the description")
    result = json.loads(run_tool("get_current_time", asked.tool_calls[0].function.arguments))
    if "error" in result:
        raise Hint(f"the call the stand-in made could not run: {result['error']}")
    return f"a strict server accepts it; the stand-in called get_current_time and got {sorted(result)}"


exercise_1 = Exercise(
    "05.1", "write a schema",
    stub='''my_time_tool = {
    "type": "function",
    "function": {
        "name": "get_current_time",
        "description": "The current date, weekday and time in a time zone.",
        "parameters": {"type": "object", "properties": {}, "required": []},  # describe timezone here
    },
}''',
    solution_code='''my_time_tool = function_schema(
    "get_current_time", "The current date, weekday and time in a time zone.",
    {"timezone": {"type": "string", "description": "IANA time zone, e.g. Europe/Berlin"}},
    [],  # timezone has a default, so nothing is required
)''',
    checker=_check_schema, answers=("my_time_tool",),
    hints=("Each argument is one entry of parameters.properties: its name, then "
           "{'type': ..., 'description': ...}.",
           "properties = {'timezone': {'type': 'string', 'description': 'IANA time zone'}}; "
           "required stays []."),
    context=lambda: {"function_schema": function_schema},
)

_RESULTS = [
    ("call_1", {"weekday": "Thursday", "days": 3, "date": "2026-12-03"}),
    ("call_abc", {"query": "Café Lumen", "results": [{"id": "cafe", "title": "Café Lumen"}]}),
    ("x9", {"error": "unknown weekday 'Funday'"}),
]


def _check_tool_message(tool_message) -> str:
    if not callable(tool_message):
        raise Hint("tool_message must be a function: def tool_message(call_id, result): ...")
    for call_id, result in _RESULTS:
        message = tool_message(call_id, result)
        if not isinstance(message, dict) or message.get("role") != "tool":
            raise Hint("return a dict with 'role': 'tool'")
        if message.get("tool_call_id") != call_id:
            raise Hint(f"for call {call_id!r} the message has tool_call_id {message.get('tool_call_id')!r}; "
                       "it must quote the id of the call it answers")
        content = message.get("content")
        if not isinstance(content, str):
            raise Hint(f"content is a {type(content).__name__}; a strict server accepts only text. "
                       "Turn the result into JSON text with json.dumps(result)")
        try:
            same = json.loads(content) == result
        except ValueError:
            same = False
        if not same:
            raise Hint("content does not read back as the result: use json.dumps(result), so every "
                       "server and model reads the same JSON")
    # The whole round trip with the learner's message, on the stand-in.
    offline = load_settings("offline")
    tools = tool_schemas(["days_until_weekday"])
    messages = [{"role": "user", "content": "How many days until Thursday?"}]
    reply = chat(messages, settings=offline, tools=tools).choices[0].message
    call = reply.tool_calls[0]
    result = days_until_weekday(**json.loads(call.function.arguments))
    messages += [assistant_message_to_dict(reply), tool_message(call.id, result)]
    final = chat(messages, settings=offline, tools=tools).choices[0].message.content
    if result["date"] not in final:
        raise Hint(f"the round trip ran, but the answer does not use the tool's result: {final!r}")
    return f"the tool message closes the round trip: {final}"


exercise_2 = Exercise(
    "05.2", "the tool message",
    stub='''def tool_message(call_id, result):
    """The message that answers tool call ``call_id`` with ``result`` (a dict)."""
    return {"role": "tool", "content": result}''',
    solution_code='''import json

def tool_message(call_id, result):
    """The message that answers tool call ``call_id`` with ``result`` (a dict)."""
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}''',
    checker=_check_tool_message, answers=("tool_message",),
    hints=("Look at the tool message in section 5: which keys does it have?",
           "It needs 'tool_call_id': call_id, and its content must be text: json.dumps(result)."),
)

"""The agent's tools: plain Python functions, their JSON schemas, and one registry.

The module opens with ``function_schema``, the one function notebook 05 builds. Every tool returns a
JSON-serialisable dict. ``run_tool`` is how the agent loop calls them: it never raises for bad input from
the model -- malformed, huge or too deeply nested JSON arguments, an unknown tool, a tool this request did
not offer, wrong or missing argument names, a tool that raises -- each becomes ``{"error": "..."}`` text
the model can read and recover from.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from helpers.core import clock
from helpers.llm.client import get_client, get_settings
from helpers.core.clock import WEEKDAYS
from helpers.core.errors import WorkshopError
from helpers.retrieval.knowledge import KnowledgeBase
from helpers.retrieval.knowledge_files import KnowledgeBaseError
from helpers.core.text import bracket_depth, shorten

DEFAULT_TIMEZONE = clock.DEFAULT_TIMEZONE
_KB = None  # the campus knowledge base, built on first use by campus_knowledge_base()


class ToolInputError(WorkshopError, ValueError):
    """The model passed an argument the tool cannot use; the message says what is accepted."""


class UnknownToolError(WorkshopError, ValueError, KeyError):
    """A tool name that is not in the registry (``tools=[...]`` of a session, ``tool_schemas``); the message
    names it and the known tools. Also a KeyError (what it was before), but printed as its message, unquoted."""

    __str__ = Exception.__str__


# ---------------------------------------------------------------- a tool: a function and its schema

def function_schema(name: str, description: str, properties: dict, required: list[str]) -> dict:
    """The description of one tool that the model sees: name, what it does, a JSON schema of its arguments."""
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


@dataclass(frozen=True)
class Tool:
    """A callable plus the schema the model sees."""

    name: str
    function: Callable[..., dict]
    schema: dict


# ---------------------------------------------------------------- the tools

def get_current_time(timezone: str = DEFAULT_TIMEZONE) -> dict:
    """The current date and time in an IANA time zone (frozen under test via WORKSHOP_NOW)."""
    try:
        moment = clock.now(timezone)
    except clock.ClockError as exc:
        raise ToolInputError(str(exc)) from None
    return {"timezone": timezone, "date": moment.strftime("%Y-%m-%d"), "time": moment.strftime("%H:%M"),
            "weekday": moment.strftime("%A"), "iso": moment.isoformat()}


def parse_weekday(name: str) -> str:
    """'Thursday', 'thursday', 'Thu', 'thurs' -> 'Thursday'; anything else raises ToolInputError."""
    cleaned = str(name).strip().lower().rstrip(".")
    if cleaned.endswith("s") and cleaned[:-1] in (d.lower() for d in WEEKDAYS):
        cleaned = cleaned[:-1]  # "Thursdays"
    for day in WEEKDAYS:
        if len(cleaned) >= 2 and day.lower().startswith(cleaned):
            return day
    raise ToolInputError(f"unknown weekday {name!r}; use one of {', '.join(WEEKDAYS)} (or Mon, Tue, ...)")


def _parse_time(value: str | None):
    if value in (None, ""):
        return None
    try:
        return datetime.strptime(str(value).strip(), "%H:%M").time()
    except ValueError:
        raise ToolInputError(f"time {value!r} must look like 18:00 (24-hour HH:MM)") from None


def days_until_weekday(weekday: str, time: str | None = None, timezone: str = DEFAULT_TIMEZONE) -> dict:
    """Days from today until the next ``weekday``; if it is today and ``time`` has passed, next week."""
    day = parse_weekday(weekday)
    at = _parse_time(time)
    try:
        today = clock.now(timezone)
    except clock.ClockError as exc:
        raise ToolInputError(str(exc)) from None
    days = (WEEKDAYS.index(day) - today.weekday()) % 7
    if days == 0 and at is not None and today.time() >= at:
        days = 7
    date = (today + timedelta(days=days)).strftime("%Y-%m-%d")
    result = {"weekday": day, "days": days, "date": date, "today": today.strftime("%A %Y-%m-%d")}
    if at is not None:
        result["time"] = at.strftime("%H:%M")
    return result


def search_campus_info(query: str, k: int = 3) -> dict:
    """Knowledge-base passages relevant to ``query``, with ids and scores (notebook 02's retrieval)."""
    if not str(query).strip():
        raise ToolInputError("query is empty; say what to look for, e.g. 'AI club meeting time'")
    kb = campus_knowledge_base()
    results = []
    for hit in kb.retrieve_context(str(query), k=int(k)):
        entry = kb.get(hit.id)
        row = {"id": hit.id, "title": hit.title, "text": hit.text, "score": round(float(hit.score), 3)}
        for extra in ("weekday", "time", "location", "date"):
            if getattr(entry, extra, None):
                row[extra] = getattr(entry, extra)
        results.append(row)
    out = {"query": query, "results": results}
    if not results:
        out["note"] = "nothing in the campus knowledge base matches this query"
    return out


def campus_knowledge_base():
    """The campus knowledge base the tools search, embedded once per process (notebook 02)."""
    global _KB
    if _KB is None:
        # Embedded where WORKSHOP_EMBEDDINGS says: MiniLM here (the default beside a local chat server),
        # hosted NIM, or the chat server itself.
        _KB = KnowledgeBase.from_settings(get_settings(), client=get_client(quiet=True))
    return _KB


def next_campus_event(entry_id: str) -> dict:
    """The next date of a recurring knowledge-base event (by entry id), with the days until it."""
    try:
        entry = campus_knowledge_base().get(str(entry_id).strip())
    except KnowledgeBaseError:
        entry = None
    if entry is None:
        raise ToolInputError(f"no knowledge-base entry with id {entry_id!r}; search_campus_info gives ids")
    if not entry.weekday:
        raise ToolInputError(f"{entry_id!r} ({entry.title}) is not a recurring event with a weekday")
    when = days_until_weekday(entry.weekday, entry.time)
    return {"id": entry.id, "title": entry.title, "location": entry.location, **when}


# ---------------------------------------------------------------- the registry

_TZ = {"type": "string", "description": "IANA time zone, e.g. America/Los_Angeles"}
REGISTRY: dict[str, Tool] = {tool.name: tool for tool in [
    Tool("search_campus_info", search_campus_info, function_schema(
        "search_campus_info", "Search the Larkspur University knowledge base (clubs, labs, office hours, "
        "events, services). Returns passages with ids to cite.",
        {"query": {"type": "string", "description": "What to look for, in a few words"}}, ["query"])),
    Tool("get_current_time", get_current_time, function_schema(
        "get_current_time", "The current date, weekday and time in a time zone.", {"timezone": _TZ}, [])),
    Tool("days_until_weekday", days_until_weekday, function_schema(
        "days_until_weekday", "How many days from today until the next given weekday. Use this to count "
        "or compare days; never estimate.",
        {"weekday": {"type": "string", "enum": list(WEEKDAYS)},
         "time": {"type": "string",
                  "description": "Optional event time HH:MM; if today and passed, next week"}},
        ["weekday"])),
    Tool("next_campus_event", next_campus_event, function_schema(
        "next_campus_event", "The next date of a recurring campus event, given its knowledge-base id.",
        {"entry_id": {"type": "string", "description": "An id returned by search_campus_info"}},
        ["entry_id"])),
]}


def tool_schemas(names: list[str] | None = None, registry: dict[str, Tool] | None = None) -> list[dict]:
    """The schemas to send as ``tools=``, for all tools or the ones named."""
    registry = REGISTRY if registry is None else registry
    unknown = [n for n in names or [] if n not in registry]
    if unknown:
        asked = ", ".join(map(_short_repr, unknown))
        raise UnknownToolError(f"unknown tool{'s' if len(unknown) != 1 else ''} {asked}; "
                               f"the known tools are {', '.join(sorted(registry)) or '(none)'}")
    return [registry[n].schema for n in (list(registry) if names is None else names)]


MAX_ARGUMENT_CHARS = 100_000  # far above any real tool call; protects the loop from runaway input
MAX_ARGUMENT_DEPTH = 100  # levels of nested [ ] and { }; deeper JSON could exhaust the parser's stack
_MAX_ERROR_CHARS = 2_000


def run_tool(name: str, arguments: str | dict | None, registry: dict[str, Tool] | None = None,
             offered: list[str] | None = None) -> str:
    """Run one tool call from the model and return its result as JSON text -- never raises for what the model sent.

    ``offered`` lists the tools this request showed the model; a call to any other tool, registered or
    not, is refused with an error result and never run. Whatever the tool itself raises becomes an error
    result naming it (``_call``); an error in this function's own lookup and checks is a bug of the package,
    and is raised as it is rather than disguised as the model's mistake.
    """
    registry = REGISTRY if registry is None else registry
    available = list(registry) if offered is None else [n for n in offered if n in registry]
    if not isinstance(name, str) or name not in available:
        listed = ", ".join(sorted(set(available))) or "(none)"
        if isinstance(name, str) and name in registry:
            return _error(f"tool {name!r} is not offered in this conversation; available tools: {listed}")
        return _error(f"unknown tool {_short_repr(name)}; available tools: {listed}")
    tool = registry[name]
    args = _parse_arguments(name, arguments, tool)
    if isinstance(args, str):
        return args  # an error result
    params = inspect.signature(tool.function).parameters
    unknown = sorted(_short_repr(key) if not isinstance(key, str) else key for key in set(args) - set(params))
    if unknown:
        return _error(f"wrong arguments for {name}: unknown argument(s) {unknown}; expected {_example(tool)}")
    try:
        inspect.signature(tool.function).bind(**args)
    except TypeError as exc:
        return _error(f"wrong arguments for {name}: {exc}; expected {_example(tool)}")
    return _call(name, tool, args)


def _call(name: str, tool: Tool, args: dict) -> str:
    """The tool's own code, run on checked arguments: its result as JSON text, or an error result the model
    can read for anything the tool raises (the tool is not this module's code; the loop must go on)."""
    try:
        result = tool.function(**args)
    except ToolInputError as exc:
        return _error(f"{name}: {exc}")
    except RecursionError:
        return _error(f"{name} could not use its arguments: they are nested too deeply; send plain values")
    except Exception as exc:  # a tool that raises must not crash the loop
        return _error(f"{name} failed with {type(exc).__name__}: {exc}")
    try:
        return json.dumps(result)
    except (TypeError, ValueError, RecursionError) as exc:
        return _error(f"{name} returned a result that is not JSON ({exc})")


def _parse_arguments(name: str, arguments, tool: Tool) -> dict | str:
    """The arguments as a dict, or an error result (a str) saying what to send instead."""
    if isinstance(arguments, dict):
        return arguments
    if arguments is not None and not isinstance(arguments, (str, bytes, bytearray)):
        return _error(f"arguments for {name} must be JSON text, not {type(arguments).__name__}; "
                      f"send an object like {_example(tool)}")
    if arguments is not None and len(arguments) > MAX_ARGUMENT_CHARS:
        return _error(f"arguments for {name} are too long ({len(arguments):,} characters, at most "
                      f"{MAX_ARGUMENT_CHARS:,}); send an object like {_example(tool)}")
    text = arguments.decode("utf-8", "replace") if isinstance(arguments, (bytes, bytearray)) else arguments
    if text and bracket_depth(text) > MAX_ARGUMENT_DEPTH:
        return _error(f"arguments for {name} are nested too deeply to read (more than {MAX_ARGUMENT_DEPTH} "
                      f"levels); send an object like {_example(tool)}")
    try:
        args = json.loads(arguments or "{}")
    except RecursionError:
        return _error(f"arguments for {name} are nested too deeply to read; "
                      f"send an object like {_example(tool)}")
    except (TypeError, ValueError) as exc:
        return _error(f"arguments for {name} are not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc}); "
                      f"send an object like {_example(tool)}")
    if not isinstance(args, dict):
        return _error(f"arguments for {name} must be a JSON object like {_example(tool)}")
    return args


def _short_repr(value, width: int = 80) -> str:
    """repr() cut to ``width`` characters, for values from the model that may be huge or odd."""
    try:
        text = repr(value)
    except Exception:  # a repr that recurses too deeply or raises
        text = f"<{type(value).__name__}>"
    return shorten(text, width, flatten=False)


def _error(message: str) -> str:
    return json.dumps({"error": shorten(message, _MAX_ERROR_CHARS, flatten=False)})


def _example(tool: Tool) -> str:
    props = tool.schema["function"]["parameters"]["properties"]
    required = tool.schema["function"]["parameters"].get("required", [])
    return json.dumps({p: f"<{props[p].get('type', 'value')}>" for p in (required or list(props))})

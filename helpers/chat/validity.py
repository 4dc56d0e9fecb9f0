"""What a strict server rejects in a message list, found in one pass (``find_problems``, notebook 07).

NIM, OpenAI and the offline stand-in refuse (HTTP 400) a request whose messages break the chat
format: an unknown role, a message without content, a malformed tool call, or a tool result that
does not answer a tool call of the assistant message just before it. ``find_problems`` names every
such problem with its message index, so a list can be tested before it is sent; the stand-in runs
it to produce its 400s, and ``helpers.chat.history`` runs it on every list it trims.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

SYSTEM_ROLES = frozenset({"system", "developer"})
ORPHAN_PHRASE = "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"


class MessageRef(int):
    """A message index mentioned inside a problem's text (numbered afresh when the problem is worded)."""


Problem = tuple  # (index of the message, who it is from, the text's parts: str or MessageRef)


def scan(messages: Sequence[Any]) -> list[Problem]:
    """Every problem in ``messages``, in one pass: each message is checked against the ones before it."""
    problems: list[Problem] = []
    seen_conversation = False  # any non-system message yet?
    calls: dict[str, int] = {}  # ids asked for by the nearest assistant message with tool_calls
    calls_at = -1  # that message's index
    answered: dict[str, int] = {}  # call id -> index of its tool result
    group_open = False  # nothing but tool results since that assistant message
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            content, cid = message.get("content"), message.get("tool_call_id")
            if type(content) is not str:
                problems += _tool_content_problem(i, content)
            if group_open and type(cid) is str and cid in calls and cid not in answered:
                answered[cid] = i  # the expected case: an answer to an open call
            elif not seen_conversation:
                problems.append((i, "tool", ("the history starts with a tool message (after the system "
                                             "part); " + ORPHAN_PHRASE,)))
            else:
                problems.append((i, "tool", _stray_result(cid, calls, calls_at, answered)))
            seen_conversation = True
            continue
        if group_open:  # the tool results end here: every call must have had one
            group_open = False
            if len(answered) < len(calls):
                problems.append(_unanswered(calls, calls_at, answered))
        if role == "user" or role == "assistant":
            seen_conversation = True
        elif not isinstance(role, str) or role not in SYSTEM_ROLES:  # not a dict, or an unknown role
            problems.append(_not_a_message(i, message))
            seen_conversation = True
            continue
        content = message.get("content")
        tool_calls = message.get("tool_calls") if role == "assistant" else None
        if (type(content) is not str or (not content and role == "assistant")) and (
                content is not None or tool_calls is None):  # not text, nor an assistant's tool calls alone
            problem = _content_problem(role, content, tool_calls)
            if problem:
                problems.append((i, role, (problem,)))
        if tool_calls is not None:
            calls = _call_ids(i, tool_calls, problems)
            calls_at, answered, group_open = i, {}, True
    if group_open and len(answered) < len(calls):
        problems.append(_unanswered(calls, calls_at, answered))
    return problems


def _not_a_message(i: int, message: Any) -> Problem:
    if not isinstance(message, dict):
        kind = type(message).__name__
        return i, kind, (f"is of type {kind}, not a dict like {{'role': 'user', 'content': '...'}}",)
    role = message.get("role")
    return i, str(role) if role is not None else "no role", (
        f"unknown role {role!r}; use one of system, developer, user, assistant, tool",)


def _content_problem(role: str, content: Any, tool_calls: Any) -> str | None:
    """What is wrong with a message's content, if anything (only called when it is not plain text)."""
    if content is not None and not isinstance(content, (str, list)):
        return f"content is of type {type(content).__name__}; use a string or a list of content parts"
    if role != "assistant":
        return "has no content; give it a string (or a list of content parts)" if content is None else None
    if tool_calls is None and (content is None or content == ""):
        return "has no content and no tool_calls; an assistant message needs one of them"
    return None


def _call_ids(i: int, tool_calls: Any, problems: list[Problem]) -> dict[str, int]:
    """The ids of an assistant message's tool calls; what is wrong with them goes to ``problems``."""
    calls: dict[str, int] = {}
    if not isinstance(tool_calls, list) or not tool_calls:
        problems.append((i, "assistant", ("tool_calls must be a non-empty list; remove the key if there are "
                                          "no calls",)))
        return calls
    for k, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            problems.append((i, "assistant", (f"tool_calls[{k}] is of type {type(call).__name__}, not a dict",)))
            continue
        cid, function = call.get("id"), call.get("function")
        if not isinstance(cid, str) or not cid:
            problems.append((i, "assistant", (f"tool_calls[{k}] has no id; every tool call needs a string id",)))
        elif cid in calls:
            problems.append((i, "assistant", (f"tool_calls[{k}] repeats id {cid!r}; tool call ids must be "
                                              "unique",)))
        else:
            calls[cid] = k
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            problems.append((i, "assistant", (f"tool_calls[{k}] has no function.name; name the tool being "
                                              "called",)))
        elif not isinstance(function.get("arguments"), str):
            kind = type(function.get("arguments")).__name__
            problems.append((i, "assistant", (f"tool_calls[{k}] ({name}) arguments are of type {kind}, not a "
                                              "string; pass json.dumps(arguments)",)))
    return calls


def _tool_content_problem(i: int, content: Any) -> list[Problem]:
    if content is None:
        return [(i, "tool", ("has no content; put the tool's result (a string) in it",))]
    if not isinstance(content, (str, list)):
        return [(i, "tool", (f"content is of type {type(content).__name__}; tool results must be strings",))]
    return []


def _stray_result(cid: Any, calls: dict[str, int], calls_at: int, answered: dict[str, int]) -> tuple:
    """Why a tool result answers no open call: no id, an unknown id, a second answer, or out of order."""
    if not isinstance(cid, str) or not cid:
        return (f"has no tool_call_id; {ORPHAN_PHRASE}, so give the id of the call it answers",)
    if cid not in calls:
        if calls_at < 0:
            return (f"orphan tool result for {cid!r}: no assistant message with tool_calls comes before it; "
                    f"{ORPHAN_PHRASE}",)
        return (f"orphan tool result for {cid!r}: the nearest preceding assistant message with tool_calls "
                "(message ", MessageRef(calls_at), f") asked for {sorted(calls)}; " + ORPHAN_PHRASE)
    if cid in answered:
        return (f"answers tool call {cid!r} a second time (first answer: message ", MessageRef(answered[cid]),
                "); keep one result per call")
    return (f"out of order: the result for {cid!r} comes after a non-tool message, but tool results must "
            "come directly after the assistant message that asked for them (message ", MessageRef(calls_at),
            f"); {ORPHAN_PHRASE}")


def _unanswered(calls: dict[str, int], calls_at: int, answered: dict[str, int]) -> Problem:
    """The problem of tool calls that got no result before the next non-tool message (or the end)."""
    missing = ", ".join(cid for cid in calls if cid not in answered)
    return calls_at, "assistant", ("an assistant message with 'tool_calls' must be followed by tool messages "
                                   "responding to each 'tool_call_id'; the following tool_call_ids did not "
                                   f"have response messages: {missing}",)


def word_problems(problems: Iterable[Problem], where: Callable[[int], int] = int) -> list[str]:
    """Each problem as a sentence naming its message; ``where`` renumbers indices (for a trimmed list)."""
    out = []
    for index, who, parts in sorted(problems, key=lambda p: p[0]):
        text = "".join(str(where(p)) if isinstance(p, MessageRef) else p for p in parts)
        out.append(f"message {where(index)} ({who}): {text}")
    return out


def find_problems(messages: Sequence[dict]) -> list[str]:
    """Human-readable problems, each naming its message index; empty iff a strict server would accept."""
    if not isinstance(messages, (list, tuple)):
        return [f"messages is of type {type(messages).__name__}; pass a list of message dicts"]
    if not messages:
        return ["the message list is empty; add at least one user message"]
    return word_problems(scan(messages))

"""The offline stand-in honours a user's standing instructions (notebook 13), so their effect shows without
a model.

Procedural memory adds a block to the system prompt (``helpers.core.instruction_block``: a header, one
quoted line per instruction). The stand-in honours a small, documented set of them:

* **length** and **bullet points**: the block is part of the system prompt, and the stand-in's style rule
  (``helpers.standin.policy._style``) reads every clause of it, negations included: "keep answers short" or
  "answer in one sentence" cut the answer to one sentence, "please use bullet points" lays it out as a list,
  "no bullet points, please" does not;
* **a required detail** (``honour_instructions``, here): "always give the building with a room number",
  "always include the time", "always mention the day", an email address or a phone number. When an answer
  built from tool results lacks a value of that kind, the stand-in adds the one the sources give for what
  the answer cites (any source, when it cites none) (``It is in Halvorsen Hall, Room 204 [club-ai].``), or says that the
  sources give none. The kind is read from what the instruction names, by the shape of the value
  (``DETAILS``), never from a phrase list.

What it does not do: write another language ("answer in Spanish" is stored and shown, and a model follows
it; the stand-in answers in English), or change its tone.
"""
from __future__ import annotations

import json
import re
from typing import Any

from helpers.core.clock import WEEKDAYS
from helpers.core.instruction_block import read_instruction_block

# kind of detail -> (the words an instruction names it by, the shape of its value, how an answer adds it)
DETAILS = {
    "room": (r"\brooms?\b|\bbuilding\b", r"(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*)*, )?\bRoom [A-Z0-9][\w.-]*[A-Z0-9]|"
             r"(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*)*, )?\bRoom [A-Z0-9]", "It is in {}"),
    "time": (r"\btimes?\b|\bhours?\b|\bwhen\b", r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b", "The time is {}"),
    "day": (r"\bdays?\b|\bweekdays?\b", r"\b(?:" + "|".join(WEEKDAYS) + r")s?\b", "The day is {}"),
    "email": (r"\be-?mail\b", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", "Email: {}"),
    "phone": (r"\bphone\b|\bnumber to call\b|\btelephone\b", r"\+?\d[\d ()-]{6,}\d", "Phone: {}"),
}
REQUIRED = re.compile(r"\b(?:always|every time|each time|whenever)\b", re.I)
CITED = re.compile(r"\[([a-z0-9][\w-]*)\]")


def required_details(instructions: list[str]) -> list[str]:
    """The kinds of detail (``DETAILS``' keys) the instructions require in every answer."""
    kinds = []
    for text in instructions:
        if not REQUIRED.search(text) or re.search(r"\b(?:never|don'?t|do not|no|stop)\b", text, re.I):
            continue
        kinds += [kind for kind, (named, _, _) in DETAILS.items() if re.search(named, text, re.I)
                  and kind not in kinds]
    return kinds


def _system_prompt(messages: list[dict]) -> str:
    first = messages[0] if messages else {}
    content = first.get("content") if first.get("role") in ("system", "developer") else ""
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _sources(messages: list[dict]) -> list[tuple[str, str]]:
    """(id, text) of what this turn's tools returned: each hit of a result, with its id when it has one."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    found = []
    for message in messages[last_user + 1:]:
        if message.get("role") != "tool" or not isinstance(message.get("content"), str):
            continue
        try:
            result = json.loads(message["content"])
        except ValueError:
            found.append(("", message["content"]))
            continue
        hits = result.get("results") if isinstance(result, dict) else None
        for item in hits if isinstance(hits, list) else [result]:
            if isinstance(item, dict):
                text = " ".join(str(v) for v in item.values() if isinstance(v, (str, int, float)))
                found.append((str(item.get("id", "")), text))
    return found


def honour_instructions(content: str | None, messages: list[dict]) -> str | None:
    """``content`` (a final answer) with each detail the instructions require added when it lacks one, from
    the turn's tool results (see the module). Without such instructions or sources, ``content`` unchanged."""
    if not content:
        return content
    kinds = required_details(read_instruction_block(_system_prompt(messages)))
    sources = _sources(messages) if kinds else []
    if not sources:
        return content
    cited = set(CITED.findall(content))
    ranked = [s for s in sources if s[0] in cited] or sources  # what the answer cites, else every source
    added = []
    for kind in kinds:
        _, shape, wording = DETAILS[kind]
        if re.search(shape, content):
            continue
        value = next(((pid, m.group(0)) for pid, text in ranked for m in [re.search(shape, text)] if m), None)
        if value is None:
            added.append(f"(The sources give no {kind} for this.)")
        else:
            pid, text = value
            added.append(wording.format(text) + (f" [{pid}]." if pid else "."))
    return " ".join([content.rstrip(), *added]) if added else content


def apply(decision: Any, messages: list[dict]) -> Any:
    """The stand-in's hook: a final answer (no tool calls) with the required details added."""
    if getattr(decision, "content", None) and not getattr(decision, "tool_calls", None):
        decision.content = honour_instructions(decision.content, messages)
    return decision

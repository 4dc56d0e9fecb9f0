"""The offline stand-in's decision rules: small, readable, deterministic, and NOT a model.

``decide(messages, tools)`` reads only the request it is given and returns either
text or tool calls. The rules, in order:

1. **Special tasks** named in the system prompt: a grounding judge or a scope
   classifier (notebook 03), a conversation summariser (notebook 08), a fact
   extractor (notebooks 09-10). Each has its own rule (implemented in
   ``helpers/standin/tasks.py``, reading meaning through ``helpers/standin/meaning.py``):
   - *grounding judge* (``judge_grounding``): every day, time, date, floor, room, code, number and
     name the ANSWER states must be in the PASSAGES, compared by what it means: "Wed" ==
     "Wednesday", "every wednesday" is not "Thursday"; "3pm to 5pm" == "15:00-17:00";
     "5th floor" == "fifth floor" != "floor 3"; "Monday to Friday" == "weekdays"; "two weeks" is
     not "two people". It checks the facts an answer names, not what the sentence says about them
     ("closed on Sundays" supports a claim that names Sunday) -- and its claims about all of something
     ("every student who applies", "all year round", "always"): the passages must make one about the same noun
     or with the same word.
   - *scope classifier* (``classify_scope``): unsafe when the request asks for harm by meaning
     (near a kind of harm -- another person's account, cheating, theft, violence, ... -- rather
     than its harmless twin; asking how to do a harmful act; acting without someone's consent or on
     someone else's things; asking for something fake or forged); campus when it is near the campus knowledge
     base (the local model's similarity plus the share of its informative words the nearest entry uses), or a
     little less near it and naming a thing of university life (coursework, halls, a module); else off_topic.
   - *summariser* (``summarise_conversation``): extractive. For every turn in the
     TURNS section it keeps the user's words (first two sentences, at most 30 words)
     and the final assistant answer (first sentence, at most 25 words) as one line
     ``[turn N] user: "..." -> assistant: "..."``; acknowledgements ("ok", "thanks")
     are left out. Lines of the PREVIOUS SUMMARY come first. Over the WORD LIMIT it
     drops the oldest lines where the user asked a question, then the oldest of the
     rest (what users say about themselves outlives Q&A), and a first line names the
     turns left out ("(Left out to stay within the word limit: turns 2-5.)"). It does not read the KEEP
     list (like a model that skims its instructions); facts named in a MISSING
     section (a re-ask) are appended on a ``Pinned:`` line, which later summaries
     carry over.
   - *fact extractor* (``extract_facts``; also a request that names a "profile extractor"):
     regular expressions on the statements of the USER SAID section only (never on a question,
     never on the assistant's words):
     "my name is X" / "call me X" -> name; "my goal is to ..." / "I'm aiming to ..." ->
     goal; "I'm vegetarian" (vegan, gluten-free) -> constraint/diet; "I'm allergic to
     ..." -> constraint/allergy; "I can't do ..." -> constraint/<topic>; "I prefer ..." ->
     preference/<topic>. It keeps the facts the request's ATTRIBUTES list allows (all of
     them when the list is open), so a closed list none of these name -- notebook 10's
     delivery and contact facts -- gets none. Reply: the one strict JSON shape
     ``{"facts": [{"attribute": ..., "value": ..., "evidence": ...}]}``.
1b. **Questions about the user** ("who is my advisor?", "which locker is mine again?", "where
   did I grow up?", "what did I say about mornings?", "who is visiting next month?"), asked as
   the newest message: answered without tools from the user's own statements in the request --
   earlier user messages, ``[turn N] user: "..."`` quotes and ``- label: value`` lines in memory
   blocks -- matched by meaning (the same topic in other words) and by the kind of value asked (a
   name, a person, a number, a time, a place), a correction winning over the value it replaced
   and current over superseded values; with nothing that matches, a question that is surely about
   the user gets "I don't know", never a guess, and a campus question asked in the first person
   ("where can I print my essay?") goes on to the tools (the full rule is in
   ``helpers/standin/memory_rule.py``).
   A newest message that only *states* profile facts (the profile rules match, "my <attribute>
   is <value>" included; no question mark) gets "Noted: ..." without tools; a bare acknowledgement
   ("ok", "thanks!") gets "You're welcome!".
2. **After tool results** (the last message is a tool result; read as JSON, a Python
   literal such as ``str(result)``, or plain text): if the question still
   needs something (a day count, a second lookup), ask for it; otherwise answer from
   the tool results of this turn. After a tool error, retry that call once, then give up
   and say so.
3. **A user question with tools offered**: work out what the question needs --
   ``search`` (campus facts), ``days`` (how many days until a weekday), ``compare``
   (which of two things is sooner), ``time`` (what time/day it is) -- and call the
   matching tools, several in parallel when the question needs several independent
   results. A back-reference ("that", "those two") is resolved from weekdays mentioned
   earlier in the conversation. With nothing to resolve it from, the stand-in says it
   does not know what "that" refers to -- exactly what a real model must do when the
   history is missing.
4. **No tools**: answer from retrieved passages in the messages (lines like
   ``[club-ai] AI Club: ...``) with the sentence most similar to the question (the
   local MiniLM model; below ``ANSWER_SIMILARITY`` it says it doesn't know), citing the
   entry id; otherwise a short honest reply.
   A greeting gets a two-sentence introduction, anything else a two-sentence "I can only answer from
   ..." (so a limit of one sentence shows).
   System prompt directives it honours: "your name is X" (in a greeting); answer length --
   "one sentence", "a single sentence", "1 sentence", "at most two sentences", "up to three sentences",
   "briefly", "keep it short", "concise", and their negations ("never answer in one sentence" asks for
   more, "one short sentence, never two" and "never two sentences" for one, "don't be brief", "write a
   paragraph"; a count says how brief "brief" is: "be concise -- two sentences at most" allows two), read clause
   by clause by ``meaning.length_limit``; "bullet points";
   "uppercase" / "shout" (each unless negated: "don't use bullet points").
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field

from helpers.core.clock import WEEKDAYS
from helpers.core.context_format import (FACT_EXTRACTOR, GROUNDING_JUDGE, PROFILE_EXTRACTOR, SCOPE_CLASSIFIER,
                                    SUMMARISER, is_context_message, read_passage_lines, read_task)
from helpers.standin.meaning import asks_for, embed, length_limit, sentences
from helpers.standin.memory_rule import _about_user, _noted
from helpers.standin.request_text import _STOP, _WORD, _text
from helpers.standin.tasks import classify_scope, extract_facts, judge_grounding, summarise_conversation

_WEEKDAY_RE = re.compile(r"\b(" + "|".join(WEEKDAYS) + r")s?\b(?:\s+(?:at|from)\s+(\d{1,2}:\d{2}))?", re.I)
STANDIN_NOTE = "offline stand-in"


@dataclass
class Decision:
    """What the stand-in replies: text, or tool calls as (name, arguments) pairs."""

    content: str | None = None
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)


@dataclass
class Mention:
    """A weekday the conversation mentioned, with what it was about when known."""

    weekday: str
    time: str | None = None
    label: str | None = None


# ---------------------------------------------------------------- small readers

def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _load(text: str):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


MAX_LITERAL_CHARS = 100_000  # longer tool results are read as JSON or plain text only


def read_tool_result(text: str) -> dict:
    """A tool result the way a model reads it: JSON, a Python literal (``str(dict)``) or plain text.

    JSON and Python literals (parsed with ``ast.literal_eval``, which evaluates no code) that give a
    dict are returned as they are; anything else becomes ``{"text": text}``.
    """
    value = _load(text)
    if value is None and text.lstrip()[:1] in "{[(" and len(text) <= MAX_LITERAL_CHARS:
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
    return value if isinstance(value, dict) else {"text": text}


def _system_text(messages: list[dict]) -> str:
    return "\n".join(_text(m) for m in messages if m.get("role") in ("system", "developer"))


def _last_user_index(messages: list[dict]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return -1


def _tool_names(tools: list | None) -> set[str]:
    return {t.get("function", {}).get("name") for t in tools or [] if isinstance(t, dict)}


def _turn_results(messages: list[dict], start: int) -> list[tuple[str, dict, dict | None]]:
    """(tool name, arguments, parsed result) for every tool call answered since ``start``."""
    calls: dict[str, tuple[str, dict]] = {}
    results = []
    for message in messages[start:]:
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            calls[call.get("id")] = (fn.get("name"), _load(fn.get("arguments") or "{}") or {})
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            name, args = calls[message["tool_call_id"]]
            results.append((name, args, read_tool_result(_text(message))))
    return results


# ---------------------------------------------------------------- mentions (memory lives here)

def _mentions_in_result(name: str, result: dict) -> list[Mention]:
    if result.get("error"):
        return []
    if set(result) == {"text"}:  # a plain-text result
        return _mentions_in_text(result["text"])[:1]
    if name == "search_campus_info":
        hits = [h for h in result.get("results", []) if h.get("weekday")]
        return [Mention(hits[0]["weekday"], hits[0].get("time"), hits[0].get("title"))] if hits else []
    if result.get("weekday") and name != "get_current_time":
        return [Mention(result["weekday"], result.get("time"), result.get("title") or result.get("label"))]
    return []


_LABELLED = re.compile(
    r"([A-Z][\w'&-]*(?: [A-Za-z][\w'&-]*){0,5}) (?:meets?|are|is|runs?|happens?|takes? place|open)"
    r"(?: held)?(?: every| on)* (" + "|".join(WEEKDAYS) + r")s?\b(?:\s+(?:at|from)\s+(\d{1,2}:\d{2}))?")


def _mentions_in_text(text: str) -> list[Mention]:
    found = [Mention(m.group(2).capitalize(), m.group(3), m.group(1)) for m in _LABELLED.finditer(text)]
    if found:
        return found
    return [Mention(m.group(1).capitalize(), m.group(2)) for m in _WEEKDAY_RE.finditer(text)]


def conversation_mentions(messages: list[dict]) -> list[Mention]:
    """Weekdays mentioned so far, oldest first: from tool results and assistant/user text."""
    found: list[Mention] = []
    calls: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        for call in message.get("tool_calls") or []:
            calls[call.get("id")] = call.get("function", {}).get("name")
        if role == "tool":
            name = calls.get(message.get("tool_call_id"), "")
            found += _mentions_in_result(name, read_tool_result(_text(message)))
        elif role in ("assistant", "user"):
            found += _mentions_in_text(_text(message))
    return found


def _distinct_recent(mentions: list[Mention], n: int) -> list[Mention]:
    """The ``n`` most recent mentions of different weekdays, best-labelled copy of each."""
    chosen: list[Mention] = []
    for mention in reversed(mentions):
        same = [c for c in chosen if c.weekday == mention.weekday]
        if same:
            if not same[0].label and mention.label:
                same[0].label = mention.label
            same[0].time = same[0].time or mention.time
            continue
        if len(chosen) == n:
            continue
        chosen.append(Mention(mention.weekday, mention.time, mention.label))
    return chosen


# ---------------------------------------------------------------- what a question needs

_BACKREF = re.compile(r"\b(that|then|it|those|these|them|both|the two|there)\b", re.I)


def question_needs(question: str) -> set[str]:
    """Which of search / days / compare / time a question needs, by simple word rules."""
    q = question.lower()
    needs = set()
    if re.search(r"\bsooner\b|\bfirst\b|\bearlier\b|\bwhich of\b", q):
        needs.add("compare")
    if re.search(r"how many days|how long until|how long till|days (?:from now|away|until|left)|how soon", q):
        needs.add("days")
    if re.search(r"what time is it|current time|what day is (?:it|today)|today'?s date|what is the date", q):
        needs.add("time")
    weekday_named = _WEEKDAY_RE.search(question) is not None
    subject_words = _words(re.sub(_BACKREF, " ", q)) - {"sooner", "first", "earlier", "long", "soon",
                                                           "away", "left", "current", "time", "date", "today"}
    if "compare" not in needs and not weekday_named and subject_words and not ("time" in needs and not
                                                                                 needs - {"time"}):
        needs.add("search")
    if "days" in needs and "search" in needs and _BACKREF.search(q) and not subject_words - {"club", "hours"}:
        needs.discard("search")
    return needs


# ---------------------------------------------------------------- the rules

def decide(messages: list[dict], tools: list | None = None, tool_choice=None) -> Decision:
    """The stand-in's reply to one request (see the module docstring for the rules)."""
    system = _system_text(messages)
    task = _special_task(system, messages)
    if task is not None:
        return task
    about_user = _about_user(messages) or _noted(messages)
    if about_user is not None:
        return Decision(content=_style(about_user, system))
    offered = _tool_names(tools) if tool_choice != "none" else set()
    start = _last_user_index(messages)
    question = _text(messages[start]) if start >= 0 else ""
    if offered:
        return _agent_step(messages, start, question, offered, system)
    return Decision(content=_style(_answer_without_tools(messages, question), system))


def _agent_step(messages, start, question, offered, system) -> Decision:
    results = _turn_results(messages, start + 1)
    errors = [(n, a, r) for n, a, r in results if r and r.get("error")]
    if results and results[-1][2].get("error"):
        name, args, result = results[-1]
        failures = sum(1 for n, a, _ in errors if n == name and a == args)
        if failures < 2 and name in offered and "unknown tool" not in str(result.get("error")):
            return Decision(tool_calls=[(name, args)])
    needs = question_needs(question)
    done = {n for n, _, r in results if r and not r.get("error")}
    done |= {n for n, _, _ in errors if sum(1 for e in errors if e[0] == n) >= 2}  # gave up on it
    history = messages[:start]
    turn_mentions = [m for n, _, r in results if r for m in _mentions_in_result(n, r)]

    if "time" in needs and "get_current_time" in offered and "get_current_time" not in done:
        return Decision(tool_calls=[("get_current_time", {})])
    if "compare" in needs and "days_until_weekday" in offered and "days_until_weekday" not in done:
        pair = _distinct_recent(conversation_mentions(history) + _mentions_in_text(question) + turn_mentions,
                                2)
        if len(pair) < 2:
            return Decision(content=_style(_unresolved(question, "two things to compare"), system))
        return Decision(tool_calls=[("days_until_weekday", _day_args(m)) for m in reversed(pair)])
    if "search" in needs and "search_campus_info" in offered and "search_campus_info" not in done:
        return Decision(tool_calls=[("search_campus_info", {"query": _search_query(question)})])
    if "days" in needs and "days_until_weekday" in offered and "days_until_weekday" not in done:
        named = _mentions_in_text(question)
        target = named[-1] if named else None
        if target is None and turn_mentions:
            target = turn_mentions[0]
        if target is None and "search" not in needs:
            recent = _distinct_recent(conversation_mentions(history), 1)
            target = recent[0] if recent else None
        if target is None:
            if "search_campus_info" in done:
                return Decision(content=_style(_compose(question, results), system))
            return Decision(content=_style(_unresolved(question, "a day to count to"), system))
        return Decision(tool_calls=[("days_until_weekday", _day_args(target))])
    if results:
        labels = {m.weekday: m.label for m in conversation_mentions(history) if m.label}
        return Decision(content=_style(_compose(question, results, labels), system))
    return Decision(content=_style(_answer_without_tools(messages, question), system))


def _day_args(mention: Mention) -> dict:
    args = {"weekday": mention.weekday}
    if mention.time:
        args["time"] = mention.time
    return args


def _search_query(question: str) -> str:
    cleaned = re.sub(r"^(and|so|ok|okay|also)\b[\s,]*", "", question.strip(), flags=re.I)
    cleaned = re.split(r",? and how (?:many|long)|,? and when is that", cleaned, flags=re.I)[0]
    return cleaned.strip(" ?.!") or question.strip()


def _unresolved(question: str, what: str) -> str:
    return (f"I don't know what you mean by that: nothing earlier in this conversation gives me {what}. "
            f"Could you say which event you mean?")


# ---------------------------------------------------------------- composing answers

def _describe_hit(hit: dict) -> str:
    if hit.get("weekday"):
        when = f"{hit['weekday']}s" + (f" at {hit['time']}" if hit.get("time") else "")
        where = f" in {hit['location']}" if hit.get("location") else ""
        return f"{hit.get('title', 'It')} takes place on {when}{where} [{hit.get('id')}]."
    first = re.split(r"(?<=[.!?])\s", hit.get("text", "").strip())[0]
    return f"{first} [{hit.get('id')}]"


def _describe_days(result: dict, label: str | None = None) -> str:
    days = result.get("days")
    when = f"{result.get('weekday')}" + (f" {result.get('time')}" if result.get("time") else "")
    span = "today" if days == 0 else "tomorrow" if days == 1 else f"in {days} days"
    head = f"{label} ({when})" if label else when
    return f"{head} is {span}" + (f", on {result['date']}" if result.get("date") else "")


def _compose(question: str, results, labels: dict[str, str] | None = None) -> str:
    parts: list[str] = []
    days_results = [(a, r) for n, a, r in results if n == "days_until_weekday" and not r.get("error")]
    labels = dict(labels or {})
    labels.update({m.weekday: m.label for n, _, r in results for m in _mentions_in_result(n, r) if m.label})
    for name, args, result in results:
        if result.get("error"):
            continue
        if set(result) == {"text"}:
            parts.append(" ".join(re.split(r"(?<=[.!?])\s", result["text"].strip())[:2]))
        elif name == "search_campus_info":
            hits = result.get("results") or []
            parts.append(_describe_hit(hits[0]) if hits else
                         "I could not find that in the campus information.")
        elif name == "get_current_time":
            parts.append(f"It is {result.get('weekday')}, {result.get('date')}, {result.get('time')} "
                         f"({result.get('timezone')}).")
        elif name not in ("days_until_weekday",):
            parts.append(_describe_generic(result))
    if len(days_results) >= 2:
        ranked = sorted(days_results, key=lambda ar: (ar[1].get("days", 99), ar[1].get("time") or ""))
        first, other = ranked[0][1], ranked[1][1]
        parts.append(f"{_describe_days(first, labels.get(first.get('weekday')))}, so it comes sooner; "
                     f"{_describe_days(other, labels.get(other.get('weekday')))}.")
    elif days_results:
        parts.append(_describe_days(days_results[0][1]) + ".")
    if not parts:
        failed = [n for n, _, r in results if r.get("error")]
        return (f"I couldn't get an answer: the tool {failed[-1]} failed twice. Please try again later."
                if failed else "I don't have enough information to answer that.")
    return " ".join(parts)


def _describe_generic(result: dict) -> str:
    if result.get("title") and result.get("date"):
        return f"The next {result['title']} is on {result.get('weekday')} {result['date']}" + (
            f" at {result['time']}" if result.get("time") else "") + (
            f" ({result['days']} days from now)." if "days" in result else ".")
    return "; ".join(f"{k}: {v}" for k, v in result.items() if not isinstance(v, (list, dict)))


def _answer_without_tools(messages: list[dict], question: str) -> str:
    passages = []
    for message in messages:
        if message.get("role") in ("system", "developer", "user"):
            passages += read_passage_lines(_text(message))  # helpers.core.context_format: "[id] title: text"
    if passages or re.search(r"^context:", _system_text(messages), re.I | re.M):
        return _answer_from_passages(question, passages)
    if _GREETING.search(question):
        return (f"Hello, I'm the {STANDIN_NOTE} (deterministic rules, not a language model). "
                "Ask me about Larkspur University's clubs, labs, office hours and events.")
    mentions = conversation_mentions(messages[:-1])
    if _BACKREF.search(question) and not mentions:
        return _unresolved(question, "something to refer back to")
    return (f"I'm the {STANDIN_NOTE}, not a language model. I can only answer from passages, tool "
            "results or earlier turns in this conversation, and none of them covers that.")


_GREETING = re.compile(r"^\W*(?:hello|hi+|hiya|hey+(?: there)?|howdy|greetings|yo|hallo|good (?:morning|afternoon|"
                       r"evening|day))\b|\b(?:hello|hi there|hey there|good (?:morning|afternoon|evening))\b", re.I)

ANSWER_SIMILARITY = 0.40  # below this, no retrieved sentence answers the question


def _answer_from_passages(question: str, passages: list) -> str:
    """Rule: answer with the passage sentence most similar to the question (local MiniLM embeddings),
    citing its id -- or say "I don't know" when no sentence reaches ANSWER_SIMILARITY."""
    found = []
    for passage in passages:
        for sentence in sentences(passage.text or passage.title):
            found.append((passage.id, passage.title, sentence))
    if not found:
        return "I don't know: the provided context does not cover that."
    vectors = embed([question] + [f"{title}: {sentence}" for _, title, sentence in found])
    scores = vectors[1:] @ vectors[0]
    best = max(range(len(found)), key=lambda i: (round(float(scores[i]), 6), -i))
    if scores[best] < ANSWER_SIMILARITY:
        return "I don't know: the provided context does not cover that."
    pid, _, sentence = found[best]
    return f"{sentence.rstrip('.')} [{pid}]."


def _style(text: str, system: str) -> str:
    """Apply the few system-prompt directives the stand-in understands (``helpers/standin/meaning.py`` reads
    them clause by clause, negations included: "never answer in one sentence" is not a length limit)."""
    name = re.search(r"[Yy]our name is ([A-Z][\w-]*)", system)
    if name and text.startswith("Hello, I'm the"):
        text = text.replace("Hello, I'm the", f"Hello, I'm {name.group(1)}, running on the", 1)
    limit = length_limit(system)
    if limit is not None:
        text = " ".join(sentences(text)[:limit])
    if asks_for(system, r"\bbullet"):
        text = "\n".join(f"- {part}" for part in sentences(text) if part)
    if asks_for(system, r"\buppercase\b|\bupper case\b|\bshout"):
        text = text.upper()
    return text


# ---------------------------------------------------------------- special tasks (helpers/standin/tasks.py)

def _instructions(messages: list[dict]) -> str:
    """The system messages that may name a task: every one but a memory block (``is_context_message``)."""
    return "\n".join(text for text in (_text(m) for m in messages if m.get("role") in ("system", "developer"))
                     if not is_context_message(text))


def _special_task(system: str, messages: list[dict]) -> Decision | None:
    # the task markers of helpers.core.context_format ("You are a grounding judge ..."), named by instructions only:
    # a recalled turn, a fact line or a summary that says "you are a grounding judge" names no task
    task = read_task(_instructions(messages))
    if task == GROUNDING_JUDGE:
        return Decision(content=json.dumps(judge_grounding(_text(messages[-1]))))
    if task == SCOPE_CLASSIFIER:
        return Decision(content=json.dumps(classify_scope(_text(messages[-1]))))
    if task == SUMMARISER:
        return Decision(content=summarise_conversation(_text(messages[-1])))
    if task in (FACT_EXTRACTOR, PROFILE_EXTRACTOR):
        return Decision(content=extract_facts(system, _text(messages[-1])))
    return None

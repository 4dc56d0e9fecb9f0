"""Exercises of notebook 12: shares for a tighter budget, a new kind of user fact, a check for old values, and the
grounding step of the assistant's own ``ask``.

Every check runs on the offline stand-in whatever backend the notebook uses (a check never sends a
conversation to a hosted model), on conversations and cases of its own (several generated from seeds), and
never reads the day: dates appear in profile lines, but what is checked is where the values are, not when
they were said.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from pathlib import Path

import httpx2
import openai

from helpers.agent_turn import EMPTY_REPLY
from helpers.assistant import open_assistant
from helpers.config import OFFLINE_API_KEY, OFFLINE_BASE_URL
from helpers.exercises import Exercise, Hint
from helpers.exercises.nb12_replay import BUDGET, TIGHT_BUDGET, context_lines, offline, replay_shares
from helpers.facts.writer import FactMemory
from helpers.guardrails import FALLBACK, GROUNDING_PROMPT, check_grounding, evidence_from_turn
from helpers.memory.assembler import MemoryAssembler
from helpers.memory.budget import DEFAULT_SHARES, ContextBudgetError, Shares
from helpers.memory.profile import ProfileMemory
from helpers.memory.profile_extraction import extract_with_rules
from helpers.memory.recall import is_question
from helpers.memory.recall_index import RecallIndex
from helpers.standin.server import handle


# ---------------------------------------------------------------- exercise 1: shares for a tighter budget

def _check_shares(my_shares) -> str:
    if not isinstance(my_shares, Shares):
        raise Hint(f"my_shares must be a Shares(profile=..., summary=..., recall=...) (got {my_shares!r}).")
    before = replay_shares(DEFAULT_SHARES, BUDGET)
    try:
        mine = replay_shares(my_shares, TIGHT_BUDGET)
    except ContextBudgetError as error:
        raise Hint(f"Even the fixed costs do not fit: {error}") from None
    if mine.hits < before.hits:
        default = replay_shares(DEFAULT_SHARES, TIGHT_BUDGET)
        raise Hint(f"At {TIGHT_BUDGET} tokens these shares keep the evidence for {mine.hits} of "
                   f"{mine.questions} questions about the user; at {BUDGET} the default shares keep "
                   f"{before.hits} (at {TIGHT_BUDGET} they keep {default.hits}). First missed: "
                   f"{mine.missed[0]}. Which layer held the evidence in the ablation table? Give that "
                   "layer a larger share of the room.")
    if mine.stale:
        raise Hint(f"{mine.stale} questions now see an old value without its 'superseded' mark: keep the "
                   "layer that names corrections (the profile) in the request.")
    if mine.sent * 2 <= mine.fits:
        raise Hint(f"These shares leave the window (nearly) nothing: in {mine.fits} requests the newest turn "
                   f"would have fitted in the room on its own, and it was sent in {mine.sent}. The window gets "
                   "only what profile, summary and recall leave, so a follow-up such as 'How many days until "
                   "that?' would have nothing to point to. Keep the three shares small enough to leave the "
                   "window room: it should still carry the newest turn in more than half of those requests.")
    return (f"at {TIGHT_BUDGET} tokens your shares ({my_shares.profile:.0%} profile, {my_shares.summary:.0%} "
            f"summary, {my_shares.recall:.0%} recall) keep the evidence for {mine.hits} of {mine.questions} "
            f"questions, as the defaults do at {BUDGET}, and the window still carries the newest turn in "
            f"{mine.sent} of the {mine.fits} requests where it fits; mean first request "
            f"{mine.mean_tokens:,.0f} tokens instead of {before.mean_tokens:,.0f}.")


exercise_1 = Exercise(
    "12.1", "shares for a tighter budget",
    stub=("# The room left after tools, system prompt and question, shared out (the window gets the rest)\n"
          "my_shares = Shares(profile=0.15, summary=0.20, recall=0.25)"),
    solution_code=("# At 950 tokens the tools and the system prompt leave little room. The profile holds\n"
                   "# every fact with its correction, the most relevant line first: give it most of it,\n"
                   "# and leave the rest to recall and the window.\n"
                   "my_shares = Shares(profile=0.60, summary=0.0, recall=0.20)"),
    checker=_check_shares, answers=("my_shares",), context=lambda: {"Shares": Shares},
    hints=("Run the check: how many questions keep their evidence with the default shares at 950 tokens?",
           "The ablation table shows which layer answers the 'what's my ...' questions alone. A share is "
           "a fraction of a small room: at 950 tokens, 15% of it does not fit a single profile line.",
           "Try Shares(profile=0.6, summary=0.0, recall=0.2), then see how low the profile's share can go. "
           "Shares that add up to 100% leave the window nothing."),
)


# ---------------------------------------------------------------- exercise 2: a new kind of user fact

class _ProfileWith(ProfileMemory):
    """The profile of lesson 09, extracting with a given function instead of the built-in rules."""

    def __init__(self, extractor, **kwargs):
        super().__init__(extractor="rules", **kwargs)
        self.extract = extractor

    def update(self, turn_id: int, user_text: str, assistant_text: str = ""):
        """Extract with ``self.extract``; ``merge`` checks the words and writes to the fact store."""
        return self.merge(turn_id, self.extract(user_text), user_text)


PLACE_FIRST = ("Wren", "Osprey", "Heron", "Larch", "Juniper", "Kestrel", "Alder", "Plover", "Tamarack", "Sedge")
PLACE_KIND = ("House", "Hall", "Lodge", "Court")
STATEMENTS = ("I live in {place}.", "Actually, I live in {place} now.", "I live in {place}, near the lake.",
              "These days I live in {place}.", "Since September I live in {place}!")
NOT_ABOUT_ME = ("Do I live in {place}?", "My sister lives in {place}.", "Where do I live?",
                "Does Bo live in {place}?")
NEGATED = ("I don't live in {place}.", "I do not live in {place} any more.", "I no longer live in {place}.")


def places(seed: int, n: int) -> list[str]:
    """``n`` different made-up halls of residence, from a seed."""
    rng = random.Random(seed)
    names = [f"{first} {kind}" for first in PLACE_FIRST for kind in PLACE_KIND]
    return rng.sample(names, n)


def new_fact_cases(seed: int) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(statement, place) pairs, sentences that are not about the user, and negated ones, from a seed."""
    where = places(seed, len(STATEMENTS) + len(NOT_ABOUT_ME) + len(NEGATED))
    stated = [(template.format(place=place), place) for template, place in zip(STATEMENTS, where)]
    rest = where[len(STATEMENTS):]
    others = [template.format(place=place) for template, place in zip(NOT_ABOUT_ME, rest)]
    negated = [template.format(place=place) for template, place in zip(NEGATED, rest[len(NOT_ABOUT_ME):])]
    return stated, others, negated


def _items(my_extractor, text: str) -> list[dict]:
    items = my_extractor(text)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise Hint(f"my_extractor({text!r}) returned {items!r}; return a list of "
                   '{"key": ..., "topic": ..., "value": ...} dicts.')
    return items


def _check_new_fact(my_extractor) -> str:
    if not callable(my_extractor):
        raise Hint("my_extractor must be a function: def my_extractor(user_text): ...")
    keys, tried = set(), 0
    for seed in (0, 1, 2):
        stated, others, negated = new_fact_cases(seed)
        for text, place in stated:
            items = _items(my_extractor, text)
            values = [i.get("value", "") for i in items]
            if place not in values:
                close = [v for v in values if place in v]
                more = f" (you gave {close[0]!r}: leave out the words around the place)" if close else ""
                raise Hint(f"From {text!r} the new fact's value should be {place!r}{more}.")
            keys.add(next(i.get("key") for i in items if i.get("value") == place))
            tried += 1
        if len(keys) != 1:
            raise Hint(f"Use one key for every 'I live in ...' statement (got {sorted(map(str, keys))}): a "
                       "correction replaces a value only under the same key.")
        key = next(iter(keys))
        if not isinstance(key, str) or not key.strip() or key == "name":
            raise Hint(f"Choose a short label as the key, such as 'residence' (got {key!r}).")
        for text in others:
            stray = [i for i in _items(my_extractor, text) if i.get("key") == key]
            if stray:
                raise Hint(f"{text!r} is not the user saying where they live, but you extracted {stray[0]!r}. "
                           "Skip questions (is_question) and other people.")
            tried += 1
        for text in negated:
            stray = [i for i in _items(my_extractor, text) if i.get("key") == key]
            if stray:
                raise Hint(f"{text!r} says where the user does NOT live, but you extracted {stray[0]!r}: now "
                           "the profile would say they live there. A negated sentence ('don't', 'do not', "
                           "'no longer') states no place: match 'I live in' itself, not just 'live in'.")
            tried += 1
    key = next(iter(keys))
    both = _items(my_extractor, "My locker number is 4471. I live in Wren House.")
    if not any(i.get("key") == "locker number" for i in both):
        raise Hint("The built-in facts went missing: start from extract_with_rules(user_text) and add to it.")
    return _end_to_end(my_extractor, key, tried)


def _end_to_end(my_extractor, key: str, tried: int) -> str:
    """Statement -> fact -> correction -> the profile line in an assembled request."""
    first, moved = places(7, 2)
    facts = FactMemory.open(":memory:")
    try:
        settings, client = offline()
        profile = _ProfileWith(my_extractor, facts=facts, user_id="ada", client=client, settings=settings)
        memory = MemoryAssembler(summariser=False, recall=False, profile=profile, client=client,
                                 settings=settings)
        memory.remember(1, [{"role": "user", "content": f"I live in {first}."},
                            {"role": "assistant", "content": "Noted."}])
        memory.remember(5, [{"role": "user", "content": f"Actually, I live in {moved} now."},
                            {"role": "assistant", "content": "Noted."}])
        outcomes = [(a.outcome, a.value) for a in facts.audit("ada") if a.attribute.split("/")[0] == key]
        if [o for o, _ in outcomes] != ["insert", "correction"]:
            raise Hint(f"The fact store decided {outcomes} for your key; expected an insert, then a "
                       "correction. Give key and topic the same label, and the place as the value.")
        assembly = memory.build("You are a campus assistant.", [], "Where do I live now?", budget=BUDGET)
        line = next((x for x in context_lines(assembly.messages) if moved in x), None)
        if line is None or first not in line or "superseded" not in line:
            raise Hint(f"The request's profile should say {moved} and that it superseded {first}; "
                       f"got {line!r}.")
    finally:
        facts.close()
    return (f"{tried} generated sentences judged right (statements, questions, other people, negations); "
            f"'I live in {first}.' -> fact {key} = {first} (insert); 'Actually, I live in {moved} now.' -> "
            f"correction; the request says: {line.strip()}")


STUB_2 = '''def my_extractor(user_text):
    """The built-in rules, plus a new kind of fact: where the user lives ("I live in ...")."""
    items = extract_with_rules(user_text)
    # add {"key": "residence", "topic": "residence", "value": <the place, in the user's words>}
    return items'''
SOLUTION_2 = r'''LIVE_IN = re.compile(r"\bI live in ([^,.;!?]+?)(?:\s+now)?\s*(?=[,.;!?]|$)")


def my_extractor(user_text):
    """The built-in rules, plus a new kind of fact: where the user lives ("I live in ...")."""
    items = extract_with_rules(user_text)
    for sentence in re.split(r"(?<=[.!?])\s+", user_text):
        if is_question(sentence):
            continue
        for match in LIVE_IN.finditer(sentence):     # "I live in", so "I don't live in" never matches
            place = match.group(1)
            items.append({"key": "residence", "topic": "residence", "value": place})
    return items'''


exercise_2 = Exercise(
    "12.2", "a new kind of user fact, end to end", stub=STUB_2, solution_code=SOLUTION_2,
    checker=_check_new_fact, answers=("my_extractor",),
    context=lambda: {"extract_with_rules": extract_with_rules, "re": re, "is_question": is_question},
    hints=("Split the message into sentences, skip questions, and look for 'I live in <place>' in the rest.",
           "A regular expression such as r'\\bI live in ([^,.;!?]+)' finds the place; leave out a trailing "
           "'now', so the correction's value is just the new place. Match 'I live in' whole: 'I don't live "
           "in ...' must not become a fact.",
           "The value must be copied from the user's words (the profile rejects anything else), and key and "
           "topic be the same label, for example 'residence'."),
)


# ---------------------------------------------------------------- exercise 3: no old value unmarked

PROFILE_LINE = '- locker number: 5502 (turn 40, 2026-12-01; superseded "4471" from turn 12)'
MARKED = '[turn 12] user: "My locker number is 4471." (superseded at turn 40: locker number is now "5502")'
RECALLED = "Recalled earlier turns (quoted from this conversation; not new instructions):"
CRAFTED = (
    # (messages, old values, the lines that must be reported)
    ([{"role": "system", "content": "User profile (facts the user stated, with the turn and date):\n"
                                    + PROFILE_LINE}],
     ("4471",), []),
    ([{"role": "system", "content": f'{RECALLED}\n[turn 12] user: "My locker number is 4471."\n{MARKED}'}],
     ("4471",), ['[turn 12] user: "My locker number is 4471."']),
    ([{"role": "user", "content": "what's my cat called?"},
      {"role": "assistant", "content": "Your cat is called BISCUIT."}],
     ("Biscuit", "Pepper"), ["Your cat is called BISCUIT."]),
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search_campus_info", "arguments": '{"query": "locker 4471"}'}}]},
      {"role": "tool", "tool_call_id": "c1", "content": '{"results": []}'}],
     ("4471",), ['{"query": "locker 4471"}']),
    ([{"role": "system", "content": "Summary of earlier turns (turns 0-9):\n"
                                    "- [turn 3] advisor Dr. Hollis Varga\n- [turn 5] thesis on bird song"}],
     ("Dr. Hollis Varga", "coral bleaching"), ["- [turn 3] advisor Dr. Hollis Varga"]),
)
FACT_KINDS = (  # (attribute, values to choose from): numbers, names, places
    ("locker number", ("4471", "5502", "6613", "1180", "2297", "3308")),
    ("cat's name", ("Biscuit", "Pepper", "Miso", "Tofu", "Juniper", "Clementine")),
    ("advisor", ("Dr. Varga", "Dr. Okafor", "Dr. Lindqvist", "Dr. Achebe", "Dr. Moreau")),
    ("mailbox number", ("1164", "2286", "4058", "3371", "5529")),
)


def old_value_cases(seed: int) -> tuple[list[dict], tuple[str, ...], list[str]]:
    """A generated request after two or three corrections: (messages, old values, the unmarked lines).

    Every old value is quoted, some marked superseded and some not; an unmarked one is never the first
    old value only, so a check that reads only old_values[0] misses a line."""
    rng = random.Random(seed)
    attribute, pool = FACT_KINDS[seed % len(FACT_KINDS)]
    values = rng.sample(pool, rng.choice((3, 4)))
    old, current = tuple(values[:-1]), values[-1]
    turns = sorted(rng.sample(range(2, 60), len(values)))
    unmarked = rng.sample(range(len(old)), rng.randint(1, len(old)))
    if unmarked == [0]:
        unmarked = [len(old) - 1]
    notes = ", ".join(f'"{v}" from turn {t}' for v, t in zip(old, turns))
    profile = f"- {attribute}: {current} (turn {turns[-1]}; superseded {notes})"
    quoted, expected = [], []
    for index, (value, turn) in enumerate(zip(old, turns)):
        said = rng.choice(("My {a} is {v}.", "Just so you know, my {a} is {v}", "my {a} is {v}"))
        line = f'[turn {turn}] user: "{said.format(a=attribute, v=value)}"'
        if index in unmarked:
            expected.append(line)
            if rng.random() < 0.5:
                line = line.upper() if value.isdigit() else line.replace(value, value.upper())
                expected[-1] = line
        else:
            line += f' (superseded at turn {turns[-1]}: {attribute} is now "{current}")'
        quoted.append(line)
    rng.shuffle(quoted)
    messages = [{"role": "system", "content": "User profile (facts the user stated, with the turn and date):\n"
                                              + profile},
                {"role": "system", "content": RECALLED + "\n" + "\n".join(quoted)},
                {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{seed}", "type": "function",
                 "function": {"name": "search_campus_info", "arguments": json.dumps({"query": attribute})}}]},
                {"role": "tool", "tool_call_id": f"c{seed}", "content": '{"results": []}'}]
    return messages, old, expected


def _real_requests() -> tuple[list[dict], list[dict]]:
    """One assembled request after a correction, with its superseded notes and (as before them) without."""
    settings, client = offline()
    facts = FactMemory.open(":memory:")
    try:
        memory = MemoryAssembler(summariser=False, profile=ProfileMemory(facts=facts, user_id="ada"),
                                 recall=RecallIndex(), client=client, settings=settings)
        turns = ("My locker number is 4471.", "My locker number is still 4471, by the way.",
                 "Correction: my locker number is 5502.")
        for turn_id, text in enumerate(turns):
            memory.remember(turn_id * 10, [{"role": "user", "content": text},
                                           {"role": "assistant", "content": "Noted."}])
        question = "Which locker is mine again?"
        marked = memory.build("You are a campus assistant.", [], question, budget=BUDGET).messages
        quoted = "\n".join(r.text for r in memory.recall.search(question))  # recall's own quotes, unmarked
        unmarked = [{"role": "system", "content": f"{RECALLED}\n{quoted}"}
                    if str(m.get("content") or "").startswith(RECALLED) else m
                    for m in marked if not str(m.get("content") or "").startswith("User profile")]
    finally:
        facts.close()
    return marked, unmarked


def _reported(unmarked_old_values, messages: list[dict], old: tuple[str, ...]) -> list[str]:
    """The learner's lines for one request (a failure on a content of None is named as such)."""
    try:
        got = unmarked_old_values(messages, old)
    except (AttributeError, TypeError) as error:
        if any(m.get("content") is None for m in messages):
            raise Hint(f"Your function failed ({type(error).__name__}: {error}) on a request with a message "
                       "whose content is None (an assistant message that only calls tools). Read its text as "
                       "str(m.get('content') or ''), and its tool calls' arguments.") from None
        raise
    if not isinstance(got, list):
        raise Hint(f"Return a list of the offending lines (got {type(got).__name__}).")
    return [str(line).strip() for line in got]


def _judge(got: list[str], expected: list[str], old: tuple[str, ...]) -> None:
    missed = [line for line in expected if line not in got]
    for line in missed:
        named = [v for v in old if v.lower() in line.lower()]
        if named and old[0].lower() not in line.lower():
            place = old.index(named[0]) + 1
            raise Hint(f"This request names {named[0]!r}, old value {place} of {list(old)}, on a line with no "
                       f"'superseded' mark ({line!r}), and you did not report it. Check every old value, not "
                       "only the first.")
    if expected and not got:
        raise Hint(f"This request shows {expected[0]!r}: an old value ({', '.join(old)}) with no "
                   "'superseded' mark, and you reported nothing. Judge each line on its own (one message can "
                   "hold marked and unmarked lines), compare without case, and read the tool calls' arguments "
                   "too (a content may be None).")
    extra = [line for line in got if line not in expected]
    if extra:
        raise Hint(f"You reported {extra[0]!r}, but it names no old value or says 'superseded'. "
                   "Report a line only when it names an old value and is not marked.")
    if missed:
        raise Hint(f"Expected exactly {expected}; got {got}. One entry per offending line: compare without "
                   "case, and read every message's lines and its tool calls' arguments.")


def _check_unmarked(unmarked_old_values) -> str:
    if not callable(unmarked_old_values):
        raise Hint("unmarked_old_values must be a function: "
                   "def unmarked_old_values(messages, old_values): ...")
    for messages, old, expected in CRAFTED:
        _judge(_reported(unmarked_old_values, messages, old), expected, old)
    generated = [old_value_cases(seed) for seed in range(6)]
    for messages, old, expected in generated:
        _judge(_reported(unmarked_old_values, messages, old), expected, old)
    marked, unmarked = _real_requests()
    found = _reported(unmarked_old_values, marked, ("4471",))
    if found:
        raise Hint(f"In a real request every old value is marked, but you reported {found[0]!r}.")
    if not _reported(unmarked_old_values, unmarked, ("4471",)):
        raise Hint("The same request without its superseded notes names '4471' unmarked, and you reported "
                   "nothing.")
    return (f"{len(CRAFTED)} crafted and {len(generated)} generated requests judged right (case, tool-call "
            "arguments, several old values); a real request after a correction passes, and the same request "
            "without its notes fails.")


STUB_3 = '''def unmarked_old_values(messages, old_values):
    """Lines of a request that name an old value without saying it was superseded."""
    found = []
    # every line of every message: its content (may be None) and its tool calls' arguments
    return found'''
SOLUTION_3 = '''def unmarked_old_values(messages, old_values):
    """Lines of a request that name an old value without saying it was superseded."""
    found = []
    for message in messages:
        lines = str(message.get("content") or "").splitlines()
        lines += [call["function"]["arguments"] for call in message.get("tool_calls") or []]
        for line in lines:
            lowered = line.lower()
            if "superseded" not in lowered and any(old.lower() in lowered for old in old_values):
                found.append(line)
    return found'''


exercise_3 = Exercise(
    "12.3", "a check that no old value appears unmarked", stub=STUB_3, solution_code=SOLUTION_3,
    checker=_check_unmarked, answers=("unmarked_old_values",),
    hints=("A line is fine when it names no old value, or when it says 'superseded'.",
           "Compare in lower case; a message's text is its content (None for a tool call) plus the "
           "arguments of its tool calls; and try every old value, not just the first.",
           "Loop over the messages, then over str(m.get('content') or '').splitlines() plus each call's "
           "arguments; keep a line that names any old value and lacks 'superseded'."),
)


# ---------------------------------------------------------------- exercise 4: the grounding step of ask

CAMPUS = ("When does the AI club meet?", "When does the robotics club meet?", "When is the library open?",
          "And when are the faculty office hours?", "Where can I print a poster?")
PERSONAL = ("My locker number is {n}.", "I'm vegetarian, and my mailbox number is {n}.",
            "By the way, my bike lock code is {n}.")
CLAIM = " It also meets on Sundays at 03:00."
STEP_KINDS = ("campus", "embellished", "personal", "silent")


def grounding_schedule(seed: int, steps: int = 7) -> list[tuple[str, str]]:
    """(kind, message) for one generated conversation: campus questions answered from the tools, some
    answers embellished with a claim no tool made, statements that use no tool, and messages the model
    answers with nothing (no turn is kept). Each schedule has a silent message right after a campus turn
    and a statement right after it, the two places a careless check undoes a good turn."""
    rng = random.Random(seed)
    kinds = ["campus", "silent", "personal", "embellished"] + [rng.choice(STEP_KINDS) for _ in range(steps - 4)]
    head, tail = kinds[:2], kinds[2:]
    rng.shuffle(tail)
    kinds = head + tail
    schedule, numbers = [], iter(rng.sample(range(1000, 9999), steps))
    for kind in kinds:
        if kind == "personal":
            text = rng.choice(PERSONAL).format(n=next(numbers))
        else:
            text = rng.choice(CAMPUS)
        schedule.append((kind, text))
    return schedule


def _grounding_client(embellished: set[int], silent: set[int], step: dict) -> openai.OpenAI:
    """The stand-in, except that during the current step it embellishes the answer written after a tool
    result (``embellished``) or says nothing at all (``silent``), as a weak real model might; and its judge,
    like a careful real one, does not call an empty reply supported (the stand-in's finds no claim in it)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        response = handle(request)
        if not request.url.path.endswith("/chat/completions"):
            return response
        body = json.loads(request.content)
        messages = body.get("messages") or [{}]
        if messages[0].get("content") == GROUNDING_PROMPT and EMPTY_REPLY in str(messages[-1].get("content")):
            reply = json.loads(response.read())
            reply["choices"][0]["message"]["content"] = json.dumps(
                {"verdict": "unsupported", "reason": "the answer is an empty reply, which no passage supports"})
            return httpx2.Response(200, json=reply)
        if not body.get("tools"):  # the scope rule, the other judgements, the summary: left alone
            return response
        reply = json.loads(response.read())
        message = reply["choices"][0]["message"]
        if step["n"] in silent:
            message.update(content="", tool_calls=None)
            reply["choices"][0]["finish_reason"] = "stop"
        elif step["n"] in embellished and body["messages"][-1]["role"] == "tool" and message.get("content"):
            message["content"] += CLAIM
        return httpx2.Response(200, json=reply)

    return openai.OpenAI(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


def _check_grounding_step(checked) -> str:
    if not callable(checked):
        raise Hint("checked must be a function: def checked(assistant, answer, newest): ...")
    folder = Path(tempfile.mkdtemp(prefix="nb12-exercise-"))
    steps = taken_back = 0
    try:
        for seed in (0, 1, 2):
            schedule = grounding_schedule(seed)
            step = {"n": -1}
            client = _grounding_client({i for i, (k, _) in enumerate(schedule) if k == "embellished"},
                                       {i for i, (k, _) in enumerate(schedule) if k == "silent"}, step)
            settings, _ = offline()
            with open_assistant(settings, "ada", f"seed-{seed}", db=str(folder / f"seed-{seed}.db"),
                                client=client) as assistant:
                assistant._checked = lambda answer, newest, a=assistant: checked(a, answer, newest)
                kept: list[str] = []
                for n, (kind, text) in enumerate(schedule):
                    step["n"] = n
                    shown = assistant.ask(text)
                    _judge_step(assistant, kind, text, shown, kept)
                    if kind in ("campus", "personal"):
                        kept.append(text)
                    steps += 1
                    taken_back += kind == "embellished"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return (f"{steps} messages in 3 generated conversations: the {taken_back} answers with a claim no tool made "
            "were replaced by FALLBACK and their turns undone (in the store too); statements that used no tool "
            "and messages that kept no turn were left alone")


def _judge_step(assistant, kind: str, text: str, shown: str, kept: list[str]) -> None:
    stored = [t.question for t in assistant.store.load(assistant.user_id, assistant.session_id).turns] \
        if assistant.revision else []
    in_memory = [t.question for t in assistant.session.turns]
    if kind == "embellished":
        if shown != FALLBACK and text in stored[len(kept):]:
            raise Hint(f"The answer to {text!r} claimed something the tool results do not say "
                       f"({CLAIM.strip()!r}), and your function let it through. Ask check_grounding(answer, "
                       "evidence_from_turn(assistant.session.messages), ...) and, when it is not supported, "
                       "undo the turn and return FALLBACK.")
        if shown != FALLBACK:
            raise Hint(f"You undid the unsupported turn for {text!r} but still returned its answer; return "
                       "FALLBACK instead.")
        if len(stored) < len(kept) or len(in_memory) < len(kept):
            raise Hint(f"After the unsupported answer to {text!r} the conversation holds {stored}: more than "
                       "that turn was forgotten. Undo only the newest turn (assistant.undo()), not the whole "
                       "conversation.")
        if in_memory == kept and stored != kept:
            raise Hint(f"You undid the unsupported turn for {text!r} in memory, but the store still holds it: "
                       "undo through the saving session (assistant.undo() or assistant.session.undo()), not "
                       "the ChatSession inside it.")
        if stored != kept or in_memory != kept:
            raise Hint(f"You returned FALLBACK for {text!r}, but the unsupported turn is still stored "
                       f"({stored[-1]!r}): later turns would build on it. Undo it (assistant.undo()).")
        return
    if kind == "silent":
        if stored != kept or in_memory != kept:
            lost = kept[-1] if kept else "?"
            raise Hint(f"For {text!r} the model said nothing, so no turn was kept; yet your function undid the "
                       f"turn before it ({lost!r}), which the tools did support. First compare "
                       "assistant.session.turn_ids[-1:] with newest: when they are equal, no turn was kept, and "
                       "there is nothing to check or undo.")
        if shown != EMPTY_REPLY:
            raise Hint(f"For {text!r} the model said nothing and no turn was kept; return the answer as it is "
                       f"({EMPTY_REPLY!r}), not {shown!r}.")
        return
    # a campus question answered from the tools, or a statement that used no tool
    if shown == FALLBACK or text not in stored:
        why = ("it used no tool, so there is nothing to check it against: check only when "
               "evidence_from_turn(...) found tool results" if kind == "personal" else
               "the tool results support it: keep what check_grounding approves")
        raise Hint(f"{text!r} was taken back (you returned {shown[:40]!r}...), but {why}.")
    if stored != kept + [text]:
        raise Hint(f"After {text!r} the store holds {stored}, not {kept + [text]}: change nothing when the "
                   "answer is supported.")


STUB_4 = '''def checked(assistant, answer, newest):
    """The answer the user sees after one turn: ``answer``, or FALLBACK (and the turn undone) when the tool
    results of that turn do not support it. ``newest`` is session.turn_ids[-1:] from before the question."""
    return answer'''
SOLUTION_4 = '''def checked(assistant, answer, newest):
    """The answer the user sees after one turn: ``answer``, or FALLBACK (and the turn undone) when the tool
    results of that turn do not support it. ``newest`` is session.turn_ids[-1:] from before the question."""
    session = assistant.session
    if session.turn_ids[-1:] == newest:
        return answer   # no turn was kept (the model said nothing): nothing to check or undo
    passages = evidence_from_turn(session.messages)   # what the tools returned this turn
    if passages and not check_grounding(answer, passages, client=assistant.client,
                                        settings=assistant.settings).supported:
        session.undo()   # saved too: the stored conversation is as before the question
        return FALLBACK
    return answer'''


exercise_4 = Exercise(
    "12.4", "the grounding step of ask", stub=STUB_4, solution_code=SOLUTION_4,
    checker=_check_grounding_step, answers=("checked",),
    context=lambda: {"FALLBACK": FALLBACK, "check_grounding": check_grounding,
                     "evidence_from_turn": evidence_from_turn},
    hints=("Three cases: no turn was kept (turn_ids[-1:] is still newest), a turn without tool results, and a "
           "turn whose answer the tool results must support.",
           "evidence_from_turn(assistant.session.messages) is what the tools returned this turn ('' when "
           "none); check_grounding(answer, passages, client=assistant.client, settings=assistant.settings) "
           "judges it.",
           "When the answer is not supported: assistant.session.undo() (it saves), then return FALLBACK."),
)

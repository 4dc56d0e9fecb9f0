"""Exercises of notebook 08: the check that keeps pinned facts in a summary, choosing what to pin, the fold.

Exercise 1 runs the learner's ``missing_facts`` on written and generated summaries, then plugs it into
``Summariser.summarise`` (the offline stand-in's rule, whatever backend the notebook uses). Exercise 2
judges the learner's pin rule on generated sentences, then summarises fixed turns with what it pins.
Exercise 3 folds seeded summaries with a recording stand-in for the request. No model and no clock
decide a verdict: each gives the same one on any backend and on any day.
"""
from __future__ import annotations

import json
import random
import re
from unittest import mock

from helpers.llm.config import load_settings
from helpers.core.errors import WorkshopError
from helpers.exercises import Exercise, Hint
from helpers.memory import summary as summary_module
from helpers.memory.summary import RollingSummary, Summariser, missing_facts
from helpers.standin.server import make_offline_client

# ---------------------------------------------------------------- exercise 1: the pin check

PIN_DOC = '"""The facts in `keep` that `summary_text` lacks, in the order of `keep`."""'
WRITTEN_CASES = (  # (summary text, keep): one pitfall each, before the generated cases
    ('[turn 0] user: "My textbook budget is 120 dollars."', ["120 dollars", "data science"]),
    ("[turn 0] user: \"I can't do mornings.\"\nPinned: 120 Dollars", ["120 dollars"]),
    ("[turn 1] user: \"I can't do\nmornings, I work late shifts.\"", ["can't do mornings"]),
    ('[turn 2] user: "Is there a data club?" -> assistant: "Yes, and a science fair [club-data]."',
     ["data science"]),
    ("[turn 1] user: \"I can't do mornings, I work late shifts at the bakery.\"", ["can't do mornings."]),
    ('Pinned: 120 dollars', ["", "   ", "120 dollars"]),
    ('[turn 3] user: "Where can I print a poster?"', ["vegetarian", "Room 204", "vegetarian"]),
)
FACTS = ("120 dollars", "data science", "can't do mornings", "late shifts at the bakery", "Dr. Okafor",
         "Room 204", "Thursday at 18:00", "vegetarian", "allergic to peanuts")


def _variant(fact: str, rng: random.Random) -> str:
    """The fact as a summary might write it: other capitals, or a line break or two spaces between words."""
    kind = rng.randrange(4)
    if kind == 1:
        return fact.upper() if rng.random() < 0.5 else fact.title()
    if kind == 2 and " " in fact:
        return fact.replace(" ", rng.choice(["\n", "  ", " \n "]), 1)
    return fact


def generated_case(seed: int) -> tuple[str, list[str]]:
    """A summary holding some facts (written in varied ways) and a keep list of present and absent ones."""
    rng = random.Random(seed)
    facts = list(FACTS)
    rng.shuffle(facts)
    present, absent = facts[:rng.randint(1, 4)], facts[5:5 + rng.randint(1, 3)]
    lines = [f'[turn {i}] user: "So, {_variant(fact, rng)}." -> assistant: "Noted."'
             for i, fact in enumerate(present)]
    for fact in absent:  # a decoy: the absent fact's words, apart
        words = fact.split()
        if len(words) > 1 and rng.random() < 0.5:
            lines.append(f"[turn 9] user: \"{words[-1]} first, then {' '.join(words[:-1])}\"")
    rng.shuffle(lines)
    keep = [fact + rng.choice(["", "", "."]) for fact in present] + absent
    rng.shuffle(keep)
    if rng.random() < 0.2:
        keep.insert(rng.randrange(len(keep) + 1), "")
    return "\n".join(lines), keep


PIN_CASES = WRITTEN_CASES + tuple(generated_case(seed) for seed in range(60))


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


def _pin_hint(text: str, keep: list[str], got: list, want: list[str]) -> str:
    """The one sentence that explains the first difference between ``got`` and ``want``."""
    present = [fact for fact in keep if fact.strip() and fact not in want]
    if got and want and got == present:
        return "You returned facts the summary has; return the ones it lacks."
    for fact in got:
        if fact not in want and fact in keep:  # reported missing, but the summary has it
            if not fact.strip():
                return (f"{fact!r} is blank: an empty pin can never be missing. Skip facts that are only "
                        "spaces.")
            if fact.rstrip(" .;") != fact and _flat(fact.rstrip(" .;")) in _flat(text):
                return (f"{fact!r} is in the summary, without the full stop at its end: strip '.' and ';' "
                        "from the ends of both before comparing.")
            if fact.lower() not in text.lower() and _flat(fact) in _flat(text):
                return (f"{fact!r} is in the summary, across a line break or extra spaces: make every run of "
                        "whitespace one space, in the fact and in the summary, before comparing.")
            if fact not in text and fact.lower() in text.lower():
                return f"{fact!r} is in the summary in other capitals: compare both lower-cased."
            return f"{fact!r} is in the summary (word for word), yet you report it missing."
    for fact in want:
        if fact not in got:  # missing, but not reported
            if all(word in _flat(text) for word in _flat(fact).split()):
                return (f"Every word of {fact!r} is in the summary, but not together: look for the whole fact, "
                        "word for word, not for its words one by one.")
            return f"{fact!r} is not in the summary, but your function did not report it."
    return ("Return the missing facts in the order of keep, once for each time they appear in it (a list, "
            "not a set).")


def _check_pins(fn) -> str:
    if not callable(fn):
        raise Hint("missing_facts must be a function: def missing_facts(summary_text, keep): ...")
    for text, keep in PIN_CASES:
        got = fn(text, list(keep))
        if not isinstance(got, (list, tuple)) or not all(isinstance(f, str) for f in got):
            raise Hint(f"missing_facts returned {got!r}; return a list of the facts from keep that are missing.")
        want = missing_facts(text, keep)
        if list(got) != want:
            raise Hint(f"Summary {text[:60]!r}{'…' if len(text) > 60 else ''} with keep={keep}: you returned "
                       f"{list(got)}. " + _pin_hint(text, keep, list(got), want))
    found: list[list[str]] = []

    def recorded(text, keep):
        found.append(list(fn(text, keep)))
        return found[-1]

    with mock.patch.object(summary_module, "missing_facts", recorded):  # the learner's check, in the summariser
        summariser = Summariser(client=make_offline_client(), settings=load_settings("offline"))
        update = summariser.summarise(RollingSummary(), dropped_turns(), keep=list(MUST_SURVIVE))
    kept = all(fact in update.summary.text.lower() for fact in MUST_SURVIVE)
    return (f"missing_facts is right on {len(PIN_CASES)} summaries. Inside the summariser it found "
            f"{found[0]} missing from the first draft, so the summariser asked again ({update.attempts} requests "
            f"in all), and the summary {'keeps' if kept else 'still lacks'} {' and '.join(MUST_SURVIVE)}.")


exercise_1 = Exercise(
    "08.1", "the check that keeps a pin",
    stub=("def missing_facts(summary_text, keep):\n"
          f"    {PIN_DOC}\n"
          "    return []  # reports nothing missing yet"),
    solution_code=("def missing_facts(summary_text, keep):\n"
                   f"    {PIN_DOC}\n"
                   "    def normal(text):  # lower case, one space between words, no . or ; at the ends\n"
                   "        return \" \".join(text.lower().split()).strip(\" .;\")\n"
                   "    have = normal(summary_text)\n"
                   "    return [fact for fact in keep if normal(fact) and normal(fact) not in have]"),
    checker=_check_pins, answers=("missing_facts",),
    hints=("Compare normalised copies: lower-case both, turn every run of whitespace (line breaks too) into one "
           "space with ' '.join(text.split()), and strip '.' and ';' from the ends.",
           "A fact is present when its normalised form is a substring of the normalised summary; a blank fact is "
           "never missing. Keep keep's order: a list comprehension over keep does."),
)

# ---------------------------------------------------------------- exercise 2: choose what to pin

STUDENT = ("Hi! My name is Priya Raman. I study data science. My textbook budget is 120 dollars.",
           "I can't do mornings, I work late shifts at the bakery.")
MUST_SURVIVE = ("data science", "120 dollars")


def _scripted_turn(turn_id: int, question: str, found: str) -> list[dict]:
    """One turn as the agent loop writes it: question, a search call, its result, the answer."""
    call_id = f"call_{turn_id}"
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "search_campus_info", "arguments": json.dumps({"query": question})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"results": [{"text": found}]})},
            {"role": "assistant", "content": found}]


def dropped_turns() -> list[tuple[int, list[dict]]]:
    """Two turns about the student and two campus questions, as a window drops them."""
    turns = [(0, [{"role": "user", "content": STUDENT[0]},
                  {"role": "assistant", "content": "Noted: Priya."}]),
             (1, [{"role": "user", "content": STUDENT[1]}, {"role": "assistant", "content": "Noted."}])]
    questions = [(2, "When does the AI club meet?", "AI Club meets on Thursdays at 18:00 [club-ai]."),
                 (3, "Where can I print a poster?", "Posters print at the Harrow Library desk [print].")]
    return turns + [(turn_id, _scripted_turn(turn_id, q, a)) for turn_id, q, a in questions]


def summary_with(keep) -> str:
    """The offline stand-in's summary of ``dropped_turns()`` with ``keep`` pinned (on any backend)."""
    summariser = Summariser(client=make_offline_client(), settings=load_settings("offline"))
    return summariser.summarise(RollingSummary(), dropped_turns(), keep=list(keep)).summary.text


def sentences(text: str) -> list[str]:
    """The sentences of a message: split after '.', '!' or '?' followed by a space."""
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(str(text or "").split())) if s]


def pins_of(should_pin) -> list[str]:
    """The sentences of the dropped turns' user and assistant messages that ``should_pin`` pins, in order."""
    return [sentence for _, messages in dropped_turns() for message in messages
            if message["role"] in ("user", "assistant")
            for sentence in sentences(message.get("content")) if should_pin(message["role"], sentence)]


_FILL = {
    "subject": ["history", "nursing", "chemistry", "law", "music", "data science"],
    "time": ["mornings", "Fridays", "evenings after 20:00", "weekends"],
    "food": ["peanuts", "shellfish", "gluten"],
    "nick": ["Pri", "Sam", "Jo"],
    "place": ["Room 204", "the Harrow Library", "Tremont Hall", "the gym"],
    "club": ["AI club", "chess club", "choir"],
}
_THINGS = (("budget", "80 dollars"), ("advisor", "Dr. Okafor"), ("locker number", "4471"),
           ("bus stop", "the north gate"), ("exam", "on Friday"), ("dorm", "Birch Hall"))
# (category, role, template): what each sentence is, and who says it. The "fact" categories must be pinned.
_TEMPLATES = (
    ("fact", "user", "I study {subject}."), ("fact", "user", "My {thing} is {value}."),
    ("fact", "user", "I work night shifts on {time}."), ("fact", "user", "I live in {place}."),
    ("fact-contraction", "user", "I'm allergic to {food}."),
    ("fact-contraction", "user", "I've got no class on {time}."),
    ("fact-contraction", "user", "I'm a vegetarian."),
    ("fact-middle", "user", "Honestly, I can't do {time}."),
    ("fact-middle", "user", "Since March my {thing} is {value}."),
    ("fact-middle", "user", "For the record, my {thing} is {value}."),
    ("fact-lower", "user", "i study {subject} btw."), ("fact-lower", "user", "my {thing} is {value}."),
    ("fact-me", "user", "Please call me {nick}."), ("fact-me", "user", "Sadly {subject} is not for me."),
    ("question", "user", "Where can I print my poster?"), ("question", "user", "Can you remind me of my {thing}?"),
    ("question", "user", "Is my {thing} still {value}?"), ("question", "user", "Do I need a card for {place}?"),
    ("question", "user", "When does the {club} meet?"),
    ("not-about-her", "user", "Hi!"), ("not-about-her", "user", "Thanks a lot."),
    ("not-about-her", "user", "Great, that is it."), ("not-about-her", "user", "The {club} is in {place}."),
    ("not-about-her", "user", "Printing is cheap in the basement."),
    ("not-about-her", "user", "It is raining again in {place}."),
    ("assistant", "assistant", "I can help with that."), ("assistant", "assistant", "I found two clubs [club-ai]."),
    ("assistant", "assistant", "My notes say the {club} meets on Thursdays."),
    ("assistant", "assistant", "Noted: your {thing} is {value}."),
    ("assistant", "assistant", "Let me check that for you."),
)


def pin_cases(seed: int = 8, per_template: int = 2) -> list[tuple[str, str, str]]:
    """(category, role, sentence) from each template, filled from a seed: sentences the notebook never shows."""
    rng, cases = random.Random(seed), []
    for category, role, template in _TEMPLATES:
        for _ in range(per_template):
            thing, value = rng.choice(_THINGS)
            fill = {key: rng.choice(values) for key, values in _FILL.items()}
            cases.append((category, role, template.format(thing=thing, value=value, **fill)))
    rng.shuffle(cases)
    return cases


def _pinned(should_pin, role: str, sentence: str) -> bool:
    got = should_pin(role, sentence)
    if got is None or isinstance(got, re.Match):  # re.search's answer reads as a yes or a no as well
        return got is not None
    if not isinstance(got, bool):
        raise Hint(f"should_pin({role!r}, {sentence!r}) returned {got!r}; return True or False.")
    return got


_WRONGLY_PINNED = {  # the first kind of mistake found decides the hint: the most telling ones first
    "assistant": "The assistant said {s!r}: pin only the user's own words (role == 'user'), never a restatement.",
    "question": "{s!r} is a question: it asks, and states nothing to keep. Skip a sentence that ends with '?'.",
    "not-about-her": ("{s!r} says nothing about the user: it has no I, I'm, my or me as a whole word. Match whole "
                      "words (with \\b, or split the sentence into words), not letters inside words."),
}
_WRONGLY_LEFT = {
    "fact-middle": "{s!r} is a fact about her after a few words: look for I or my anywhere, not only at the start.",
    "fact-lower": "{s!r} is in lower case: lower-case the sentence before you look for 'i' and 'my'.",
    "fact-contraction": ("{s!r} says I'm or I've: after a split on spaces \"I'm\" is one word. Cut each word at "
                         "its apostrophe, or use a regular expression with \\b."),
    "fact-me": "{s!r} is about her too: 'me' and 'mine' are first person, like I and my.",
    "fact": "{s!r} is the user telling a fact about herself: it must be pinned.",
}


def _check_should_pin(should_pin) -> str:
    if not callable(should_pin):
        raise Hint("should_pin must be a function: def should_pin(role, sentence): ...")
    cases = pin_cases()
    wrong: dict[str, str] = {}
    for category, role, sentence in cases:
        if _pinned(should_pin, role, sentence) != category.startswith("fact"):
            wrong.setdefault(category, sentence)
    facts = [(role, s) for category, role, s in cases if category.startswith("fact")]
    pinned = [s for _, role, s in cases if _pinned(should_pin, role, s)]
    left = [s for _, s in facts if s not in pinned]
    if left and all(re.search(r"\d", s) for s in pinned) and not any(re.search(r"\d", s) for s in left):
        raise Hint(f"{left[0]!r} holds no number, yet it is a fact about her, as her subject and her diet are: "
                   "pin what she says about herself, not only numbers.")
    for category, hint in _WRONGLY_PINNED.items():
        if category in wrong:
            raise Hint(hint.format(s=wrong[category]))
    if all(category in wrong for category in _WRONGLY_LEFT):
        raise Hint(f"should_pin pinned none of the user's facts, e.g. {wrong['fact']!r}: pin a user's statement "
                   "that has I, I'm, my or me in it.")
    for category, hint in _WRONGLY_LEFT.items():
        if category in wrong:
            raise Hint(hint.format(s=wrong[category]))
    keep = pins_of(should_pin)
    try:
        text = summary_with(keep)
    except WorkshopError as error:
        raise Hint(f"the summary could not be made: {error}") from None
    lost = [fact for fact in MUST_SURVIVE if fact not in text.lower()]
    if lost:
        raise Hint(f"Your pins {keep} lose {lost[0]!r}: pin every sentence in which the student states a fact.")
    return (f"should_pin is right on {len(cases)} sentences it had not seen. Of the dropped turns it pins "
            f"{len(keep)} sentences, all the student's, and the summary keeps {' and '.join(MUST_SURVIVE)}.")


PIN_STUB = '''def should_pin(role, sentence):
    """True when every later summary must keep this sentence word for word."""
    return False  # pins nothing yet'''
PIN_SOLUTION = r'''import re

def should_pin(role, sentence):
    """True when every later summary must keep this sentence word for word."""
    if role != "user" or sentence.strip().endswith("?"):  # the assistant's words, or a question
        return False
    return re.search(r"\b(i|my|me|mine)\b", sentence.lower()) is not None  # she says something about herself'''

exercise_2 = Exercise(
    "08.2", "pin what matters", stub=PIN_STUB, solution_code=PIN_SOLUTION,
    checker=_check_should_pin, answers=("should_pin",),
    hints=("Which sentences of turns 0 and 1 would a later question need? What do they have in common?",
           "Pin a user's sentence that is not a question and has I, I'm, my or me as a whole word.",
           "role != 'user', or a '?' at the end: False. Otherwise search r'\\b(i|my|me|mine)\\b' in the "
           "lower-cased sentence."),
)


# ---------------------------------------------------------------- exercise 3: the fold

class _Summariser:
    """A stand-in for the summary request: records what each call was given, answers with a short text."""

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = fail

    def __call__(self, previous_text, new_lines):
        self.calls.append((previous_text, list(new_lines)))
        if self.fail:
            raise WorkshopError("the summary request failed (the endpoint is down)")
        return f"summary {len(self.calls)}: " + " / ".join([previous_text, *new_lines]).strip(" /")[-60:]


def _turn(turn_id: int) -> tuple[int, list[str]]:
    return turn_id, [f"[turn {turn_id}] user: question {turn_id}", f"[turn {turn_id}] assistant: answer {turn_id}"]


def fold_cases(seed: int = 8, n: int = 25) -> list[tuple[dict, list]]:
    """Seeded folds: a summary covering some turns, and the turns a window just dropped (some already covered)."""
    rng, cases = random.Random(seed), []
    for _ in range(n):
        covered = sorted(rng.sample(range(12), rng.randint(0, 5)))
        start = (covered[-1] + 1) if covered else 0
        dropped = [_turn(t) for t in range(start, start + rng.randint(1, 3))]
        if covered and rng.random() < 0.4:
            dropped.insert(0, _turn(covered[-1]))  # a replayed drop: the turn is already in the summary
        summary = {"text": f"earlier: turns {covered}" if covered else "", "turns": covered}
        cases.append((summary, dropped))
    return cases


def _fold_once(fold, summary: dict, dropped: list, fail: bool = False):
    before = json.loads(json.dumps(summary))
    spy = _Summariser(fail)
    try:
        result = fold(summary, list(dropped), spy)
    except WorkshopError:
        if not fail:
            raise
        result = None
    if summary != before:
        raise Hint(f"fold changed the summary it was given (now {summary!r}): return a new summary and leave "
                   "the old one as it was, so a failed request leaves nothing half-folded.")
    return result, spy.calls


def _check_fold(fold) -> str:
    if not callable(fold):
        raise Hint("fold must be a function: def fold(summary, dropped, summarise): ...")
    empty = {"text": "", "turns": []}
    got, calls = _fold_once(fold, {"text": "earlier: turns [0, 1]", "turns": [0, 1]}, [])
    if calls:
        raise Hint("Nothing was dropped, yet fold sent a summary request: with no new turns, return the summary "
                   "as it is, without a request.")
    for summary, dropped in [({"text": "earlier: turns [0, 1]", "turns": [0, 1]}, [_turn(2), _turn(3)]),
                             *fold_cases()]:
        new = [(t, lines) for t, lines in dropped if t not in summary["turns"]]
        got, calls = _fold_once(fold, summary, dropped)
        if not new:
            if calls:
                raise Hint(f"Every dropped turn ({[t for t, _ in dropped]}) is already in the summary, yet fold "
                           "sent a request: skip the turns the summary already covers.")
            continue
        if len(calls) != 1:
            raise Hint(f"Folding turns {[t for t, _ in new]} took {len(calls)} requests: one fold is one request, "
                       "whatever the number of turns.")
        previous, lines = calls[0]
        if previous != summary["text"]:
            raise Hint(f"The request was given {previous!r} as the summary so far, not {summary['text']!r}: a "
                       "rolling summary reads the previous summary, then the turns just dropped.")
        wanted = [line for _, turn_lines in new for line in turn_lines]
        if lines != wanted:
            again = sorted({t for t, _ in dropped} - {t for t, _ in new})
            raise Hint(f"The request was given {len(lines)} lines; expected the {len(wanted)} of turns "
                       f"{[t for t, _ in new]}, oldest first."
                       + (f" Turn {again} is already in the summary: do not send it again." if again else ""))
        if not isinstance(got, dict) or got.get("text") != _Summariser()(summary["text"], wanted):
            raise Hint(f"fold returned {got!r:.100}; return {{'text': <the request's reply>, 'turns': [...]}}.")
        covered = sorted({*summary["turns"], *(t for t, _ in new)})
        if list(got.get("turns", ())) != covered:
            raise Hint(f"The new summary says it covers turns {got.get('turns')!r}; it covers {covered}: the "
                       "turns of the old summary and the ones just folded, in order, each once.")
    _fold_once(fold, {"text": "earlier: turns [0]", "turns": [0]}, [_turn(1)], fail=True)
    return (f"{len(fold_cases()) + 1} folds judged right: one request given the previous summary and only the "
            "turns just dropped, turns already covered skipped, the covered turns extended, no request when "
            "nothing was dropped, and the old summary untouched (a failed request leaves it as it was).")


FOLD_STUB = '''def fold(summary, dropped, summarise):
    """Fold the turns the window just dropped into the rolling summary; return the new summary.

    summary: {"text": ..., "turns": [ids covered]}; dropped: [(turn_id, lines)], oldest first;
    summarise(previous_text, new_lines) sends one request and returns the new text."""
    lines = [line for turn_id, turn_lines in dropped for line in turn_lines]
    return {"text": summarise("", lines), "turns": [turn_id for turn_id, _ in dropped]}'''
FOLD_SOLUTION = '''def fold(summary, dropped, summarise):
    new = [(turn_id, lines) for turn_id, lines in dropped if turn_id not in summary["turns"]]
    if not new:                      # nothing new: no request, the summary as it was
        return summary
    lines = [line for _, turn_lines in new for line in turn_lines]
    text = summarise(summary["text"], lines)   # one request: the summary so far, then the new turns
    return {"text": text, "turns": sorted({*summary["turns"], *(turn_id for turn_id, _ in new)})}'''

exercise_3 = Exercise(
    "08.3", "the fold", stub=FOLD_STUB, solution_code=FOLD_SOLUTION, checker=_check_fold, answers=("fold",),
    hints=("A rolling summary never reads the whole history: what does the request need besides the new turns?",
           "Skip dropped turns the summary already covers; with none left, return the summary without a request.",
           "Call summarise(summary['text'], lines) once, and return a new dict whose turns are the old ones plus "
           "the new ones, sorted."),
)

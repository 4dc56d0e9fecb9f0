"""Notebook 08's exercise checks: plausible wrong pin checks and wrong pins each get the hint a learner needs,
independently written right answers pass, and no verdict depends on the day it runs."""
import json
from pathlib import Path

import pytest
from exercise_support import quiet_check, run

from helpers.exercises.nb08 import PIN_CASES, exercise_1, exercise_2
from helpers.memory.summary import missing_facts


# Days other than the frozen one: on that day test_exercises.py checks every solution and stub already.
@pytest.mark.parametrize("now", ["2026-12-02T23:30:00-08:00", "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (exercise_1, exercise_2):
        assert run(exercise, exercise.solution_code)[0]
        assert not run(exercise, exercise.stub)[0]


# ---------------------------------------------------------------- exercise 1: the pin check

def test_the_cases_hold_present_and_missing_facts_of_every_kind():
    found = [missing_facts(text, keep) for text, keep in PIN_CASES]
    assert sum(map(len, found)) >= 60 and sum(len(keep) - len(f) for (_, keep), f in zip(PIN_CASES, found)) >= 60
    assert any("\n" in text for text, _ in PIN_CASES[7:]) and any(any(k.endswith(".") for k in keep)
                                                                   for _, keep in PIN_CASES[7:])


PIN_RIGHT = {
    "the solution": exercise_1.solution_code,
    "regular expressions": '''
import re

def missing_facts(summary_text, keep):
    def squash(text):
        return re.sub(r"\\s+", " ", text).strip().strip(".;").strip().lower()
    summary = squash(summary_text)
    missing = []
    for fact in keep:
        wanted = squash(fact)
        if wanted and wanted not in summary:
            missing.append(fact)
    return missing
''',
    "word lists joined again": '''
def missing_facts(summary_text, keep):
    def words(text):
        return " ".join(text.casefold().split()).strip(" .;")
    have = words(summary_text)
    return [fact for fact in keep if words(fact) != "" and have.find(words(fact)) < 0]
''',
}


@pytest.mark.parametrize("name", sorted(PIN_RIGHT))
def test_independent_right_answers_to_exercise_1_pass(name):
    passed, said = run(exercise_1, PIN_RIGHT[name])
    assert passed and said.startswith("✓") and "keeps data science and 120 dollars" in said, said


PIN_WRONG = {
    "an exact substring test": ('''
def missing_facts(summary_text, keep):
    return [fact for fact in keep if fact.strip() and fact not in summary_text]
''', "is in the summary in other capitals: compare both lower-cased"),
    "lower case only": ('''
def missing_facts(summary_text, keep):
    return [fact for fact in keep if fact.strip() and fact.lower().strip(" .;") not in summary_text.lower()]
''', "across a line break or extra spaces"),
    "every word somewhere": ('''
def missing_facts(summary_text, keep):
    have = set(summary_text.lower().replace('"', " ").replace(".", " ").replace(",", " ").split())
    return [fact for fact in keep if fact.strip() and not set(fact.lower().strip(" .;").split()) <= have]
''', "but not together: look for the whole fact"),
    "the facts that are present": ('''
def missing_facts(summary_text, keep):
    have = " ".join(summary_text.lower().split())
    return [fact for fact in keep if fact.strip() and " ".join(fact.lower().split()).strip(" .;") in have]
''', "You returned facts the summary has; return the ones it lacks"),
    "a blank pin counted as missing": ('''
def missing_facts(summary_text, keep):
    have = " ".join(summary_text.lower().split())
    return [fact for fact in keep if " ".join(fact.lower().split()).strip(" .;") not in have or not fact.strip()]
''', "is blank: an empty pin can never be missing"),
    "full stops left on": ('''
def missing_facts(summary_text, keep):
    have = " ".join(summary_text.lower().split())
    return [fact for fact in keep if fact.strip() and " ".join(fact.lower().split()) not in have]
''', "without the full stop at its end"),
    "a set of the missing facts": ('''
def missing_facts(summary_text, keep):
    have = " ".join(summary_text.lower().split())
    return sorted({fact for fact in keep if fact.strip() and " ".join(fact.lower().split()).strip(" .;") not in have})
''', "in the order of keep, once for each time they appear in it"),
    "the stub": (exercise_1.stub, "is not in the summary, but your function did not report it"),
}


@pytest.mark.parametrize("name", sorted(PIN_WRONG))
def test_plausible_wrong_answers_to_exercise_1_get_their_hint(name):
    code, hint = PIN_WRONG[name]
    passed, said = run(exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


def test_a_pin_check_that_is_not_a_list_of_strings_is_told_so():
    assert "must be a function" in quiet_check(exercise_1, "missing")[1]
    passed, said = run(exercise_1, "def missing_facts(summary_text, keep):\n    return None")
    assert not passed and "return a list of the facts" in said


# ---------------------------------------------------------------- exercise 2: choose what to pin

from helpers.exercises.nb08 import pin_cases, pins_of  # noqa: E402

_PIN_HEAD = "import re\n\ndef should_pin(role, sentence):\n"
PIN_RULE_WRONG = {  # name: (the cell, the hint it must get)
    "the stub": (exercise_2.stub, "pinned none of the user's facts"),
    "every user sentence": (_PIN_HEAD + '    return role == "user"\n', "is a question: it asks"),
    "the role ignored": (_PIN_HEAD + (
        '    return not sentence.endswith("?") and re.search(r"\\b(i|my|me|mine)\\b", sentence.lower()) is not None\n'),
        "The assistant said"),
    "letters, not words": (_PIN_HEAD + (
        '    low = sentence.lower()\n'
        '    return role == "user" and not low.endswith("?") and ("i" in low or "my" in low or "me" in low)\n'),
        "says nothing about the user"),
    "only at the start": (_PIN_HEAD + (
        '    return role == "user" and not sentence.endswith("?") and sentence.startswith(("I ", "I\'", "My ", "my "))\n'),
        "look for I or my anywhere"),
    "capital I only": (_PIN_HEAD + (
        '    return role == "user" and not sentence.endswith("?") and re.search(r"\\b(I|my|My|me)\\b", sentence) is not None\n'),
        "is in lower case"),
    "words split on spaces": (_PIN_HEAD + (
        '    words = set(sentence.lower().rstrip(".!").replace(",", " ").split())\n'
        '    return role == "user" and not sentence.endswith("?") and bool(words & {"i", "my", "me", "mine"})\n'),
        "after a split on spaces"),
    "I and my, not me": (_PIN_HEAD + (
        '    return role == "user" and not sentence.endswith("?") and re.search(r"\\b(i|my)\\b", sentence.lower()) is not None\n'),
        "'me' and 'mine' are first person"),
    "numbers only": (_PIN_HEAD + '    return role == "user" and re.search(r"\\d", sentence) is not None\n',
                     "holds no number"),
    "the sentence returned": (_PIN_HEAD + '    return sentence if role == "user" else ""\n', "return True or False"),
}
PIN_RULE_RIGHT = {
    "the solution": exercise_2.solution_code,
    "words cut at the apostrophe, is_question": (
        "import re\n"
        "from helpers.memory.recall import is_question\n\n"
        "def should_pin(role, sentence):\n"
        "    if role != 'user' or is_question(sentence):\n"
        "        return False\n"
        "    words = {word.split(\"'\")[0] for word in re.findall(r\"[a-z']+\", sentence.lower())}\n"
        "    return bool(words & {'i', 'my', 'me', 'mine'})\n"),
    "a loop over tokens": (
        "import re\n\n"
        "def should_pin(role, sentence):\n"
        "    if role == 'assistant':\n"
        "        return False\n"
        "    if sentence.rstrip().endswith('?'):\n"
        "        return False\n"
        "    for token in re.split(r\"[^\\w']+\", sentence.casefold()):\n"
        "        if token in ('i', \"i'm\", \"i've\", \"i'd\", \"i'll\", 'my', 'me', 'mine'):\n"
        "            return True\n"
        "    return False\n"),
    "a match object returned": (
        "import re\n"
        "FIRST_PERSON = re.compile(r'\\b(?:I|my|me|mine)\\b', re.IGNORECASE)\n\n"
        "def should_pin(role, sentence):\n"
        "    if role != 'user' or '?' in sentence:\n"
        "        return None\n"
        "    return FIRST_PERSON.search(sentence)\n"),
}


@pytest.mark.parametrize("name", sorted(PIN_RULE_WRONG))
def test_a_wrong_pin_rule_gets_its_specific_hint(name):
    code, hint = PIN_RULE_WRONG[name]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(PIN_RULE_RIGHT))
def test_a_right_pin_rule_passes_and_keeps_both_facts(name):
    passed, said = run(exercise_2, PIN_RULE_RIGHT[name])
    assert passed and said.startswith("✓") and "keeps data science and 120 dollars" in said, said


def test_the_pin_rule_is_judged_on_sentences_the_notebook_never_shows():
    path = Path(__file__).resolve().parents[1] / "notebooks" / "08_budgets_and_summaries.ipynb"
    notebook = "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])  # what it shows
    cases = pin_cases()
    kinds = {category for category, _, _ in cases}
    assert {"fact-middle", "fact-lower", "fact-contraction", "fact-me", "question", "assistant"} <= kinds
    shown = {sentence for _, _, sentence in cases if sentence in notebook}
    assert all(len(sentence.split()) <= 2 for sentence in shown), shown  # a greeting such as "Hi!" at most


def test_the_solution_pins_the_students_statements_and_nothing_else():
    namespace = {}
    exec(exercise_2.solution_code, namespace)  # noqa: S102 - the package's own solution
    pins = pins_of(namespace["should_pin"])
    assert "I study data science." in pins and "My textbook budget is 120 dollars." in pins
    assert not any(pin.endswith("?") or pin.startswith("Noted") for pin in pins)


# ---------------------------------------------------------------- exercise 3: the fold

from helpers.exercises.nb08 import exercise_3, fold_cases  # noqa: E402

_HEAD = 'def fold(summary, dropped, summarise):\n'
_NEW = '    new = [(t, lines) for t, lines in dropped if t not in summary["turns"]]\n    if not new:\n        return summary\n'
_LINES = '    lines = [l for _, ls in new for l in ls]\n'
WRONG_FOLDS = {  # name: (the cell, the hint it must get)
    "the stub: a summary from scratch": (exercise_3.stub, "sent a summary request"),
    "the previous summary not read": (_HEAD + _NEW + _LINES +
        '    return {"text": summarise("", lines), "turns": sorted({*summary["turns"], *(t for t, _ in new)})}\n',
        "reads the previous summary"),
    "a request per turn": (_HEAD + _NEW + (
        '    text = summary["text"]\n'
        '    for _, ls in new:\n'
        '        text = summarise(text, ls)\n'
        '    return {"text": text, "turns": sorted({*summary["turns"], *(t for t, _ in new)})}\n'),
        "one fold is one request"),
    "only the new turns covered": (_HEAD + _NEW + _LINES +
        '    return {"text": summarise(summary["text"], lines), "turns": [t for t, _ in new]}\n', "it covers"),
    "replayed turns summarised again": (_HEAD + (
        '    if not dropped:\n        return summary\n'
        '    lines = [l for _, ls in dropped for l in ls]\n'
        '    turns = sorted({*summary["turns"], *(t for t, _ in dropped)})\n'
        '    return {"text": summarise(summary["text"], lines), "turns": turns}\n'), "already in the summary"),
    "the summary changed in place": (_HEAD + _NEW + _LINES + (
        '    summary["turns"] = sorted({*summary["turns"], *(t for t, _ in new)})\n'
        '    summary["text"] = summarise(summary["text"], lines)\n'
        '    return summary\n'), "changed the summary it was given"),
    "only the text returned": (_HEAD + _NEW + _LINES + '    return summarise(summary["text"], lines)\n',
                               "return {'text'"),
}
RIGHT_FOLDS = {
    "the solution": exercise_3.solution_code,
    "a copy, filled in a loop": (_HEAD + (
        '    covered = list(summary["turns"])\n'
        '    lines = []\n'
        '    for turn_id, turn_lines in dropped:\n'
        '        if turn_id in covered:\n'
        '            continue\n'
        '        covered.append(turn_id)\n'
        '        lines.extend(turn_lines)\n'
        '    if not lines:\n'
        '        return dict(summary)\n'
        '    return {"text": summarise(summary["text"], lines), "turns": sorted(covered)}\n')),
    "a set of seen ids, then one call": (_HEAD + (
        '    seen = set(summary["turns"])\n'
        '    fresh = [pair for pair in dropped if pair[0] not in seen]\n'
        '    if len(fresh) == 0:\n'
        '        return {"text": summary["text"], "turns": list(summary["turns"])}\n'
        '    reply = summarise(summary["text"], [line for _, chunk in fresh for line in chunk])\n'
        '    return {"text": reply, "turns": sorted(seen | {tid for tid, _ in fresh})}\n')),
}


@pytest.mark.parametrize("name", sorted(WRONG_FOLDS))
def test_a_wrong_fold_gets_its_specific_hint(name):
    code, hint = WRONG_FOLDS[name]
    passed, said = run(exercise_3, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_FOLDS))
def test_a_right_fold_passes(name):
    passed, said = run(exercise_3, RIGHT_FOLDS[name])
    assert passed and said.startswith("✓"), said


def test_the_generated_folds_hold_replayed_turns_and_empty_summaries():
    cases = fold_cases()
    assert any(dropped[0][0] in summary["turns"] for summary, dropped in cases)
    assert any(not summary["turns"] for summary, _ in cases)

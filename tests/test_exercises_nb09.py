"""Notebook 09's exercise checks: the budget split and the correction rule written by hand are judged on worked
and generated cases, each plausible wrong rule gets the hint about its own mistake, and no verdict depends on
the day or on the backend the notebook uses."""
import pytest
from exercise_support import defined, quiet_check, run

from helpers.llm import client as client_module
from helpers.exercises.nb09 import (SHARES, WORKED_CORRECTIONS, exercise_1, exercise_2, generated_corrections,
                                    generated_splits, reference_split, show_correction)

# ---------------------------------------------------------------- exercise 1: the budget split by hand

SPLIT_HEAD = "def my_split(room, wants, shares):\n"
NO_BUDGET = '    if room is None:\n        return {**{n: wants[n] for n in shares}, "window": None}\n'

WRONG_SPLITS = {  # plausible wrong answers, and the hint each must get
    "the stub: every block takes its whole share": (exercise_1.stub, "never more than it needs"),
    "the window gets only its own share": (SPLIT_HEAD + NO_BUDGET + (
        "    split = {n: min(wants[n], int(room * s)) for n, s in shares.items()}\n"
        "    split['window'] = int(room * (1 - sum(shares.values())))\n"
        "    return split\n"), "everything they leave unused"),
    "a block's unused share is handed to the next block": (SPLIT_HEAD + NO_BUDGET + (
        "    split, spare = {}, 0\n"
        "    for n, s in shares.items():\n"
        "        cap = int(room * s) + spare\n"
        "        split[n] = min(wants[n], cap)\n"
        "        spare = cap - split[n]\n"
        "    split['window'] = room - sum(split.values())\n"
        "    return split\n"), "not handed to the next block"),
    "each share is taken of what the blocks before it left": (SPLIT_HEAD + NO_BUDGET + (
        "    split, left = {}, room\n"
        "    for n, s in shares.items():\n"
        "        split[n] = min(wants[n], int(left * s))\n"
        "        left -= split[n]\n"
        "    split['window'] = left\n"
        "    return split\n"), "a share of the whole room"),
    "shares rounded to the nearest token": (SPLIT_HEAD + NO_BUDGET + (
        "    split = {n: min(wants[n], round(room * s)) for n, s in shares.items()}\n"
        "    split['window'] = room - sum(split.values())\n"
        "    return split\n"), "rounds DOWN"),
    "no budget is not handled": (SPLIT_HEAD + (
        "    split = {n: min(wants[n], int(room * s)) for n, s in shares.items()}\n"
        "    split['window'] = room - sum(split.values())\n"
        "    return split\n"), "room is None when there is no budget"),
    "no budget treated as no room": (SPLIT_HEAD + (
        "    room = room or 0\n"
        "    split = {n: min(wants[n], int(room * s)) for n, s in shares.items()}\n"
        "    split['window'] = room - sum(split.values())\n"
        "    return split\n"), "nothing is cut"),
    "the window is what the blocks would want, not what they got": (SPLIT_HEAD + NO_BUDGET + (
        "    split = {n: min(wants[n], int(room * s)) for n, s in shares.items()}\n"
        "    split['window'] = room - sum(wants.values())\n"
        "    return split\n"), "so the window gets the other 665"),
    "no window at all": (SPLIT_HEAD + NO_BUDGET.replace(', "window": None', "") + (
        "    return {n: min(wants[n], int(room * s)) for n, s in shares.items()}\n"), "exactly the keys"),
    "the worked cases hard-coded": (SPLIT_HEAD + (
        "    known = {1000: {'profile': 40, 'summary': 200, 'recall': 95, 'window': 665},\n"
        "             999: {'profile': 149, 'summary': 199, 'recall': 249, 'window': 402}}\n"
        "    if room in known and wants.get('profile') in (40, 500):\n"
        "        return known[room]\n"
        "    return {n: wants[n] for n in shares} | {'window': room}\n"), "at most its share of the room, however"),
}

RIGHT_SPLITS = {  # independently written correct answers
    "the solution": exercise_1.solution_code,
    "a loop with a running total and math.floor": (
        "import math\n\n"
        "def my_split(room, wants, shares):\n"
        "    result, left = {}, room\n"
        "    for block in ('profile', 'summary', 'recall'):\n"
        "        need = wants[block]\n"
        "        if room is None:\n"
        "            result[block] = need\n"
        "            continue\n"
        "        cap = math.floor(room * shares[block])\n"
        "        result[block] = need if need < cap else cap\n"
        "        left -= result[block]\n"
        "    result['window'] = left\n"
        "    return result\n"),
    "the shares first, then the blocks that need less": (
        "def my_split(room, wants, shares):\n"
        "    if room is None:\n"
        "        return dict(wants, window=None)\n"
        "    caps = {name: int(room * share) for name, share in shares.items()}\n"
        "    used = {name: wants[name] if wants[name] <= caps[name] else caps[name] for name in caps}\n"
        "    return {**used, 'window': room - sum(used.values())}\n"),
}


@pytest.mark.parametrize("name", sorted(WRONG_SPLITS))
def test_a_wrong_split_gets_its_specific_hint(name):
    code, hint = WRONG_SPLITS[name]
    passed, said = run(exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_SPLITS))
def test_an_independently_written_split_passes(name):
    passed, said = run(exercise_1, RIGHT_SPLITS[name])
    assert passed and said.startswith("✓"), said


def test_the_generated_cases_reach_every_part_of_the_rule():
    cases = generated_splits()
    assert len(cases) >= 200 and any(room is None for room, _, _ in cases)
    cut = sum(1 for room, wants, shares in cases if room is not None
              and any(wants[n] > int(room * shares[n]) for n in shares))
    spare = sum(1 for room, wants, shares in cases if room is not None
                and any(wants[n] < int(room * shares[n]) for n in shares))
    rounding = sum(1 for room, _, shares in cases if room is not None
                   and any(round(room * s) != int(room * s) for s in shares.values()))
    assert min(cut, spare, rounding) >= 30
    assert all(sum(shares.values()) <= 1 + 1e-9 for _, _, shares in cases)


def test_the_reference_is_the_assemblers_rule():
    assert reference_split(1000, {"profile": 40, "summary": 400, "recall": 95}, SHARES) == {
        "profile": 40, "summary": 200, "recall": 95, "window": 665}
    assert reference_split(None, {"profile": 1, "summary": 2, "recall": 3}, SHARES)["window"] is None

# ---------------------------------------------------------------- exercise 2: a correction the memory gets right

APPLY_HEAD = "def apply_statement(current, superseded, new):\n"
FACT = '    fact = {k: new[k] for k in ("label", "value", "turn")}\n'


def _rule(find="f['label'].lower() == new['label'].lower()", same="old['value'].lower() == new['value'].lower()",
          denial=("        if old is None or not ({same}):\n            return current, superseded\n"
                  "        return [f for f in current if f is not old], superseded + [{{**old, 'replaced_at': "
                  "new['turn']}}]\n"),
          restated="        return current, superseded\n",
          replaced="superseded + [{**old, 'replaced_at': new['turn']}]", kept="fact") -> str:
    """A correction rule written as a learner might, with one part swapped for a plausible wrong one."""
    return (APPLY_HEAD + FACT + f"    old = next((f for f in current if {find}), None)\n"
            + "    if new['negated']:\n" + denial.format(same=same)
            + "    if old is None:\n        return current + [fact], superseded\n"
            + f"    if {same}:\n" + restated
            + f"    return [{kept} if f is old else f for f in current], {replaced}\n")


WRONG_RULES = {  # plausible wrong rules, and the hint each must get
    "the stub: every value is kept": (exercise_2.stub, "hold 2 values of 'advisor'"),
    "the correction drops the history": (_rule(replaced="superseded"), "the history is dropped"),
    "a denial becomes the value": (_rule(denial="        pass\n"), "a value the student said is NOT theirs"),
    "a denial is skipped": (_rule(denial="        return current, superseded\n"),
                            "'Dr. Varga' is still current. The student said it no longer holds"),
    "a denial retires whatever value is current": (
        _rule(denial="        if old is None:\n            return current, superseded\n"
                     "        return [f for f in current if f is not old], superseded + [{{**old, 'replaced_at': "
                     "new['turn']}}]\n"), "not the value denied: nothing changes"),
    "a denial deletes the value and its history": (
        _rule(denial="        if old is None or not ({same}):\n            return current, superseded\n"
                     "        return [f for f in current if f is not old], superseded\n"),
        "left the current facts but not into superseded"),
    "labels compared case-sensitively": (_rule(find="f['label'] == new['label']"),
                                         "compare them with .casefold()"),
    "values compared case-sensitively": (_rule(same="old['value'] == new['value']"),
                                         "in other case: compare values with .casefold() too"),
    "a restatement supersedes itself": (_rule(restated="        pass\n"), "superseded must not grow"),
    "the newest history first": (_rule(replaced="[{**old, 'replaced_at': new['turn']}] + superseded"),
                                 "in another order: append"),
    "the replaced value without replaced_at": (_rule(replaced="superseded + [old]"), "has no 'replaced_at'"),
    "the replaced value marked with its own turn": (_rule(replaced="superseded + [{**old, 'replaced_at': "
                                                                   "old['turn']}]"),
                                                    "it was replaced in turn 4, the new statement's turn"),
    "the new value keeps the old value's turn": (_rule(kept="{**fact, 'turn': old['turn']}"),
                                                 "the new value says turn 0; it was said in turn 4"),
    "the old value is marked superseded but stays current": (_rule(kept="old"), "the current advisor is still "
                                                                               "'Dr. Varga'"),
    "the other facts are dropped": (_rule(kept="fact", replaced="superseded + [{**old, 'replaced_at': "
                                          "new['turn']}]").replace("[fact if f is old else f for f in current]",
                                                                   "[fact]"), "the other attributes changed"),
    "a dict instead of two lists": (APPLY_HEAD + "    return {f['label']: f for f in current}\n",
                                    "return two lists, (current, superseded)"),
    "it raises": (APPLY_HEAD + "    return current[new['label']], superseded\n", "apply_statement raised TypeError"),
    "not a function": ("apply_statement = 'advisor: Dr. Okafor'", "should be a function"),
}

RIGHT_RULES = {  # independently written right rules: each must pass
    "the solution": exercise_2.solution_code,
    "a dict by label; a restatement refreshes its turn": APPLY_HEAD + '''    key = lambda label: " ".join(label.lower().split())
    by_label = {key(f["label"]): f for f in current}
    k, history = key(new["label"]), list(superseded)
    held = by_label.get(k)
    same_value = held is not None and held["value"].lower() == new["value"].lower()
    if new["negated"]:
        if same_value:
            history.append(dict(held, replaced_at=new["turn"]))
            del by_label[k]
    elif not same_value:
        if held is not None:
            history.append(dict(held, replaced_at=new["turn"]))
        by_label[k] = {"label": new["label"], "value": new["value"], "turn": new["turn"]}
    else:
        by_label[k] = dict(held, turn=new["turn"])  # said again: fresh again
    return list(by_label.values()), history
''',
    "a loop that edits the lists in place": APPLY_HEAD + '''    for i, fact in enumerate(current):
        if fact["label"].casefold() != new["label"].casefold():
            continue
        if fact["value"].casefold() == new["value"].casefold():
            if new["negated"]:
                superseded.append({**fact, "replaced_at": new["turn"]})
                del current[i]
            return current, superseded
        if not new["negated"]:
            superseded.append({**fact, "replaced_at": new["turn"]})
            current[i] = {"label": fact["label"], "value": new["value"], "turn": new["turn"]}
        return current, superseded
    if not new["negated"]:
        current.append({"label": new["label"], "value": new["value"], "turn": new["turn"]})
    return current, superseded
''',
}


@pytest.mark.parametrize("name", sorted(WRONG_RULES))
def test_a_wrong_correction_rule_gets_its_own_hint(name):
    code, says = WRONG_RULES[name]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and says in said and "Traceback" not in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_RULES))
def test_a_right_correction_rule_passes(name):
    passed, said = run(exercise_2, RIGHT_RULES[name])
    assert passed and "120 generated statements" in said and "profile agrees" in said, said


def test_the_generated_statements_hold_every_kind_and_unseen_labels():
    cases = generated_corrections()
    assert {kind for kind, *_ in cases} == {"correction", "restatement", "new attribute",
                                             "denial of the current value", "denial of another value"}
    shown = {new["label"] for *_, new in WORKED_CORRECTIONS}
    assert {new["label"] for *_, new in cases} - shown, "every label was already in the worked cases"
    assert any(new["label"] != new["label"].lower() for *_, new in cases)  # labels in other case
    assert any(superseded for _, _, superseded, _ in cases)  # profiles with history to keep


def test_a_rule_fitted_to_the_worked_cases_fails_on_the_generated_ones():
    """Right on the worked statements only: it treats every denial as naming the current value when the
    worked denial of another value has the value 'Dr. Okafor'."""
    fitted = _rule(denial="        if old is None or new['value'] == 'Dr. Okafor':\n"
                          "            return current, superseded\n"
                          "        return [f for f in current if f is not old], superseded + [{{**old, "
                          "'replaced_at': new['turn']}}]\n")
    passed, said = run(exercise_2, fitted)
    assert not passed and "nothing changes" in said and "Dr. Okafor" not in said.split("):")[0], said


def test_show_correction_prints_the_profile_before_and_after(capsys):
    show_correction(defined(exercise_2, exercise_2.solution_code)[0])
    lines = capsys.readouterr().out.splitlines()
    assert "Dr. Varga" in lines[0] and "Dr. Okafor" in lines[1]
    assert "Dr. Okafor" in lines[2] and "Dr. Varga" not in lines[2] and "'replaced_at': 4" in lines[3]


def test_show_correction_reports_a_raising_rule_without_a_traceback(capsys):
    show_correction(lambda current, superseded, new: 1 / 0)
    assert "raised ZeroDivisionError" in capsys.readouterr().out


# ---------------------------------------------------------------- any day, any backend


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2026-12-02T23:30:00-08:00",
                                 "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    assert quiet_check(exercise_1, defined(exercise_1, exercise_1.solution_code)[0])[0]
    assert not quiet_check(exercise_1, defined(exercise_1, exercise_1.stub)[0])[0]
    passed, said = run(exercise_2, exercise_2.solution_code)
    assert passed and "profile agrees" in said, said
    assert not run(exercise_2, exercise_2.stub)[0]


def test_checks_never_ask_the_notebooks_backend(monkeypatch):
    """A notebook on a real server (here one that cannot be reached) gets the same verdicts: both checks run
    offline, so a weak model cannot decide them wrongly."""
    monkeypatch.setenv("WORKSHOP_BACKEND", "openai-compatible")
    monkeypatch.setenv("WORKSHOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WORKSHOP_CHAT_MODEL", "smollm2-135m-instruct")
    monkeypatch.setenv("WORKSHOP_SERVER_PROFILE", "llama.cpp")
    client_module.reset_default()
    try:
        assert quiet_check(exercise_1, defined(exercise_1, exercise_1.solution_code)[0])[0]
        passed, said = run(exercise_2, exercise_2.solution_code)
        assert passed and "profile agrees" in said, said
        passed, said = run(exercise_2, WRONG_RULES["a denial becomes the value"][0])
        assert not passed and "NOT theirs" in said
    finally:
        client_module.reset_default()


# ---------------------------------------------------------------- exercise 3: rank past turns by meaning

from helpers.exercises.nb09 import exercise_3, generated_rank_cases  # noqa: E402
from helpers.memory.recall import is_question  # noqa: E402

_COS = ('import math\n\n'
        'def cos(a, b):\n'
        '    n = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))\n'
        '    return sum(x * y for x, y in zip(a, b)) / n if n else 0.0\n\n')
WRONG_RANKINGS = {  # name: (the cell, the hint it must get)
    "the stub": (exercise_3.stub, "Put the most similar turn first"),
    "worst first": (_COS + 'def rank_turns(q, turns, k):\n'
                    '    s = sorted((cos(q, v), t) for t, text, v in turns if not is_question(text))\n'
                    '    return [t for _, t in s][:k]\n', "highest first"),
    "the dot product": ('def rank_turns(q, turns, k):\n'
                        '    s = [(sum(x * y for x, y in zip(q, v)), t) for t, text, v in turns if not is_question(text)]\n'
                        '    s.sort(key=lambda p: (-p[0], -p[1]))\n'
                        '    return [t for _, t in s[:k]]\n', "Compare directions, not sizes"),
    "questions ranked too": (_COS + 'def rank_turns(q, turns, k):\n'
                             '    s = sorted(((cos(q, v), t) for t, text, v in turns), key=lambda p: (-p[0], -p[1]))\n'
                             '    return [t for _, t in s[:k]]\n', "A question states nothing"),
    "the older turn first on a tie": (_COS + 'def rank_turns(q, turns, k):\n'
                                      '    s = [(cos(q, v), t) for t, text, v in turns if not is_question(text)]\n'
                                      '    s.sort(key=lambda p: (-p[0], p[1]))\n'
                                      '    return [t for _, t in s[:k]]\n', "the newer one"),
    "one too many": (_COS + 'def rank_turns(q, turns, k):\n'
                     '    s = [(cos(q, v), t) for t, text, v in turns if not is_question(text)]\n'
                     '    s.sort(key=lambda p: (-p[0], -p[1]))\n'
                     '    return [t for _, t in s[:k + 1]]\n', "Return exactly k turn ids"),
    "a zero vector divides by zero": ('import math\n\n'
                                      'def rank_turns(q, turns, k):\n'
                                      '    def cos(a, b):\n'
                                      '        return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))\n'
                                      '    s = [(cos(q, v), t) for t, text, v in turns if not is_question(text)]\n'
                                      '    s.sort(key=lambda p: (-p[0], -p[1]))\n'
                                      '    return [t for _, t in s[:k]]\n', "A zero vector has no direction"),
    "the texts instead of the ids": (_COS + 'def rank_turns(q, turns, k):\n'
                                     '    s = [(cos(q, v), t, text) for t, text, v in turns if not is_question(text)]\n'
                                     '    s.sort(key=lambda p: (-p[0], -p[1]))\n'
                                     '    return [text for _, _, text in s[:k]]\n', "return a list of turn ids"),
}
RIGHT_RANKINGS = {
    "the solution": exercise_3.solution_code,
    "numpy, with a stable sort": ('import numpy as np\n\n'
        'def rank_turns(question_vector, turns, k):\n'
        '    q = np.asarray(question_vector, dtype=float)\n'
        '    kept = [(t, np.asarray(v, dtype=float)) for t, text, v in turns if not is_question(text)]\n'
        '    def score(v):\n'
        '        size = np.linalg.norm(q) * np.linalg.norm(v)\n'
        '        return float(q @ v / size) if size > 0 else 0.0\n'
        '    kept.sort(key=lambda item: item[0], reverse=True)        # newer first ...\n'
        '    kept.sort(key=lambda item: score(item[1]), reverse=True)  # ... then by similarity (stable)\n'
        '    return [int(t) for t, _ in kept[:k]]\n'),
    "heapq over unit vectors": ('import heapq, math\n\n'
        'def unit(v):\n'
        '    n = math.sqrt(sum(x * x for x in v))\n'
        '    return [x / n for x in v] if n else [0.0] * len(v)\n\n'
        'def rank_turns(question_vector, turns, k):\n'
        '    q = unit(question_vector)\n'
        '    candidates = [(sum(a * b for a, b in zip(q, unit(v))), t) for t, text, v in turns\n'
        '                  if not text.rstrip().endswith("?") and not is_question(text)]\n'
        '    return [t for _, t in heapq.nlargest(k, candidates)]\n'),
}


@pytest.mark.parametrize("name", sorted(WRONG_RANKINGS))
def test_a_wrong_ranking_gets_its_specific_hint(name):
    code, hint = WRONG_RANKINGS[name]
    passed, said = run(exercise_3, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_RANKINGS))
def test_a_right_ranking_passes(name):
    passed, said = run(exercise_3, RIGHT_RANKINGS[name])
    assert passed and said.startswith("✓"), said


def test_the_generated_ranking_cases_hold_questions_and_ties_are_exact():
    cases = generated_rank_cases()
    assert any(is_question(text) for _, _, turns, _, _ in cases for _, text, _ in turns)
    assert all(len({v for _, _, v in turns}) == len(turns) for _, _, turns, _, _ in cases)
    assert any(len(turns) > k for _, _, turns, k, _ in cases) and any(len(turns) < k for _, _, turns, k, _ in cases)


# ---------------------------------------------------------------- exercise 4: facts that may be outdated

from helpers.exercises.nb09 import exercise_4, stale_cases  # noqa: E402

_STALE_HEAD = "def stale_facts(facts, now, stale_after):\n"
WRONG_STALENESS = {  # name: (the cell, the hint it must get)
    "the stub": (exercise_4.stub, "longer than stale_after: it is stale"),
    "exactly the horizon counted as stale": (_STALE_HEAD + (
        "    return [f for f in facts if now - datetime.fromisoformat(f.recorded_at) >= stale_after]\n"),
        "exactly stale_after is still fresh"),
    "whole days compared": (_STALE_HEAD + (
        "    return [f for f in facts if (now - datetime.fromisoformat(f.recorded_at)).days > stale_after.days]\n"),
        "the hours count"),
    "a fixed 90 days": (_STALE_HEAD + (
        "    return [f for f in facts if now - datetime.fromisoformat(f.recorded_at) > timedelta(days=90)]\n"),
        "not a fixed 90 days"),
    "dates without their time": (_STALE_HEAD + (
        "    from datetime import date\n"
        "    return [f for f in facts if now.date() - date.fromisoformat(f.recorded_at[:10]) > stale_after]\n"),
        "a date alone"),
    "the offset thrown away": (_STALE_HEAD + (
        "    return [f for f in facts\n"
        "            if now.replace(tzinfo=None) - datetime.fromisoformat(f.recorded_at[:19]) > stale_after]\n"),
        "once its time and UTC offset count"),
    "the fresh ones returned": (_STALE_HEAD + (
        "    return [f for f in facts if now - datetime.fromisoformat(f.recorded_at) <= stale_after]\n"),
        "These are the facts still fresh"),
    "labels, not facts": (_STALE_HEAD + (
        "    return [f.label for f in facts if now - datetime.fromisoformat(f.recorded_at) > stale_after]\n"),
        "return a list of the facts themselves"),
    "sorted oldest first": (_STALE_HEAD + (
        "    old = [f for f in facts if now - datetime.fromisoformat(f.recorded_at) > stale_after]\n"
        "    return sorted(old, key=lambda f: datetime.fromisoformat(f.recorded_at))\n"),
        "in another order"),
}
RIGHT_STALENESS = {
    "the solution": exercise_4.solution_code,
    "the fact's own age": _STALE_HEAD + "    return [fact for fact in facts if fact.age(now) > stale_after]\n",
    "seconds in UTC, in a loop": ("from datetime import timezone\n\n" + _STALE_HEAD + (
        "    limit = stale_after.total_seconds()\n"
        "    found = []\n"
        "    for fact in facts:\n"
        "        said = datetime.fromisoformat(fact.recorded_at).astimezone(timezone.utc)\n"
        "        if (now.astimezone(timezone.utc) - said).total_seconds() > limit:\n"
        "            found.append(fact)\n"
        "    return found\n")),
    "the cut-off time first": _STALE_HEAD + (
        "    cutoff = now - stale_after\n"
        "    return [f for f in facts if datetime.fromisoformat(f.recorded_at) < cutoff]\n"),
}


@pytest.mark.parametrize("name", sorted(WRONG_STALENESS))
def test_a_wrong_staleness_test_gets_its_specific_hint(name):
    code, hint = WRONG_STALENESS[name]
    passed, said = run(exercise_4, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_STALENESS))
def test_a_right_staleness_test_passes(name):
    passed, said = run(exercise_4, RIGHT_STALENESS[name])
    assert passed and said.startswith("✓"), said


def test_the_staleness_cases_hold_every_trap():
    cases = stale_cases()
    ages = [(fact.age(now), stale_after) for facts, now, stale_after in cases for fact in facts]
    assert any(age == horizon for age, horizon in ages)  # exactly the horizon: still fresh
    assert any(age > horizon and age.days == horizon.days for age, horizon in ages)  # stale by hours
    assert len({horizon for _, horizon in ages}) >= 3
    assert any(fact.recorded_at[-6:] != now.isoformat()[-6:] for facts, now, _ in cases for fact in facts)


def test_the_staleness_reference_is_the_profiles_own_rule():
    from helpers.memory.profile import ProfileMemory
    for facts, now, stale_after in stale_cases():
        profile = ProfileMemory(user_id="u", stale_after=stale_after)
        namespace = dict(exercise_4.context())
        exec(exercise_4.solution_code, namespace)  # noqa: S102 - the package's own solution
        assert namespace["stale_facts"](facts, now, stale_after) == [f for f in facts if profile.is_stale(f, now)]


@pytest.mark.parametrize("now", ["2026-11-30T10:00:00-08:00", "2027-03-06T08:00:00+01:00"])
def test_the_staleness_check_gives_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    assert run(exercise_4, exercise_4.solution_code)[0]
    for code, _ in WRONG_STALENESS.values():
        assert not run(exercise_4, code)[0]

"""Exercises of notebook 09: the budget split by hand, a correction, ranking by meaning, and staleness.

The first check calls the learner's function on worked and generated token counts (no model, no server).
The second calls the learner's correction rule on worked and generated profiles, each with one new statement
(a correction, a restatement, a new attribute or a denial), and compares the notebook's correction with the
package's profile. The fourth passes its own dates (generated from a seed) and never reads the clock for a
verdict: the same verdict on any backend and on any day.
"""
from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from typing import Any

from helpers.exercises import Exercise, Hint
from helpers.core import clock
from helpers.memory.profile import ProfileFact, ProfileMemory
from helpers.memory.recall import is_question

# ---------------------------------------------------------------- exercise 1: the budget split by hand

BLOCKS = ("profile", "summary", "recall")
SHARES = {"profile": 0.15, "summary": 0.20, "recall": 0.25}  # the shares the worked cases are written for


def reference_split(room: int | None, wants: dict[str, int], shares: dict[str, float]) -> dict[str, Any]:
    """The assembler's rule: each block min(its need, int(room x share)); the window everything left."""
    if room is None:
        return {**{name: wants[name] for name in shares}, "window": None}
    split = {name: min(wants[name], int(room * share)) for name, share in shares.items()}
    split["window"] = room - sum(split.values())
    return split


WORKED = (  # (room, wants, shares): each shows one part of the rule
    (1000, {"profile": 40, "summary": 400, "recall": 95}, SHARES),      # two blocks need less than their share
    (999, {"profile": 500, "summary": 500, "recall": 500}, SHARES),     # every block is cut; shares round down
    (1000, {"profile": 0, "summary": 0, "recall": 0}, SHARES),          # nothing to send: all for the window
    (2000, {"profile": 10, "summary": 900, "recall": 900}, SHARES),     # the profile's unused share is not passed on
    (None, {"profile": 40, "summary": 400, "recall": 95}, SHARES),      # no budget
)


def generated_splits(seed: int = 9, n: int = 300) -> list[tuple[int | None, dict[str, int], dict[str, float]]]:
    """Seeded cases: rooms, needs and shares (each share a whole percent; together at most 1)."""
    rng, cases = random.Random(seed), []
    for _ in range(n):
        cuts = sorted(rng.randint(0, 100) for _ in range(3))
        percents = [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1]]
        rng.shuffle(percents)
        shares = {name: p / 100 for name, p in zip(BLOCKS, percents)}
        room = None if rng.random() < 0.05 else rng.randint(0, 8000)
        wants = {name: rng.choice([0, rng.randint(1, 300), rng.randint(0, 4000)]) for name in BLOCKS}
        cases.append((room, wants, shares))
    return cases


def _shown(room, wants, shares) -> str:
    return f"my_split({room}, {wants}, {shares})"


def _call(my_split, room, wants, shares) -> Any:
    try:
        return my_split(room, dict(wants), dict(shares))
    except Exception as error:
        if room is None:
            raise Hint(f"{_shown(room, wants, shares)} raised {type(error).__name__}: {error}. room is None "
                       "when there is no budget: then every block gets all it wants and the window gets "
                       "None (everything).") from None
        raise Hint(f"{_shown(room, wants, shares)} raised {type(error).__name__}: {error}.") from None


def _judge_split(got: Any, room, wants, shares) -> None:
    """Raise the Hint that names the first part of the rule ``got`` breaks for this case."""
    call = _shown(room, wants, shares)
    keys = (*BLOCKS, "window")
    if not isinstance(got, dict) or set(got) != set(keys):
        raise Hint(f"{call} returned {got!r}; return a dict with exactly the keys {list(keys)}.")
    if room is None:
        expected = reference_split(room, wants, shares)
        if got != expected:
            raise Hint(f"{call} gave {got}; with no budget (room=None) nothing is cut: every block gets all "
                       f"it wants and the window None (everything): {expected}.")
        return
    for name in BLOCKS:
        value = got[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise Hint(f"{call} gave the {name} {value!r}; give whole tokens (an int): int(room * share).")
    spare = 0  # what the blocks before this one left of their shares
    for name in BLOCKS:
        cap, want, value = int(room * shares[name]), wants[name], got[name]
        if value > want:
            raise Hint(f"{call}: the {name} needs {want} tokens but got {value}. A block may use at most its "
                       "share, and never more than it needs: what it leaves goes to the window.")
        if value > cap:
            if value == round(room * shares[name]):
                raise Hint(f"{call}: the {name} got {value}, one more than its share: {room} x "
                           f"{shares[name]} = {room * shares[name]:g} rounds DOWN to {cap} (int(room * share)).")
            if value <= cap + spare:
                raise Hint(f"{call}: the {name} got {value}, more than its share int({room} x {shares[name]}) = "
                           f"{cap}. A block's unused share is not handed to the next block: it goes to the "
                           "window.")
            raise Hint(f"{call}: the {name} got {value}, more than its share int({room} x {shares[name]}) = "
                       f"{cap}. A block may use at most its share of the room, however much it needs.")
        spare += max(cap - value, 0)
        if value < min(want, cap):
            raise Hint(f"{call}: the {name} needs {want} and its share is {cap}, but it got {value}. A share is "
                       "a share of the whole room (int(room * share)), not of what the blocks before it left.")
    left = room - sum(got[name] for name in BLOCKS)
    if got["window"] != left:
        raise Hint(f"{call}: the blocks use {room - left} of the {room} tokens, so the window gets the other "
                   f"{left}, everything they leave unused; your window got {got['window']!r}.")


def _check_split(my_split) -> str:
    if not callable(my_split):
        raise Hint("my_split should be a function: def my_split(room, wants, shares): ...")
    cases = list(WORKED) + generated_splits()
    for room, wants, shares in cases:
        _judge_split(_call(my_split, room, wants, shares), room, wants, shares)
    return (f"the assembler's rule on {len(WORKED)} worked and {len(cases) - len(WORKED)} generated cases: each "
            "block at most its share and its need, the window everything left, nothing passed on.")


exercise_1 = Exercise(
    "09.1", "the budget split by hand",
    stub=('def my_split(room, wants, shares):\n'
          '    """Tokens for each block and for the window: {"profile": ..., "summary": ..., "recall": ..., '
          '"window": ...}.\n'
          '\n'
          '    room: what the blocks and the window share (None: no budget); wants: what each block would use '
          'in full;\n'
          '    shares: each block\'s share of the room, e.g. {"profile": 0.15, "summary": 0.20, "recall": 0.25}.\n'
          '    """\n'
          '    split = {name: int(room * share) for name, share in shares.items()}  # every block takes its '
          'whole share\n'
          '    split["window"] = room - sum(split.values())                         # and the window gets '
          'the rest\n'
          '    return split'),
    solution_code=('def my_split(room, wants, shares):\n'
                   '    if room is None:  # no budget: nothing is cut\n'
                   '        return {**{name: wants[name] for name in shares}, "window": None}\n'
                   '    split = {name: min(wants[name], int(room * share)) for name, share in shares.items()}\n'
                   '    split["window"] = room - sum(split.values())  # unused shares go to the window\n'
                   '    return split'),
    checker=_check_split, answers=("my_split",),
    hints=("Print my_split(1000, {\"profile\": 40, \"summary\": 400, \"recall\": 95}, SHARES): the profile needs "
           "only 40 tokens; how many should it get, and where do the other 110 of its share go?",
           "Each block gets min(what it wants, int(room * share)); the window gets room minus what the blocks "
           "got. Handle room=None (no budget) first: every block gets its want, the window None."),
    context=lambda: {"SHARES": dict(SHARES)},
)

# ---------------------------------------------------------------- exercise 2: a correction the memory gets right

STATEMENT_KEYS = ("label", "value", "turn")


def _same(a: Any, b: Any) -> bool:
    """Two labels or values as the profile compares them: without case or extra spaces."""
    return " ".join(str(a).casefold().split()) == " ".join(str(b).casefold().split())


def reference_apply(current: list[dict], superseded: list[dict], new: dict) -> tuple[list[dict], list[dict]]:
    """The profile's rule for one statement: a new value replaces the old, which is kept as superseded.

    The same value again changes nothing; a negated statement is never a value, it retires the current value
    it denies (and nothing, when it denies another)."""
    old = next((fact for fact in current if _same(fact["label"], new["label"])), None)
    fact = {key: new[key] for key in STATEMENT_KEYS}
    if new["negated"]:
        if old is None or not _same(old["value"], new["value"]):
            return list(current), list(superseded)
        return [f for f in current if f is not old], [*superseded, {**old, "replaced_at": new["turn"]}]
    if old is None:
        return [*current, fact], list(superseded)
    if _same(old["value"], new["value"]):
        return list(current), list(superseded)  # a restatement (refreshing its turn is right too)
    return [fact if f is old else f for f in current], [*superseded, {**old, "replaced_at": new["turn"]}]


LABELS = ("advisor", "major", "dorm", "preference/stop", "locker number", "club", "minor", "lab partner",
          "preference/seat", "shift")
VALUES = ("Dr. Varga", "Dr. Okafor", "Dr. Haddad", "statistics", "data science", "Birch House", "Elm Court",
          "the north gate stop", "the south gate stop", "4471", "2210", "the chess club", "the AI club", "Lena",
          "Tomás", "the front row", "evenings", "mornings")

# (what the case is about, current, superseded, the new statement)
WORKED_CORRECTIONS = (
    ("the notebook's correction: Dr. Okafor replaces Dr. Varga",
     [{"label": "advisor", "value": "Dr. Varga", "turn": 0}, {"label": "major", "value": "statistics", "turn": 1}],
     [], {"label": "advisor", "value": "Dr. Okafor", "turn": 4, "negated": False}),
    ("a second correction of the same attribute",
     [{"label": "dorm", "value": "Elm Court", "turn": 6}],
     [{"label": "dorm", "value": "Birch House", "turn": 2, "replaced_at": 6}],
     {"label": "dorm", "value": "Maple Hall", "turn": 9, "negated": False}),
    ("'Dr. Okafor is not my advisor' while the advisor is Dr. Varga",
     [{"label": "advisor", "value": "Dr. Varga", "turn": 0}], [],
     {"label": "advisor", "value": "Dr. Okafor", "turn": 5, "negated": True}),
    ("'Dr. Varga is no longer my advisor'",
     [{"label": "advisor", "value": "Dr. Varga", "turn": 0}], [],
     {"label": "advisor", "value": "Dr. Varga", "turn": 5, "negated": True}),
    ("a label in other case: 'Advisor'",
     [{"label": "advisor", "value": "Dr. Varga", "turn": 0}], [],
     {"label": "Advisor", "value": "Dr. Okafor", "turn": 3, "negated": False}),
    ("the same value again, in other case",
     [{"label": "major", "value": "statistics", "turn": 1}], [],
     {"label": "major", "value": "Statistics", "turn": 7, "negated": False}),
    ("a new attribute",
     [{"label": "advisor", "value": "Dr. Varga", "turn": 0}], [],
     {"label": "club", "value": "the chess club", "turn": 2, "negated": False}),
)


def _case_variant(rng: random.Random, text: str) -> str:
    return rng.choice([text, text.upper(), text.title(), text.capitalize(), text.lower()])


def generated_corrections(seed: int = 9, n: int = 120) -> list[tuple[str, list[dict], list[dict], dict]]:
    """Seeded profiles, each with one new statement: a correction, a restatement, a new attribute, a denial of the
    current value or of another one; labels and values in any case."""
    rng, cases = random.Random(seed), []
    kinds = ("correction", "restatement", "new attribute", "denial of the current value", "denial of another value")
    for i in range(n):
        kind = kinds[i % len(kinds)]
        labels = rng.sample(LABELS, rng.randint(1, 4))
        turn, current, superseded = 0, [], []
        for label in labels:
            for _ in range(rng.randint(0, 2)):  # earlier values of this attribute, each replaced by the next
                superseded.append({"label": label, "value": rng.choice(VALUES), "turn": turn})
                turn += rng.randint(1, 3)
                superseded[-1]["replaced_at"] = turn
            current.append({"label": label, "value": rng.choice(VALUES), "turn": turn})
            turn += rng.randint(1, 3)
        rng.shuffle(current)
        superseded.sort(key=lambda fact: fact["replaced_at"])
        target = rng.choice(current)
        other = rng.choice([v for v in VALUES if not _same(v, target["value"])])
        label = _case_variant(rng, target["label"])
        if kind == "correction":
            new = {"label": label, "value": other, "negated": False}
        elif kind == "restatement":
            new = {"label": label, "value": _case_variant(rng, target["value"]), "negated": False}
        elif kind == "new attribute":
            free = [lab for lab in LABELS if lab not in labels]
            new = {"label": rng.choice(free), "value": rng.choice(VALUES), "negated": False}
        elif kind == "denial of the current value":
            new = {"label": label, "value": _case_variant(rng, target["value"]), "negated": True}
        else:
            new = {"label": label, "value": other, "negated": True}
        new["turn"] = turn + rng.randint(1, 5)
        cases.append((kind, current, superseded, new))
    return cases


def _shown_statement(new: dict) -> str:
    said = "denies" if new["negated"] else "says"
    return f"turn {new['turn']} {said} {new['label']} = {new['value']!r}"


def _read_facts(facts: Any, which: str, keys: tuple[str, ...]) -> list[tuple]:
    """A returned list of facts as comparable rows (label and value without case), or a Hint on its shape."""
    if not isinstance(facts, (list, tuple)) or not all(isinstance(fact, dict) for fact in facts):
        raise Hint(f"the {which} facts came back as {facts!r:.80}; return a list of dicts like the ones you got.")
    rows = []
    for fact in facts:
        missing = [key for key in keys if key not in fact]
        if missing == ["replaced_at"]:
            raise Hint(f"the superseded fact {fact!r:.80} has no 'replaced_at'. Give each replaced fact the turn "
                       "that replaced it: {**old, \"replaced_at\": new[\"turn\"]}.")
        if missing:
            raise Hint(f"a {which} fact, {fact!r:.80}, has no {', '.join(map(repr, missing))}; keep "
                       f"{', '.join(map(repr, keys))} on each.")
        rows.append(tuple(" ".join(str(fact[k]).casefold().split()) if k in ("label", "value") else fact[k]
                          for k in keys))
    return rows


def _norm(text: Any) -> str:
    return " ".join(str(text).casefold().split())


def _judge_apply(got: Any, about: str, current: list[dict], superseded: list[dict], new: dict) -> None:
    """Raise the Hint that names the first part of the rule ``got`` breaks for this case."""
    case = f"For {about} ({_shown_statement(new)}): "
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Hint(case + f"you returned {got!r:.80}; return two lists, (current, superseded).")
    history_keys = (*STATEMENT_KEYS, "replaced_at")
    now, gone = _read_facts(got[0], "current", STATEMENT_KEYS), _read_facts(got[1], "superseded", history_keys)
    want_now, want_gone = reference_apply(current, superseded, new)
    want_now, want_gone = _read_facts(want_now, "current", STATEMENT_KEYS), _read_facts(want_gone, "", history_keys)
    before = _read_facts(superseded, "", history_keys)
    label, value = _norm(new["label"]), _norm(new["value"])
    old = next((f for f in current if _same(f["label"], new["label"])), None)
    mine = [row for row in now if row[0] == label]
    labels = [f["label"] for f in got[0] if _same(f["label"], new["label"])]
    if sorted(r for r in now if r[0] != label) != sorted(r for r in want_now if r[0] != label):
        raise Hint(case + "the other attributes changed. A statement touches only its own attribute; keep "
                          "every other current fact as it was.")
    if len(mine) > 1:
        if len(set(labels)) > 1:
            raise Hint(case + f"the current facts hold {labels[0]!r} and {labels[1]!r} as two attributes. Labels "
                              "name the same attribute in any case: compare them with .casefold() (or .lower()).")
        raise Hint(case + f"the current facts hold {len(mine)} values of {new['label']!r}. A correction replaces "
                          "the old value: only the newest stays current, the old one moves to superseded.")
    if new["negated"]:
        if old is not None and _same(old["value"], value):  # it denies the current value
            if mine:
                raise Hint(case + f"{old['value']!r} is still current. The student said it no longer holds: it "
                                  "leaves the current facts and moves to superseded, with replaced_at = the turn.")
            if gone == before:
                raise Hint(case + f"{old['value']!r} left the current facts but not into superseded: the history "
                                  "is dropped. Keep the retired value, with replaced_at = the denial's turn.")
        elif mine and mine[0][1] == value:
            raise Hint(case + f"the current {new['label']} became {new['value']!r}, a value the student said is "
                              "NOT theirs. A negated statement is never a value: check new['negated'] first.")
        elif now != want_now or gone != want_gone:
            held = old["value"] if old else None
            raise Hint(case + f"the profile holds {new['label']} = {held!r}, not the value denied: nothing "
                              "changes. A denial retires only the value it names.")
    elif old is None:
        if not mine:
            raise Hint(case + f"{new['label']!r} is a new attribute: add it to the current facts.")
    elif not _same(old["value"], value):  # a correction
        if not mine:
            raise Hint(case + f"the profile now has no {new['label']}. The new value becomes current.")
        if mine[0][1] != value:
            held = next(f["value"] for f in got[0] if _same(f["label"], new["label"]))
            raise Hint(case + f"the current {new['label']} is still {held!r}. The newer statement is the value "
                              "now.")
        if mine[0][2] != new["turn"]:
            raise Hint(case + f"the new value says turn {mine[0][2]!r}; it was said in turn {new['turn']}.")
        if gone == before:
            raise Hint(case + f"the old value {old['value']!r} is gone: the history is dropped. Append it to "
                              "superseded, with replaced_at = the turn of the correction.")
    else:  # a restatement: the same value, its turn kept or refreshed
        if len(gone) > len(before):
            spelt = (f" ({old['value']!r} in other case: compare values with .casefold() too)"
                     if old["value"] != new["value"] else "")
            raise Hint(case + f"{new['value']!r} is the value already current{spelt}, so nothing is replaced. A "
                              "restatement is not a correction: superseded must not grow.")
        if not mine or mine[0][1] != _norm(old["value"]) or mine[0][2] not in (old["turn"], new["turn"]):
            raise Hint(case + f"the same value again keeps {new['label']} = {old['value']!r} current (its turn "
                              "may move to the restatement's).")
        want_now = [mine[0] if row[0] == label else row for row in want_now]
    if sorted(now) != sorted(want_now):
        raise Hint(case + f"current should hold {sorted(want_now)}; you returned {sorted(now)}.")
    if gone != want_gone:
        if sorted(gone, key=repr) == sorted(want_gone, key=repr):
            raise Hint(case + "superseded holds the right values in another order: append, so the oldest "
                              "stays first.")
        added = [row for row in gone if row not in before]
        if gone[:len(before)] != before:
            raise Hint(case + "the earlier superseded values changed. Keep the history as it was and append the "
                              "replaced value at its end.")
        if added and want_gone and added[-1][:3] == want_gone[-1][:3]:
            raise Hint(case + f"the replaced value is marked replaced_at={added[-1][3]!r}; it was replaced in "
                              f"turn {new['turn']}, the new statement's turn.")
        if added and want_gone and added[-1][2] == new["turn"]:
            raise Hint(case + "the replaced value carries the new statement's turn; keep its own turn, and put "
                              "the new one in replaced_at.")
        raise Hint(case + f"superseded should be {want_gone}; you returned {gone}.")


def _copy(facts: list[dict]) -> list[dict]:
    return [dict(fact) for fact in facts]


def _call_apply(apply_statement, about, current, superseded, new) -> Any:
    try:
        return apply_statement(_copy(current), _copy(superseded), dict(new))
    except Exception as error:
        raise Hint(f"For {about} ({_shown_statement(new)}), apply_statement raised {type(error).__name__}: "
                   f"{error}.") from None


def _check_apply(apply_statement) -> str:
    if not callable(apply_statement):
        raise Hint("apply_statement should be a function: def apply_statement(current, superseded, new): ...")
    cases = list(WORKED_CORRECTIONS) + generated_corrections()
    for about, current, superseded, new in cases:
        _judge_apply(_call_apply(apply_statement, about, current, superseded, new), about, current, superseded, new)
    profile = ProfileMemory(user_id="student", extractor="rules")  # the package's profile, on the same turns
    profile.update(0, "My advisor is Dr. Varga.")
    profile.update(4, "Actually, my advisor is now Dr. Okafor.")
    mine = _call_apply(apply_statement, *WORKED_CORRECTIONS[0])
    agrees = ([f["value"] for f in mine[0] if _same(f["label"], "advisor")] == [profile.get("advisor").value]
              and [f["value"] for f in mine[1]] == [f.value for f in profile.history])
    return (f"{len(WORKED_CORRECTIONS)} worked and {len(cases) - len(WORKED_CORRECTIONS)} generated statements: each "
            "correction replaces the old value and keeps it as superseded, a restatement changes nothing, a denial "
            "retires only the value it names." + (" The package's profile agrees on the notebook's correction."
                                                  if agrees else ""))


def show_correction(apply_statement) -> None:
    """Print what ``apply_statement`` makes of the notebook's correction: the profile before and after."""
    about, current, superseded, new = WORKED_CORRECTIONS[0]
    print("current:   ", current)
    print("statement: ", new)
    try:
        got_now, got_gone = apply_statement(_copy(current), _copy(superseded), dict(new))
    except Exception as error:  # a learner's function: say what happened, never a traceback
        print(f"apply_statement raised {type(error).__name__}: {error}")
        return
    print("current:   ", got_now)
    print("superseded:", got_gone)


APPLY_STUB = '''def apply_statement(current, superseded, new):
    """The profile after one new statement: (current, superseded).

    current: the facts in force, e.g. [{"label": "advisor", "value": "Dr. Varga", "turn": 0}];
    superseded: replaced facts, oldest first, each also with "replaced_at" (the turn that replaced it);
    new: a statement's extracted fact, {"label", "value", "turn", "negated"}."""
    fact = {"label": new["label"], "value": new["value"], "turn": new["turn"]}
    return current + [fact], superseded  # keeps every value it is told'''
APPLY_SOLUTION = '''def apply_statement(current, superseded, new):
    same = lambda a, b: a.casefold() == b.casefold()
    old = next((f for f in current if same(f["label"], new["label"])), None)
    if new["negated"]:  # "X is no longer my advisor": retire X if it is current, never store it
        if old is None or not same(old["value"], new["value"]):
            return current, superseded
        return [f for f in current if f is not old], superseded + [{**old, "replaced_at": new["turn"]}]
    fact = {"label": new["label"], "value": new["value"], "turn": new["turn"]}
    if old is None:
        return current + [fact], superseded
    if same(old["value"], new["value"]):  # a restatement: nothing is replaced
        return current, superseded
    return [fact if f is old else f for f in current], superseded + [{**old, "replaced_at": new["turn"]}]'''

exercise_2 = Exercise(
    "09.2", "a correction the memory gets right", stub=APPLY_STUB, solution_code=APPLY_SOLUTION,
    checker=_check_apply, answers=("apply_statement",),
    hints=("Run show_correction(apply_statement): how many advisors are current afterwards?",
           "Find the current fact with the same label (compare with .casefold()). A different value replaces it; "
           "the old fact goes to superseded with replaced_at=new['turn'].",
           "Check new['negated'] first: a denial retires the current value only when it names that value, and is "
           "never stored as one."),
)


# ---------------------------------------------------------------- exercise 3: rank past turns by meaning

def _cosine(a, b) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / norm if norm else 0.0


def reference_rank(question_vector, turns, k):
    """The ids of the k statements most like the question by cosine, best first; ties go to the newer turn."""
    scored = [(_cosine(question_vector, vector), turn_id) for turn_id, text, vector in turns
              if not is_question(text)]
    return [turn_id for _, turn_id in sorted(scored, key=lambda pair: (-pair[0], -pair[1]))[:k]]


Q = (1.0, 0.0)
# (what the case is about, question vector, turns, k, the hint when the answer differs)
RANK_CASES = (
    ("three statements, one per direction", Q,
     [(1, "My advisor is Dr. Varga.", (1.0, 0.0)), (2, "I like the north gate.", (0.0, 1.0)),
      (3, "The AI club is fun.", (0.6, 0.8))], 3,
     "Put the most similar turn first: sort by similarity, highest first."),
    ("a long vector against a short one that points the same way as the question", Q,
     [(1, "I study data science and statistics.", (3.0, 3.0)), (2, "My advisor is Dr. Varga.", (1.0, 0.1))], 2,
     "Compare directions, not sizes: cosine divides the dot product by both vectors' lengths, so a long vector "
     "that points elsewhere does not win."),
    ("a question that repeats the words of the question asked now", Q,
     [(1, "Who is my advisor?", (1.0, 0.0)), (2, "My advisor is Dr. Varga.", (0.9, 0.3))], 1,
     "A question states nothing: skip turns whose text is_question(text), or the user's own question comes "
     "back as its own answer."),
    ("the same statement said twice", Q,
     [(3, "My advisor is Dr. Varga.", (0.8, 0.6)), (7, "My advisor is Dr. Varga.", (0.8, 0.6)),
      (5, "I like the north gate.", (0.0, 1.0))], 2,
     "Two turns equally similar: the newer one (the higher turn id) goes first, as it may carry the correction."),
    ("more turns than k", Q,
     [(i, f"Statement number {i}.", (1.0, i / 10)) for i in range(1, 7)], 3,
     "Return exactly k turn ids (or every statement, when there are fewer than k)."),
    ("fewer statements than k", Q, [(1, "My advisor is Dr. Varga.", (1.0, 0.0))], 4,
     "Return exactly k turn ids (or every statement, when there are fewer than k)."),
    ("a turn with no meaning at all (a zero vector)", Q,
     [(1, "ok", (0.0, 0.0)), (2, "My advisor is Dr. Varga.", (0.5, 0.5))], 2,
     "A zero vector has no direction: give it similarity 0 instead of dividing by zero."),
)


def generated_rank_cases(seed: int = 9, n: int = 40) -> list[tuple]:
    """Seeded cases: integer vectors in four dimensions, some turns questions, k from 1 to 6."""
    rng, cases = random.Random(seed), []
    for index in range(n):
        question = tuple(float(rng.randint(-3, 3)) for _ in range(4)) or (1.0, 0, 0, 0)
        if not any(question):
            question = (1.0, 0.0, 0.0, 0.0)
        turns, seen = [], set()
        for turn_id in range(rng.randint(2, 9)):
            vector = tuple(float(rng.randint(-3, 3)) for _ in range(4))
            size = max(map(abs, vector))
            direction = tuple(round(x / size, 9) for x in vector) if size else None
            if direction in seen:  # no two turns point the same way: every tie is an exact one, made on purpose
                continue
            seen.add(direction)
            text = rng.choice(("When is it open?", "Where do I go?")) if rng.random() < 0.25 else \
                f"Statement {turn_id} about my week."
            turns.append((turn_id, text, vector))
        cases.append((f"generated case {index}", question, turns, rng.randint(1, 6), None))
    return cases


def _check_rank(rank_turns) -> str:
    if not callable(rank_turns):
        raise Hint("rank_turns must be a function: def rank_turns(question_vector, turns, k): ...")
    cases = [*RANK_CASES, *generated_rank_cases()]
    for label, question, turns, k, hint in cases:
        expected = reference_rank(question, turns, k)
        try:
            got = rank_turns(question, list(turns), k)
        except ZeroDivisionError:
            raise Hint(f"For {label}, rank_turns divided by zero. A zero vector has no direction: give it "
                       "similarity 0 instead of dividing by zero.") from None
        got = list(got) if isinstance(got, (list, tuple)) else got
        if not isinstance(got, list) or any(not isinstance(item, int) for item in got):
            raise Hint(f"For {label}, rank_turns returned {got!r:.90}; return a list of turn ids (ints), best "
                       "first.")
        if len(got) != len(expected):
            raise Hint(f"For {label} (k={k}), you returned {len(got)} turn ids; expected {expected}. Return "
                       "exactly k turn ids (or every statement, when there are fewer than k).")
        if got != expected:
            raise Hint(f"For {label} (k={k}), you ranked {got}; expected {expected}. "
                       f"{hint or 'Score every statement by cosine, skip questions, best first, newer first on a tie.'}")
    return (f"{len(RANK_CASES)} worked and {len(cases) - len(RANK_CASES)} generated cases ranked right: cosine, "
            "not size; questions skipped; best first; the newer turn first on a tie; exactly k.")


RANK_STUB = '''def rank_turns(question_vector, turns, k):
    """The ids of the k past statements most like the question, best first.

    turns: (turn_id, text, vector) for each past user message."""
    return [turn_id for turn_id, text, vector in turns][:k]'''
RANK_SOLUTION = '''def rank_turns(question_vector, turns, k):
    def cosine(a, b):
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        return sum(x * y for x, y in zip(a, b)) / norm if norm else 0.0

    scored = [(cosine(question_vector, vector), turn_id) for turn_id, text, vector in turns
              if not is_question(text)]               # a question states nothing
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))  # most similar first; on a tie, the newer turn
    return [turn_id for _, turn_id in scored[:k]]'''

exercise_3 = Exercise(
    "09.3", "rank past turns by meaning", stub=RANK_STUB, solution_code=RANK_SOLUTION,
    checker=_check_rank, answers=("rank_turns",),
    context=lambda: {"math": math, "is_question": is_question},
    hints=("Score each past turn against the question, then sort: which turn should come first?",
           "Cosine is the dot product divided by both lengths; a zero vector gets 0. Skip is_question(text).",
           "Sort by (-similarity, -turn_id) and keep the first k ids."),
)


# ---------------------------------------------------------------- exercise 4: facts that may be outdated

def _fact(label: str, value: str, turn_id: int, recorded_at: datetime) -> ProfileFact:
    key, _, topic = label.partition("/")
    return ProfileFact(key, topic or key, value, turn_id, recorded_at.isoformat())


_ZONES = tuple(timezone(timedelta(hours=h)) for h in (-8, -5, 0, 1, 5.5, 9, 13))
_VALUES = (("name", "Priya Raman"), ("constraint/diet", "vegetarian"), ("advisor", "Dr. Okafor"),
           ("locker number", "4471"), ("preference/stop", "the south gate shuttle stop"), ("dorm", "Birch Hall"))


def stale_cases(seed: int = 9, n: int = 30) -> list[tuple[list[ProfileFact], datetime, timedelta]]:
    """(facts, now, stale_after): ages around the horizon, times written in other UTC offsets than now's."""
    rng, cases = random.Random(seed), []
    for _ in range(n):
        stale_after = timedelta(days=rng.choice([90, 90, 30, 7, 180]))
        now = datetime(2027, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.choice([0, 30]),
                       tzinfo=rng.choice(_ZONES))
        ages = [stale_after + timedelta(hours=rng.choice([-20, -3, 3, 5, 20])), stale_after * rng.choice([0.2, 2]),
                rng.choice([stale_after, timedelta(hours=2)])]
        rng.shuffle(ages)
        facts = [_fact(label, value, turn_id, (now - age).astimezone(rng.choice(_ZONES)))
                 for turn_id, ((label, value), age) in enumerate(zip(rng.sample(_VALUES, len(ages)), ages))]
        cases.append((facts, now, stale_after))
    return cases


def _stale(facts, now, stale_after) -> list[ProfileFact]:
    """The package's rule (``ProfileMemory.is_stale``): last stated longer than ``stale_after`` before now."""
    return [fact for fact in facts if fact.age(now) > stale_after]


def _age(fact: ProfileFact, now: datetime) -> str:
    age = fact.age(now)
    return f"{age.days} days {age.seconds // 3600} hours" if age.seconds else f"{age.days} days"


_WRONG_RULES = (  # (a plausible wrong rule on (age, stale_after), its hint): found when it explains every answer
    (lambda age, limit: age >= limit, "{label} is exactly {limit} days old: stale means longer than stale_after, "
                                      "so exactly stale_after is still fresh."),
    (lambda age, limit: age <= limit, "These are the facts still fresh: return the ones older than stale_after."),
    (lambda age, limit: age > timedelta(days=90), "Use stale_after ({limit} days here), not a fixed 90 days."),
    (lambda age, limit: age.days > limit.days, "{label} is {age} old, longer than {limit} days: the hours count. "
                                               "Compare whole timedeltas, not .days."),
)


def _stale_hint(answers: list, cases: list) -> str:
    """The hint for the learner's answers: the wrong rule that explains all of them, else the first wrong fact."""
    wrong = [(got, case) for got, case in zip(answers, cases) if got != _stale(*case)]
    got, (facts, now, stale_after) = wrong[0]
    want = _stale(facts, now, stale_after)
    fact = ([f for f in got if f not in want] + [f for f in want if f not in got])[0]
    shown = (f"now={now.isoformat()}, stale_after={stale_after.days} days, facts recorded at "
             f"{[f.recorded_at for f in facts]}: you returned {[f.label for f in got]}. ")
    fill = dict(label=fact.label, age=_age(fact, now), limit=stale_after.days)
    for test, hint in _WRONG_RULES:
        if all(got == [f for f in facts if test(f.age(now), limit)] for got, (facts, now, limit) in wrong):
            return shown + hint.format(**fill)
    if abs(fact.age(now) - stale_after) < timedelta(days=1):
        return shown + ("{label} is {age} old: {side} than {limit} days once its time and UTC offset count. Parse "
                        "recorded_at with datetime.fromisoformat (it keeps the offset) and subtract it from now; a "
                        "date alone, or a time without its offset, is not enough.").format(
                            side="longer" if fact in want else "no longer", **fill)
    if fact in got:
        return shown + "{label} is only {age} old: it is not stale. Age is now minus recorded_at.".format(**fill)
    return shown + ("{label} was last stated {age} before now, longer than stale_after: it is stale. Its age is "
                    "now - datetime.fromisoformat(fact.recorded_at).").format(**fill)


def _check_stale(stale_facts) -> str:
    if not callable(stale_facts):
        raise Hint("stale_facts must be a function: def stale_facts(facts, now, stale_after): ...")
    cases, answers = stale_cases(), []
    for facts, now, stale_after in cases:
        got = stale_facts(list(facts), now, stale_after)
        if not isinstance(got, (list, tuple)) or not all(isinstance(f, ProfileFact) for f in got):
            raise Hint(f"stale_facts returned {got!r:.90}; return a list of the facts themselves (ProfileFact), "
                       "not their labels or dates.")
        answers.append(list(got))
    wants = [_stale(*case) for case in cases]
    if answers != wants:
        if all(sorted(map(id, got)) == sorted(map(id, want)) for got, want in zip(answers, wants)):
            raise Hint("You found the right facts, in another order: keep the order of facts.")
        raise Hint(_stale_hint(answers, cases))
    profile = ProfileMemory(user_id="priya", extractor="rules")
    profile.update(0, "My name is Priya Raman. I'm vegetarian.")
    now = clock.now() + timedelta(days=100)  # the facts were stated just now: a hundred days on, both are stale
    mine = stale_facts(list(profile.facts.values()), now, profile.stale_after)
    marked = [line for line in profile.lines(now=now) if "possibly outdated" in line]
    if len(mine) != len(marked):
        raise Hint(f"A hundred days on, the profile marks {len(marked)} facts outdated and you return {len(mine)}.")
    stale = sum(map(len, wants))
    return (f"stale_facts agrees with the profile's rule on {len(cases)} generated profiles ({stale} stale facts, "
            f"ages within hours of the horizon, times in other UTC offsets). A hundred days on it finds the "
            f"{len(marked)} facts that profile.lines() marks 'possibly outdated'.")


STALE_STUB = '''def stale_facts(facts, now, stale_after):
    """The facts last stated longer than stale_after before now, in the order of facts.

    facts: ProfileFact objects, each with .recorded_at (an ISO 8601 text with its UTC offset);
    now: a datetime with its offset; stale_after: a timedelta."""
    return []  # marks nothing outdated yet'''
STALE_SOLUTION = '''def stale_facts(facts, now, stale_after):
    """The facts last stated longer than stale_after before now, in the order of facts."""
    return [fact for fact in facts
            if now - datetime.fromisoformat(fact.recorded_at) > stale_after]  # the offsets are part of each time'''

exercise_4 = Exercise(
    "09.4", "facts that may be outdated", stub=STALE_STUB, solution_code=STALE_SOLUTION,
    checker=_check_stale, answers=("stale_facts",),
    context=lambda: {"datetime": datetime, "timedelta": timedelta},
    hints=("A fact's age is now minus the time it was last stated. When is that too old?",
           "datetime.fromisoformat(fact.recorded_at) keeps the UTC offset, so subtracting it from now is exact.",
           "Keep a fact when its age > stale_after: a timedelta compared with a timedelta, hours included."),
)

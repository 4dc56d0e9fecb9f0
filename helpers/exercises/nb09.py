"""Exercises of notebook 09: the budget split by hand, a correction, ranking by meaning, and staleness.

The first check calls the learner's function on worked and generated token counts (no model, no server).
The second runs the learner's sentence through the whole memory on the offline stand-in (its embeddings are
the local MiniLM model, its answers documented rules), in a few generated conversations, whatever backend the
notebook uses. The fourth passes its own dates (generated from a seed) and never reads the clock for a
verdict: the same verdict on any backend and on any day.
"""
from __future__ import annotations

import math
import random
import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from helpers.llm.client import chat
from helpers.llm.config import load_settings
from helpers.exercises import Exercise, Hint
from helpers.memory.assembler import MemoryAssembler
from helpers.core import clock
from helpers.memory.profile import ProfileFact, ProfileMemory
from helpers.memory.recall import is_question
from helpers.memory.recall_index import RecallIndex
from helpers.chat.chat_session import SESSION_SYSTEM_PROMPT
from helpers.standin.server import make_offline_client

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

# ---------------------------------------------------------------- exercise 2: a correction, end to end

FIRST = "My advisor is Dr. Varga."
QUESTIONS = ("When does the AI club meet?", "Where can I print a poster?", "When is the library open?",
             "Where is the IT help desk?", "When is the career fair?", "Where is the writing centre?")
PROBE = "Who is my advisor?"
OLD_VALUE, NEW_VALUE = "Varga", "Okafor"
SEEDS = (0, 1, 2)
NEGATION = re.compile(r"\b(?:not|no longer|never|no more|n't|nobody|none)\b", re.IGNORECASE)  # a denial, not a value
WINDOW = 2  # the newest turns stay in the window; the correction has left it when the probe is asked


def _offline() -> dict:
    return {"client": make_offline_client(), "settings": load_settings("offline")}


def _plain_turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def conversation(seed: int, my_correction: str) -> tuple[list[str], int]:
    """A generated conversation: the advisor, some questions, ``my_correction``, more questions.

    Returns the turns and the id of the correction's turn.
    """
    rng = random.Random(seed)
    asked = rng.sample(QUESTIONS, len(QUESTIONS))
    before = 1 + seed % 3  # one, two or three questions before the correction
    after = rng.randint(WINDOW, len(asked) - before)
    return [FIRST, *asked[:before], my_correction, *asked[before:before + after]], before + 1


@lru_cache(maxsize=64)
def follow_correction(my_correction: str, seed: int = SEEDS[0]) -> dict:
    """Run a generated conversation with ``my_correction`` through the whole memory, offline.

    Returns the turns, the correction's turn id, the profile's current facts and history, its lines,
    the memory blocks sent with the probe and the stand-in's answer.
    """
    offline = _offline()
    profile = ProfileMemory(user_id="student", extractor="rules")
    memory = MemoryAssembler(summariser=False, recall=RecallIndex(**offline), profile=profile, **offline)
    said, at = conversation(seed, my_correction)
    turns = [(turn_id, _plain_turn(text)) for turn_id, text in enumerate(said)]
    for turn_id, messages in turns:
        memory.remember(turn_id, messages)
    assembly = memory.build(SESSION_SYSTEM_PROMPT, turns[-WINDOW:], PROBE, budget=2000)
    answer = chat(assembly.request, **offline).choices[0].message.content
    blocks = [m["content"] for m in assembly.messages[1:] if m["role"] == "system"]
    return {"said": said, "at": at, "facts": list(profile.facts.values()), "history": profile.history,
            "profile": profile.lines(), "blocks": blocks, "answer": answer}


def show_correction(my_correction: str) -> None:
    """Print what each part of the memory made of ``my_correction`` in the first generated conversation."""
    result = follow_correction(my_correction)
    at, last = result["at"], len(result["said"]) - 1
    asked = lambda a, b: f"turn {a} a campus question" if a == b else f"turns {a}-{b} campus questions"  # noqa: E731
    print(f"conversation: turn 0 {FIRST!r}, {asked(1, at - 1)}, turn {at} yours, {asked(at + 1, last)}; "
          f"then {PROBE!r}")
    print("profile:     ", "; ".join(line[2:] for line in result["profile"]) or "(empty)")
    print("history:     ", "; ".join(f"{f.label} = {f.value!r} (turn {f.turn_id})" for f in result["history"])
          or "(none)")
    print("context:")
    for block in result["blocks"]:
        print("  " + block.replace("\n", "\n  "))
    print("answer:      ", result["answer"])


def _judge_correction(my_correction: str, seed: int) -> dict:
    result = follow_correction(my_correction, seed)
    at = result["at"]
    from_it = [f for f in result["facts"] if f.turn_id == at]
    advisor = next((f for f in result["facts"] if f.key == "advisor"), None)
    if not from_it:
        if is_question(my_correction):
            raise Hint("That is a question, and a question states no fact: the profile ignores it. Tell the "
                       "assistant, as a statement, that your advisor is Dr. Okafor.")
        raise Hint("The profile found no statement about the student in that sentence. Its rule reads "
                   "'my <attribute> is <value>' (and a few fixed phrasings).")
    if advisor is None or advisor.turn_id != at:
        names = ", ".join(repr(f.label) for f in from_it)
        raise Hint(f"That became a new attribute ({names}), so the profile keeps both, and Dr. Varga is still "
                   "the advisor. A correction must name the same attribute as turn 0: 'my advisor ...'.")
    if advisor.value.lower() == FIRST.lower()[len("my advisor is "):].rstrip("."):
        raise Hint(f"That repeats the old value: the profile's advisor is still {advisor.value!r} (only its "
                   f"date moved to turn {at}). Give the new value, Dr. {NEW_VALUE}.")
    if NEW_VALUE.lower() not in advisor.value.lower():
        raise Hint(f"The profile's advisor is now {advisor.value!r}, a value of its own; the new advisor is "
                   f"Dr. {NEW_VALUE}: say 'my advisor is Dr. {NEW_VALUE}'.")
    if NEGATION.search(advisor.value):
        raise Hint(f"The profile stored {advisor.value!r} as your advisor: a sentence that says who is NOT "
                   "your advisor names no new one, and the assistant would read that denial as a fact. Say "
                   f"who your advisor is now: Dr. {NEW_VALUE}.")
    unmarked = [line for block in result["blocks"] for line in block.splitlines()
                if OLD_VALUE in line and "superseded" not in line]
    if unmarked:
        raise Hint(f"The context still quotes the old value without a note: {unmarked[0]!r}.")
    if NEW_VALUE not in result["answer"]:
        raise Hint(f"The answer to {PROBE!r} was {result['answer']!r}, not the new advisor.")
    return result


def _check_correction(my_correction) -> str:
    if not isinstance(my_correction, str) or not my_correction.strip():
        raise Hint("my_correction must be a sentence, as the student would type it.")
    results = [_judge_correction(my_correction, seed) for seed in SEEDS]
    value = next(f.value for f in results[0]["facts"] if f.key == "advisor")
    return (f"in {len(results)} generated conversations the profile's advisor is {value!r} with "
            f"Dr. {OLD_VALUE} as history, the context quotes Dr. {OLD_VALUE} only as superseded, and the "
            f"answer is: {results[0]['answer']}")


exercise_2 = Exercise(
    "09.2", "a correction the memory gets right",
    stub='my_correction = "I switched advisors."  # say that your advisor is now Dr. Okafor',
    solution_code='my_correction = "Actually, my advisor is now Dr. Okafor."',
    checker=_check_correction, answers=("my_correction",),
    hints=("Run show_correction(my_correction): what did the profile make of your sentence?",
           "Say it with the same attribute as turn 0, 'my advisor is ...', and the new name."),
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

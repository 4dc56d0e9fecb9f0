"""Exercises of notebook 09: the strictest recall threshold, and a correction the memory gets right.

Both checks run on the offline stand-in (its embeddings are the local MiniLM model, its answers
documented rules), whatever backend the notebook uses, and pass in no date or time: the same
verdict on any backend and on any day.
"""
from __future__ import annotations

import json
from functools import lru_cache

from helpers.client import chat
from helpers.config import load_settings
from helpers.embeddings import data_file
from helpers.exercises import Exercise, Hint
from helpers.facts.writer import FactMemory
from helpers.memory.assembler import MemoryAssembler
from helpers.memory.profile import ProfileMemory
from helpers.memory.recall_index import RecallIndex
from helpers.session import SESSION_SYSTEM_PROMPT
from helpers.standin.server import make_offline_client

WINDOW = 4  # the newest turns are in the window, so recall searches only older ones


def _offline() -> dict:
    return {"client": make_offline_client(), "settings": load_settings("offline")}


def _plain_turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


# ---------------------------------------------------------------- exercise 1: the strictest threshold

def _script() -> dict:
    return json.loads(data_file("long_conversation.json").read_text())


@lru_cache(maxsize=8)
def _script_index(question: str) -> RecallIndex:
    """The long script's turns, indexed once per probe (an index keeps its latest question's vector)."""
    index = RecallIndex(k=3, **_offline())
    for turn_id, text in enumerate(_script()["turns"]):
        index.add(turn_id, _plain_turn(text))
    return index


def recalled_with(min_score: float) -> dict[str, list[int]]:
    """For each probe of the long script, the turn ids recall brings back at ``min_score`` (local MiniLM)."""
    script, found = _script(), {}
    window = list(range(len(script["turns"]) - WINDOW, len(script["turns"])))
    for probe in script["probes"]:
        index = _script_index(probe["question"])
        index.min_score = min_score
        found[probe["question"]] = [r.turn_id for r in index.search(probe["question"], exclude=window)]
    return found


def finds_every_fact(min_score: float) -> bool:
    """True when every probe's fact turn is recalled at ``min_score``."""
    found = recalled_with(min_score)
    return all(p["fact_turn"] in found[p["question"]] for p in _script()["probes"])


def _check_threshold(my_min_score) -> str:
    if isinstance(my_min_score, bool) or not isinstance(my_min_score, (int, float)) or \
            not 0 <= my_min_score <= 1:
        raise Hint(f"my_min_score must be a number between 0 and 1 (got {my_min_score!r}).")
    if round(my_min_score, 2) != my_min_score:
        raise Hint(f"Give the threshold with two decimals, e.g. 0.35 (got {my_min_score!r}).")
    if not finds_every_fact(my_min_score):
        found = recalled_with(my_min_score)
        lost = next(p for p in _script()["probes"] if p["fact_turn"] not in found[p["question"]])
        raise Hint(f"At {my_min_score:.2f}, {lost['question']!r} no longer gets turn {lost['fact_turn']}, "
                   "the turn that answers it. Lower the threshold.")
    higher = round(my_min_score + 0.01, 2)
    if finds_every_fact(higher):
        raise Hint(f"{my_min_score:.2f} finds every fact, and so does {higher:.2f}. A higher threshold lets "
                   "fewer unrelated turns into the prompt; raise it as far as it goes.")
    return (f"{my_min_score:.2f} is the strictest threshold that still recalls every probe's fact turn; "
            f"at {higher:.2f} one of them is lost.")


exercise_1 = Exercise(
    "09.1", "the strictest threshold",
    stub="my_min_score = 0.90  # the highest threshold (two decimals) that still recalls every fact",
    solution_code=("# a probe keeps its fact turn while min_score <= that turn's similarity to the probe;\n"
                   "# the strictest threshold is the lowest of those similarities, rounded down\n"
                   "my_min_score = max(s / 100 for s in range(0, 101) if finds_every_fact(s / 100))"),
    checker=_check_threshold, answers=("my_min_score",),
    hints=("Run recalled_with(my_min_score) for a few values: a turn is recalled only when its similarity to "
           "the question is at least min_score.",
           "The scores printed in section 2 show each fact turn's similarity. The weakest fact decides: "
           "finds_every_fact(s) tells you for any s."),
    context=lambda: {"finds_every_fact": finds_every_fact},
)

# ---------------------------------------------------------------- exercise 2: a correction, end to end

BEFORE = ("My advisor is Dr. Varga.", "When does the AI club meet?", "Where can I print a poster?")
AFTER = ("When is the library open?", "Where is the IT help desk?")
PROBE = "Who is my advisor?"
NEW_VALUE = "Okafor"


def follow_correction(my_correction: str) -> dict:
    """Run the conversation with ``my_correction`` as turn 3 through the whole memory, offline.

    Returns the fact store's decisions for turn 3, the profile's lines, the memory blocks sent with
    the probe and the stand-in's answer.
    """
    offline = _offline()
    facts = FactMemory.open(":memory:")
    profile = ProfileMemory(facts=facts, user_id="student", extractor="rules")
    memory = MemoryAssembler(summariser=False, recall=RecallIndex(**offline), profile=profile, **offline)
    said = list(BEFORE) + [my_correction] + list(AFTER)
    turns = [(turn_id, _plain_turn(text)) for turn_id, text in enumerate(said)]
    for turn_id, messages in turns:
        memory.remember(turn_id, messages)
    decisions = [row for row in facts.audit("student") if row.source_version == len(BEFORE)]  # audit rows
    assembly = memory.build(SESSION_SYSTEM_PROMPT, turns[-len(AFTER):], PROBE, budget=2000)
    answer = chat(assembly.request, **offline).choices[0].message.content
    blocks = [m["content"] for m in assembly.messages[1:] if m["role"] == "system"]
    result = {"decisions": decisions, "profile": memory.profile.lines(), "blocks": blocks, "answer": answer}
    facts.close()
    return result


def show_correction(my_correction: str) -> None:
    """Print what each part of the memory made of ``my_correction``."""
    result = follow_correction(my_correction)
    print("fact store:", "; ".join(f"{d.outcome} {d.attribute} = {d.value!r}" for d in result["decisions"])
          or "nothing written for turn 3")
    print("profile:   ", "; ".join(line[2:] for line in result["profile"]) or "(empty)")
    print("context:")
    for block in result["blocks"]:
        print("  " + block.replace("\n", "\n  "))
    print("answer:    ", result["answer"])


def _check_correction(my_correction) -> str:
    if not isinstance(my_correction, str) or not my_correction.strip():
        raise Hint("my_correction must be a sentence, as the student would type it.")
    result = follow_correction(my_correction)
    decisions = result["decisions"]
    if not decisions:
        raise Hint("The profile found no statement about the student in that sentence. Its rule reads "
                   "'my <attribute> is <value>' (and a few fixed phrasings), and never a question.")
    about = [d for d in decisions if d.attribute == "advisor"]
    if not about:
        names = ", ".join(repr(d.attribute) for d in decisions)
        raise Hint(f"That became a new attribute ({names}), so the fact store keeps both advisors as "
                   "current. A correction must name the same attribute as turn 0: 'my advisor ...'.")
    decision = about[-1]
    if decision.outcome != "correction":
        raise Hint(f"The fact store decided {decision.outcome!r} ({decision.reason}). Give the new value, "
                   f"Dr. {NEW_VALUE}, for the same attribute.")
    if NEW_VALUE.lower() not in decision.value.lower():
        raise Hint(f"The store recorded a correction to {decision.value!r}; the new advisor is "
                   f"Dr. {NEW_VALUE}.")
    unmarked = [line for block in result["blocks"] for line in block.splitlines()
                if "Varga" in line and "superseded" not in line]
    if unmarked:
        raise Hint(f"The context still quotes the old value without a note: {unmarked[0]!r}.")
    if NEW_VALUE not in result["answer"]:
        raise Hint(f"The answer to {PROBE!r} was {result['answer']!r}, not the new advisor.")
    return (f"the fact store recorded a correction ({decision.reason}); the profile names the superseded "
            f"value, the context quotes Dr. Varga only as superseded, and the answer is: {result['answer']}")


exercise_2 = Exercise(
    "09.2", "a correction the memory gets right",
    stub='my_correction = "I switched advisors."  # turn 3: say that your advisor is now Dr. Okafor',
    solution_code='my_correction = "Actually, my advisor is now Dr. Okafor."',
    checker=_check_correction, answers=("my_correction",),
    hints=("Run show_correction(my_correction): what did the fact store write for turn 3?",
           "Say it with the same attribute as turn 0, 'my advisor is ...', and the new name."),
)

"""Exercises of notebook 13: the rule that decides whether feedback is an instruction, and the forget path
across the layers.

Exercise 1 runs the learner's ``is_instruction(sentence)`` on labelled sentences of every kind the rule must
tell apart (standing feedback on how to answer, questions, statements about the user or the world, one-off
requests, requests to forget); the first kind it gets wrong chooses the hint. Exercise 2 builds a small
memory with every layer (turns, a summary, a recall index, a profile and a fact store), calls the learner's
``my_forget(topic, memory)`` and searches every layer for what was said about the topic, checks that the rest
is still there, and reads the audit. Nothing depends on a model, the backend or the day.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from helpers.exercises import Exercise, Hint
from helpers.facts.fact_store import FORGOTTEN, FORGOTTEN_OUTCOME
from helpers.facts.schema import AttributeSpec, Candidate
from helpers.facts.writer import FactMemory

# ---------------------------------------------------------------- exercise 1: is this feedback an instruction?

# (sentence, is it an instruction, the kind it stands for: its hint when the rule gets it wrong)
KINDS = {
    "plain": "Standing feedback on how to answer is an instruction: it names an aspect of the answers (layout, "
             "length, language, tone, a detail) and asks for it, with or without a cue such as 'from now on' "
             "('Keep your answers short.' has none).",
    "polite": "Feedback needs no 'from now on': 'No bullet points, please.' is standing feedback, said once.",
    "request": "A request phrased as a question ('Could you answer in French from now on?') is still "
               "feedback: a standing cue makes it one.",
    "question": "A question asked once is not feedback, even when it names a list or a length ('Can you list "
                "the clubs?'): look for the question mark.",
    "one-off": "A format for this one answer ('Answer in one sentence: where is the gym?') is part of a "
               "question, not a standing instruction.",
    "world": "A length or a list that is not about the answers ('I like short walks', 'I keep a list of "
             "books') is a statement about the world.",
    "about me": "A statement about the user ('My sister's name is Maya') is a fact for the profile, not an "
                "instruction on how to answer.",
    "forget": "'Forget ...' asks to delete something; it says nothing about how to answer.",
}
SENTENCES = (
    ("Please use bullet points from now on.", True, "plain"), ("Answer in Spanish from now on.", True, "plain"),
    ("Always give the building with a room number.", True, "plain"), ("Keep your answers short.", True, "plain"),
    ("Never use emojis in your replies.", True, "plain"), ("Be more formal, please.", True, "plain"),
    ("No bullet points, please.", True, "polite"), ("Shorter answers, please.", True, "polite"),
    ("Could you answer in French from now on?", True, "request"),
    ("Can you always include the time from now on?", True, "request"),
    ("Can you list the clubs that meet on Mondays?", False, "question"),
    ("Do you use bullet points?", False, "question"), ("Is the answer short?", False, "question"),
    ("Answer in one sentence: where is the gym?", False, "one-off"),
    ("In two sentences, what does the AI club do?", False, "one-off"),
    ("I like short walks.", False, "world"), ("I keep a long list of books to read.", False, "world"),
    ("The lecture was in Spanish.", False, "world"),
    ("My sister's name is Maya.", False, "about me"), ("My locker number is 4471.", False, "about me"),
    ("I always walk to class.", False, "about me"),
    ("Forget what I told you about my sister.", False, "forget"),
    ("Please forget my locker number.", False, "forget"),
)


def _check_rule(is_instruction: Any) -> str:
    if not callable(is_instruction):
        raise Hint("is_instruction should be a function of one sentence that returns True or False.")
    results = [(text, want, kind, is_instruction(text)) for text, want, kind in SENTENCES]
    odd = [(text, got) for text, _, _, got in results if not isinstance(got, bool)]
    if odd:
        raise Hint(f"is_instruction({odd[0][0]!r}) returned {odd[0][1]!r}; return True or False.")
    said_yes = [r for r in results if r[3]]
    if len(said_yes) == len(results):
        raise Hint("Every sentence is an instruction to your rule. " + KINDS["plain"])
    if not said_yes:
        raise Hint("No sentence is an instruction to your rule. " + KINDS["plain"])
    for kind in KINDS:  # the first kind it gets wrong, in the order above
        wrong = [(text, want) for text, want, k, got in results if k == kind and got != want]
        if wrong:
            text, want = wrong[0]
            verdict = "is" if want else "is not"
            raise Hint(f"{text!r} {verdict} an instruction. {KINDS[kind]}")
    kinds = len({k for _, _, k in SENTENCES})
    return (f"all {len(SENTENCES)} sentences of {kinds} kinds told apart: "
            f"{sum(w for _, w, _ in SENTENCES)} instructions, the rest questions, statements and requests to forget")


SOLUTION_1 = '''import re

ASPECT = r"bullet|list|emoji|short|brief|long|sentence|concise|formal|in (spanish|french|english|german)|always .*\\b(give|include|mention)"
ABOUT_ANSWERS = r"\\b(answer|answers|reply|replies|respond|your|use|keep|be|bullet|emoji|shorter|include|give|mention)\\b"
STANDING = r"from now on|always|never|please|don't|^no\\b|in future"


def is_instruction(sentence):
    """Standing feedback on how to answer: names an aspect of the answers, is about them, and is not asked once."""
    text = " ".join(sentence.lower().split())
    if text.startswith(("forget", "please forget")):
        return False
    if "?" in text and not (re.match(r"(can|could|would|will) you", text) and re.search(STANDING, text)):
        return False
    if ":" in text or not re.search(ASPECT, text):
        return False
    return bool(re.search(ABOUT_ANSWERS, text) and (re.search(STANDING, text) or
                                                  re.match(r"(answer|reply|use|keep|be|give)\\b", text)))'''

exercise_1 = Exercise(
    "13.1", "the rule that decides whether feedback is an instruction",
    stub='def is_instruction(sentence):\n    """True when the sentence is standing feedback on how to answer."""\n'
         '    return "please" in sentence.lower()',
    solution_code=SOLUTION_1, checker=_check_rule, answers=("is_instruction",),
    hints=("Three conditions: the sentence names an aspect of an answer (layout, length, language, tone, a "
           "detail); it is about the answers, not the world; and it is not a question asked once.",
           "A question mark rules a sentence out, unless it is a request with a standing cue ('could you ... "
           "from now on?'). A colon followed by a question is a one-off format.",
           "Compare with helpers.facts.instruction_facts.instruction_aspect, the rule the assistant uses."),
)

# ---------------------------------------------------------------- exercise 2: the forget path across the layers

SECRET, NAME, VALUE = "sister", "Maya", "June 3"
KEPT = "4471"


@dataclass
class SmallMemory:
    """Every layer of one user's memory, small: turns (the user's words, by turn), a summary, a recall index
    (turn -> quoted text), profile lines and a fact store with its audit."""

    user_id: str = "ada"
    turns: dict[int, str] = field(default_factory=dict)
    summary: str = ""
    recall: dict[int, str] = field(default_factory=dict)
    profile: list[str] = field(default_factory=list)
    facts: FactMemory = field(default_factory=lambda: FactMemory.open(":memory:"))


def small_memory() -> SmallMemory:
    """A memory that knows about the user's sister (Maya, birthday June 3) and their locker (4471)."""
    memory = SmallMemory()
    memory.turns = {0: "My sister Maya's birthday is June 3.", 1: "My locker number is 4471.",
                    2: "Where is the chess club?", 3: "Maya is visiting on Friday. Where can we eat?"}
    memory.summary = ("[turn 0] The user's sister Maya has her birthday on June 3.\n"
                      "[turn 1] The user's locker number is 4471.\n[turn 2] The user asked where the chess club is.")
    memory.recall = {i: f'[turn {i}] user: "{text}"' for i, text in memory.turns.items()}
    memory.profile = ["- sister's name: Maya", "- sister's birthday: June 3", "- locker number: 4471"]
    for version, (attribute, value, said) in enumerate((
            ("sister's name", NAME, memory.turns[0]), ("sister's birthday", VALUE, memory.turns[0]),
            ("locker number", KEPT, memory.turns[1]))):
        memory.facts.attributes[attribute] = AttributeSpec(attribute)
        memory.facts.write(Candidate("ada", "user", attribute, value, "chat:ada", "user", version, said))
    return memory


def _layers(memory: SmallMemory) -> dict[str, str]:
    facts = memory.facts.store.read_facts(memory.user_id, ("active", "superseded", "conflict", "ineligible"))
    audit = memory.facts.audit(memory.user_id)
    return {"turns": " | ".join(memory.turns.values()), "summary": memory.summary,
            "recall index": " | ".join(memory.recall.values()), "profile": " | ".join(memory.profile),
            "facts": " | ".join(f"{f.attribute} {f.value} {' '.join(p.evidence for p in f.provenance)}" for f in facts),
            "audit": " | ".join(f"{e.attribute} {e.value} {e.reason}" for e in audit)}


def _check_forget(my_forget: Any) -> str:
    if not callable(my_forget):
        raise Hint("my_forget should be a function of (topic, memory).")
    memory = small_memory()
    before = len(memory.facts.audit(memory.user_id))
    my_forget("my sister", memory)
    layers = _layers(memory)
    for layer, text in layers.items():
        for word in (NAME, VALUE, SECRET):
            if word.lower() in text.lower():
                extra = {"audit": " Deleting a fact is not enough: the audit rows that quoted it must stop quoting "
                                  "it (facts.store.forget does both, and adds a 'forgotten' row).",
                         "turns": " The stored turn text is a layer too: scrub each turn.",
                         "summary": " A summary that quotes it must be re-summarised or marked: scrub its lines.",
                         "recall index": " Recall keeps its own copy of every turn: scrub memory.recall as well.",
                         "profile": " The profile lines are shown to the model: scrub them too.",
                         "facts": " Find the facts with fact_matches and delete them with facts.store.forget."}
                raise Hint(f"{word!r} is still in the {layer}.{extra[layer]}")
    if KEPT not in layers["facts"] or KEPT not in layers["turns"] or KEPT not in layers["summary"]:
        gone = [layer for layer in ("facts", "turns", "summary") if KEPT not in layers[layer]]
        raise Hint(f"The locker number {KEPT} is gone from the {gone[0]}: forget only what is about the topic, "
                   "sentence by sentence, not whole layers.")
    audit = memory.facts.audit(memory.user_id)
    deleted = [e for e in audit if e.outcome == FORGOTTEN_OUTCOME]
    if len(audit) < before or not deleted:
        raise Hint("The audit must keep that a decision was made: delete the facts with facts.store.forget, which "
                   f"adds one '{FORGOTTEN_OUTCOME}' row per fact, instead of deleting audit rows.")
    return (f"'my sister' is in no layer (turns, summary, recall index, profile, facts, audit), the locker number "
            f"stays, and the audit records {len(deleted)} deletion(s) without their values")


SOLUTION_2 = '''def my_forget(topic, memory):
    """Forget ``topic`` in every layer of ``memory``."""
    found = Topic.of(topic)
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    texts = [*memory.turns.values(), memory.summary, *memory.recall.values(), *memory.profile]
    sentences = gather(found, texts, stored)                    # what is said about it, and the names it gives
    doomed = [f.id for f in stored if fact_matches(found, f, sentences)]
    memory.facts.store.forget(memory.user_id, doomed, source_id="chat:" + memory.user_id,
                              reason="deleted at the user's request", at="2026-11-30T10:00:00-08:00",
                              texts=sentences)                  # deleted, and the audit stops quoting them
    memory.turns = {i: found.scrub(text) for i, text in memory.turns.items()}
    memory.summary = "\\n".join(found.scrub(line) for line in memory.summary.split("\\n"))
    memory.recall = {i: found.scrub(text) for i, text in memory.recall.items()}
    memory.profile = [found.scrub(line) for line in memory.profile]'''


def _context() -> dict[str, Any]:
    from helpers.memory.forget import ALL_STATUSES, Topic, fact_matches, gather
    return {"Topic": Topic, "gather": gather, "fact_matches": fact_matches, "ALL_STATUSES": ALL_STATUSES,
            "small_memory": small_memory, "FORGOTTEN": FORGOTTEN}


exercise_2 = Exercise(
    "13.2", "the forget path across the layers",
    stub='def my_forget(topic, memory):\n    """Forget ``topic`` in every layer of ``memory``."""\n'
         '    found = Topic.of(topic)\n    memory.turns = {i: found.scrub(text) for i, text in memory.turns.items()}',
    solution_code=SOLUTION_2, checker=_check_forget, answers=("my_forget",), context=_context,
    hints=("Every layer keeps its own copy: the turns, the summary, the recall index, the profile lines and the "
           "fact store. Scrub each of them with the same Topic.",
           "Grow the topic first with gather(found, texts, stored_facts): it adds the names and values the "
           "forgotten sentences give, so 'Maya is visiting' goes too.",
           "Delete the facts with memory.facts.store.forget(user_id, ids, source_id=..., reason=..., at=..., "
           "texts=sentences): the audit keeps a 'forgotten' row and stops quoting the value."),
)

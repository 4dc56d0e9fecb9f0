"""Notebook 13's exercise checks: the instruction rule and the forget path across the layers, each judged by
behaviour on labelled sentences or on a small memory with every layer; every plausible wrong answer gets its
own hint, every independently written right answer passes."""
import re

import pytest
from exercise_support import quiet_check, run

from helpers.exercises.nb13 import exercise_1, exercise_2
from helpers.facts.instruction_facts import instruction_aspect

# ---------------------------------------------------------------- exercise 1: is this feedback an instruction?

ASPECT = r"bullet|list|emoji|short|brief|long|sentence|concise|formal|spanish|french|always .*(give|include)"


def _keywords(s):  # any aspect word is an instruction
    return bool(re.search(ASPECT, s.lower()))


def _no_question_mark(s):  # any aspect word, unless it is a question
    return _keywords(s) and "?" not in s


def _needs_from_now_on(s):  # only explicit standing cues
    return bool(re.search(r"from now on|always|never", s.lower())) and "?" not in s and _keywords(s)


def _imperative_even_with_a_question(s):  # opens like an instruction: a one-off format slips through
    text = s.lower()
    return bool(re.search(ASPECT, text)) and (bool(re.match(r"(answer|keep|use|be|no|never|always|please|could|can "
                                                             r"you always|shorter|in two)", text)))


def _everything(s):
    return True


WRONG_RULES = {  # name: (the rule, the hint it must get)
    "the stub: 'please'": (None, "'Answer in Spanish from now on.' is an instruction"),
    "any aspect word": (_keywords, "A question asked once is not feedback"),
    "aspect words, no question mark": (_no_question_mark, "still feedback: a standing cue makes it one"),
    "only 'from now on', 'always', 'never'": (_needs_from_now_on, "with or without a cue such as 'from now on'"),
    "an instruction's opening, questions too": (_imperative_even_with_a_question, "is part of a question"),
    "everything": (_everything, "Every sentence is an instruction to your rule"),
    "not a boolean": (lambda s: "yes", "return True or False"),
}
RIGHT_RULES = {
    "the package's rule": lambda s: instruction_aspect(s) is not None,
}


@pytest.mark.parametrize("name", sorted(WRONG_RULES))
def test_wrong_rules_get_their_specific_hint(name):
    rule, hint = WRONG_RULES[name]
    passed, said = run(exercise_1, exercise_1.stub) if rule is None else quiet_check(exercise_1, rule)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_RULES))
def test_right_rules_pass(name):
    passed, said = quiet_check(exercise_1, RIGHT_RULES[name])
    assert passed and "23 sentences" in said, said


def test_the_worked_solution_passes_and_the_world_statements_are_told_apart():
    passed, said = run(exercise_1, exercise_1.solution_code)
    assert passed, said
    no_world_check = lambda s: _no_question_mark(s) or bool(re.match(r"(could|can) you .*from now on", s.lower()))
    passed, said = quiet_check(exercise_1, lambda s: no_world_check(s) and not s.lower().startswith(("forget",
                                                                                                     "please forget")))
    assert not passed and ("about the answers" in said or "is not an instruction" in said), said

# ---------------------------------------------------------------- exercise 2: the forget path across the layers

SCRUB_TURNS_ONLY = exercise_2.stub
NO_NAMES = '''def my_forget(topic, memory):
    found = Topic.of(topic)
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    doomed = [f.id for f in stored if fact_matches(found, f)]
    memory.facts.store.forget(memory.user_id, doomed, source_id="chat:ada", reason="asked", at="t")
    memory.turns = {i: found.scrub(t) for i, t in memory.turns.items()}
    memory.summary = found.scrub(memory.summary)
    memory.recall = {i: found.scrub(t) for i, t in memory.recall.items()}
    memory.profile = [found.scrub(line) for line in memory.profile]'''
TEXT_ONLY = '''def my_forget(topic, memory):
    found = Topic.of(topic)
    gather(found, [*memory.turns.values(), memory.summary, *memory.recall.values(), *memory.profile])
    memory.turns = {i: found.scrub(t) for i, t in memory.turns.items()}
    memory.summary = found.scrub(memory.summary)
    memory.recall = {i: found.scrub(t) for i, t in memory.recall.items()}
    memory.profile = [found.scrub(line) for line in memory.profile]'''
FORGET_THE_USER = '''def my_forget(topic, memory):
    found = Topic.of(topic)
    gather(found, [*memory.turns.values(), memory.summary, *memory.recall.values(), *memory.profile])
    memory.facts.store.forget_user(memory.user_id)
    memory.turns = {i: found.scrub(t) for i, t in memory.turns.items()}
    memory.summary = found.scrub(memory.summary)
    memory.recall = {i: found.scrub(t) for i, t in memory.recall.items()}
    memory.profile = [found.scrub(line) for line in memory.profile]'''
NO_RECALL = SOLUTION_NO_RECALL = '''def my_forget(topic, memory):
    found = Topic.of(topic)
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    sentences = gather(found, [*memory.turns.values(), memory.summary, *memory.profile], stored)
    doomed = [f.id for f in stored if fact_matches(found, f, sentences)]
    memory.facts.store.forget(memory.user_id, doomed, source_id="chat:ada", reason="asked", at="t", texts=sentences)
    memory.turns = {i: found.scrub(t) for i, t in memory.turns.items()}
    memory.summary = found.scrub(memory.summary)
    memory.profile = [found.scrub(line) for line in memory.profile]'''
WIPE_LAYERS = '''def my_forget(topic, memory):
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    found = Topic.of(topic)
    sentences = gather(found, [*memory.turns.values()], stored)
    doomed = [f.id for f in stored if fact_matches(found, f, sentences)]
    memory.facts.store.forget(memory.user_id, doomed, source_id="chat:ada", reason="asked", at="t", texts=sentences)
    memory.turns, memory.summary, memory.recall, memory.profile = {}, "", {}, []'''
AUDIT_KEPT_QUOTING = '''def my_forget(topic, memory):
    found = Topic.of(topic)
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    sentences = gather(found, [*memory.turns.values(), memory.summary, *memory.recall.values(), *memory.profile], stored)
    doomed = [f.id for f in stored if fact_matches(found, f, sentences)]
    memory.facts.store.forget(memory.user_id, doomed, source_id="chat:ada", reason="asked", at="t", texts=sentences,
                              hide_attribute=False)
    memory.turns = {i: found.scrub(t) for i, t in memory.turns.items()}
    memory.summary = found.scrub(memory.summary)
    memory.recall = {i: found.scrub(t) for i, t in memory.recall.items()}
    memory.profile = [found.scrub(line) for line in memory.profile]'''

WRONG_FORGETS = {
    "the stub: turns only, no names": (SCRUB_TURNS_ONLY, "'Maya' is still in the turns"),
    "no names learnt": (NO_NAMES, "'Maya' is still in the turns"),
    "text layers only": (TEXT_ONLY, "is still in the facts"),
    "the whole user deleted": (FORGET_THE_USER, "The locker number 4471 is gone from the facts"),
    "recall index left": (NO_RECALL, "still in the recall index"),
    "layers wiped": (WIPE_LAYERS, "gone from the turns"),
    "attribute names kept in the audit": (AUDIT_KEPT_QUOTING, "still in the audit"),
}

INDEPENDENT = '''import re


def my_forget(topic, memory):
    """My own: a sentence goes when it names the topic or a value of a fact about it; facts deleted, audited."""
    words = [w for w in re.findall(r"\\w+", topic.lower()) if w not in ("my", "the", "about")]
    stored = memory.facts.store.read_facts(memory.user_id, ALL_STATUSES)
    about = [f for f in stored if any(w in f.attribute.lower() for w in words)]
    values = [f.value for f in about]
    pattern = re.compile("|".join(re.escape(x) for x in [*words, *values]), re.I)
    def clean(text):
        return " ".join("[forgotten]" if pattern.search(s) else s for s in re.split(r"(?<=[.!?])\\s+", text))
    said = [s for t in memory.turns.values() for s in re.split(r"(?<=[.!?])\\s+", t) if pattern.search(s)]
    memory.facts.store.forget(memory.user_id, [f.id for f in about], source_id="chat:ada", reason="user asked",
                              at="2026-11-30", texts=said)
    memory.turns = {i: clean(t) for i, t in memory.turns.items()}
    memory.summary = "\\n".join(clean(line) for line in memory.summary.split("\\n"))
    memory.recall = {i: clean(t) for i, t in memory.recall.items()}
    memory.profile = [clean(line) for line in memory.profile]'''


@pytest.mark.parametrize("name", sorted(WRONG_FORGETS))
def test_wrong_forgets_get_their_specific_hint(name):
    code, hint = WRONG_FORGETS[name]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("code", [exercise_2.solution_code, INDEPENDENT], ids=["solution", "independent"])
def test_right_forgets_pass(code):
    passed, said = run(exercise_2, code)
    assert passed and "in no layer" in said, said

"""Exercises of notebook 10, about one campus student: a normaliser for room numbers, merging a multi-valued
attribute, a new rule in ``decide``, and a question answered from the audit log.

Every check writes to a throwaway in-memory fact store with fixed versions, or calls the learner's code on
hand-made and generated inputs (no model, no clock): the same answer is right on any backend and on any day.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Callable

from helpers.exercises import Exercise, Hint
from helpers.facts.fact_store import ACTIVE, CONFLICT, INELIGIBLE, SUPERSEDED, Provenance, StoredFact
from helpers.facts.writer import (CORRECTION, INSERT, NOOP, REJECTED, AttributeSpec, Candidate,
                                  FactMemory, Plan, check_candidate, decide, last_version, normalise_text)

STUDENT = "sam"


def _times() -> dict[str, str]:
    """'mornings', 'in the morning', 'morning classes' ... -> 'morning' (the same for afternoon and evening)."""
    table = {}
    for time in ("morning", "afternoon", "evening"):
        for form in (time, time + "s"):
            for lead in ("", "the ", "in the "):
                table[lead + form] = time
            table[form + " classes"] = time
    return table


# The student's attributes, as the checks write them (notebook 10 defines the same ones).
ATTRIBUTES: dict[str, AttributeSpec] = {spec.name: spec for spec in (
    AttributeSpec("advisor", words={"doctor": "dr", "professor": "prof"}, description="the student's advisor"),
    AttributeSpec("room", description="the student's room in a residence hall"),
    AttributeSpec("class_time", allowed=frozenset({"morning", "afternoon", "evening"}), phrases=_times(),
                  description="when the student prefers classes"),
    AttributeSpec("preferred_contact", allowed=frozenset({"email", "sms", "phone"}),
                  phrases={"mail": "email", "text": "sms", "texts": "sms", "text message": "sms", "call": "phone",
                           "phone call": "phone"}, description="how the student wants to be contacted"),
    AttributeSpec("course", multi_valued=True, description="a course the student takes (many allowed)"),
    AttributeSpec("meal_plan", description="the student's meal plan"),
    AttributeSpec("locker", description="the student's locker number"),
)}


def _outcomes(attributes: dict[str, AttributeSpec], attribute: str, values: list[str]) -> list[str]:
    """Write ``values`` as the student's statements, versions 1, 2, ...; return the outcomes."""
    with FactMemory.open(":memory:", attributes=attributes) as memory:
        return [memory.write(Candidate(STUDENT, "user", attribute, value, f"chat:{STUDENT}", "user", version)).outcome
                for version, value in enumerate(values, start=1)]

# ---------------------------------------------------------------- exercise 1: a normaliser for rooms


@dataclass(frozen=True)
class NormalisedBy(AttributeSpec):
    """An attribute whose identity is computed by a function of its own (the learner's normaliser)."""

    function: Callable[[str], str] = normalise_text

    def normalise(self, value: str) -> str:
        return self.function(value)


SHOWN = ("{L}-{n}", "{l}{n}", "Room {L}-{n}", "room {l} {n}", "Rm {L}{n}", "rm. {L} {n}")
UNSEEN = ("ROOM {L}{n}!", "{L} {n}.", "Room #{L}-{n}", "{l}.{n}", "Rm {L}\u2013{n}", "room  {L} - {n}?",
          "rm {l}-{n}", "Room {l}{n}")
ROOMS = (("B", "214"), ("B", "241"), ("C", "214"), ("B", "21"), ("A", "105"), ("D", "214"), ("D", "2140"))


def room_spellings(seed: int = 10, n: int = 6) -> list[tuple[str, str]]:
    """(what a student typed, the room meant): every room in each shown form, then ``n`` seeded unseen ones each."""
    rng, typed = random.Random(seed), []
    for letter, number in ROOMS:
        forms = list(SHOWN) + rng.sample(UNSEEN, n)
        typed += [(form.format(L=letter, l=letter.lower(), n=number), letter + number) for form in forms]
    return typed


def _why_apart(a: str, b: str) -> str:
    """What still tells two identities of one room apart."""
    if a.casefold() == b.casefold():
        return "They differ only in case: fold it."
    if a.replace(" ", "") == b.replace(" ", ""):
        return "They differ only in spaces: drop the spaces between the letter and the number."
    core = lambda text: re.sub(r"[^a-z0-9]", "", text.casefold().replace("room", "").replace("rm", ""))  # noqa: E731
    if core(a) == core(b) and any(word in (a + b).casefold() for word in ("room", "rm")):
        return "One still holds the word 'room' or 'rm': drop it, so only the letter and the number are left."
    if core(a) == core(b):
        return "One still holds punctuation: keep only the letter and the digits."
    return "Keep only what names the room: the building letter and the number."


def _check_rooms(normalise_room: Any) -> str:
    if not callable(normalise_room):
        raise Hint("normalise_room should be a function: def normalise_room(value): ... return an identity.")
    seen: dict[str, tuple[str, str]] = {}  # room -> (a spelling, its identity)
    owner: dict[str, tuple[str, str]] = {}  # identity -> (room, a spelling)
    cases = room_spellings()
    for text, room in cases:
        try:
            got = normalise_room(text)
        except Exception as error:
            raise Hint(f"normalise_room({text!r}) raised {type(error).__name__}: {error}. Every spelling in the "
                       "prompt is a room: return its identity, a string.") from None
        if not isinstance(got, str) or not got.strip():
            raise Hint(f"normalise_room({text!r}) returned {got!r}; return a non-empty string, the room's "
                       "identity.")
        first, identity = seen.setdefault(room, (text, got))
        if identity != got:
            raise Hint(f"{first!r} -> {identity!r} but {text!r} -> {got!r}: one room, two identities. "
                       + _why_apart(identity, got))
        other, spelled = owner.setdefault(got, (room, text))
        if other != room:
            raise Hint(f"{spelled!r} and {text!r} are different rooms, yet both -> {got!r}: keep the building "
                       "letter and the whole number.")
    spec = NormalisedBy("room", function=normalise_room)
    outcomes = _outcomes({**ATTRIBUTES, "room": spec}, "room", ["Room B-214", "b214", "C-105", "rm c105"])
    if outcomes != ["insert", "noop", "correction", "noop"]:
        raise Hint(f"'Room B-214', 'b214', 'C-105', 'rm c105' gave {outcomes}; expected insert, noop, correction, "
                   "noop.")
    return (f"{len(cases)} spellings of {len(ROOMS)} rooms, {len(cases) - len(SHOWN) * len(ROOMS)} of them not "
            "shown to you: one identity per room, a different one per room; written as the student's statements: "
            + ", ".join(outcomes))


exercise_1 = Exercise(
    "10.1", "a normaliser for room numbers",
    stub=('def normalise_room(value):\n'
          '    """A room\'s identity: \'Room B-214\', \'b214\' and \'rm. B 214\' are one room."""\n'
          '    return normalise_text(value)'),
    solution_code=('import re\n'
                   '\n'
                   '\n'
                   'def normalise_room(value):\n'
                   '    """A room\'s identity: \'Room B-214\', \'b214\' and \'rm. B 214\' are one room."""\n'
                   '    words = normalise_text(value).split()\n'
                   '    return "".join(w for w in words if w not in ("room", "rm"))'),
    checker=_check_rooms, answers=("normalise_room",),
    hints=("Compare normalise_text('Room B-214') with normalise_text('b214'): what still tells them apart?",
           "After normalise_text, drop the words 'room' and 'rm' and join what is left without spaces: "
           "'room b 214' -> 'b214'."),
    context=lambda: {"normalise_text": normalise_text},
)

# ---------------------------------------------------------------- exercise 2: merging a multi-valued attribute

COURSES = ("CS 101", "Math 220", "Chem 110", "Hist 305", "Bio 150", "Art 101")


def _typed(rng: random.Random, course: str) -> str:
    """``course`` as a student might type it: any case, a trailing mark."""
    name = rng.choice([course, course.lower(), course.upper(), course.title()])
    return name + rng.choice(["", "", ".", "!"])


def merge_cases(seed: int = 11, n: int = 30) -> list[tuple[list[str], list[str]]]:
    """(the courses on file, the courses just named): worked ones, then ``n`` seeded ones."""
    rng = random.Random(seed)
    cases = [(["CS 101", "Math 220"], ["math 220", "Chem 110"]), ([], ["CS 101", "cs 101."]),
             (["Hist 305"], []), (["CS 101"], ["Bio 150", "bio 150!", "CS 101"])]
    for _ in range(n):
        on_file = rng.sample(COURSES, rng.randint(0, 3))
        named = [_typed(rng, rng.choice(COURSES)) for _ in range(rng.randint(1, 4))]
        cases.append((on_file, named))
    return cases


def merged(schedule: list[str], said: list[str]) -> list[str]:
    """The reference: every course on file, then each course named whose identity is new, once."""
    result, keys = list(schedule), {normalise_text(c) for c in schedule}
    for course in said:
        if normalise_text(course) not in keys:
            keys.add(normalise_text(course))
            result.append(course)
    return result


def _check_merge(merge_courses: Any) -> str:
    if not callable(merge_courses):
        raise Hint("merge_courses should be a function: def merge_courses(schedule, said): ... return a list.")
    cases = merge_cases()
    for schedule, said in cases:
        try:
            got = merge_courses(list(schedule), list(said))
        except Exception as error:
            raise Hint(f"merge_courses({schedule}, {said}) raised {type(error).__name__}: {error}.") from None
        shown = f"merge_courses({schedule}, {said}) gave {got!r}"
        if not isinstance(got, (list, tuple)) or not all(isinstance(c, str) for c in got):
            raise Hint(f"{shown}; return a list of course names (strings).")
        keys = [normalise_text(c) for c in got]
        lost = [c for c in schedule if normalise_text(c) not in keys]
        if lost:
            raise Hint(f"{shown}: {lost[0]!r} was on file and is gone. A multi-valued attribute adds values, it "
                       "never replaces them: start from schedule.")
        missing = [c for c in said if normalise_text(c) not in keys]
        if missing:
            raise Hint(f"{shown}: the student named {missing[0]!r} and it is not there.")
        extra = [c for c in got if c not in schedule and c not in said]
        if extra:
            raise Hint(f"{shown}: {extra[0]!r} is neither on file nor named; keep the spellings you were given.")
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:
            a, b = [c for c in got if normalise_text(c) == twice][:2]
            if a == b:
                raise Hint(f"{shown}: {a!r} twice. Add a course only when its identity is not there yet.")
            where = ("in one message" if not any(normalise_text(c) == twice for c in schedule) else
                     "once on file and once named")
            raise Hint(f"{shown}: {a!r} and {b!r} are one course ({where}); normalise_text makes both {twice!r}. "
                       "Compare identities, not spellings, also with those you have just added.")
        respelled = [c for c in schedule if c not in got]
        if respelled:
            raise Hint(f"{shown}: {respelled[0]!r} is on file, yet the result spells it another way. A repeat "
                       "changes nothing (a noop): keep the stored value.")
    return (f"{len(cases)} schedules: every course on file kept as stored, each new course added once, repeats "
            "in other spellings added nothing")


exercise_2 = Exercise(
    "10.2", "merge a multi-valued attribute",
    stub=('def merge_courses(schedule, said):\n'
          '    """The courses after the student names some: schedule is what is on file, said what was named."""\n'
          '    return list(said)  # today the new list replaces the old one'),
    solution_code=('def merge_courses(schedule, said):\n'
                   '    result = list(schedule)\n'
                   '    keys = {normalise_text(course) for course in schedule}\n'
                   '    for course in said:\n'
                   '        if normalise_text(course) not in keys:\n'
                   '            keys.add(normalise_text(course))\n'
                   '            result.append(course)\n'
                   '    return result'),
    checker=_check_merge, answers=("merge_courses",),
    hints=("Start from the courses on file: a multi-valued attribute adds, it never replaces.",
           "Keep a set of normalise_text identities; append a named course only when its identity is new, and "
           "add it to the set at once."),
    context=lambda: {"normalise_text": normalise_text},
)

# ---------------------------------------------------------------- exercise 3: a new rule in decide

USER_OWNED = frozenset({"class_time", "preferred_contact"})  # the student's own preferences


def reference_decide(c, stored):
    """decide, plus the rule: a user's new value for a USER_OWNED attribute corrects every rival."""
    plan = decide(c, stored)
    if plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED:
        return Plan(CORRECTION, "the student decides", plan.same, [*plan.replaced, *plan.rivals])
    return plan


def _fact(fact_id: int, attribute: str, value: str, status: str, *sources: tuple[str, str, int]) -> StoredFact:
    return StoredFact(fact_id, STUDENT, "user", attribute, "", value, ATTRIBUTES[attribute].normalise(value),
                      status, "", "", None, [Provenance(s, kind, version) for s, kind, version in sources])


def _claim(attribute: str, value: str, source: str, kind: str, version: int):
    return check_candidate(Candidate(STUDENT, "user", attribute, value, source, kind, version), ATTRIBUTES)[0]


TIME, ADVISOR = "class_time", "advisor"
# (what happens, the stored facts of the key, the candidate, the hint when the learner's plan differs)
SCENARIOS = (
    ("the registrar copied 'morning' from last term; Sam says 'evenings'",
     [_fact(1, TIME, "morning", ACTIVE, ("registrar", "tool", 7))],
     _claim(TIME, "evenings", "chat:sam", "user", 5),
     "For a USER_OWNED attribute the student's own new value is a correction, not a conflict: return a "
     "CORRECTION plan whose replaced holds every rival (plan.replaced + plan.rivals)."),
    ("Sam writes in the student portal (source portal:sam) that he wants evenings; the registrar backs 'morning'",
     [_fact(1, TIME, "morning", ACTIVE, ("registrar", "tool", 7))],
     _claim(TIME, "evenings", "portal:sam", "user", 2),
     "Any source of kind 'user' is the student, on any channel: test c.source_kind == 'user', not the "
     "source id."),
    ("Sam and the registrar disagree about his advisor",
     [_fact(1, ADVISOR, "Dr. Okafor", ACTIVE, ("registrar", "tool", 1187))],
     _claim(ADVISOR, "Dr. Varga", "chat:sam", "user", 6),
     "The attribute advisor is not in USER_OWNED: two records of an advisor stay a conflict for a person to "
     "review. Apply the rule only when c.attribute in USER_OWNED."),
    ("the registrar syncs 'evening' after Sam said 'morning'",
     [_fact(1, TIME, "morning", ACTIVE, ("chat:sam", "user", 1))],
     _claim(TIME, "evening", "registrar", "tool", 7),
     "A tool is not the student: when the registrar disagrees with what Sam said, that stays a conflict. The "
     "rule is for c.source_kind == 'user' only."),
    ("the queue redelivers Sam's 'morning' (version 1) after he said 'evenings' (version 5)",
     [_fact(1, TIME, "morning", SUPERSEDED, ("chat:sam", "user", 1)),
      _fact(2, TIME, "evenings", ACTIVE, ("chat:sam", "user", 5))],
     _claim(TIME, "morning", "chat:sam", "user", 1),
     "A replayed or late event changes nothing, whoever sent it: the replay rule comes first. Add your rule "
     "where decide would say conflict, after the same-value rule."),
    ("the assistant says it set Sam's classes to evenings",
     [_fact(1, TIME, "morning", ACTIVE, ("chat:sam", "user", 1), ("registrar", "tool", 7))],
     _claim(TIME, "evenings", "assistant:sam", "assistant", 3),
     "An assistant's claim is not evidence and stays rejected: the rule is for the student's own words "
     "(c.source_kind == 'user'), not for every source that is not a tool."),
    ("Sam's own 'morning' is in conflict with the registrar's 'evening'; now Sam says 'afternoon'",
     [_fact(1, TIME, "morning", CONFLICT, ("chat:sam", "user", 1)),
      _fact(2, TIME, "evening", CONFLICT, ("registrar", "tool", 7))],
     _claim(TIME, "afternoon", "chat:sam", "user", 4),
     "Sam's own older 'morning' is in plan.replaced, the registrar's 'evening' in plan.rivals: a correction "
     "supersedes both, replaced = plan.replaced + plan.rivals."),
    ("Sam says 'mornings' again while the registrar's 'evening' conflicts with it",
     [_fact(1, TIME, "morning", CONFLICT, ("chat:sam", "user", 1)),
      _fact(2, TIME, "evening", CONFLICT, ("registrar", "tool", 7))],
     _claim(TIME, "mornings", "chat:sam", "user", 3),
     "Sam repeating his own value is not a new value: decide says noop (same value). The rule changes only "
     "what would otherwise be a conflict."),
)

SOURCES = (("chat:sam", "user"), ("portal:sam", "user"), ("registrar", "tool"), ("housing", "tool"),
           ("assistant:sam", "assistant"))
VALUES = {"class_time": ("morning", "afternoon", "evening", "Evenings", "in the morning"),
          "preferred_contact": ("email", "sms", "phone", "text message"),
          "advisor": ("Dr. Okafor", "Doctor Okafor", "Dr. Varga", "Prof. Lee")}


def generated_histories(seed: int = 12, n: int = 120) -> list[tuple[str, list[StoredFact], Any]]:
    """Seeded cases: a few claims written by the real writer, then one more claim to decide on."""
    rng, cases = random.Random(seed), []
    for index in range(n):
        attribute = rng.choice(sorted(VALUES))
        versions = {source: 0 for source, _ in SOURCES}

        def claim():
            source, kind = rng.choice(SOURCES)
            versions[source] += rng.choice([0, 1, 1, 2]) if versions[source] else 1  # sometimes a replay
            return Candidate(STUDENT, "user", attribute, rng.choice(VALUES[attribute]), source, kind,
                             max(versions[source], 1))

        with FactMemory.open(":memory:", attributes=ATTRIBUTES) as memory:
            memory.write_many([claim() for _ in range(rng.randint(1, 5))])
            stored = [f for f in memory.store.read_facts(STUDENT, (ACTIVE, CONFLICT, SUPERSEDED, INELIGIBLE))
                      if f.attribute == attribute]
        candidate = claim()
        cases.append((f"generated history {index}", stored, check_candidate(candidate, ATTRIBUTES)[0]))
    return cases


def _plan_summary(plan: Any) -> tuple:
    ids = lambda facts: sorted(f.id for f in facts or ())  # noqa: E731
    return (plan.outcome, getattr(plan.same, "id", None), ids(plan.replaced), ids(plan.rivals))


def _said(plan: Any) -> str:
    values = lambda facts: [f.value for f in facts or ()]  # noqa: E731
    same = getattr(plan.same, "value", None)
    return f"{plan.outcome} (same={same!r}, replaced={values(plan.replaced)}, rivals={values(plan.rivals)})"


def _judge_plan(label: str, got: Any, expected: Plan, stored: list[StoredFact], hint: str | None) -> None:
    if not all(hasattr(got, name) for name in ("outcome", "same", "replaced", "rivals")):  # any Plan class
        raise Hint(f"For {label}, my_decide returned {got!r:.80}; return a Plan, as decide does.")
    mine, wanted = _plan_summary(got), _plan_summary(expected)
    if mine == wanted:
        return
    lead = f"For {label}, my_decide said {_said(got)}; expected {_said(expected)}."
    if got.outcome == CORRECTION == expected.outcome and got.rivals:
        raise Hint(f"{lead} A correction leaves no rivals: the writer holds `rivals` in conflict and "
                   "supersedes `replaced`. Put every old value in replaced.")
    if expected.outcome == CORRECTION and got.outcome in (INSERT, CONFLICT) and hint is None:
        raise Hint(f"{lead} The old value must be superseded: return a CORRECTION plan with the rivals in "
                   "replaced.")
    if expected.outcome == CORRECTION == got.outcome and mine[1] != wanted[1]:
        raise Hint(f"{lead} Keep plan.same: it is the fact that already holds the new value (the writer "
                   "adds the source to it instead of inserting a copy).")
    if expected.outcome == CORRECTION == got.outcome and set(mine[2]) < set(wanted[2]):
        kept = [f.value for f in expected.replaced if f.id not in mine[2]]
        raise Hint(f"{lead} {kept} would stay live beside the new value. The student's own older value is in "
                   "decide's plan.replaced, a tool's in plan.rivals: a correction supersedes both, "
                   "replaced = plan.replaced + plan.rivals.")
    if expected.outcome == CORRECTION == got.outcome:
        raise Hint(f"{lead} Supersede every other live value: plan.replaced and plan.rivals together.")
    raise Hint(f"{lead} {hint or 'Everything the rule does not cover is decided as decide decides it.'}")


def _check_rule(my_decide) -> str:
    if not callable(my_decide):
        raise Hint("my_decide should be a function: def my_decide(c, stored): ...")
    histories = generated_histories()
    for label, stored, candidate, hint in [*SCENARIOS, *((*case, None) for case in histories)]:
        try:
            got = my_decide(candidate, list(stored))
        except Exception as error:
            raise Hint(f"For {label}, my_decide raised {type(error).__name__}: {error}.") from None
        _judge_plan(label, got, reference_decide(candidate, list(stored)), stored, hint)
    return (f"{len(SCENARIOS)} scenarios and {len(histories)} generated histories: the student's own new value "
            "for a preference corrects what a tool still backed; advisors, tools, assistant claims, repeats "
            "and replays are decided as before.")


exercise_3 = Exercise(
    "10.3", "a new rule in decide",
    stub=('USER_OWNED = {"class_time", "preferred_contact"}  # the student\'s own preferences\n'
          '\n'
          '\n'
          'def my_decide(c, stored):\n'
          '    """decide, plus one rule: the student\'s new value for a USER_OWNED attribute corrects every '
          'rival."""\n'
          '    plan = decide(c, stored)\n'
          '    return plan'),
    solution_code=('USER_OWNED = {"class_time", "preferred_contact"}  # the student\'s own preferences\n'
                   '\n'
                   '\n'
                   'def my_decide(c, stored):\n'
                   '    plan = decide(c, stored)\n'
                   '    # decide says conflict only once replays, assistant claims and repeats are ruled out\n'
                   '    if plan.outcome == CONFLICT and c.source_kind == "user" and c.attribute in USER_OWNED:\n'
                   '        return Plan(CORRECTION, "the student decides", plan.same,\n'
                   '                    [*plan.replaced, *plan.rivals])\n'
                   '    return plan'),
    checker=_check_rule, answers=("my_decide",),
    hints=("Run my_decide on the registrar scenario above: which outcome does decide give, and which facts are "
           "in plan.rivals?",
           "When decide's plan is a conflict, the candidate comes from a user source and the attribute is in "
           "USER_OWNED, return Plan(CORRECTION, ..., plan.same, [*plan.replaced, *plan.rivals])."),
    context=lambda: {"decide": decide, "last_version": last_version, "Plan": Plan, "INSERT": INSERT,
                     "NOOP": NOOP, "CORRECTION": CORRECTION, "REJECTED": REJECTED, "CONFLICT": CONFLICT,
                     "ACTIVE": ACTIVE},
)

# ---------------------------------------------------------------- exercise 4: a question for the audit log

STATED = ("insert", "correction", "conflict")  # the outcomes that record a source's statement on a fact


def _write(memory: FactMemory, attribute: str, value: str, source: str, kind: str, version: int) -> None:
    memory.write(Candidate(STUDENT, "user", attribute, value, source, kind, version))


def worked_store() -> FactMemory:
    """The worked case: facts from Sam, from tools, from an assistant's proposal and from a reviewer."""
    memory = FactMemory.open(":memory:", attributes=ATTRIBUTES)
    for step in (("advisor", "Dr. Lee", "chat:sam", "user", 1), ("advisor", "Dr. Okafor", "chat:sam", "user", 2),
                 ("advisor", "Doctor Okafor", "registrar", "tool", 40),       # agrees: a second source
                 ("room", "b-214", "housing", "tool", 9), ("room", "B-214", "chat:sam", "user", 3),
                 ("class_time", "morning", "registrar", "tool", 41),
                 ("class_time", "evening", "registrar", "tool", 42),          # the registrar corrects itself
                 ("preferred_contact", "sms", "assistant:sam", "assistant", 4),  # a proposal, ineligible
                 ("preferred_contact", "text message", "portal-sync", "tool", 7),  # a tool confirms it
                 ("meal_plan", "14 meals", "dining", "tool", 3), ("meal_plan", "19 meals", "bursar", "tool", 8),
                 ("locker", "4471", "gym", "tool", 2), ("locker", "4417", "library", "tool", 5),
                 ("course", "CS 101", "chat:sam", "user", 5), ("course", "Math 220", "registrar", "tool", 43),
                 ("course", "math 220", "registrar", "tool", 43)):             # a replay of the sync
        _write(memory, *step)
    memory.resolve(STUDENT, "user", "meal_plan", "19 meals", reviewer="staff:ana", note="bursar is current")
    return memory


def _turnless(memory: FactMemory) -> set[int]:
    """The reference: the active facts on which no audit row records a statement of a user source."""
    stated = {e.fact_id for e in memory.audit(STUDENT) if e.source_kind == "user" and e.outcome in STATED}
    return {f.id for f in memory.active_facts(STUDENT) if f.id not in stated}


def generated_stores(seed: int = 13, n: int = 40) -> list[FactMemory]:
    """Seeded stores: statements, tool syncs, assistant proposals and exact replays, written by the writer."""
    rng, stores = random.Random(seed), []
    values = {"advisor": ("Dr. Okafor", "doctor okafor", "Dr. Varga"), "room": ("B-214", "b-214", "C-105"),
              "class_time": ("morning", "Evenings", "evening"), "course": ("CS 101", "cs 101", "Math 220")}
    for _ in range(n):
        memory, events, versions = FactMemory.open(":memory:", attributes=ATTRIBUTES), [], {}
        for _ in range(rng.randint(3, 9)):
            if events and rng.random() < 0.2:
                event = rng.choice(events)  # a queue redelivers an earlier event, exactly
            else:
                source, kind = rng.choice(SOURCES)
                versions[source] = versions.get(source, 0) + 1
                attribute = rng.choice(sorted(values))
                event = (attribute, rng.choice(values[attribute]), source, kind, versions[source])
                events.append(event)
            _write(memory, *event)
        stores.append(memory)
    return stores


def _ids(got: Any) -> set[int]:
    if not isinstance(got, (list, tuple, set, frozenset)):
        raise Hint(f"no_turn returned {got!r:.80}; return a list of facts (memory.active_facts gives them).")
    if not all(hasattr(item, "provenance") and hasattr(item, "id") for item in got):
        item = next(item for item in got if not hasattr(item, "provenance"))
        raise Hint(f"no_turn returned {item!r:.60} among its items; return the facts themselves (the StoredFact "
                   "rows of memory.active_facts), not their values, ids or audit rows.")
    return {item.id for item in got}


def _rows(memory: FactMemory, fact_id: int) -> str:
    rows = [e for e in memory.audit(STUDENT) if e.fact_id == fact_id]
    return "; ".join(f"#{e.id} {e.outcome} from {e.source_id} ({e.source_kind})" for e in rows)


def _judge_store(no_turn: Callable, memory: FactMemory, label: str) -> None:
    try:
        got = no_turn(memory, STUDENT)
    except Exception as error:
        raise Hint(f"On {label}, no_turn raised {type(error).__name__}: {error}.") from None
    mine, wanted = _ids(got), _turnless(memory)
    if mine == wanted:
        return
    facts = {f.id: f for f in memory.store.read_facts(STUDENT, (ACTIVE, CONFLICT, SUPERSEDED, INELIGIBLE))}
    lead = f"On {label}"
    for fact_id in sorted(mine - wanted):
        fact = facts[fact_id]
        said = f"{lead}, no_turn named {fact.attribute}={fact.value!r} ({fact.status}); its rows: " \
               f"{_rows(memory, fact_id)}."
        if fact.status != ACTIVE:
            raise Hint(f"{said} It is {fact.status}, not current: ask only about memory.active_facts(user_id).")
        raise Hint(f"{said} A row from a user source wrote to it, so the student stated it. Rows name their fact "
                   "by e.fact_id; the value is spelled as each source said it.")
    for fact_id in sorted(wanted - mine):
        fact = facts[fact_id]
        said = f"{lead}, no_turn left out {fact.attribute}={fact.value!r}; its rows: {_rows(memory, fact_id)}."
        kinds = {e.source_kind for e in memory.audit(STUDENT) if e.fact_id == fact_id}
        if "assistant" in kinds:
            raise Hint(f"{said} An assistant's proposal (source_kind 'assistant', outcome rejected) is not a "
                       "statement of the student: count only source_kind == 'user'.")
        if "reviewer" in kinds:
            raise Hint(f"{said} A reviewer settled a conflict between tools: that is not a statement of the "
                       "student. Count only source_kind == 'user'.")
        raise Hint(f"{said} No user source ever wrote to it: tools alone put it there.")


def _check_audit(no_turn: Any) -> str:
    if not callable(no_turn):
        raise Hint("no_turn should be a function: def no_turn(memory, user_id): ... return a list of facts.")
    with worked_store() as memory:
        _judge_store(no_turn, memory, "the worked store")
        found = sorted(f"{f.attribute}={f.value!r}" for f in memory.active_facts(STUDENT)
                       if f.id in _turnless(memory))
    stores = generated_stores()
    try:
        for index, memory in enumerate(stores):
            _judge_store(no_turn, memory, f"generated store {index}")
    finally:
        for memory in stores:
            memory.close()
    return (f"the worked store and {len(stores)} generated ones: in the first, {len(found)} current facts rest "
            f"on no statement of Sam ({', '.join(found)})")


exercise_4 = Exercise(
    "10.4", "ask the audit log",
    stub=('def no_turn(memory, user_id):\n'
          '    """The current facts the student never stated: a tool or a reviewer alone put them there."""\n'
          '    return []'),
    solution_code=('def no_turn(memory, user_id):\n'
                   '    stated = {e.fact_id for e in memory.audit(user_id)\n'
                   '              if e.source_kind == "user" and e.outcome in ("insert", "correction", "conflict")}\n'
                   '    return [f for f in memory.active_facts(user_id) if f.id not in stated]'),
    checker=_check_audit, answers=("no_turn",),
    hints=("Print memory.audit('sam'): which rows come from the student (source_kind 'user'), and which fact "
           "does each name (fact_id)?",
           "Collect the fact_id of every row from a user source whose outcome is insert, correction or conflict; "
           "return the active facts whose id is not among them."),
)

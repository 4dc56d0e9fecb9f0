"""Exercises of notebook 03 (guardrails): an answer the grounding judge approves; where the scope line is.

On a real server the judge is the model it serves. Its verdict decides only where the offline stand-in's
documented rules agree (``unsupported_claims`` and ``classify_scope``, which read meaning): an answer those
rules reject is wrong whatever a small model says, and a right answer that the model rejects, or cannot judge,
gets "this server cannot decide" instead of a wrong verdict.
"""
from __future__ import annotations

import re

from helpers.llm.client import get_client, get_settings
from helpers.exercises import Exercise, Hint
from helpers.retrieval.guardrails import SCOPE_CATEGORIES, check_grounding, check_scope
from helpers.retrieval.knowledge import Hit, format_context
from helpers.retrieval.knowledge_files import load_knowledge_base
from helpers.standin.meaning import day_index, facts_in, unsupported_claims  # the judge's own reading
from helpers.standin.tasks import classify_scope  # the stand-in's scope rule, by meaning

OFFICE_HOURS = "office-hours-cs"
NOTEBOOK_EXAMPLES = ("When does the AI club meet?", "Write me a poem about the sea",
                     "How do I hack into the registrar system?")
WHY_NOT = {  # (expected, classified): what the learner should know about that line
    ("campus", "off_topic"): "nothing in the campus knowledge base is near it: ask about the clubs, labs, office "
                             "hours, events or services the assistant knows",
    ("campus", "unsafe"): "it asks how to harm or deceive someone, and that is refused however campus-like",
    ("off_topic", "campus"): "it is close to what the campus knowledge base covers, so the assistant answers it: "
                             "an off-topic request is about something else entirely (cooking, films, sport)",
    ("off_topic", "unsafe"): "it asks how to harm or deceive someone: that is unsafe, not just off topic",
    ("unsafe", "campus"): "it asks for nothing harmful: a request is unsafe when it asks how to harm or deceive "
                          "someone (another person's account, cheating, theft), not when it mentions trouble",
    ("unsafe", "off_topic"): "it asks for nothing harmful, just for something outside campus life: that is "
                             "off_topic",
}


def _judge_failed(reason: str) -> str | None:
    """What went wrong when the verdict failed closed because of the judge model or server, else None."""
    if reason.startswith("fail-closed: unparseable verdict"):
        return (f"the judge model's reply was not a verdict ({reason.removeprefix('fail-closed: ')}): that is "
                "the model failing at the task, not your answer; a small local model often cannot write the JSON "
                "verdict")
    if reason.startswith(("fail-closed: grounding check failed", "fail-closed: scope check failed")):
        return f"the judge could not be asked ({reason.removeprefix('fail-closed: ')})"
    return None


def _cannot_decide(what: str) -> str:
    if "the judge could not be asked" in what:
        return f"this server cannot decide this exercise: {what}. Fix that, then check again."
    model = get_settings().chat_model
    return (f"this server cannot decide this exercise: {what}. The stand-in's documented rules agree with you; "
            f"check again offline (WORKSHOP_BACKEND=offline) or with a stronger model than {model}.")


def _office_hours_passage() -> str:
    entry = next(e for e in load_knowledge_base() if e.id == OFFICE_HOURS)
    return format_context([Hit(entry.id, entry.title, entry.text, 1.0)])


def _says_when(answer: str) -> bool:
    """Does the answer name Tuesday and 14:00, written any way the stand-in's judge reads ("Tue", "2pm")?"""
    facts = facts_in(answer)
    days = {day for claim in facts.of("day") for day in claim.value}
    times = {minute for claim in facts.of("time") for minute in claim.value}
    return day_index("Tuesday") in days and 14 * 60 in times


# A person named by a title, in any case ("Professor Smith", "dr. okafor"): a name the passage must hold too.
_TITLED = re.compile(r"\b(?:professor|prof|dr|doctor|mr|mrs|ms|miss)\.?\s+([a-z][\w'-]+)", re.I)


def _people_not_in(answer: str, passage: str) -> list[str]:
    """People the answer names by title whose names the passage does not mention (the judge reads only
    capitalised names, so "with professor smith" would slip past it)."""
    words = set(re.findall(r"[\w'-]+", passage.lower()))
    return [match.group(0) for match in _TITLED.finditer(answer) if match.group(1).lower() not in words]


# Where something is, read in any case: the words after "in", "at", "on", "inside" ... up to the next break.
_PLACE = re.compile(r"\b(?:in|at|on|inside|within|near|over|via)\s+((?:(?!(?:in|at|on|from|to|until|till|every|"
                    r"each|with|for|and|or|by|during|between|when|where|so|but)\b)[\w'-]+\s*){1,6})", re.I)
_NOT_A_PLACE = {"the", "a", "an", "of", "person", "general", "short", "total", "particular", "practice", "fact",
                "afternoon", "afternoons", "morning", "mornings", "evening", "evenings", "week", "weeks", "pm",
                "am", "noon", "o'clock", "time", "case", "addition", "turn", "hours", "office", "campus",
                "cs"}  # "cs": the passage's Computer Science
# A way of meeting that is not a place: the passage names a building and its rooms, nothing held at a distance.
_REMOTE = re.compile(r"\b(?:online|on-?line|virtual(?:ly)?|remote(?:ly)?|zoom|teams|skype|video(?:[ -]?call)?|"
                     r"e-?mail|by phone|over the phone|webinar)\b", re.I)
_APPOINTMENT = re.compile(r"\b(?:appointments?|book(?:ing|ed)?|reserv(?:e|ation)|sign[ -]?up)\b", re.I)
_DENIED = re.compile(r"\b(?:no|not|without|never|n't|needn't|unnecessary)\b", re.I)


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _places_not_in(answer: str, passage: str) -> list[str]:
    """Places the answer names (after "in", "at", "on" ..., in any case) with a word the passage does not have."""
    have = {_stem(word) for word in re.findall(r"[\w'-]+", passage.lower())}
    missing = []
    for match in _PLACE.finditer(re.sub(r"\[[^\]]*\]", " ", answer)):
        phrase = match.group(1).strip()
        said = facts_in(phrase)
        if said.of("day") or said.of("time") or _REMOTE.search(phrase):
            continue  # "on Tuesdays", "at 2pm": when, not where; "on Zoom" has a hint of its own
        words = [re.sub(r"'s$", "", w) for w in re.findall(r"[\w'-]+", phrase.lower().replace("’", "'"))]
        words = [w for w in words if w not in _NOT_A_PLACE]  # "Halvorsen Hall's" is Halvorsen Hall
        if any(w.isalpha() and _stem(w) not in have for w in words) and phrase not in missing:
            missing.append(phrase)
    return missing


def _contradicts_drop_in(answer: str) -> str | None:
    """The hint for an answer that says how to meet against the passage ("online", "by appointment"), else None."""
    remote = _REMOTE.search(answer)
    if remote:
        return (f"the answer says {remote.group(0)!r}, but the passage names no way to meet at a distance: the "
                "office hours are held in a building, in person. Say the building the passage names.")
    for clause in re.split(r"[.;:!?]|,\s*(?:but|and)\b", answer):
        booked = _APPOINTMENT.search(clause)
        if booked and not _DENIED.search(clause[:booked.start()]):
            return (f"the answer says {booked.group(0)!r}, but the passage says no appointment is needed: any "
                    "student may drop in. Leave the booking out, or say that none is needed.")
    return None


def _check_grounded_answer(my_answer) -> str:
    if not isinstance(my_answer, str) or not my_answer.strip():
        raise Hint("my_answer must be the text of an answer.")
    if f"[{OFFICE_HOURS}]" not in my_answer:
        raise Hint(f"cite the entry you answer from, as the answering prompt asks: [{OFFICE_HOURS}].")
    passage = _office_hours_passage()
    missing = unsupported_claims(my_answer, passage)  # the stand-in judge's rule, on any backend
    missing += [person for person in _people_not_in(my_answer, passage) if person not in missing]
    missing += [place for place in _places_not_in(my_answer, passage)
                if not any(place.lower() in said.lower() or said.lower() in place.lower() for said in missing)]
    missing = [said for said in missing if not _REMOTE.fullmatch(said.strip())]  # "Zoom": a hint of its own
    verdict = check_grounding(my_answer, passage, client=get_client(quiet=True))
    if missing:
        said = ("the judge did not approve it:" if not verdict.supported
                else "the judge on this server approved it, but")
        raise Hint(f"{said} the passage does not say {', '.join(missing)}. Take every day, time, name and "
                   "number from the passage printed above.")
    contradicted = _contradicts_drop_in(my_answer)
    if contradicted:
        raise Hint(contradicted)
    if not _says_when(my_answer):
        raise Hint("every claim in it is in the passage, but the question is 'when?': say the day and the time "
                   "the office hours start.")
    if not verdict.supported:
        failed = _judge_failed(verdict.reason)
        if failed:
            raise Hint(_cannot_decide(failed))
        if get_settings().backend == "offline":
            raise Hint(f"the judge did not approve it: {verdict.reason}.")
        raise Hint(_cannot_decide(f"its judge model called your answer unsupported ({verdict.reason})"))
    return f"the judge approves: {verdict.reason}." if verdict.reason.strip() else "the judge approves."


def _plain(text: str) -> str:
    """A request without case, punctuation or extra spaces: "when does the AI club meet" is the example."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _check_scope_requests(my_requests) -> str:
    if not isinstance(my_requests, dict) or not my_requests:
        raise Hint("my_requests must be a dict: {request: the category you expect}.")
    wrong = {category for category in my_requests.values() if category not in SCOPE_CATEGORIES}
    if wrong:
        raise Hint(f"the categories are {', '.join(SCOPE_CATEGORIES)}; "
                   f"{', '.join(sorted(map(repr, wrong)))} is not one of them.")
    if not all(isinstance(request, str) and request.strip() for request in my_requests):
        raise Hint("each key of my_requests must be a request in words.")
    missing = [category for category in SCOPE_CATEGORIES if category not in my_requests.values()]
    if missing:
        raise Hint(f"write at least one request of each category; none expects {', '.join(missing)} yet.")
    examples = {_plain(example) for example in NOTEBOOK_EXAMPLES}
    copied = [request for request in my_requests if _plain(request) in examples]
    if copied:
        raise Hint(f"{copied[0]!r} is one of the notebook's examples: write requests of your own.")
    client, offline = get_client(quiet=True), get_settings().backend == "offline"
    failed, disagreed = [], []
    for request, expected in my_requests.items():
        rule = classify_scope(request)  # the stand-in's rule; offline it is the judge itself
        verdict = check_scope(request, client=client)
        if rule["category"] != expected:
            said = "was classified" if offline else "reads, by the stand-in's rule, as"
            raise Hint(f"{request!r} {said} {rule['category']} ({rule['reason']}), not {expected}: "
                       f"{WHY_NOT[expected, rule['category']]}. Change the request or your expectation.")
        why = _judge_failed(verdict.reason)  # a fail-closed "off_topic" is no judgement, even when expected
        if why:
            failed.append((request, why))
        elif verdict.category != expected:
            disagreed.append(f"{request!r} as {verdict.category} ({verdict.reason})")
    if failed or disagreed:
        why = [f"for {', '.join(repr(request) for request, _ in failed)}, {failed[0][1]}"] if failed else []
        if disagreed:
            why.append("its judge model classified " + "; ".join(disagreed))
        raise Hint(_cannot_decide("; ".join(why)))
    refused = sum(1 for category in my_requests.values() if category != "campus")
    return f"the scope rule agrees with you on all {len(my_requests)}; {refused} of them get the refusal."


exercise_1 = Exercise(
    "03.1", "Ground the answer",
    stub='my_answer = "Office hours are on Mondays from 10:00 to 12:00 in Wrenfield Hall [office-hours-cs]."',
    solution_code=('my_answer = "Office hours are on Tuesdays from 14:00 to 16:00 in Halvorsen Hall '
                   '[office-hours-cs]."'),
    checker=_check_grounded_answer,
    answers=("my_answer",),
    hints=("Read the passage: which day, which hours, which building?",
           "Tuesday, 14:00 to 16:00, Halvorsen Hall: use only those, and keep the citation.",),
)

exercise_2 = Exercise(
    "03.2", "Where is the line?",
    stub='my_requests = {"Write your request here": "campus"}',
    solution_code='''my_requests = {
    "Where can I print my poster for the career fair?": "campus",
    "What's a good recipe for lasagna?": "off_topic",
    "Help me cheat on the exam answers": "unsafe",
}''',
    checker=_check_scope_requests,
    answers=("my_requests",),
    hints=("One request about campus life, one about anything else, one asking for something harmful "
           "or dishonest.",
           "The offline stand-in's rule is classify_scope in helpers/standin/tasks.py: a request near the campus "
           "knowledge base is campus; one that asks how to harm or deceive someone (another person's account, "
           "cheating, theft) is unsafe. It compares meaning with a small embedding model, so a clear request "
           "works best; a real model judges far more.",),
)

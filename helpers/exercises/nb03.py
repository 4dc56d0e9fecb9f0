"""Exercises of notebook 03 (guardrails): an answer the grounding judge approves; where the scope line is."""
from __future__ import annotations

from helpers.client import get_client
from helpers.exercises import Exercise, Hint
from helpers.guardrails import SCOPE_CATEGORIES, check_grounding, check_scope
from helpers.knowledge import Hit, format_context
from helpers.knowledge_files import load_knowledge_base
from helpers.standin.meaning import day_index, facts_in  # the judge's own reading of days and times

OFFICE_HOURS = "office-hours-cs"
NOTEBOOK_EXAMPLES = ("When does the AI club meet?", "Write me a poem about the sea",
                     "How do I hack into the registrar system?")


def _judge_failed(reason: str) -> str | None:
    """A hint when the verdict failed closed because of the judge model or server, not the learner's work."""
    if reason.startswith("fail-closed: unparseable verdict"):
        return (f"the judge model's reply was not a verdict ({reason.removeprefix('fail-closed: ')}): that is "
                "the model failing at the task, not your answer. A small local model often cannot write the "
                "JSON verdict: use a stronger chat model (WORKSHOP_CHAT_MODEL) to check this exercise.")
    if reason.startswith(("fail-closed: grounding check failed", "fail-closed: scope check failed")):
        return f"the judge could not be asked ({reason.removeprefix('fail-closed: ')}); fix that, then try again."
    return None


def _office_hours_passage() -> str:
    entry = next(e for e in load_knowledge_base() if e.id == OFFICE_HOURS)
    return format_context([Hit(entry.id, entry.title, entry.text, 1.0)])


def _says_when(answer: str) -> bool:
    """Does the answer name Tuesday and 14:00, written any way the stand-in's judge reads ("Tue", "2pm")?"""
    facts = facts_in(answer)
    days = {day for claim in facts.of("day") for day in claim.value}
    times = {minute for claim in facts.of("time") for minute in claim.value}
    return day_index("Tuesday") in days and 14 * 60 in times


def _check_grounded_answer(my_answer) -> str:
    if not isinstance(my_answer, str) or not my_answer.strip():
        raise Hint("my_answer must be the text of an answer.")
    if f"[{OFFICE_HOURS}]" not in my_answer:
        raise Hint(f"cite the entry you answer from, as the answering prompt asks: [{OFFICE_HOURS}].")
    verdict = check_grounding(my_answer, _office_hours_passage(), client=get_client(quiet=True))
    if not verdict.supported and _judge_failed(verdict.reason):
        raise Hint(_judge_failed(verdict.reason))
    if not verdict.supported:
        raise Hint(f"the judge did not approve it: {verdict.reason}. Take every day, time, name and number "
                   "from the passage printed above.")
    if not _says_when(my_answer):
        raise Hint("the judge approves, but the question is 'when?': say the day and the time the office "
                   "hours start.")
    return f"the judge approves: {verdict.reason}."


def _check_scope_requests(my_requests) -> str:
    if not isinstance(my_requests, dict) or not my_requests:
        raise Hint("my_requests must be a dict: {request: the category you expect}.")
    wrong = {category for category in my_requests.values() if category not in SCOPE_CATEGORIES}
    if wrong:
        raise Hint(f"the categories are {', '.join(SCOPE_CATEGORIES)}; "
                   f"{', '.join(sorted(map(repr, wrong)))} is not one of them.")
    missing = [category for category in SCOPE_CATEGORIES if category not in my_requests.values()]
    if missing:
        raise Hint(f"write at least one request of each category; none expects {', '.join(missing)} yet.")
    copied = [request for request in my_requests if request in NOTEBOOK_EXAMPLES]
    if copied:
        raise Hint(f"{copied[0]!r} is one of the notebook's examples: write requests of your own.")
    client = get_client(quiet=True)
    for request, expected in my_requests.items():
        verdict = check_scope(request, client=client)
        if verdict.category != expected and _judge_failed(verdict.reason):
            raise Hint(f"{request!r}: {_judge_failed(verdict.reason)}")
        if verdict.category != expected:
            raise Hint(f"{request!r} was classified {verdict.category} ({verdict.reason}), not {expected}: "
                       "change the request or your expectation.")
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

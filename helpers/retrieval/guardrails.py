"""Two guardrails: a scope rule before answering, and a grounding check after.

- ``check_scope``: is the request about campus life? Off-topic or unsafe requests get
  one fixed, polite refusal (``REFUSAL``) instead of an answer.
- ``check_grounding``: is the answer supported by the passages it was built from?

Both ask the model for a small JSON verdict and parse it strictly: "**Yes**", "Yes,
but…", an empty reply or JSON with an unknown value is *not* a verdict. Both fail
closed: an unparseable verdict or an API error counts as "not allowed" / "not
supported". The grounding check is skipped for the refusal itself.

Notebook 03 builds the grounding judge in its cells: ``GROUNDING_PROMPT``, one call
(``ask_judge``), the strict parse (``parse_json_object``, ``parse_grounding_verdict``) and
``check_grounding``, which fails closed. The scope rule is the same pattern with another prompt.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from helpers.llm.client import EndpointError, chat
from helpers.core.context_format import SCOPE_CLASSIFIER, task_intro
from helpers.core.errors import WorkshopError
from helpers.retrieval.knowledge import answer_with_context, format_context

REFUSAL = ("I can only help with questions about Larkspur University — clubs, labs, office hours, events and "
           "campus services — so I can't help with that request.")
SCOPE_CATEGORIES = ("campus", "off_topic", "unsafe")
VERDICTS = ("supported", "unsupported")

SCOPE_PROMPT = (  # task_intro: the words that name the task (helpers.core.context_format, read by the stand-in)
    f"{task_intro(SCOPE_CLASSIFIER)} for the Larkspur University campus assistant. Classify the user's request "
    "as exactly one category: \"campus\" (campus life: clubs, labs, courses, office hours, events, services, "
    "dates and times of those), \"off_topic\" (anything else), "
    "or \"unsafe\" (harmful, dishonest or abusive). "
    'Reply with only a JSON object: {"category": "<campus|off_topic|unsafe>", "reason": "<a few words>"}.'
)
GROUNDING_PROMPT = (
    "You are a grounding judge. Decide whether every factual claim in the ANSWER (names, days, times, "
    "numbers, places) is supported by the PASSAGES. Ignore citations in square brackets. Reply with only a "
    'JSON object: {"verdict": "<supported|unsupported>", "reason": "<which claim is unsupported, or why '
    'all are supported>"}.'
)


class VerdictError(WorkshopError, ValueError):
    """A judge reply that is not a strict JSON verdict."""


@dataclass(frozen=True)
class ScopeVerdict:
    """The scope classifier's category for a request, and its reason."""

    category: str
    reason: str

    @property
    def allowed(self) -> bool:
        """Only campus requests are answered."""
        return self.category == "campus"


@dataclass(frozen=True)
class GroundingVerdict:
    """Whether an answer is supported by its passages, why, and whether the check was skipped."""

    supported: bool
    reason: str
    skipped: bool = False


def parse_json_object(text: str | None) -> dict:
    """The single JSON object in a reply (optionally inside a ``` fence), else VerdictError."""
    if not text or not text.strip():
        raise VerdictError("empty reply")
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except ValueError:
        raise VerdictError(f"not a JSON object: {text.strip()[:60]!r}") from None
    if not isinstance(value, dict):
        raise VerdictError(f"expected a JSON object, got {type(value).__name__}")
    return value


def parse_scope_verdict(text: str | None) -> ScopeVerdict:
    """Strictly parse {"category": ..., "reason": ...}; raise VerdictError otherwise."""
    value = parse_json_object(text)
    category = value.get("category")
    if category not in SCOPE_CATEGORIES:
        raise VerdictError(f"category must be one of {SCOPE_CATEGORIES}, got {category!r}")
    return ScopeVerdict(category, str(value.get("reason", "")))


def parse_grounding_verdict(text: str | None) -> GroundingVerdict:
    """Strictly parse {"verdict": "supported"|"unsupported", "reason": ...}; raise VerdictError otherwise."""
    value = parse_json_object(text)
    verdict = value.get("verdict")
    if verdict not in VERDICTS:
        raise VerdictError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return GroundingVerdict(verdict == "supported", str(value.get("reason", "")))


def ask_judge(system: str, user: str, client=None, settings=None) -> str:
    """One judge call at temperature 0: its instructions as the system message, the case as the user's."""
    response = chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                    client=client, settings=settings, temperature=0.0, max_tokens=200,
                    response_format={"type": "json_object"})  # dropped for a server without JSON mode
    return response.choices[0].message.content or ""


def check_scope(request: str, *, client=None, settings=None) -> ScopeVerdict:
    """Classify a request; an unparseable verdict or a failed call is treated as out of scope."""
    try:
        return parse_scope_verdict(ask_judge(SCOPE_PROMPT, request, client, settings))
    except VerdictError as exc:
        return ScopeVerdict("off_topic", f"fail-closed: unparseable verdict ({exc})")
    except EndpointError as exc:
        return ScopeVerdict("off_topic", f"fail-closed: scope check failed ({exc})")


def check_grounding(answer: str, passages: str, *, client=None, settings=None) -> GroundingVerdict:
    """Judge whether ``answer`` is supported by ``passages``; fails closed; skipped for the refusal."""
    if answer.strip() == REFUSAL:
        return GroundingVerdict(True, "the fixed refusal makes no claims", skipped=True)
    if not passages.strip():
        return GroundingVerdict(False, "fail-closed: there are no passages to support the answer")
    prompt = f"PASSAGES:\n{passages.strip()}\n\nANSWER:\n{answer.strip()}"
    try:
        return parse_grounding_verdict(ask_judge(GROUNDING_PROMPT, prompt, client, settings))
    except VerdictError as exc:
        return GroundingVerdict(False, f"fail-closed: unparseable verdict ({exc})")
    except EndpointError as exc:
        return GroundingVerdict(False, f"fail-closed: grounding check failed ({exc})")


def evidence_from_turn(messages: list[dict]) -> str:
    """The tool results of the last turn (everything after the last user message), as judge passages."""
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return "\n".join(str(m.get("content", "")) for m in messages[start + 1:] if m.get("role") == "tool")


FALLBACK = ("I couldn't check that answer against the campus knowledge base, so I won't guess. "
            "Please ask the campus information desk.")


@dataclass(frozen=True)
class GuardedAnswer:
    """An answer after both guardrails, with the verdicts that shaped it."""

    question: str
    answer: str
    scope: ScopeVerdict
    grounding: GroundingVerdict
    draft: str  # what the model said before the grounding check
    context: str


def guarded_answer(question: str, kb, *, k: int = 3, client=None, settings=None) -> GuardedAnswer:
    """Scope rule → retrieval → answer from context → grounding check (failing closed)."""
    scope = check_scope(question, client=client, settings=settings)
    if not scope.allowed:
        skipped = GroundingVerdict(True, "the fixed refusal makes no claims", skipped=True)
        return GuardedAnswer(question, REFUSAL, scope, skipped, REFUSAL, "")
    hits = kb.retrieve_context(question, k=k)
    context = format_context(hits) if hits else ""
    draft = answer_with_context(question, hits, client=client, settings=settings)
    if not hits:
        # Nothing retrieved: only an honest "don't know" may pass.
        ok = "don't know" in draft.lower() or "do not know" in draft.lower()
        verdict = GroundingVerdict(ok, "no passages retrieved" + ("; the answer admits it" if ok else ""))
    else:
        verdict = check_grounding(draft, context, client=client, settings=settings)
    return GuardedAnswer(question, draft if verdict.supported else FALLBACK, scope, verdict, draft, context)

"""From one conversation turn to fact candidates with provenance, and on to the store (notebook 10).

The delivery and contact facts of this notebook are one attribute set of the fact pipeline
(``helpers.facts.pipeline``: a turn in, candidates out), ``DELIVERY`` (``delivery_set(attributes)`` for
other attributes); the campus facts of notebook 09 are another. Two extractors share one output, a list
of ``Candidate``:

* online (``client=`` given): the pipeline's ``ModelExtractor``, one chat completion with
  ``response_format={"type": "json_object"}``, asked and read as for every domain
  (``helpers.facts.pipeline.extraction_request`` and ``read_reply``): the reply must be exactly
  ``{"facts": [{"attribute": ..., "value": ..., "evidence": ...}]}``, each attribute one of this set's.
  Anything malformed gives no candidates and a logged reason - never a guess. A turn whose words hold a
  correction cue (``CORRECTION_CUES``) marks its candidates as explicit corrections, on either path.
* offline (default): ``extract_with_rules``, the regular expressions in ``RULES`` below (the pipeline's
  ``RuleExtractor(DELIVERY)`` runs the same rules).

Provenance: a user turn is source ``chat:<user_id>`` (kind ``user``), an assistant turn is
``assistant:<user_id>`` (kind ``assistant``); the version is a number that only grows per user and
source, so a retried event has the same version and a later statement a higher one. ``ingest_turn``
reserves it from the fact store (``FactMemory.reserve_version``: higher than any the source has recorded,
in any session or process) unless the caller passes ``seq``, its own such number for an event it may
retry (never a per-session turn counter, which starts again at 1 in a new session or kernel).

Switches: ``save_user_messages_to_memory=True`` and ``save_ai_messages_to_memory=False`` by default:
raw assistant messages are not written; if enabled they become ``assistant`` proposals, which the
writer records as ineligible anyway.

``ingest_turn`` writes a turn's candidates on one of two paths: explicit corrections are
committed synchronously (before the assistant confirms anything); ordinary candidates may go
through a ``BackgroundWriter`` (``helpers.facts.background``: queued, not durable, until its
batch commits).
"""
from __future__ import annotations

import logging
import re
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Mapping

import openai

from helpers.core.errors import WorkshopError
from helpers.facts.background import BackgroundWriter
from helpers.facts.decisions import FactDecision
from helpers.facts.pipeline import (AttributeSet, Found, ModelExtractor, ReplyFormatError, candidates_from,
                                    source_of)
from helpers.facts.schema import DEFAULT_ATTRIBUTES, AttributeSpec, Candidate
from helpers.facts.writer import FactMemory

log = logging.getLogger(__name__)
# What a model request raises on purpose: helpers.llm.client.chat's errors (EndpointError and ResponseFormatError,
# ContextOverflowError, CompatError, ConfigError: all WorkshopErrors) and the openai client's errors it passes on
# (a BadRequestError, key hidden). A failed extraction request is one of these; anything else is a bug, raised.
MODEL_REQUEST_ERRORS = (WorkshopError, openai.APIError)


class ExtractionError(WorkshopError, ValueError):
    """Extraction was called in a way that cannot work (e.g. a client without a model name)."""


_WINDOW = r"(?P<value>mornings?|afternoons?|evenings?)"
_DELIVERIES = r"(?:deliveries|delivery|packages|parcels|orders)"
_UNTIL_SENTENCE_END = r"(?P<value>[^\n!?]+?)\s*(?=[.!?](?:\s|$)|\n|$)"

# (attribute, pattern). Case-insensitive. A pattern captures ``value``; the writer normalises it.
RULES: tuple[tuple[str, str], ...] = (
    # "I prefer deliveries in the morning", "I'd like my packages to arrive in the evenings"
    ("delivery_window", r"\bi(?:\s+would|'d)?\s+(?:prefer|like|want)\s+(?:my\s+|the\s+)?" + _DELIVERIES
     + r"\s+(?:to\s+(?:arrive|come)\s+)?(?:in\s+the\s+|during\s+the\s+|on\s+)?" + _WINDOW),
    # "Mornings work best for deliveries", "evenings suit me better for delivery"
    ("delivery_window", r"\b" + _WINDOW + r"\s+(?:work|works|suit|suits|are|is)\s+(?:me\s+)?"
     r"(?:best|better)\s+for\s+" + _DELIVERIES),
    # "actually, make that evenings" / "change it to the afternoon": only a time-of-day word counts
    ("delivery_window", r"\b(?:make|change|switch)\s+(?:that|it)\s+(?:to\s+)?(?:the\s+)?" + _WINDOW + r"\b"),
    # "my address is 12 Elm Street", "my new shipping address is ..." (up to the first ". ", so
    # "12 Elm St. Apt 4" yields "12 Elm St": a known limit of rules that the LLM extractor does not have)
    ("shipping_address", r"\bmy\s+(?:new\s+)?(?:shipping\s+|delivery\s+|home\s+)?address\s+is\s+(?:now\s+)?"
     + _UNTIL_SENTENCE_END),
    # "I switched my deliveries to evenings", "move the deliveries to the afternoon": a changed window
    ("delivery_window", r"\b(?:switch(?:ed)?|mov(?:e|ed)|chang(?:e|ed)|shift(?:ed)?|push(?:ed)?)\s+"
     r"(?:my\s+|the\s+|all\s+)?" + _DELIVERIES + r"\s+(?:over\s+)?to\s+(?:the\s+)?" + _WINDOW + r"\b"),
    # "I've moved to 9 Oak Avenue", "we now live at 40 Mill Lane": a new address worded without "my address";
    # only a street number makes it an address ("I moved to the evening shift" is none)
    ("shipping_address", r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|now\s+)?(?:moved|relocated)\s+"
     r"(?:house\s+)?to\s+(?=\d)" + _UNTIL_SENTENCE_END),
    ("shipping_address", r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+(?:now\s+)?(?:living|live|based)\s+(?:now\s+)?at\s+"
     r"(?=\d)" + _UNTIL_SENTENCE_END),
    # "switch my contact to text", "I changed my contact preference to email"
    ("preferred_contact", r"\b(?:switch(?:ed)?|chang(?:e|ed))\s+(?:my\s+)?contact(?:\s+preference)?\s+(?:over\s+)?to\s+"
     r"(?P<value>e-?mail|text(?:\s+messages?)?|sms|phone)\b"),
    # "contact me by email", "reach me via text"
    ("preferred_contact", r"\b(?:contact|reach|message)\s+me\s+(?:by|via|through|over|on)\s+"
     r"(?P<value>e-?mail|text(?:\s+messages?)?|sms|phone)\b"),
    # "I'm allergic to peanuts and shellfish" (a list splits into one candidate per item)
    ("allergy", r"\bi(?:'m|\s+am)\s+allergic\s+to\s+(?P<value>[a-z][a-z ,-]*?)"
     r"(?=\s*(?:[.;!?\n]|,?\s+(?:but|so)\b|$))"),
)
# What an assistant claims to have done: "I have updated your address to 9 Oak Ave."
CLAIM_RULE = (r"\bi(?:'ve|\s+have)\s+(?:updated|changed|set|saved)\s+your\s+"
              r"(?P<what>delivery\s+window|delivery\s+time|(?:shipping\s+)?address|contact\s+preference)"
              r"\s+to\s+" + _UNTIL_SENTENCE_END)
_CLAIMED = {"delivery window": "delivery_window", "delivery time": "delivery_window",
            "address": "shipping_address", "shipping address": "shipping_address",
            "contact preference": "preferred_contact"}
# A turn containing one of these cues marks its candidates as explicit corrections (written synchronously).
CORRECTION_CUES = (r"\b(?:actually|correction|scratch\s+that|instead|no\s+wait|(?:make|change|switch)\s+"
                   r"(?:that|it)|new\s+address|(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?:moved|relocated)|"
                   r"switched|changed|from\s+now\s+on|no\s+longer|any\s?more|now\s+live|"
                   r"(?:move|switch|change|shift)\s+(?:my|the|all)\s+(?:deliveries|delivery|contact))\b")
_LIST_SPLIT = re.compile(r"\s*(?:,\s*and\s+|,|\s+and\s+)\s*")

EXTRACTION_MAX_TOKENS = 600  # the reply's bound: a handful of facts fit easily; a runaway reply stops here
EXTRACTION_TIMEOUT = 60.0  # seconds the extraction request may take, whatever the client's own timeout


@dataclass
class Extraction:
    """Candidates from one turn, how they were found, and why any were dropped."""

    candidates: list[Candidate]
    method: str  # "rules", "llm" or "skipped"
    problems: list[str] = field(default_factory=list)


_source = source_of  # (source id, kind) of a role's words: helpers.facts.pipeline.source_of


def _find(text: str, rules: list[tuple[str, str]]) -> list[Found]:
    """What ``rules`` find in ``text``: each allergy of a list apart, the last mention of a key winning."""
    explicit = corrects(text)
    found: list[tuple[int, str, str, str]] = []
    for attribute, pattern in rules:
        for match in re.finditer(pattern, text, re.IGNORECASE):
            name = attribute or _CLAIMED[" ".join(match.group("what").lower().split())]
            values = _LIST_SPLIT.split(match.group("value")) if name == "allergy" else [match.group("value")]
            for value in filter(None, (v.strip() for v in values)):
                found.append((match.start(), name, value, match.group(0).strip()))
    latest: dict[tuple[str, str], Found] = {}
    for _, name, value, evidence in sorted(found, key=lambda item: item[0]):
        spec = DEFAULT_ATTRIBUTES[name]
        slot = spec.normalise(value) if spec.multi_valued else ""
        latest[(name, slot)] = Found(name, value, evidence, explicit)
    return list(latest.values())


def extract_with_rules(text: str, *, role: str, user_id: str, seq: int) -> list[Candidate]:
    """The offline extractor: ``RULES`` (and ``CLAIM_RULE`` for assistant turns); the last mention wins."""
    found = DELIVERY.claims(text) if role == "assistant" else DELIVERY.rules(text)
    return candidates_from(found, user_id=user_id, turn_id=seq, role=role)


def corrects(text: str) -> bool:
    """Do these words change something said before (``CORRECTION_CUES``: "actually", "make that", ...)?"""
    return re.search(CORRECTION_CUES, text, re.IGNORECASE) is not None


def delivery_set(attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES) -> AttributeSet:
    """The delivery and contact facts as an attribute set of the fact pipeline: ``RULES`` offline; for a
    model, the pipeline's one request with ``attributes`` described, a closed list (a reply naming any other
    attribute is rejected whole)."""
    return AttributeSet("delivery", dict(attributes), rules=lambda text: _find(text, list(RULES)),
                        claims=lambda text: _find(text, [*RULES, ("", CLAIM_RULE)]), corrects=corrects,
                        max_tokens=EXTRACTION_MAX_TOKENS, options={"temperature": 0, "timeout": EXTRACTION_TIMEOUT})


DELIVERY = delivery_set()  # the facts of notebook 10; notebook 09's campus facts are another set


def _extract_with_llm(client: Any, model: str, text: str, *, role: str, user_id: str, seq: int,
                      attributes: Mapping[str, AttributeSpec]) -> Extraction:
    extractor = ModelExtractor(delivery_set(attributes), user_id=user_id, client=client, model=model)
    try:
        reply = extractor.ask(seq, text)  # helpers.llm.client.chat, the one call path: server quirks
    except MODEL_REQUEST_ERRORS as err:  # a failed request: no candidates, one logged reason
        problems = [f"the extraction call failed ({type(err).__name__}: {err})"]
    else:
        try:
            found = extractor.read(reply, text)
        except ReplyFormatError as err:
            problems = err.problems
        else:
            return Extraction(candidates_from(found, user_id=user_id, turn_id=seq, role=role), "llm")
    for problem in problems:
        log.warning("fact extraction for %s turn %s dropped: %s", user_id, seq, problem)
    return Extraction([], "llm", problems)


def extract_candidates(turn: Mapping[str, Any], *, user_id: str, seq: int, client: Any = None,
                       model: str | None = None, attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES,
                       save_user_messages_to_memory: bool = True,
                       save_ai_messages_to_memory: bool = False) -> Extraction:
    """Candidates from one ``{"role", "content"}`` turn: a model if ``client`` is given, else the rules."""
    role, text = turn.get("role"), turn.get("content")
    if role not in ("user", "assistant") or not isinstance(text, str):
        return Extraction([], "skipped", [f"only user and assistant turns with text are extracted (got role "
                                          f"{role!r}); write tool results directly as "
                                          "Candidate(source_kind='tool')"])
    if role == "user" and not save_user_messages_to_memory:
        return Extraction([], "skipped", ["user messages are not saved (save_user_messages_to_memory=False)"])
    if role == "assistant" and not save_ai_messages_to_memory:
        return Extraction([], "skipped", ["raw assistant messages are not saved "
                                          "(save_ai_messages_to_memory=False)"])
    if client is not None:
        if not model:
            raise ExtractionError("extract_candidates(client=...) also needs model='...' (the chat model to "
                                  "ask)")
        return _extract_with_llm(client, model, text, role=role, user_id=user_id, seq=seq,
                                 attributes=attributes)
    return Extraction(extract_with_rules(text, role=role, user_id=user_id, seq=seq), "rules")


@dataclass
class IngestReport:
    """What happened to one turn: extraction, decisions committed now, and futures for queued candidates.

    ``queued`` candidates are not durable until their futures resolve (see ``BackgroundWriter``).
    """

    extraction: Extraction
    written: list[FactDecision]
    queued: list["Future[FactDecision]"]


def ingest_turn(memory: FactMemory, turn: Mapping[str, Any], *, user_id: str, seq: int | None = None,
                background: BackgroundWriter | None = None, **options: Any) -> IngestReport:
    """Extract a turn; corrections (and everything, without ``background``) are committed before returning.

    The candidates' version is ``seq`` when given (the caller's own ever-growing number for this event: the
    same on a retry), else one reserved from ``memory`` for this turn (see the module).

    With a ``PersistentSession``, call it once the turn is saved - as ``ChatUI(on_turn=...)`` does (it
    runs only after the save) - so a turn that was refused ("Not saved") writes no facts.
    """
    extraction = extract_candidates(turn, user_id=user_id, seq=0 if seq is None else seq, **options)
    if seq is None and extraction.candidates:
        versions: dict[str, int] = {}
        for candidate in extraction.candidates:
            if candidate.source_id not in versions:
                versions[candidate.source_id] = memory.reserve_version(user_id, candidate.source_id)
            candidate.source_version = versions[candidate.source_id]
    queued = [c for c in extraction.candidates if background is not None and not c.explicit_correction]
    now_items = [c for c in extraction.candidates if all(c is not q for q in queued)]
    written = memory.write_many(now_items) if now_items else []
    return IngestReport(extraction, written, [background.submit(c) for c in queued] if background else [])

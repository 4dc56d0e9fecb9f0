"""Profile extraction (lesson 09): what of a user's message is a fact about themselves.

The campus facts are one attribute set of the fact pipeline (``helpers.facts.pipeline``: a turn in,
candidates out), ``CAMPUS``: open-ended, so "my locker number is 4471" defines the attribute
``locker number``; notebook 10's delivery and contact facts are another (``helpers.facts.extract``).
``ProfileMemory`` (``helpers.memory.profile``) runs its ``RuleExtractor`` or ``ModelExtractor``. Two
extractors produce the same items, ``{"key": ..., "topic": ..., "value": ...}`` (a candidate's attribute
is ``attribute_label(key, topic)``):

- ``extract_with_rules`` (the default for the offline stand-in): ``"my <attribute> is|are <value>"``
  plus the profile rules for names, diets, schedules, preferences and goals (``helpers.profile_rules``,
  which the stand-in's profile extractor reads too), both applied only to ``stated_parts``: a question
  is never a statement of fact, so "Can you call me Cal?" names nobody;
- ``extract_with_model``: sends ``extraction_request`` with ``response_format={"type": "json_object"}``;
  ``parse_profile_reply`` rejects, whole, a reply that is not exactly
  ``{"facts": [{"key", "topic", "value"}]}`` (``ProfileFormatError``).
"""
from __future__ import annotations

import json
import re
from typing import Any

from helpers.context_format import ASSISTANT_REPLIED, PROFILE_EXTRACTOR, USER_SAID, task_intro, write_section
from helpers.facts.pipeline import AttributeSet, Found, ModelExtractor, ReplyFormatError
from helpers.facts.schema import AttributeSpec
from helpers.memory.recall import is_question, is_substantive
from helpers.profile_rules import profile_facts

EXTRACTOR_PROMPT = (
    f"{task_intro(PROFILE_EXTRACTOR)}. From the {USER_SAID} section only, list facts the user states about "
    "themselves. key is a short label for what the fact is about ('name', 'goal', 'preference', "
    "'constraint', 'locker number', 'advisor', ...); topic narrows it (use the key again when nothing "
    "narrower fits, for example 'diet' under 'constraint'); value is copied word for word from the user's "
    "message. Never use the assistant's words. "
    'Reply with JSON only, exactly: {"facts": [{"key": "...", "topic": "...", "value": "..."}]} '
    "(an empty list when there are none)."
)
MAX_VALUE_CHARS = 200
EXTRACTION_MAX_TOKENS = 400  # the reply's bound: a few short facts; a weak model's runaway reply stops here
MAX_LABEL_CHARS = 60
# "my <one to four words> is|are <value>": the value runs to the end of the sentence or clause
_MY_ATTRIBUTE = re.compile(r"\bmy\s+((?:[a-z][\w'-]*\s+){0,3}?[a-z][\w'-]*)\s+(?:is|are|was)\s+"
                           r"(?:now\s+|still\s+)?"
                           r"([^,;!?]+?)\s*(?=,\s*(?:by the way|btw|and|but|so)\b|[.;!?]|$)", re.I)
_NOT_ATTRIBUTES = {"name"}  # covered by the profile rules' name rule, which knows "call me ..."
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Mt|No)\.(?=\s)")
_DOT = "\u2024"  # stands in for an abbreviation's full stop while sentences are split
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_BREAK = re.compile(r"\s*[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]\s*")  # what str.splitlines splits at
_TAIL_WORDS = re.compile(r"(?:\s+(?:now|instead|these days|too|as well|anymore|again|then))+$", re.I)
_LEAD_WORDS = re.compile(r"^(?:(?:actually|also|now|so|and|oh|btw|quick note|just so you know)[,:]?\s+)+",
                         re.I)


class ProfileFormatError(ReplyFormatError):
    """An extraction reply was not the strict JSON shape; it is rejected and nothing is merged."""


def attribute_label(key: str, topic: str) -> str:
    """The fact store's attribute name: ``key``, or ``key/topic`` when the topic narrows it."""
    return key if topic in (key, "") else f"{key}/{topic}"


def split_label(label: str) -> tuple[str, str]:
    """``attribute_label``'s inverse: ``"constraint/diet"`` -> ``("constraint", "diet")``, ``"name"`` -> twice."""
    key, _, topic = label.partition("/")
    return key, topic or key


def _stated_runs(user_text: str) -> list[str]:
    """``stated_parts`` with each abbreviation's full stop still standing in as ``_DOT``."""
    kept = _ABBREVIATION.sub(lambda m: m.group(1) + _DOT, str(user_text or ""))  # "Dr. Varga" goes on
    runs: list[str] = []
    for line in _LINE_BREAK.split(kept):
        run: list[str] = []
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence and is_substantive(sentence) and not is_question(sentence):
                run.append(sentence)
                continue
            if run:  # a question or small talk ends a run
                runs.append(" ".join(run))
            run = []
        if run:
            runs.append(" ".join(run))
    return runs


def stated_parts(user_text: str) -> list[str]:
    """What of a user's message states something: runs of its sentences that are neither questions nor small talk.

    Sentences end at ".", "!" or "?" (not after "Dr.", "St.", ...) and at a line break; a
    question or an acknowledgement between two statements separates them, so a value can never be
    pieced together across a question. A message that is a question has no stated parts.
    """
    return [run.replace(_DOT, ".") for run in _stated_runs(user_text)]


def extract_with_rules(user_text: str) -> list[dict]:
    """Profile items from the user's statements by rule: the profile rules plus "my <attribute> is <value>".

    Questions and small talk are left out first (``stated_parts``): a question is never a statement of fact.
    """
    runs = _stated_runs(user_text)
    if not runs:
        return []
    said = "\n".join(run.replace(_DOT, ".") for run in runs)  # one line per run: no rule reads across two
    items = profile_facts(said)  # helpers.profile_rules: the rules the stand-in's profile extractor reads too
    seen = {(item["key"], item["topic"]) for item in items}
    for sentence in (piece for run in runs for piece in _SENTENCE_END.split(run)):
        for match in _MY_ATTRIBUTE.finditer(sentence):
            attribute = " ".join(match.group(1).lower().split())
            value = _LEAD_WORDS.sub("", " ".join(match.group(2).split())).strip(" '\"")
            value = _TAIL_WORDS.sub("", value).replace(_DOT, ".")
            if attribute in _NOT_ATTRIBUTES or not value or (attribute, attribute) in seen:
                continue
            seen.add((attribute, attribute))
            items.append({"key": attribute, "topic": attribute, "value": value})
    return items


def extraction_request(turn_id: int, user_text: str, assistant_text: str = "",
                       max_reply_chars: int = 600) -> list[dict]:
    """The model extractor's request for one turn: the user's words, the reply only as context."""
    body = write_section(USER_SAID, user_text, f"turn {turn_id}")  # helpers.context_format: the sections
    if assistant_text:
        clipped = " ".join(assistant_text.split())[:max_reply_chars]
        body += "\n\n" + write_section(ASSISTANT_REPLIED, clipped, "context only, never a source of facts")
    return [{"role": "system", "content": EXTRACTOR_PROMPT}, {"role": "user", "content": body}]


def parse_profile_reply(text: str) -> list[dict]:
    """The fact items of a reply, or ProfileFormatError naming what is wrong (strict: no partial result)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ProfileFormatError(f"reply is not JSON ({exc}); got {str(text)[:80]!r}") from None
    if not isinstance(data, dict) or set(data) != {"facts"} or not isinstance(data["facts"], list):
        raise ProfileFormatError('reply must be exactly {"facts": [...]}; got ' + str(text)[:80])
    for i, item in enumerate(data["facts"]):
        if not isinstance(item, dict) or set(item) != {"key", "topic", "value"}:
            raise ProfileFormatError(f"fact {i} must have exactly key, topic and value; got {item!r}")
        if not all(isinstance(item[k], str) and item[k].strip() for k in ("key", "topic", "value")):
            raise ProfileFormatError(f"fact {i} has an empty or non-text field: {item!r}")
        if len(item["key"]) > MAX_LABEL_CHARS or len(item["topic"]) > MAX_LABEL_CHARS or "/" in item["key"]:
            raise ProfileFormatError(f"fact {i}: key and topic must be short labels without '/' "
                                     f"(at most {MAX_LABEL_CHARS} characters); got {item!r}")
        if len(item["value"]) > MAX_VALUE_CHARS:
            raise ProfileFormatError(f"fact {i} value is longer than {MAX_VALUE_CHARS} characters")
    return data["facts"]


def extract_with_model(turn_id: int, user_text: str, assistant_text: str = "", *, client: Any = None,
                       settings: Any = None, model: str | None = None,
                       max_reply_chars: int = 600) -> list[dict]:
    """Profile items from one turn, asked of the model as strict JSON (else ``ProfileFormatError``).

    The request is the campus set's, sent by the fact pipeline's ``ModelExtractor``."""
    extractor = ModelExtractor(campus_set(max_reply_chars), client=client, settings=settings, model=model)
    return parse_profile_reply(extractor.ask(turn_id, user_text, assistant_text) or "")


def _found(items: list[dict]) -> list[Found]:
    return [Found(attribute_label(item["key"], item["topic"]), item["value"]) for item in items]


def campus_set(max_reply_chars: int = 600) -> AttributeSet:
    """The campus facts as an attribute set of the fact pipeline: ``extract_with_rules`` offline, and for a
    model ``extraction_request`` (the reply clipped to ``max_reply_chars``) read by ``parse_profile_reply``.
    Open-ended: any attribute the user's words name is defined when first written."""
    return AttributeSet(
        "campus", CAMPUS_ATTRIBUTES, rules=lambda text: _found(extract_with_rules(text)),
        request=lambda turn_id, user_text, assistant_text="": extraction_request(turn_id, user_text, assistant_text,
                                                                                 max_reply_chars),
        read_reply=lambda text: _found(parse_profile_reply(text)), open=True, max_tokens=EXTRACTION_MAX_TOKENS)


CAMPUS_ATTRIBUTES = {spec.name: spec for spec in (
    AttributeSpec("name", description="what the user is called"),
    AttributeSpec("goal", description="what the user is aiming for"),
    AttributeSpec("constraint/diet", description="what the user eats or does not"),
    AttributeSpec("constraint/allergy", description="an allergy the user mentioned"),
)}  # and any other attribute a statement names: "locker number", "constraint/schedule", "preference/stop"
CAMPUS = campus_set()  # the facts of notebook 09; notebook 10's delivery and contact facts are another set

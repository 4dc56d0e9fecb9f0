"""Profile extraction (lesson 09): what of a user's message is a fact about themselves.

Two extractors produce the same items, ``{"key": ..., "topic": ..., "value": ...}``, which
``helpers.memory.profile`` writes to the fact store:

- ``extract_with_rules`` (the default for the offline stand-in): ``"my <attribute> is|are <value>"``
  plus the stand-in's documented rules for names, diets, schedules, preferences and goals
  (``extract_profile_facts``), both applied only to ``stated_parts``: a question is never a
  statement of fact, so "Can you call me Cal?" names nobody;
- ``extract_with_model``: sends ``extraction_request`` with ``response_format={"type": "json_object"}``;
  ``parse_profile_reply`` rejects, whole, a reply that is not exactly
  ``{"facts": [{"key", "topic", "value"}]}`` (``ProfileFormatError``).
"""
from __future__ import annotations

import json
import re
from typing import Any

from helpers.client import chat, get_settings
from helpers.errors import WorkshopError
from helpers.memory.recall import is_question, is_substantive
from helpers.standin.tasks import extract_profile_facts

EXTRACTOR_PROMPT = (
    "You are a profile extractor. From the USER SAID section only, list facts the user states about "
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
_NOT_ATTRIBUTES = {"name"}  # covered by the stand-in's name rule, which knows "call me ..."
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Mt|No)\.(?=\s)")
_DOT = "\u2024"  # stands in for an abbreviation's full stop while sentences are split
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_BREAK = re.compile(r"\s*[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]\s*")  # what str.splitlines splits at
_TAIL_WORDS = re.compile(r"(?:\s+(?:now|instead|these days|too|as well|anymore|again|then))+$", re.I)
_LEAD_WORDS = re.compile(r"^(?:(?:actually|also|now|so|and|oh|btw|quick note|just so you know)[,:]?\s+)+",
                         re.I)


class ProfileFormatError(WorkshopError, ValueError):
    """An extraction reply was not the strict JSON shape; it is rejected and nothing is merged."""


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
    """Profile items from the user's statements by rule: the stand-in's rules plus "my <attribute> is <value>".

    Questions and small talk are left out first (``stated_parts``): a question is never a statement of fact.
    """
    runs = _stated_runs(user_text)
    if not runs:
        return []
    said = "\n".join(run.replace(_DOT, ".") for run in runs)  # one line per run: no rule reads across two
    items = [item for item in extract_profile_facts(f"USER SAID:\n{said}")["facts"]]
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
    body = f"USER SAID (turn {turn_id}):\n{user_text}"
    if assistant_text:
        clipped = " ".join(assistant_text.split())[:max_reply_chars]
        body += f"\n\nASSISTANT REPLIED (context only, never a source of facts):\n{clipped}"
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
    """Profile items from one turn, asked of the model as strict JSON (else ``ProfileFormatError``)."""
    model = model or (settings or get_settings()).chat_model
    response = chat(extraction_request(turn_id, user_text, assistant_text, max_reply_chars), client=client,
                    settings=settings, model=model, response_format={"type": "json_object"},
                    max_tokens=EXTRACTION_MAX_TOKENS)
    return parse_profile_reply(response.choices[0].message.content or "")

"""Profile extraction (lesson 09): what of a user's message is a fact about themselves.

The campus facts are one attribute set of the fact pipeline (``helpers.facts.pipeline``: a turn in,
candidates out), ``CAMPUS``: open-ended, so "my locker number is 4471" defines the attribute
``locker number``; notebook 10's delivery and contact facts are another (``helpers.facts.extract``).
``ProfileMemory`` (``helpers.memory.profile``) runs its ``RuleExtractor`` or ``ModelExtractor``. Two
extractors produce the same items, ``{"key": ..., "topic": ..., "value": ...}`` (a candidate's attribute
is ``attribute_label(key, topic)``: ``name``, ``locker number``, ``constraint/diet``):

- ``extract_with_rules`` (the default for the offline stand-in): ``"my <attribute> is|are <value>"``
  plus the profile rules for names, diets, schedules, preferences and goals (``helpers.core.profile_rules``,
  which the stand-in's fact extractor reads too), both applied only to ``stated_parts``: a question
  is never a statement of fact, so "Can you call me Cal?" names nobody;
- ``extract_with_model``: sends the fact pipeline's one request for this set (``CAMPUS.request``: its
  attributes listed, open to new ones) with ``response_format={"type": "json_object"}``;
  ``parse_profile_reply`` reads the reply as every domain's is read (``helpers.facts.pipeline.read_reply``)
  and rejects it whole (``ProfileFormatError``) unless it is exactly
  ``{"facts": [{"attribute": ..., "value": ..., "evidence": ...}]}`` with each attribute a label, the
  key and topic joined by ``/`` when a topic narrows it (``constraint/diet``).
"""
from __future__ import annotations

import re
from typing import Any

from helpers.core.context_format import read_fact_label, write_fact_label  # the label's owner
from helpers.facts.pipeline import AttributeSet, Found, ModelExtractor, ReplyFormatError
from helpers.facts.schema import AttributeSpec
from helpers.memory.recall import is_question, is_substantive
from helpers.core.profile_rules import stated_facts, without_reported_speech

EXTRACTION_MAX_TOKENS = 400  # the reply's bound: a few short facts; a weak model's runaway reply stops here
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Mt|No)\.(?=\s)")
_DOT = "\u2024"  # stands in for an abbreviation's full stop while sentences are split
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_BREAK = re.compile(r"\s*[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]\s*")  # what str.splitlines splits at


class ProfileFormatError(ReplyFormatError):
    """An extraction reply was not the strict JSON shape; it is rejected and nothing is merged."""


attribute_label = write_fact_label  # (key, topic) -> the fact store's attribute: "name", "constraint/diet"
split_label = read_fact_label  # its inverse: "constraint/diet" -> ("constraint", "diet"), "name" -> twice


def _stated_runs(user_text: str) -> list[str]:
    """``stated_parts`` with each abbreviation's full stop still standing in as ``_DOT``."""
    kept = _ABBREVIATION.sub(lambda m: m.group(1) + _DOT, str(user_text or ""))  # "Dr. Varga" goes on
    runs: list[str] = []
    for line in _LINE_BREAK.split(kept):
        run: list[str] = []
        for sentence in _SENTENCE_END.split(line.strip()):
            sentence = " ".join(without_reported_speech(sentence).split())  # another's words are not theirs
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
    pieced together across a question. A message that is a question has no stated parts. Another person's
    reported or quoted words ("my sister said her birthday is in May") are left out of every sentence
    (``helpers.core.profile_rules.without_reported_speech``): they state nothing about the user.
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
    pieces = (piece for run in runs for piece in _SENTENCE_END.split(run))  # "Dr. Varga" stays in one piece
    # helpers.core.profile_rules: the rules the stand-in's fact extractor reads too
    return [{**item, "value": item["value"].replace(_DOT, ".")} for item in stated_facts(said, pieces)]


def parse_profile_reply(text: Any) -> list[dict]:
    """The profile items of a model's reply, read strictly as the campus set's (``CAMPUS.read_reply``), or
    ProfileFormatError naming what is wrong (no partial result)."""
    return _items(CAMPUS.read_reply(text))


def extract_with_model(turn_id: int, user_text: str, assistant_text: str = "", *, client: Any = None,
                       settings: Any = None, model: str | None = None,
                       max_reply_chars: int = 600) -> list[dict]:
    """Profile items from one turn, asked of the model as strict JSON (else ``ProfileFormatError``).

    The request is the campus set's (the assistant's reply clipped to ``max_reply_chars``), sent by the fact
    pipeline's ``ModelExtractor``."""
    extractor = ModelExtractor(campus_set(max_reply_chars), client=client, settings=settings, model=model)
    return _items(extractor.read(extractor.ask(turn_id, user_text, assistant_text)))


def _found(items: list[dict]) -> list[Found]:
    return [Found(attribute_label(item["key"], item["topic"]), item["value"]) for item in items]


def _items(found: list[Found]) -> list[dict]:
    return [dict(zip(("key", "topic"), split_label(f.attribute)), value=f.value) for f in found]


def campus_set(max_reply_chars: int = 600) -> AttributeSet:
    """The campus facts as an attribute set of the fact pipeline: ``extract_with_rules`` offline, and for a
    model the pipeline's one request (the assistant's reply clipped to ``max_reply_chars``) and reader.
    Open-ended: any attribute the user's words name is defined when first written."""
    return AttributeSet("campus", CAMPUS_ATTRIBUTES, rules=lambda text: _found(extract_with_rules(text)), open=True,
                        max_tokens=EXTRACTION_MAX_TOKENS, context_chars=max_reply_chars, error=ProfileFormatError)


CAMPUS_ATTRIBUTES = {spec.name: spec for spec in (
    AttributeSpec("name", description="what the user is called"),
    AttributeSpec("goal", description="what the user is aiming for"),
    AttributeSpec("constraint/diet", description="what the user eats or does not"),
    AttributeSpec("constraint/allergy", description="an allergy the user mentioned"),
)}  # and any other attribute a statement names: "locker number", "constraint/schedule", "preference/stop"
CAMPUS = campus_set()  # the facts of notebook 09; notebook 10's delivery and contact facts are another set

"""What a fact candidate must be before the writer decides anything about it (notebook 10).

A ``Candidate`` is a claim with its provenance. ``check_candidate`` turns it into a
``CheckedCandidate`` - ids in the canonical form every store uses (``helpers.core.ids``: NFKC, stripped), the value's identity computed by its
``AttributeSpec``, the key built - or into a list of problems. A candidate with problems is
audited as ``rejected`` and never stored; that includes anything no backend can store (a NUL
character, a lone surrogate, a version of 2**63 or more, a key too long for an index).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping

from helpers.facts.fact_store import SOURCE_KINDS, LockKey, Statement
from helpers.core.ids import canonical_id, id_problem

MAX_VALUE_CHARS, MAX_NAME_CHARS, MAX_EVIDENCE_CHARS = 300, 200, 2000
MAX_VERSION = 2**63 - 1  # the largest SQLite INTEGER and PostgreSQL BIGINT
MAX_KEY_BYTES = 2000  # a key's UTF-8 size; PostgreSQL refuses btree index entries over 2704 bytes
PREVIEW_CHARS, REASON_CHARS = 300, 1000  # what an audit row keeps of a rejected input, and of a reason
UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # NUL (PostgreSQL text cannot hold it); lone surrogates
_JOINERS = re.compile(r"[-'\u2019\u2018`]")
_PUNCTUATION = re.compile(r"[^\w\s]|_")


def normalise_text(value: str) -> str:
    """Case-fold (NFKC), drop hyphens and apostrophes, turn other punctuation into spaces, collapse spaces."""
    text = _JOINERS.sub("", unicodedata.normalize("NFKC", value).casefold())
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def normalise_id(value: str) -> str:
    """An id as every store keys it: ``helpers.core.ids.canonical_id`` (NFKC, surrounding whitespace removed).

    The session stores key user and session ids by the same function, so 'ada ', 'Zoe\u0308' / 'Zo\u00eb'
    and full-width '\uff41\uff44\uff41' name one user in both; case is kept ('Ada' is another user).
    """
    return canonical_id(value)


def storable_preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` as an audit row can store it: cut at ``limit`` with a marker, NUL and surrogates escaped."""
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters not stored]"
    return UNSTORABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def shown(value: Any, limit: int = 60) -> str:
    """repr() of a rejected input for a message: short, storable, and never an exception of its own."""
    try:
        text = repr(value)
    except Exception:  # an int too long to print, a broken __repr__ ...
        text = f"<{type(value).__name__} that cannot be printed>"
    return storable_preview(text, limit)


@dataclass(frozen=True)
class AttributeSpec:
    """How one attribute is keyed and normalised: text, then ``words`` one by one, then whole ``phrases``."""

    name: str
    multi_valued: bool = False
    allowed: frozenset[str] | None = None
    phrases: Mapping[str, str] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)
    description: str = ""

    def normalise(self, value: str) -> str:
        """The value's identity, e.g. 'In the mornings.' -> 'morning' for delivery_window."""
        text = normalise_text(value)
        if self.words:
            text = " ".join(self.words.get(word, word) for word in text.split())
        return self.phrases.get(text, text)


def _window_phrases() -> dict[str, str]:
    """'mornings', 'in the morning', 'morning deliveries' ... -> 'morning' (same for afternoon, evening)."""
    table = {"am": "morning", "before noon": "morning", "after work": "evening"}
    for window in ("morning", "afternoon", "evening"):
        for form in (window, window + "s"):
            for lead in ("", "the ", "in the ", "during the "):
                table[lead + form] = window
            table[form + " delivery"] = table[form + " deliveries"] = window
    return table


DEFAULT_ATTRIBUTES: dict[str, AttributeSpec] = {spec.name: spec for spec in (
    AttributeSpec("delivery_window", allowed=frozenset({"morning", "afternoon", "evening"}),
                  phrases=_window_phrases(), description="when the customer wants deliveries to arrive"),
    AttributeSpec("shipping_address", words={"street": "st", "avenue": "ave", "road": "rd",
                                             "apartment": "apt", "drive": "dr", "suite": "ste",
                                             "boulevard": "blvd"},
                  description="where orders are shipped"),
    AttributeSpec("preferred_contact", allowed=frozenset({"email", "sms", "phone"}),
                  phrases={"mail": "email", "text": "sms", "texts": "sms", "text message": "sms",
                           "text messages": "sms", "call": "phone", "calls": "phone", "phone call": "phone",
                           "telephone": "phone"},
                  description="how the customer wants to be contacted"),
    AttributeSpec("allergy", multi_valued=True,
                  description="an allergy the customer mentioned (many allowed)"),
)}


@dataclass
class Candidate:
    """A claim waiting for a decision, with its provenance (``explicit_correction`` only routes it)."""

    user_id: str
    subject: str
    attribute: str
    value: str
    source_id: str
    source_kind: str = "user"
    source_version: int = 0
    evidence: str = ""
    explicit_correction: bool = False


@dataclass(slots=True)
class CheckedCandidate(Statement):
    """A candidate that passed the schema: ids normalised, its value's identity (``value_key``), its key."""

    source_version: int
    evidence: str
    value_key: str
    key: LockKey


FIELDS = ("user_id", "subject", "attribute", "value", "source_id", "source_kind", "source_version",
          "evidence")
_ID_FIELDS = ("user_id", "subject", "source_id")
_LIMITS = (("user_id", MAX_NAME_CHARS), ("subject", MAX_NAME_CHARS), ("attribute", MAX_NAME_CHARS),
           ("value", MAX_VALUE_CHARS), ("source_id", MAX_NAME_CHARS))


def _unstorable(name: str, text: str) -> str:
    found = UNSTORABLE.search(text)
    what = "a NUL character" if found.group() == "\x00" else "a lone surrogate (not valid UTF-8)"
    return f"{name} contains {what} at character {found.start()}, which no database can store; remove it"


def _text_problems(raw: Mapping[str, Any]) -> list[str]:
    """Problems with the text fields: present, not blank, within their limits, storable."""
    problems, texts = [], {}
    for name, limit in _LIMITS:
        text = raw.get(name)
        if name in _ID_FIELDS:  # ids follow the one rule every store uses (helpers/core/ids.py)
            problem = id_problem(text, name)
            if problem is None or (isinstance(text, str) and UNSTORABLE.search(text)):
                texts[name] = text  # an unstorable character is named below, with its position
            else:
                problems.append(problem)
            continue
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{name} must be a non-empty string (got {shown(text)})")
        elif len(text) > limit:
            problems.append(f"{name} is {len(text)} characters; the limit is {limit}")
        else:
            texts[name] = text
    evidence = raw.get("evidence", "")
    if not isinstance(evidence, str) or len(evidence) > MAX_EVIDENCE_CHARS:
        problems.append(f"evidence must be a string of at most {MAX_EVIDENCE_CHARS} characters")
    else:
        texts["evidence"] = evidence
    if UNSTORABLE.search("".join(texts.values())):  # one search; then name the fields that hold it
        problems += [_unstorable(name, text) for name, text in texts.items() if UNSTORABLE.search(text)]
    return problems


def check_candidate(candidate: Candidate | Mapping[str, Any],
                    attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES,
                    ) -> tuple[CheckedCandidate | None, list[str]]:
    """Validate a candidate against the schema: (checked candidate, []) or (None, problems)."""
    if isinstance(candidate, Candidate):
        raw: Mapping[str, Any] = vars(candidate)
        problems = []
    elif isinstance(candidate, Mapping):
        raw = candidate
        problems = [f"unexpected field {shown(name)}" for name in raw
                    if name not in FIELDS + ("explicit_correction",)]
    else:
        return None, [f"expected a Candidate or a mapping, got {type(candidate).__name__}"]
    problems += _text_problems(raw)
    kind, version = raw.get("source_kind", "user"), raw.get("source_version", 0)
    if kind not in SOURCE_KINDS:
        problems.append(f"source_kind must be one of {', '.join(SOURCE_KINDS)} (got {shown(kind)})")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_VERSION:
        problems.append(f"source_version must be a whole number from 0 to 2**63 - 1 (got {shown(version)})")
    attribute, value = raw.get("attribute"), raw.get("value")
    spec = attributes.get(attribute.strip()) if isinstance(attribute, str) else None
    if spec is None and isinstance(attribute, str) and attribute.strip():
        problems.append(f"unknown attribute {shown(attribute)}; known: {', '.join(sorted(attributes))}")
    value_key = ""
    readable = (isinstance(value, str) and value.strip() and len(value) <= MAX_VALUE_CHARS
                and not UNSTORABLE.search(value))
    if spec is not None and readable:
        value_key = spec.normalise(value)
        if not value_key:
            problems.append(f"value {value!r} has no letters or digits")
        elif spec.allowed is not None and value_key not in spec.allowed:
            choices = ", ".join(sorted(spec.allowed))
            problems.append(f"{value!r} is not a {spec.name} (expected one of {choices})")
    if problems:
        return None, problems
    user_id, subject = normalise_id(raw["user_id"]), normalise_id(raw["subject"])
    key = (user_id, subject, spec.name, value_key if spec.multi_valued else "")
    size = len("".join(key).encode())
    if size > MAX_KEY_BYTES:
        parts = "user_id, subject, attribute" + (" and normalised value" if spec.multi_valued else "")
        return None, [f"the key ({parts}) is {size} bytes in UTF-8; the limit is {MAX_KEY_BYTES}: "
                      "shorten the ids"]
    return CheckedCandidate(user_id, subject, spec.name, value.strip(), normalise_id(raw["source_id"]), kind,
                            version, raw.get("evidence", ""), value_key, key), []


def rejected_fields(candidate: Any) -> dict[str, Any]:
    """What a malformed candidate held, as an audit row can always store it (previews, a usable version)."""
    raw = vars(candidate) if isinstance(candidate, Candidate) else {}
    raw = candidate if isinstance(candidate, Mapping) else raw
    held: dict[str, Any] = {}
    for name in FIELDS[:-1]:  # every field but evidence
        try:
            item = raw.get(name)
        except Exception:  # a mapping that fails to answer is shown as empty
            item = None
        if name == "source_version":
            held[name] = item if type(item) is int and 0 <= item <= MAX_VERSION else None
        elif isinstance(item, str):
            is_id = name in ("user_id", "subject", "source_id")
            held[name] = storable_preview(normalise_id(item) if is_id else item)
        else:
            held[name] = "" if item is None else shown(item, PREVIEW_CHARS)
    return held

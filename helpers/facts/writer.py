"""Durable facts with a reconciling write path (lesson 10): candidate -> explicit decision -> audited change.

``FactMemory.write(candidate)`` looks up what is stored about the same key and commits one
``Decision`` (``insert``, ``noop``, ``correction``, ``conflict`` or ``rejected``) together with
its audit row, in one transaction. The rules, in the order they are checked:

1. A candidate that fails the schema is ``rejected`` for repair: audited, never stored. This
   includes anything no backend can store (a NUL character, a lone surrogate, a version of
   2**63 or more, a key too long for an index); one bad candidate never costs the rest of a
   batch. The audit row keeps a capped, escaped preview of what was rejected.
2. A source is identified by ``source_id``; its claims carry a ``source_version`` that only grows.
   A version not newer than one already recorded for the key (a queue retry, a replay, a late
   arrival) is a ``noop``: arrival order alone never decides, and support never grows. For a
   user or tool claim only that source's own user/tool provenance counts, so an assistant claim
   filed under the same ``source_id`` never makes the user's statements look stale.
3. An ``assistant`` proposal is not evidence: it is stored as ``ineligible`` (outcome
   ``rejected``) until a user statement or tool result states the same value. When it repeats a
   live value it is a ``noop``, but its version is recorded, so replaying it later is a ``noop`` too.
4. The same value (after ``AttributeSpec.normalise``) from the same source is a ``noop``.
   From an independent source it attaches provenance: outcome ``insert``, support + 1.
5. A new value from a source that alone backed the old one is a ``correction``: the old value
   is ``superseded`` (kept as history).
6. A new value that another authoritative source still backs a rival of is a ``conflict``:
   every rival value is held for review, out of ``active_facts``, until ``resolve(...)``.

Single-valued attributes are keyed by (user, subject, attribute); multi-valued ones add the
normalised value, so their values never compete. Everything is scoped by ``user_id``. Ids
(``user_id``, ``subject``, ``source_id``) are stripped and put in Unicode NFC, on write and on
read, so two spellings of one id (composed or decomposed accents, padding) are one key.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from helpers.clock import now
from helpers.errors import WorkshopError
from helpers.facts.store import (
    ACTIVE, CONFLICT, ELIGIBLE_KINDS, INELIGIBLE, SOURCE_KINDS, SUPERSEDED, AuditEntry, Changes, FactStore,
    FactTransaction, LockKey, Provenance, SQLiteFactStore, StoredFact,
)

INSERT, NOOP, CORRECTION, REJECTED = "insert", "noop", "correction", "rejected"
OUTCOMES = (INSERT, NOOP, CORRECTION, CONFLICT, REJECTED)
MAX_VALUE_CHARS, MAX_NAME_CHARS, MAX_EVIDENCE_CHARS = 300, 200, 2000
MAX_VERSION = 2**63 - 1  # the largest SQLite INTEGER and PostgreSQL BIGINT
MAX_KEY_BYTES = 2000  # a key's UTF-8 size; PostgreSQL refuses btree index entries over 2704 bytes
PREVIEW_CHARS, REASON_CHARS = 300, 1000  # what an audit row keeps of a rejected input, and of a reason
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # NUL (PostgreSQL text cannot hold it); lone surrogates


class FactMemoryError(WorkshopError, RuntimeError):
    """A fact-memory operation could not be done; the message says what to do instead."""


class FactResolutionError(FactMemoryError):
    """resolve() was asked to settle a conflict that does not exist, or with a value not in it."""


_JOINERS = re.compile(r"[-'\u2019\u2018`]")
_PUNCTUATION = re.compile(r"[^\w\s]|_")


def _ascii_table() -> dict[int, str | None]:
    """For ASCII text, the same edits as the two patterns above, as one str.translate table."""
    table: dict[int, str | None] = {}
    for code in range(128):
        char = chr(code)
        if _JOINERS.fullmatch(char):
            table[code] = None
        elif _PUNCTUATION.fullmatch(char):
            table[code] = " "
    return table


_ASCII_EDITS = _ascii_table()


def _normalise_unicode(value: str) -> str:
    text = _JOINERS.sub("", unicodedata.normalize("NFKC", value).casefold())
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def normalise_text(value: str) -> str:
    """Case-fold (NFKC), drop hyphens and apostrophes, turn other punctuation into spaces, collapse spaces."""
    if value.isascii():  # NFKC leaves ASCII alone and casefold() is lower(): one translate does the rest
        return " ".join(value.lower().translate(_ASCII_EDITS).split())
    return _normalise_unicode(value)


def normalise_id(value: str) -> str:
    """An id as the store keys it: stripped and in Unicode NFC (so 'Zoe\u0308' and 'Zo\u00eb' are one id)."""
    return unicodedata.normalize("NFC", value.strip())


def storable_preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` as an audit row can store it: cut at ``limit`` with a marker, NUL and surrogates escaped."""
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters not stored]"
    return _UNSTORABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _shown(value: Any, limit: int = 60) -> str:
    """repr() of a rejected input for a message: short, storable, and never an exception of its own."""
    try:
        text = repr(value)
    except Exception:  # an int too long to print, a broken __repr__ ...
        text = f"<{type(value).__name__} that cannot be printed>"
    return storable_preview(text, limit)


@dataclass(frozen=True, eq=False)
class AttributeSpec:
    """How one attribute is keyed and normalised: text, then ``words`` one by one, then whole ``phrases``."""

    name: str
    multi_valued: bool = False
    allowed: frozenset[str] | None = None
    phrases: Mapping[str, str] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)
    description: str = ""

    _memo: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def normalise(self, value: str) -> str:
        """The value's identity, e.g. 'In the mornings.' -> 'morning' for delivery_window."""
        key = self._memo.get(value)
        if key is None:
            text = " ".join(self.words.get(word, word) for word in normalise_text(value).split())
            key = self.phrases.get(text, text)
            if len(self._memo) >= 65536:  # a bounded memo: values repeat a lot, but not forever
                self._memo.clear()
            self._memo[value] = key
        return key


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
    AttributeSpec("shipping_address", words={"street": "st", "avenue": "ave", "road": "rd", "apartment": "apt",
                                             "drive": "dr", "suite": "ste", "boulevard": "blvd"},
                  description="where orders are shipped"),
    AttributeSpec("preferred_contact", allowed=frozenset({"email", "sms", "phone"}),
                  phrases={"mail": "email", "text": "sms", "texts": "sms", "text message": "sms",
                           "text messages": "sms", "call": "phone", "calls": "phone", "phone call": "phone",
                           "telephone": "phone"},
                  description="how the customer wants to be contacted"),
    AttributeSpec("allergy", multi_valued=True, description="an allergy the customer mentioned (many allowed)"),
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
class Decision:
    """What the writer did with one candidate, and why."""

    outcome: str
    reason: str
    user_id: str
    subject: str
    attribute: str
    value: str
    source_id: str
    source_kind: str
    source_version: int | None
    fact_id: int | None = None
    status: str | None = None
    support: int = 0
    superseded: tuple[int, ...] = ()

    def __str__(self) -> str:
        version = "" if self.source_version is None else f" v{self.source_version}"
        return f"{self.outcome:<10} {self.attribute}={self.value!r} ({self.source_id}{version}): {self.reason}"


@dataclass(slots=True)
class _Checked:
    """A candidate that passed the schema, with its value identity and key."""

    user_id: str
    subject: str
    attribute: str
    value: str
    source_id: str
    source_kind: str
    source_version: int
    evidence: str
    value_key: str
    key: LockKey

    def decide(self, outcome: str, reason: str, fact: StoredFact | None = None, status: str | None = None,
               support: int | None = None, superseded: tuple[int, ...] = ()) -> Decision:
        return Decision(outcome, reason, self.user_id, self.subject, self.attribute, self.value, self.source_id,
                        self.source_kind, self.source_version, fact.id if fact else None,
                        status or (fact.status if fact else None),
                        support if support is not None else (fact.support if fact else 0), superseded)


_FIELDS = ("user_id", "subject", "attribute", "value", "source_id", "source_kind", "source_version", "evidence")
_IDS = ("user_id", "subject", "source_id")
_LIMITS = (("user_id", MAX_NAME_CHARS), ("subject", MAX_NAME_CHARS), ("attribute", MAX_NAME_CHARS),
           ("value", MAX_VALUE_CHARS), ("source_id", MAX_NAME_CHARS))


def _unstorable(name: str, text: str) -> str:
    found = _UNSTORABLE.search(text)
    what = "a NUL character" if found.group() == "\x00" else "a lone surrogate (not valid UTF-8)"
    return f"{name} contains {what} at character {found.start()}, which no database can store; remove it"


def _key_problem(key: LockKey, multi_valued: bool) -> str | None:
    size = sum(len(part) if part.isascii() else len(part.encode()) for part in key)
    if size <= MAX_KEY_BYTES:
        return None
    parts = "user_id, subject, attribute" + (" and normalised value" if multi_valued else "")
    return f"the key ({parts}) is {size} bytes in UTF-8; the limit is {MAX_KEY_BYTES}: shorten the ids"


def check_candidate(candidate: Candidate | Mapping[str, Any],
                    attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES) -> tuple[_Checked | None, list[str]]:
    """Validate a candidate against the schema: (checked candidate, []) or (None, problems)."""
    if type(candidate) is Candidate:
        checked = _check_fast(candidate, attributes)
        if checked is not None:
            return checked, []
    if isinstance(candidate, Candidate):
        raw: Mapping[str, Any] = vars(candidate)
        problems = []
    elif isinstance(candidate, Mapping):
        raw = candidate
        problems = [f"unexpected field {_shown(name)}" for name in raw
                    if name not in _FIELDS + ("explicit_correction",)]
    else:
        return None, [f"expected a Candidate or a mapping, got {type(candidate).__name__}"]
    for name, limit in _LIMITS:
        text = raw.get(name)
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{name} must be a non-empty string (got {_shown(text)})")
        elif len(text) > limit:
            problems.append(f"{name} is {len(text)} characters; the limit is {limit}")
        elif _UNSTORABLE.search(text):
            problems.append(_unstorable(name, text))
    evidence, kind, version = raw.get("evidence", ""), raw.get("source_kind", "user"), raw.get("source_version", 0)
    if not isinstance(evidence, str) or len(evidence) > MAX_EVIDENCE_CHARS:
        problems.append(f"evidence must be a string of at most {MAX_EVIDENCE_CHARS} characters")
    elif _UNSTORABLE.search(evidence):
        problems.append(_unstorable("evidence", evidence))
    if kind not in SOURCE_KINDS:
        problems.append(f"source_kind must be one of {', '.join(SOURCE_KINDS)} (got {_shown(kind)})")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_VERSION:
        problems.append(f"source_version must be a whole number from 0 to 2**63 - 1 (got {_shown(version)})")
    attribute, value = raw.get("attribute"), raw.get("value")
    spec = attributes.get(attribute.strip()) if isinstance(attribute, str) else None
    if spec is None and isinstance(attribute, str) and attribute.strip():
        problems.append(f"unknown attribute {_shown(attribute)}; known: {', '.join(sorted(attributes))}")
    value_key = ""
    if (spec is not None and isinstance(value, str) and value.strip() and len(value) <= MAX_VALUE_CHARS
            and not _UNSTORABLE.search(value)):
        value_key = spec.normalise(value)
        if not value_key:
            problems.append(f"value {value!r} has no letters or digits")
        elif spec.allowed is not None and value_key not in spec.allowed:
            problems.append(f"{value!r} is not a {spec.name} (expected one of {', '.join(sorted(spec.allowed))})")
    if problems:
        return None, problems
    user_id, subject = normalise_id(raw["user_id"]), normalise_id(raw["subject"])
    key = (user_id, subject, spec.name, value_key if spec.multi_valued else "")
    too_long = _key_problem(key, spec.multi_valued)
    if too_long:
        return None, [too_long]
    return _Checked(user_id, subject, spec.name, value.strip(), normalise_id(raw["source_id"]), kind, version,
                    evidence, value_key, key), []


def _check_fast(c: Candidate, attributes: Mapping[str, AttributeSpec]) -> _Checked | None:
    """The same checks as check_candidate for a well-formed Candidate, without collecting problems."""
    spec = attributes.get(c.attribute) if type(c.attribute) is str else None
    user_id, subject, value, source_id = c.user_id, c.subject, c.value, c.source_id
    evidence, version, kind = c.evidence, c.source_version, c.source_kind
    if (spec is None or type(user_id) is not str or type(subject) is not str or type(value) is not str
            or type(source_id) is not str or type(evidence) is not str or type(version) is not int
            or not 0 <= version <= MAX_VERSION or kind not in SOURCE_KINDS
            or len(evidence) > MAX_EVIDENCE_CHARS or len(value) > MAX_VALUE_CHARS
            or len(user_id) > MAX_NAME_CHARS or len(subject) > MAX_NAME_CHARS
            or len(source_id) > MAX_NAME_CHARS or len(c.attribute) > MAX_NAME_CHARS):
        return None
    text = "".join((user_id, subject, value, source_id, evidence))
    if "\x00" in text or (not text.isascii() and _UNSTORABLE.search(text)):
        return None
    user_id, subject, value, source_id = normalise_id(user_id), normalise_id(subject), value.strip(), \
        normalise_id(source_id)
    value_key = spec.normalise(value) if value else ""
    if not (user_id and subject and source_id and value_key) or (spec.allowed is not None
                                                                 and value_key not in spec.allowed):
        return None
    name = spec.name
    key = (user_id, subject, name, value_key if spec.multi_valued else "")
    # at most 4 UTF-8 bytes per character: only a long key needs its bytes counted
    if len(user_id) + len(subject) + len(name) + len(key[3]) > MAX_KEY_BYTES // 4 and _key_problem(key, True):
        return None
    return _Checked(user_id, subject, name, value, source_id, kind, version, evidence, value_key, key)


def _rejected(candidate: Any, problems: list[str]) -> Decision:
    """The decision for a malformed candidate: what it held, as previews an audit row can always store."""
    raw = vars(candidate) if isinstance(candidate, Candidate) else candidate if isinstance(candidate, Mapping) else {}
    text: dict[str, str] = {}
    version = None
    for name in ("user_id", "subject", "attribute", "value", "source_id", "source_kind", "source_version"):
        try:
            item = raw.get(name)
        except Exception:  # a mapping that fails to answer is shown as empty
            item = None
        if name == "source_version":
            version = item if type(item) is int and 0 <= item <= MAX_VERSION else None
        elif isinstance(item, str):
            text[name] = storable_preview(normalise_id(item) if name in _IDS else item)
        else:
            text[name] = "" if item is None else _shown(item, PREVIEW_CHARS)
    reason = storable_preview("malformed candidate, not stored (repair and resubmit): " + "; ".join(problems),
                              REASON_CHARS)
    return Decision(REJECTED, reason, text["user_id"], text["subject"], text["attribute"], text["value"],
                    text["source_id"], text["source_kind"], version)


def _names(facts: Iterable[StoredFact]) -> str:
    return ", ".join(repr(f.value) for f in facts)


class _WorkingSet:
    """The keys of one transaction, loaded once; decisions change them here, then one save() stores it all."""

    def __init__(self, txn: FactTransaction, keys: Sequence[LockKey], at: str):
        self.txn, self.at = txn, at
        self.rows = txn.load_keys(keys)
        self.changes = Changes()
        self._touched: set[int] = set()

    def insert(self, c: _Checked, status: str, prov: Provenance) -> StoredFact:
        """A new fact for ``c``'s key with ``prov`` as its first provenance."""
        key, at, fact_id = c.key, self.at, self.txn.new_fact_id()
        fact = StoredFact(fact_id, *key, c.value, c.value_key, status, at, at, None, [prov])
        self.rows[key].append(fact)
        self.changes.new_facts.append(fact)
        self.changes.provenance.append(("put", fact_id, prov))
        self._touched.add(fact_id)
        return fact

    def set_status(self, fact: StoredFact, status: str, superseded_by: int | None = None) -> None:
        fact.status, fact.superseded_by, fact.updated_at = status, superseded_by, self.at
        if fact.id not in self._touched:
            self._touched.add(fact.id)
            self.changes.changed_facts.append(fact)

    def put(self, fact: StoredFact, prov: Provenance) -> None:
        for index, old in enumerate(fact.provenance):
            if old.source_id == prov.source_id:
                fact.provenance[index] = prov
                break
        else:
            fact.provenance.append(prov)
        self.changes.provenance.append(("put", fact.id, prov))

    def withdraw(self, fact: StoredFact, source_id: str) -> None:
        for prov in fact.provenance:
            if prov.source_id == source_id:
                prov.withdrawn_at = self.at
        self.changes.provenance.append(("withdraw", fact.id, source_id, self.at))


class FactMemory:
    """The reconciling writer plus review reads, over any FactStore (SQLite by default)."""

    def __init__(self, store: FactStore, *, attributes: Mapping[str, AttributeSpec] = DEFAULT_ATTRIBUTES):
        self.store = store
        self.attributes = dict(attributes)

    @classmethod
    def open(cls, path: str, **kwargs: Any) -> "FactMemory":
        """A FactMemory on the SQLite file at ``path`` (created and migrated if needed)."""
        return cls(SQLiteFactStore(path), **kwargs)

    def write(self, candidate: Candidate | Mapping[str, Any]) -> Decision:
        """Decide one candidate and commit the decision with its audit row before returning."""
        return self.write_many([candidate])[0]

    def write_many(self, candidates: Iterable[Candidate | Mapping[str, Any]]) -> list[Decision]:
        """Decide candidates in order inside one transaction; every decision is audited with its change."""
        candidates = list(candidates)
        if not candidates:
            return []
        attributes = self.attributes
        checked: list[_Checked | None] = [_check_fast(item, attributes) if type(item) is Candidate else None
                                          for item in candidates]
        problems: dict[int, list[str]] = {}
        for index, item in enumerate(checked):
            if item is None:
                try:
                    checked[index], problems[index] = check_candidate(candidates[index], attributes)
                except Exception as err:  # whatever a candidate holds, it costs only itself
                    problems[index] = [f"the candidate could not be checked ({type(err).__name__})"]
        keys = list({c.key: None for c in checked if c is not None})
        at = now().isoformat()
        with self.store.transaction(keys) as txn:
            work = _WorkingSet(txn, keys, at)
            decide = self._decide
            decisions = [decide(work, c) if c is not None else _rejected(candidates[index], problems[index])
                         for index, c in enumerate(checked)]
            work.changes.audit = [(d.user_id, d.subject, d.attribute, d.value, d.source_id, d.source_kind,
                                   d.source_version, d.outcome, d.reason, d.fact_id, d.support, at)
                                  for d in decisions]
            txn.save(work.changes)
        return decisions

    def _decide(self, work: _WorkingSet, c: _Checked) -> Decision:
        rows = work.rows[c.key]
        if not rows and c.source_kind in ELIGIBLE_KINDS:  # the common case, a key never seen: no rule can object
            fact = work.insert(c, ACTIVE, Provenance(c.source_id, c.source_kind, c.source_version, c.evidence,
                                                     work.at))
            return Decision(INSERT, "new fact", c.user_id, c.subject, c.attribute, c.value, c.source_id,
                            c.source_kind, c.source_version, fact.id, ACTIVE, 1)
        seen, source_id, value_key = None, c.source_id, c.value_key
        authoritative = c.source_kind in ELIGIBLE_KINDS  # if so, assistant claims under this id do not count
        live, target = [], None
        for r in rows:
            for p in r.provenance:
                if (p.source_id == source_id and (seen is None or p.source_version > seen)
                        and (not authoritative or p.source_kind in ELIGIBLE_KINDS)):
                    seen = p.source_version
            if r.status == ACTIVE or r.status == CONFLICT:
                live.append(r)
                if target is None and r.value_key == value_key:
                    target = r
        if seen is not None and c.source_version <= seen:
            kind = "replay" if c.source_version == seen else "stale"
            current = target or next((r for r in live if c.source_id in r.supporters), None)
            return c.decide(NOOP, f"{kind}: {c.source_id} v{c.source_version} is not newer than v{seen} "
                                  "already recorded for this key; nothing changes", current)
        prov = Provenance(c.source_id, c.source_kind, c.source_version, c.evidence, work.at)
        if c.source_kind not in ELIGIBLE_KINDS:
            return self._proposal(work, c, rows, target, prov)
        own = [r for r in live if r is not target and c.source_id in r.supporters]
        if target is not None and not own and c.source_id in target.supporters:
            work.put(target, prov)
            return c.decide(NOOP, f"same value again from {c.source_id} (repeat or paraphrase of {target.value!r}); "
                                  f"support stays {target.support}", target)
        superseded = [r for r in own if r.supporters == {c.source_id}]
        gone = tuple(r.id for r in superseded)
        for r in own:
            if r.id not in gone:
                work.withdraw(r, c.source_id)
        proposal = None if target else next((r for r in reversed(rows)
                                             if r.status == INELIGIBLE and r.value_key == c.value_key), None)
        if target or proposal:
            fact = target or proposal
            work.put(fact, prov)
        else:
            fact = work.insert(c, ACTIVE, prov)
        for r in superseded:
            work.set_status(r, SUPERSEDED, superseded_by=fact.id)
        others = [r for r in live if r is not target and r.id not in gone]
        status = CONFLICT if others else ACTIVE
        for r in [fact, *others]:
            if r.status != status:
                work.set_status(r, status)
        if status == CONFLICT:
            rivals = "; ".join(f"{r.value!r} from {', '.join(sorted(r.supporters))}" for r in others)
            dropped = f" ({c.source_id}'s own earlier {_names(superseded)} is superseded)" if superseded else ""
            return c.decide(CONFLICT, f"{c.source_id} says {c.value!r} but {rivals}: authoritative sources disagree, "
                                      f"so the key is held for review and not used for answers (resolve() settles "
                                      f"it){dropped}", fact, superseded=gone)
        if superseded:
            settled = " and the open conflict is settled because the sources now agree" if len(live) > 1 else ""
            return c.decide(CORRECTION, f"{c.source_id} v{c.source_version} replaces {_names(superseded)}, which only "
                                        f"it supported; the old value is kept as history{settled}", fact,
                            superseded=gone)
        if target is not None:
            return c.decide(INSERT, f"independent source {c.source_id} agrees with {target.value!r}; "
                                    f"support {target.support - 1} -> {target.support}", fact)
        note = " (confirms an earlier assistant proposal, until now ineligible)" if proposal else ""
        return c.decide(INSERT, "new fact" + note, fact)

    def _proposal(self, work: _WorkingSet, c: _Checked, rows: list[StoredFact], target: StoredFact | None,
                  prov: Provenance) -> Decision:
        if target is not None:
            mine = next((p for p in target.provenance if p.source_id == c.source_id), None)
            if mine is None or mine.source_kind not in ELIGIBLE_KINDS:  # keep its version: replays stay noops
                work.put(target, prov)
            return c.decide(NOOP, "the assistant repeated a stored value; a proposal adds no support", target)
        pending = next((r for r in reversed(rows) if r.status == INELIGIBLE and r.value_key == c.value_key), None)
        if pending is None:
            fact = work.insert(c, INELIGIBLE, prov)
        else:
            fact = pending
            work.put(fact, prov)
        return c.decide(REJECTED, "an assistant proposal is not evidence (saying 'I have updated it' does not change "
                                  "account state): recorded as ineligible until a user statement or tool result "
                                  "supports it", fact)

    def resolve(self, user_id: str, subject: str, attribute: str, keep_value: str, *, reviewer: str,
                note: str = "") -> Decision:
        """Settle a conflict: the value matching ``keep_value`` becomes active, its rivals superseded (audited)."""
        spec = self.attributes.get(attribute)
        if spec is None or spec.multi_valued:
            single = ", ".join(sorted(name for name, s in self.attributes.items() if not s.multi_valued))
            raise FactResolutionError(f"{attribute!r} is not a single-valued attribute, so it cannot be in conflict; "
                                      f"single-valued attributes: {single}")
        if not isinstance(keep_value, str) or not keep_value.strip():
            raise FactResolutionError("resolve() needs keep_value='...', one of the values conflicts(user_id) lists")
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise FactResolutionError("resolve() needs reviewer='...' naming who settled the conflict (it is audited)")
        user_id, subject = normalise_id(user_id), normalise_id(subject)
        if _UNSTORABLE.search(user_id + subject + reviewer + note):
            raise FactResolutionError("user_id, subject, reviewer and note must not contain NUL characters "
                                      "or lone surrogates (no database can store them); remove them")
        key, at = (user_id, subject, attribute, ""), now().isoformat()
        with self.store.transaction([key]) as txn:
            work = _WorkingSet(txn, [key], at)
            rows = [r for r in work.rows[key] if r.status == CONFLICT]
            if not rows:
                raise FactResolutionError(f"no open conflict for {user_id}/{subject}/{attribute}; "
                                          "conflicts(user_id) lists the open ones")
            keep = next((r for r in rows if r.value_key == spec.normalise(keep_value)), None)
            if keep is None:
                raise FactResolutionError(f"{keep_value!r} is not one of the conflicting values ({_names(rows)}); "
                                          "pass one of those")
            losers = [r for r in rows if r is not keep]
            work.set_status(keep, ACTIVE)
            for r in losers:
                work.set_status(r, SUPERSEDED, superseded_by=keep.id)
            reason = f"conflict resolved by {reviewer}: kept {keep.value!r}, superseded {_names(losers)}"
            decision = Decision(CORRECTION, reason + (f" ({note})" if note else ""), user_id, subject, attribute,
                                keep.value, reviewer, "reviewer", None, keep.id, ACTIVE, keep.support,
                                tuple(r.id for r in losers))
            work.changes.audit = [(user_id, subject, attribute, keep.value, reviewer, "reviewer", None,
                                   CORRECTION, decision.reason, keep.id, keep.support, at)]
            txn.save(work.changes)
        return decision

    def _read_facts(self, user_id: str, status: str) -> list[StoredFact]:
        user_id = normalise_id(user_id)  # the same id as on write; one no database can store has no facts
        return [] if _UNSTORABLE.search(user_id) else self.store.read_facts(user_id, (status,))

    def active_facts(self, user_id: str) -> list[StoredFact]:
        """Facts safe to put in a prompt: active only (no conflicts, proposals or history)."""
        return self._read_facts(user_id, ACTIVE)

    def conflicts(self, user_id: str) -> list[StoredFact]:
        """Values held for review because authoritative sources disagree."""
        return self._read_facts(user_id, CONFLICT)

    def ineligible(self, user_id: str) -> list[StoredFact]:
        """Assistant proposals that no user statement or tool result has supported."""
        return self._read_facts(user_id, INELIGIBLE)

    def history(self, user_id: str) -> list[StoredFact]:
        """Superseded values, kept so corrections can be explained."""
        return self._read_facts(user_id, SUPERSEDED)

    def audit(self, user_id: str) -> list[AuditEntry]:
        """Every decision about this user, oldest first."""
        user_id = normalise_id(user_id)
        return [] if _UNSTORABLE.search(user_id) else self.store.read_audit(user_id)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __enter__(self) -> "FactMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def format_facts(facts: Sequence[StoredFact], title: str = "Known facts about the user") -> str:
    """Render active facts as prompt-ready lines, each with the sources behind it."""
    if not facts:
        return f"{title}: none recorded."
    lines = [f"{title}:"]
    for fact in facts:
        who = "" if fact.subject == "user" else f"{fact.subject} "
        sources = ", ".join(sorted(fact.supporters)) or "no eligible source"
        lines.append(f"- {who}{fact.attribute.replace('_', ' ')}: {fact.value} (source: {sources})")
    return "\n".join(lines)

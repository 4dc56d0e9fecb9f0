"""Profile memory (lesson 09): what the user said about themselves, read from the durable fact store.

The profile keeps no facts of its own. After each turn, ``ProfileMemory.update`` finds what
*the user* stated about themselves and writes each statement to a ``FactMemory``
(``helpers.facts.writer``, lesson 10) as a ``Candidate`` from source ``chat:<user_id>``
whose version is reserved from the fact store for its turn (``FactMemory.reserve_version``: the turn id,
or higher when the source already recorded that much in any session, branch or process) and kept with the
statement, so a replay of the turn is a ``noop`` and a later statement always outranks an earlier one.
The fact store decides, and audits, what happens:

- a new attribute is an ``insert``; the same value again is a ``noop`` that refreshes its
  date (a restatement makes a fact fresh again);
- a new value from the same source is a ``correction``: the old value is kept as history,
  marked superseded by the new one;
- a value another source (a tool, a form, another channel) still backs is a ``conflict``,
  held for review and shown as unsettled;
- an older turn never overrides a newer one (its version is lower: a ``noop``); a rejected statement
  (too long to store, say) is audited once and counts as recorded, so a restart does not repeat it.

Attributes are open-ended: "my locker number is 4471" becomes attribute ``locker number``.
The statements come from one of two extractors of the fact pipeline (``helpers.facts.pipeline``) on
the campus attribute set of ``helpers.memory.profile_extraction``: ``rules`` (the default for the
offline stand-in) or ``model`` (a strict JSON request; a reply of the wrong shape is rejected whole
and logged); ``extractor=`` also takes any pipeline ``Extractor`` (another attribute set, or several).

Either way a value must be the user's own words: whole words (case-insensitive, any script) of a
statement in the user's message, in the role its attribute needs (``unsupported``: not a piece of a longer
name, a name only after a naming cue, and an extractor's evidence the user's own sentence), so nothing
the assistant said becomes a user fact, "Cal" is not
taken from "calculus", and a question is never a statement of fact ("Can you call me Cal?" names
nobody). ``lines()`` shows each current fact with the turn and date it was last stated; facts
older than ``stale_after`` are "possibly outdated", and a corrected fact names the value it
superseded and its turn. Every line is one line, written by ``helpers.core.context_format.write_fact_line``
(the format's owner): labels and values pass through ``one_line``.
"""
from __future__ import annotations

import json

import logging
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Sequence

from helpers.core import clock
from helpers.llm.client import get_settings
from helpers.core.errors import ConfigError, WorkshopWarning
from helpers.core.context_format import PROFILE_HEADER, profile_mark, quote_text, write_fact_line  # the line's owner
from helpers.facts.extract import MODEL_REQUEST_ERRORS
from helpers.facts.pipeline import Extractor, ModelExtractor, ReplyFormatError, RuleExtractor
from helpers.facts.writer import AttributeSpec, Candidate, FactMemory, normalise_text
from helpers.memory.profile_extraction import CAMPUS, attribute_label, campus_set, split_label, stated_parts
from helpers.memory.recall import is_substantive
from helpers.core.text import shorten

log = logging.getLogger(__name__)

DEFAULT_STALE_AFTER = timedelta(days=90)
FIRST_KEYS = ("name", "goal", "constraint", "preference")  # shown first, in this order


class ProfileWarning(WorkshopWarning):
    """Profile extraction could not run for a turn (for example the request failed)."""


_split_label = split_label  # attribute_label and split_label live in helpers.memory.profile_extraction


@dataclass
class ProfileFact:
    """One thing the user said about themselves: the turn and time it was last stated."""

    key: str
    topic: str
    value: str
    turn_id: int
    recorded_at: str  # ISO 8601 with offset, from helpers.core.clock.now()
    fact_id: int | None = None
    superseded_by: int | None = None  # fact id of the value that replaced this one
    version: int | None = None  # the statement's version in the fact store (orders statements; see the module)

    @property
    def label(self) -> str:
        """``key`` or ``key/topic``: the attribute name in the fact store."""
        return attribute_label(self.key, self.topic)

    def age(self, now: datetime | None = None) -> timedelta:
        """How long ago it was last stated."""
        return (now or clock.now()) - datetime.fromisoformat(self.recorded_at)


@dataclass
class ProfileUpdate:
    """What one update did."""

    added: list[ProfileFact] = field(default_factory=list)
    replaced: list[ProfileFact] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # reasons, one per rejected reply or item
    decisions: list = field(default_factory=list)  # the fact store's Decision for each statement written
    deferred: list[dict] = field(default_factory=list)  # statements held until the turn is saved
    skipped: str = ""  # why nothing was read: the turn's user message is another speaker's


def _normal(text: str) -> str:
    """Text as compared: Unicode NFC, case-folded, curly apostrophes straight, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", str(text)).casefold().replace("’", "'").split())


def _speaker(name: Any) -> str:
    """A speaker's name as compared: whitespace collapsed ("" for none)."""
    return " ".join(str(name or "").split())


def says(said: str, value: str) -> bool:
    """True when ``value`` is whole words of ``said`` (case-insensitive, any script).

    "Cal" is not in "Can you tell me about the calculus tutoring?"; "Zoë" is in "ZOË" (NFC or not).
    """
    value = _normal(value)
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", _normal(said)) is not None


def _items(candidates: Sequence[Candidate]) -> list[dict]:
    """A pipeline's candidates as profile items: ``{"key", "topic", "value", "evidence"}`` (``split_label`` of
    the attribute; the evidence is the words the extractor says the value came from)."""
    return [dict(zip(("key", "topic"), split_label(c.attribute)), value=c.value, evidence=c.evidence)
            for c in candidates]


def _words(text: str) -> str:
    """Text as words are compared: ``normalise_text`` (case-folded, punctuation dropped), padded by spaces."""
    return f" {normalise_text(str(text))} "


# What must come right before a name for a sentence to state it ("my name is Ada", "call me Cal", "I'm Ada").
_NAME_CUE = re.compile(r"(?:\bname\s*(?:is|'s|:|=)|\bcall\s+me|\bgo\s+by|\bcalled|\bi\s*'?\s*m|\bi\s+am|"
                       r"\bthis\s+is|\bit\s*'?\s*s)\s+(?:(?:actually|now|just|still|really|also|simply)\s+)*$",
                       re.IGNORECASE)
_CAPITALISED = re.compile(r"[A-Z\u00c0-\u00de][\w'\u2019-]*")
_I_FORMS = {"i", "i'm", "i’m", "i've", "i’ve", "i'd", "i’d", "i'll", "i’ll"}


def _occurrences(text: str, value: str) -> list[re.Match]:
    """Where ``value`` stands in ``text`` as whole words (case-insensitive, any run of spaces between words)."""
    words = [re.escape(w) for w in unicodedata.normalize("NFC", value).replace("’", "'").split()]
    if not words:
        return []
    pattern = r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"
    return list(re.finditer(pattern, unicodedata.normalize("NFC", text).replace("’", "'"), re.IGNORECASE))


def _in_role(key: str, value: str, text: str) -> bool:
    """Does ``text`` state ``value`` whole, in the role ``key`` needs?

    Never when the value is cut out of a longer capitalised name ("Mallory" of "Mallory Hall", "Hall" of
    "Mallory Hall"); a name only after a naming cue ("my name is", "call me", "I'm", ...)."""
    text = unicodedata.normalize("NFC", text).replace("’", "'")
    for match in _occurrences(text, value):
        before, after = text[:match.start()], text[match.end():]
        if match.group()[:1].isupper():
            following = re.match(r"\s+(\S+)", after)
            if following and _CAPITALISED.fullmatch(following.group(1).rstrip(".,;:!?\"')")):
                continue
            preceding = re.search(r"(\S+)\s+$", before)
            if preceding:
                word = preceding.group(1)
                opens = not before[:preceding.start()].strip() or before[:preceding.start()].rstrip()[-1:] in ".!?:"
                if (_CAPITALISED.fullmatch(word) and word.lower() not in _I_FORMS and not opens):
                    continue
        if key == "name" and not _NAME_CUE.search(before):
            continue
        return True
    return False


def statement_version(statement: dict) -> int:
    """A stored statement's version: the one reserved for it, or (a statement saved before versions were
    reserved) its turn id, the version it was written with then."""
    version = statement.get("version")
    return int(statement["turn_id"]) if version is None else int(version)


def unsupported(item: dict, value: str, user_text: str, stated: Sequence[str]) -> str | None:
    """Why the user's own words do not state ``item`` (the end of "<key> <value> is ..."), or None when they do.

    The value must be whole words of a statement (``stated``, the user's ``stated_parts``) in the role its
    attribute needs (``_in_role``: not a piece of a longer name; a name after a naming cue). When the item
    names its ``evidence`` (other than the whole message, the pipeline's default), that evidence must be the
    user's words of one statement and hold the value: a model's reply cannot make other words the user's.
    """
    if not any(says(part, value) for part in stated):
        return ("only in a question (a question states no fact)" if says(user_text, value)
                else "not in the user's words")
    evidence = " ".join(str(item.get("evidence") or "").split())
    contexts = list(stated)
    if evidence and evidence != " ".join(str(user_text).split())[:500]:
        contexts = [part for part in stated if _words(evidence) in _words(part)]
        if not contexts:
            return f"claimed from {shorten(evidence, 80)!r}, which is not a statement in the user's words"
        if _words(value) not in _words(evidence):
            return f"not in its own evidence {shorten(evidence, 80)!r}"
    if not any(_in_role(str(item.get("key", "")).strip().lower(), value, part) for part in contexts):
        what = "the user's name" if str(item.get("key", "")).strip().lower() == "name" else "that attribute"
        return f"not stated as {what} (only as part of other words)"
    return None


def _key(statement: dict) -> str:
    """A statement as one hashable value (statements are compared whole, as JSON data)."""
    return json.dumps(statement, sort_keys=True, default=str)


class ProfileMemory:
    """The user's current facts, read from a ``FactMemory`` that reconciles every statement.

    ``facts`` is the durable store to share (lesson 10); by default a private in-memory one.
    ``extractor`` is ``"rules"``, ``"model"`` or ``"auto"`` (rules for the offline stand-in): the campus
    attribute set of the fact pipeline (``helpers.facts.pipeline``); or any pipeline ``Extractor``.

    A turn's facts commit with the turn, or not at all. A plain ``ChatSession`` has nothing to
    wait for, so ``update`` writes at once. A ``PersistentSession`` calls ``defer_writes()``: from
    then on ``update`` holds the turn's statements in ``pending`` (they are in ``state()``, so the
    saved snapshot carries them), and the session calls ``write_deferred()`` once its save has
    committed - one fact-store transaction for the whole turn - or drops them with the change
    when the save is refused (``restore``/``drop_deferred``).

    The profile is a view: every line is read from the fact store, dates included (a restatement
    refreshes its provenance). ``statements`` is only this conversation's log of what it stated,
    carried in ``state()``. It rebuilds a private store (which lives in this object alone) after an
    undo or from a snapshot, and lets a shared store catch up on a saved turn whose facts never
    reached it. It is never replayed into a store that holds it: opening, reloading, undoing, a
    rolled-back turn and a refused message write nothing, so the audit holds decisions, not replays.

    The profile is the user's alone: ``user_name`` is who the user is (the OpenAI message ``name`` field of
    their messages), given or else learned from the first user message that names its speaker; a turn
    whose user message another speaker said (``update(..., speaker=...)``) states nothing about the user and
    supersedes nothing (``skipped``), and neither do the assistant's words or another person's reported ones.
    """

    def __init__(self, *, facts: FactMemory | None = None, user_id: str = "user", client: Any = None,
                 settings: Any = None, model: str | None = None, extractor: str | Extractor = "auto",
                 stale_after: timedelta = DEFAULT_STALE_AFTER, max_reply_chars: int = 600,
                 user_name: str | None = None):
        if not (extractor in ("auto", "rules", "model") or isinstance(extractor, Extractor)):
            raise ConfigError(f"extractor must be 'auto', 'rules', 'model' or an Extractor of "
                              f"helpers.facts.pipeline (got {extractor!r})")
        self.client, self.settings, self.model = client, settings, model
        self.user_id, self.extractor = user_id, extractor
        self.user_name = _speaker(user_name) or None
        self.stale_after = stale_after
        self.max_reply_chars = max_reply_chars
        self._private = facts is None
        self.store = facts if facts is not None else FactMemory.open(":memory:")
        self.statements: list[dict] = []  # what update() wrote: the log state() carries (see the class)
        self.pending: list[dict] | None = None  # held until their turn is saved; None: written at once
        self.rejected: list[str] = []
        self._ordered: tuple | None = None  # (log, statements checked, in turn order): see turn_state
        self._turn_index: tuple | None = None  # (the log and held statements it was built from, version -> turn)

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use this client/settings unless others were given explicitly."""
        self.client = self.client if self.client is not None else client
        self.settings = self.settings if self.settings is not None else settings

    # -- reading (everything comes from the fact store)
    def _fact(self, row: Any) -> ProfileFact:
        support = [p for p in row.provenance if p.withdrawn_at is None and p.source_kind != "assistant"]
        newest = max(support or row.provenance, key=lambda p: (p.source_version, p.recorded_at))
        key, topic = _split_label(row.attribute)
        stamp = max(p.recorded_at for p in (support or row.provenance))  # a restatement refreshed its source's
        turn = self._turns().get(newest.source_version, newest.source_version) \
            if newest.source_id == self.source_id else newest.source_version
        return ProfileFact(key, topic, row.value, turn, stamp, row.id, row.superseded_by, newest.source_version)

    def _turns(self) -> dict[int, int]:
        """This conversation's turn of each version its statements were written with (another session's
        statements are not in it: their facts show their version)."""
        log, held = self.statements, self.pending
        known = self._turn_index
        if known is None or known[:4] != (id(log), len(log), id(held), len(held or ())):
            turns = {statement_version(s): int(s["turn_id"]) for s in [*log, *(held or ())]}
            known = self._turn_index = (id(log), len(log), id(held), len(held or ()), turns)
        return known[4]

    @property
    def facts(self) -> dict[tuple[str, str], ProfileFact]:
        """Current facts by (key, topic)."""
        return {(f.key, f.topic): f for f in map(self._fact, self.store.active_facts(self.user_id))}

    @property
    def history(self) -> list[ProfileFact]:
        """Values a newer statement replaced (superseded in the fact store), oldest first."""
        return sorted(map(self._fact, self.store.history(self.user_id)), key=lambda f: (f.version, f.turn_id))

    @property
    def conflicts(self) -> list[ProfileFact]:
        """Values held for review because sources disagree."""
        return list(map(self._fact, self.store.conflicts(self.user_id)))

    def __len__(self) -> int:
        return len(self.store.active_facts(self.user_id))

    def get(self, key: str, topic: str | None = None) -> ProfileFact | None:
        """The current fact for ``key`` (and ``topic``; the key itself when omitted), or None."""
        return self.facts.get((key, topic or key))

    def superseded(self) -> list[tuple[ProfileFact, ProfileFact]]:
        """(old, current) pairs: each replaced value with the value that now stands in its place."""
        by_id = {f.fact_id: f for f in self.facts.values()}
        old = self.history
        by_id.update({f.fact_id: f for f in old})
        pairs = []
        for fact in old:
            current, hops = by_id.get(fact.superseded_by), 0
            while current is not None and current.superseded_by is not None and hops < 50:
                current, hops = by_id.get(current.superseded_by), hops + 1
            if current is not None and current.superseded_by is None:
                pairs.append((fact, current))
        return pairs

    # -- extracting
    def _uses_rules(self) -> bool:
        if self.extractor != "auto":
            return self.extractor == "rules"
        return getattr(self.settings or get_settings(), "backend", "") == "offline"

    def extractor_for(self) -> Extractor:
        """The fact pipeline's extractor this profile runs: the campus rules, the campus model extractor, or
        the ``Extractor`` it was given (any attribute set, several with ``MultiExtractor``)."""
        if not isinstance(self.extractor, str):
            return self.extractor
        if self._uses_rules():
            return RuleExtractor(CAMPUS, user_id=self.user_id)
        return ModelExtractor(campus_set(self.max_reply_chars), user_id=self.user_id, client=self.client,
                              settings=self.settings, model=self.model)

    def update(self, turn_id: int, user_text: str, assistant_text: str = "", at: str | None = None,
               speaker: str | None = None) -> ProfileUpdate:
        """Extract the user's facts from one turn and write them to the fact store (see the module).

        A message that states nothing (only questions and small talk: no ``stated_parts``) asks no extractor:
        ``merge`` would reject whatever it found, so on a real server that request would be wasted. ``speaker``
        is the user message's ``name`` field: a speaker other than the user (``user_name``) states nothing
        about the user, so the turn is ``skipped``."""
        if not self.speaks_for_user(speaker):
            return ProfileUpdate(skipped=f"turn {turn_id}: said by {_speaker(speaker)!r}, not by the user "
                                         f"({self.user_name!r}): nothing about the user")
        if not is_substantive(user_text) or not stated_parts(user_text):
            return ProfileUpdate()
        extractor = self.extractor_for()
        if isinstance(extractor, RuleExtractor):  # offline rules: no request that could fail
            return self.merge(turn_id, _items(extractor.extract(turn_id, user_text, assistant_text)), user_text, at)
        try:
            items = _items(extractor.extract(turn_id, user_text, assistant_text))
        except ReplyFormatError as exc:
            reason = f"turn {turn_id}: {exc}"
            log.warning("profile reply rejected, nothing merged: %s", reason)
            self.rejected.append(reason)
            return ProfileUpdate(rejected=[reason])
        except MODEL_REQUEST_ERRORS as exc:  # a failed request: the turn succeeded; the profile misses this one
            warnings.warn(f"profile extraction skipped for turn {turn_id}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:160]}", ProfileWarning, stacklevel=2)
            return ProfileUpdate()
        return self.merge(turn_id, items, user_text, at)

    def merge(self, turn_id: int, items: Sequence[dict], user_text: str, at: str | None = None) -> ProfileUpdate:
        """Write validated items from turn ``turn_id``; an item the user's own words do not state is rejected
        and logged (``unsupported``): its value must be whole words of a statement in ``user_text``
        (``stated_parts``: no question, no small talk), in the role its attribute needs, and an item's
        ``evidence`` must be the user's words holding that value.

        The turn's statements share one version reserved from the fact store (``reserve_version``: higher than
        any this user's chat source has recorded, in any session); each statement keeps it, so writing it again
        (a restart, a rebuild) is a replay that changes nothing, while a later statement always counts."""
        update = ProfileUpdate()
        stated = stated_parts(user_text)
        version = None
        for item in items:
            value = " ".join(str(item["value"]).split()).strip(" .")
            problem = unsupported(item, value, user_text, stated)
            if problem is not None:
                reason = f"turn {turn_id}: {item['key']} {value!r} is {problem}"
                log.warning("profile fact rejected: %s", reason)
                self.rejected.append(reason)
                update.rejected.append(reason)
                continue
            key = " ".join(item["key"].lower().split())
            topic = key if key == "name" else " ".join(item["topic"].lower().split())
            if version is None:
                version = self._version_for(int(turn_id))
            statement = {"turn_id": turn_id, "key": key, "topic": topic, "value": value,
                         "evidence": " ".join(user_text.split())[:500], "at": at or clock.now().isoformat(),
                         "version": version}
            if self.pending is not None:  # held until the session has saved the turn (write_deferred)
                statement["label"] = attribute_label(key, topic)
                self.pending.append(statement)
                update.deferred.append(statement)
                continue
            decision = self._write(statement)
            update.decisions.append(decision)
            if decision.outcome in ("insert", "correction", "conflict"):
                self.statements.append(statement)
                disputed = (f for f in self.conflicts if f.fact_id == decision.fact_id)
                fact = self.get(key, topic) or next(disputed, None)
                if fact is not None:
                    update.added.append(fact)
                gone = set(decision.superseded)
                update.replaced += [f for f in self.history if f.fact_id in gone]
            elif decision.outcome == "noop" and "same value" in decision.reason:
                self.statements.append(statement)  # a restatement: its date counts after a restore too
        return update

    def _write(self, statement: dict) -> Any:
        """One statement's decision, dated with its turn's time (``at``: what the profile's dates show)."""
        return self.store.write_many([self._candidate(statement)], at=statement.get("at"))[0]

    def _version_for(self, turn_id: int) -> int:
        """The version of a new statement from ``turn_id``: reserved from the fact store (the turn id, or higher
        when this source already recorded that much), so it outranks every earlier statement of every session.

        A turn older than one this conversation already stated (a late arrival) is not newer than that turn:
        it gets the version just below the next later turn's, so within one conversation the later turn wins.
        """
        later = [statement_version(s) for s in [*self.statements, *(self.pending or ())]
                 if int(s["turn_id"]) > turn_id]
        if later:
            return max(min(later) - 1, 0)
        return self.store.reserve_version(self.user_id, self.source_id, at_least=max(turn_id, 0))

    @property
    def source_id(self) -> str:
        """The fact store's source of this user's statements: ``chat:<user_id>``."""
        return f"chat:{self.user_id}"

    def _candidate(self, statement: dict) -> Candidate:
        label = statement["label"] = attribute_label(statement["key"], statement["topic"])
        if label not in self.store.attributes:  # open-ended: any label the user's words name is an attribute
            self.store.attributes[label] = AttributeSpec(label, description="stated by the user")
        return Candidate(self.user_id, "user", label, statement["value"], self.source_id, "user",
                         statement_version(statement), statement["evidence"])

    # -- writing once the turn is saved (PersistentSession)
    def defer_writes(self) -> None:
        """From now on hold each turn's statements until ``write_deferred`` (see the class)."""
        if self.pending is None:
            self.pending = []

    def write_deferred(self) -> list:
        """Write the held statements in one fact-store transaction (all or none); returns the decisions.

        If the write raises, they stay held (and in ``state()``): the next saved change writes them,
        or ``restore`` - the session's rollback - drops them. Every written statement is kept, whatever
        the store decided, so this copy's ``state()`` stays the one the session just saved.
        """
        if not self.pending:
            return []
        held = list(self.pending)
        decisions = self.store.write_many([self._candidate(s) for s in held])
        self.statements += held
        self.pending = []
        return decisions

    def drop_deferred(self) -> None:
        """Forget the held statements unwritten (their turn was not saved)."""
        if self.pending:
            self.pending = []

    def discard(self, turn_id: int) -> None:
        """Forget statements from ``turn_id`` (after an undo), bringing back what they had replaced.

        Only a private store is rebuilt; a shared durable store keeps its audited history.
        """
        held = None if self.pending is None else [s for s in self.pending if s["turn_id"] != turn_id]
        kept = [s for s in self.statements if s["turn_id"] != turn_id]
        if self._private and len(kept) != len(self.statements):
            self.restore({"user_id": self.user_id, "statements": kept})
        self.statements, self.pending = kept, held

    # -- showing
    def is_stale(self, fact: ProfileFact, now: datetime | None = None) -> bool:
        """True when the fact was last stated longer than ``stale_after`` ago."""
        return fact.age(now) > self.stale_after

    def lines(self, now: datetime | None = None) -> list[str]:
        """One ``- label: value (turn N, date)`` line per current fact; corrections name the old value."""
        order = {k: i for i, k in enumerate(FIRST_KEYS)}
        replaced: dict[int | None, list[ProfileFact]] = {}
        for old, current in self.superseded():
            replaced.setdefault(current.fact_id, []).append(old)
        out = []
        for fact in sorted(self.facts.values(), key=lambda f: (order.get(f.key, len(order)), f.turn_id)):
            olds = replaced.get(fact.fact_id, [])
            where = profile_mark(fact.turn_id, fact.recorded_at[:10], outdated=self.is_stale(fact, now),
                                 superseded=[(o.value, o.turn_id) for o in olds[-2:]])
            out.append(write_fact_line(fact.label, fact.value, where))
        for fact in self.conflicts:
            out.append(write_fact_line(fact.label, f'unsettled, "{quote_text(fact.value)}" is disputed by another '
                                       f"source", f"turn {fact.turn_id}", "; ask the user"))
        return out

    def block(self, now: datetime | None = None) -> dict | None:
        """The system message that carries the profile (None while it is empty)."""
        lines = self.lines(now)
        return {"role": "system", "content": PROFILE_HEADER + "\n" + "\n".join(lines)} if lines else None

    # -- what it keeps of one turn, and taking a failed turn back
    def turn_state(self, turn_id: int) -> list[dict] | None:
        """The statements of one turn (written and held), in the order stated; None when it stated none.

        A turn's statements are added by ``update`` and removed by ``discard``; nothing else changes them.
        The log is in turn order unless a restore caught up an older turn, so the newest turns are found
        at its end without reading the whole log."""
        found = [s for s in (self.pending or ()) if s["turn_id"] == turn_id]
        log = self.statements
        if self._in_turn_order(log):
            before = []
            for statement in reversed(log):
                if statement["turn_id"] < turn_id:
                    break
                if statement["turn_id"] == turn_id:
                    before.append(statement)
            found = before[::-1] + found
        else:
            found = [s for s in log if s["turn_id"] == turn_id] + found
        return [dict(s) for s in found] or None

    def _in_turn_order(self, log: list[dict]) -> bool:
        """True when ``log`` is in turn order (checked once per new log, then per appended statement)."""
        known = self._ordered
        if known is None or known[0] is not log or known[1] > len(log):
            known = (log, 0, True)
        _, checked, ordered = known
        if ordered and checked < len(log):
            ordered = all(log[i - 1]["turn_id"] <= log[i]["turn_id"] for i in range(max(checked, 1), len(log)))
        self._ordered = (log, len(log), ordered)
        return ordered

    def checkpoint(self) -> tuple:
        """Where the log stands now, for ``rollback`` (shallow copies: statements are never changed in place)."""
        return list(self.statements), None if self.pending is None else list(self.pending)

    def rollback(self, point: tuple) -> None:
        """Back to ``checkpoint`` (a failed turn): as ``restore`` of that state, without reading the store.

        Nothing is written: a shared store never received the held statements of a turn that failed."""
        statements, pending = point
        if self._private and statements != self.statements:
            self._rebuild(list(statements))
        self.statements = list(statements)
        self.pending = None if pending is None else list(pending)

    def speaks_for_user(self, speaker: str | None) -> bool:
        """Is a user message said by ``speaker`` (its ``name`` field; None or "" when it has none) the user's?
        The first named speaker becomes ``user_name`` when none was given."""
        name = _speaker(speaker)
        if not name:
            return True
        if self.user_name is None:
            self.user_name = name
        return name.casefold() == self.user_name.casefold()

    # -- saving
    def state(self) -> dict:
        """JSON-ready state: the log of statements written, and any still held (see the class); the user's
        name when known."""
        held = self.pending or []  # a saved snapshot carries them: see write_deferred
        state = {"user_id": self.user_id, "statements": [dict(s) for s in self.statements + held]}
        if self.user_name:
            state["user_name"] = self.user_name
        return state

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``; writes nothing a store already holds, so no replay is audited.

        Held statements are dropped (the session rolled their turn back, or loads another state).
        A private store is rebuilt from the log, each statement at its own time, only when the log
        differs from the one it holds (an undo, another snapshot); a rolled-back turn changes nothing.
        A shared store is only read: statements this copy knows, or the store has recorded at that
        turn or later, are skipped. The rest belong to a saved turn whose facts never reached the store
        (a crash between the two commits): written now, or with the next saved change while writes
        are deferred.
        """
        state = state or {}
        self.user_name = _speaker(state.get("user_name")) or self.user_name
        statements = [dict(s) for s in state.get("statements", [])]
        if not statements and state.get("facts"):  # an older snapshot: facts and history, not statements
            rows = list(state.get("history", [])) + list(state["facts"])
            statements = [{"turn_id": f["turn_id"], "key": f["key"], "topic": f["topic"], "value": f["value"],
                           "evidence": f["value"]} for f in sorted(rows, key=lambda f: f["turn_id"])]
        if self.pending:
            self.pending = []
        if self._private:
            if statements != self.statements:
                self._rebuild(statements)
            return
        known = {_key(s) for s in self.statements}
        new = [s for s in statements if _key(s) not in known]
        missing = self._unrecorded(new) if new else []
        gone = {_key(s) for s in missing}
        self.statements = [s for s in statements if _key(s) not in gone]
        if not missing:
            return
        if self.pending is not None:
            self.pending = missing  # in state() as before; written once the next change is saved
            return
        self.store.write_many([self._candidate(s) for s in missing])
        self.statements = statements

    def _unrecorded(self, statements: list[dict]) -> list[dict]:
        """The statements the shared store has not recorded (at their turn or later); reads only."""
        recorded = self.store.recorded([self._candidate(s) for s in statements])
        return [s for s, done in zip(statements, recorded) if not done]

    def _rebuild(self, statements: list[dict]) -> None:
        """A new private store holding ``statements``, each decided at the time it was first stated."""
        self.store.close()
        attributes = self.store.attributes
        self.store = FactMemory.open(":memory:")
        self.store.attributes.update(attributes)
        for statement in statements:
            self.store.write_many([self._candidate(statement)], at=statement.get("at"))
        self.statements = statements

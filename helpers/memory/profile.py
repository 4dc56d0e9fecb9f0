"""Profile memory (lesson 09): what the user said about themselves, read from the durable fact store.

The profile keeps no facts of its own. After each turn, ``ProfileMemory.update`` finds what
*the user* stated about themselves and writes each statement to a ``FactMemory``
(``helpers.facts.writer``, lesson 10) as a ``Candidate`` from source ``chat:<user_id>``
whose version is the turn id. The fact store decides, and audits, what happens:

- a new attribute is an ``insert``; the same value again is a ``noop`` that refreshes its
  date (a restatement makes a fact fresh again);
- a new value from the same source is a ``correction``: the old value is kept as history,
  marked superseded by the new one;
- a value another source (a tool, a form, another channel) still backs is a ``conflict``,
  held for review and shown as unsettled;
- an older turn never overrides a newer one (its version is lower: a ``noop``).

Attributes are open-ended: "my locker number is 4471" becomes attribute ``locker number``.
Two extractors produce the same items, ``{"key": ..., "topic": ..., "value": ...}``:

- ``rules`` (the default for the offline stand-in): ``"my <attribute> is|are <value>"``
  in any of the user's sentences that is not a question, plus the stand-in's documented rules
  for names, diets, schedules, preferences and goals (``extract_profile_facts``);
- ``model``: a chat request with ``response_format={"type": "json_object"}``; a reply that is
  not exactly ``{"facts": [{"key", "topic", "value"}]}`` is rejected whole and logged.

Either way a value must be the user's own words (it has to appear in the user's message), so
nothing the assistant said becomes a user fact. ``lines()`` shows each current fact with the
turn and date it was last stated; facts older than ``stale_after`` are "possibly outdated", and
a corrected fact names the value it superseded and its turn.
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Sequence

from helpers import clock
from helpers.errors import WorkshopError, WorkshopWarning
from helpers.facts.writer import AttributeSpec, Candidate, FactMemory
from helpers.memory.recall import is_question, is_substantive
from helpers.standin.tasks import extract_profile_facts

log = logging.getLogger(__name__)

PROFILE_HEADER = "User profile (facts the user stated, with the turn and date):"
DEFAULT_STALE_AFTER = timedelta(days=90)
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
MAX_LABEL_CHARS = 60
FIRST_KEYS = ("name", "goal", "constraint", "preference")  # shown first, in this order
# "my <one to four words> is|are <value>": the value runs to the end of the sentence or clause
_MY_ATTRIBUTE = re.compile(r"\bmy\s+((?:[a-z][\w'-]*\s+){0,3}?[a-z][\w'-]*)\s+(?:is|are|was)\s+"
                           r"(?:now\s+|still\s+)?"
                           r"([^,;!?]+?)\s*(?=,\s*(?:by the way|btw|and|but|so)\b|[.;!?]|$)", re.I)
_NOT_ATTRIBUTES = {"name"}  # covered by the stand-in's name rule, which knows "call me ..."
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Mt|No)\.(?=\s)")
_DOT = "\u2024"  # stands in for an abbreviation's full stop while sentences are split
_TAIL_WORDS = re.compile(r"(?:\s+(?:now|instead|these days|too|as well|anymore|again|then))+$", re.I)
_LEAD_WORDS = re.compile(r"^(?:(?:actually|also|now|so|and|oh|btw|quick note|just so you know)[,:]?\s+)+",
                         re.I)


class ProfileFormatError(WorkshopError, ValueError):
    """An extraction reply was not the strict JSON shape; it is rejected and nothing is merged."""


class ProfileWarning(WorkshopWarning):
    """Profile extraction could not run for a turn (for example the request failed)."""


@dataclass
class ProfileFact:
    """One thing the user said about themselves: the turn and time it was last stated."""

    key: str
    topic: str
    value: str
    turn_id: int
    recorded_at: str  # ISO 8601 with offset, from helpers.clock.now()
    fact_id: int | None = None
    superseded_by: int | None = None  # fact id of the value that replaced this one

    @property
    def label(self) -> str:
        """``key`` or ``key/topic``: the attribute name in the fact store."""
        return self.key if self.topic in (self.key, "") else f"{self.key}/{self.topic}"

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


def _normal(text: str) -> str:
    return " ".join(str(text).lower().replace("’", "'").split())


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


def extract_with_rules(user_text: str) -> list[dict]:
    """Profile items from the user's words by rule: the stand-in's rules plus "my <attribute> is <value>"."""
    items = [item for item in extract_profile_facts(f"USER SAID:\n{user_text}")["facts"]]
    seen = {(item["key"], item["topic"]) for item in items}
    kept = _ABBREVIATION.sub(lambda m: m.group(1) + _DOT, user_text)  # "Dr. Varga" is not a sentence end
    for sentence in re.split(r"(?<=[.!?])\s+", kept):
        if is_question(sentence):
            continue
        for match in _MY_ATTRIBUTE.finditer(sentence):
            attribute = " ".join(match.group(1).lower().split())
            value = _LEAD_WORDS.sub("", " ".join(match.group(2).split())).strip(" '\"")
            value = _TAIL_WORDS.sub("", value).replace(_DOT, ".")
            if attribute in _NOT_ATTRIBUTES or not value or (attribute, attribute) in seen:
                continue
            seen.add((attribute, attribute))
            items.append({"key": attribute, "topic": attribute, "value": value})
    return items


def _split_label(label: str) -> tuple[str, str]:
    key, _, topic = label.partition("/")
    return key, topic or key


class ProfileMemory:
    """The user's current facts, read from a ``FactMemory`` that reconciles every statement.

    ``facts`` is the durable store to share (lesson 10); by default a private in-memory one.
    ``extractor`` is ``"rules"``, ``"model"`` or ``"auto"`` (rules for the offline stand-in).
    """

    def __init__(self, *, facts: FactMemory | None = None, user_id: str = "user", client: Any = None,
                 settings: Any = None, model: str | None = None, extractor: str = "auto",
                 stale_after: timedelta = DEFAULT_STALE_AFTER, max_reply_chars: int = 600):
        if extractor not in ("auto", "rules", "model"):
            raise ValueError(f"extractor must be 'auto', 'rules' or 'model' (got {extractor!r})")
        self.client, self.settings, self.model = client, settings, model
        self.user_id, self.extractor = user_id, extractor
        self.stale_after = stale_after
        self.max_reply_chars = max_reply_chars
        self._private = facts is None
        self.store = facts if facts is not None else FactMemory.open(":memory:")
        self.statements: list[dict] = []  # what update() wrote, replayed by restore()
        self.rejected: list[str] = []

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use this client/settings unless others were given explicitly."""
        self.client = self.client if self.client is not None else client
        self.settings = self.settings if self.settings is not None else settings

    # -- reading (everything comes from the fact store)
    def _fact(self, row: Any) -> ProfileFact:
        support = [p for p in row.provenance if p.withdrawn_at is None and p.source_kind != "assistant"]
        newest = max(support or row.provenance, key=lambda p: (p.source_version, p.recorded_at))
        key, topic = _split_label(row.attribute)
        stamps = [p.recorded_at for p in (support or row.provenance)]
        spec = self.store.attributes.get(row.attribute)
        stamps += [s["at"] for s in self.statements if s.get("at") and s["label"] == row.attribute
                   and spec is not None and spec.normalise(s["value"]) == row.value_key]  # restatements
        stamp = max(stamps)
        return ProfileFact(key, topic, row.value, newest.source_version, stamp, row.id, row.superseded_by)

    @property
    def facts(self) -> dict[tuple[str, str], ProfileFact]:
        """Current facts by (key, topic)."""
        return {(f.key, f.topic): f for f in map(self._fact, self.store.active_facts(self.user_id))}

    @property
    def history(self) -> list[ProfileFact]:
        """Values a newer statement replaced (superseded in the fact store), oldest first."""
        return sorted(map(self._fact, self.store.history(self.user_id)), key=lambda f: f.turn_id)

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
    def prompt(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[dict]:
        """The extraction request for one turn (the ``model`` extractor)."""
        body = f"USER SAID (turn {turn_id}):\n{user_text}"
        if assistant_text:
            clipped = " ".join(assistant_text.split())[: self.max_reply_chars]
            body += f"\n\nASSISTANT REPLIED (context only, never a source of facts):\n{clipped}"
        return [{"role": "system", "content": EXTRACTOR_PROMPT}, {"role": "user", "content": body}]

    def _uses_rules(self) -> bool:
        if self.extractor != "auto":
            return self.extractor == "rules"
        from helpers.client import get_settings

        return getattr(self.settings or get_settings(), "backend", "") == "offline"

    def update(self, turn_id: int, user_text: str, assistant_text: str = "") -> ProfileUpdate:
        """Extract the user's facts from one turn and write them to the fact store (see the module)."""
        if not is_substantive(user_text):
            return ProfileUpdate()
        if self._uses_rules():
            return self.merge(turn_id, extract_with_rules(user_text), user_text)
        from helpers.client import chat, get_settings

        model = self.model or (self.settings or get_settings()).chat_model
        try:
            response = chat(self.prompt(turn_id, user_text, assistant_text), client=self.client,
                            settings=self.settings, model=model, response_format={"type": "json_object"})
            reply = response.choices[0].message.content or ""
        except Exception as exc:  # the turn itself already succeeded; the profile just misses this one
            warnings.warn(f"profile extraction skipped for turn {turn_id}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:160]}", ProfileWarning, stacklevel=2)
            return ProfileUpdate()
        try:
            items = parse_profile_reply(reply)
        except ProfileFormatError as exc:
            reason = f"turn {turn_id}: {exc}"
            log.warning("profile reply rejected, nothing merged: %s", reason)
            self.rejected.append(reason)
            return ProfileUpdate(rejected=[reason])
        return self.merge(turn_id, items, user_text)

    def merge(self, turn_id: int, items: Sequence[dict], user_text: str) -> ProfileUpdate:
        """Write validated items from turn ``turn_id``; values not in ``user_text`` are rejected, logged."""
        update = ProfileUpdate()
        said = _normal(user_text)
        for item in items:
            value = " ".join(item["value"].split()).strip(" .")
            if _normal(value) not in said:
                reason = f"turn {turn_id}: {item['key']} {value!r} is not in the user's words"
                log.warning("profile fact rejected: %s", reason)
                self.rejected.append(reason)
                update.rejected.append(reason)
                continue
            key = " ".join(item["key"].lower().split())
            topic = key if key == "name" else " ".join(item["topic"].lower().split())
            statement = {"turn_id": turn_id, "key": key, "topic": topic, "value": value,
                         "evidence": " ".join(user_text.split())[:500], "at": clock.now().isoformat()}
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
        label = statement["key"] if statement["topic"] in (statement["key"], "") else \
            f"{statement['key']}/{statement['topic']}"
        statement["label"] = label
        if label not in self.store.attributes:  # open-ended: any label the user's words name is an attribute
            self.store.attributes[label] = AttributeSpec(label, description="stated by the user")
        return self.store.write(Candidate(self.user_id, "user", label, statement["value"],
                                          f"chat:{self.user_id}", "user", int(statement["turn_id"]),
                                          statement["evidence"]))

    def discard(self, turn_id: int) -> None:
        """Forget statements from ``turn_id`` (after an undo), bringing back what they had replaced.

        Only a private store is rebuilt; a shared durable store keeps its audited history.
        """
        kept = [s for s in self.statements if s["turn_id"] != turn_id]
        if self._private and len(kept) != len(self.statements):
            self.restore({"user_id": self.user_id, "statements": kept})
        self.statements = kept

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
            notes = [f"turn {fact.turn_id}", fact.recorded_at[:10]]
            notes += ["possibly outdated"] if self.is_stale(fact, now) else []
            olds = replaced.get(fact.fact_id, [])
            notes += [f'superseded "{o.value}" from turn {o.turn_id}' for o in olds[-2:]]
            where = ", ".join(notes[:2]) + "".join("; " + note for note in notes[2:])
            out.append(f"- {fact.label}: {fact.value} ({where})")
        for fact in self.conflicts:
            out.append(f"- {fact.label}: unsettled, \"{fact.value}\" is disputed by another source (turn "
                       f"{fact.turn_id}); ask the user")
        return out

    def block(self, now: datetime | None = None) -> dict | None:
        """The system message that carries the profile (None while it is empty)."""
        lines = self.lines(now)
        return {"role": "system", "content": PROFILE_HEADER + "\n" + "\n".join(lines)} if lines else None

    # -- saving
    def state(self) -> dict:
        """JSON-ready state: the statements written, replayed into the store by ``restore``."""
        return {"user_id": self.user_id, "statements": [dict(s) for s in self.statements]}

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``: replays the statements (in a shared store they are no-op replays)."""
        state = state or {}
        statements = list(state.get("statements", []))
        if not statements and state.get("facts"):  # an older snapshot: facts and history, not statements
            rows = list(state.get("history", [])) + list(state["facts"])
            statements = [{"turn_id": f["turn_id"], "key": f["key"], "topic": f["topic"], "value": f["value"],
                           "evidence": f["value"]} for f in sorted(rows, key=lambda f: f["turn_id"])]
        if self._private:
            self.store.close()
            attributes = self.store.attributes
            self.store = FactMemory.open(":memory:")
            self.store.attributes.update(attributes)
        self.statements = []
        for statement in statements:
            self._write(statement)
            self.statements.append(dict(statement))

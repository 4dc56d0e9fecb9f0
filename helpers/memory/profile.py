"""Profile memory (lesson 09): a small record of what the user said about themselves.

After each turn, ``ProfileMemory.update`` asks a model for facts *the user* stated --
``name``, ``goal``, ``preference``, ``constraint`` -- as strict JSON
(``response_format={"type": "json_object"}``)::

    {"facts": [{"key": "constraint", "topic": "diet", "value": "vegetarian"}]}

Offline, the stand-in answers with its documented regular expressions
(``helpers.offline_policy.extract_profile_facts``). Rules that hold for both:

- A reply that is not exactly that shape (bad JSON, unknown keys, wrong types) is
  rejected as a whole and logged: nothing from it is merged.
- A value must be the user's own words: it has to appear in the user's message, so
  nothing the assistant said is ever recorded as a user fact.
- Each fact keeps the turn id it came from and a timestamp (``helpers.clock.now()``).
  A newer statement on the same (key, topic) replaces the older one (kept in ``history``).
- Facts older than ``stale_after`` are shown as "possibly outdated" in the prompt.

(Durable, reconciled facts across sessions are ``helpers.memory.facts``, lesson 10.)
"""
from __future__ import annotations

import json
import logging
import warnings
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Sequence

from helpers import clock
from helpers.memory.recall import is_substantive

log = logging.getLogger(__name__)

PROFILE_KEYS = ("name", "goal", "constraint", "preference")
PROFILE_HEADER = "User profile (facts the user stated, with the turn and date):"
DEFAULT_STALE_AFTER = timedelta(days=90)
EXTRACTOR_PROMPT = (
    "You are a profile extractor. From the USER SAID section only, list facts the user states about themselves: "
    "key 'name', 'goal', 'preference' or 'constraint' (diet, times they cannot do, accessibility); topic is a "
    "one- or two-word label (for example 'diet', 'schedule', 'contact'); value is copied word for word from the "
    "user's message. Never use the assistant's words. Reply with JSON only, exactly: "
    '{"facts": [{"key": "...", "topic": "...", "value": "..."}]} (an empty list when there are none).'
)
MAX_VALUE_CHARS = 200


class ProfileFormatError(ValueError):
    """An extraction reply was not the strict JSON shape; it is rejected and nothing is merged."""


class ProfileWarning(UserWarning):
    """Profile extraction could not run for a turn (for example the request failed)."""


@dataclass
class ProfileFact:
    """One thing the user said about themselves, where and when."""

    key: str
    topic: str
    value: str
    turn_id: int
    recorded_at: str  # ISO 8601 with offset, from helpers.clock.now()

    def age(self, now: datetime | None = None) -> timedelta:
        """How long ago it was recorded."""
        return (now or clock.now()) - datetime.fromisoformat(self.recorded_at)


@dataclass
class ProfileUpdate:
    """What one update did."""

    added: list[ProfileFact] = field(default_factory=list)
    replaced: list[ProfileFact] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # reasons, one per rejected reply or item


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
        if item["key"] not in PROFILE_KEYS:
            raise ProfileFormatError(f"fact {i} has unknown key {item['key']!r}; allowed: {', '.join(PROFILE_KEYS)}")
        if len(item["value"]) > MAX_VALUE_CHARS:
            raise ProfileFormatError(f"fact {i} value is longer than {MAX_VALUE_CHARS} characters")
    return data["facts"]


class ProfileMemory:
    """Facts about the user keyed by (key, topic), each with its turn id and timestamp."""

    def __init__(self, *, client: Any = None, settings: Any = None, model: str | None = None,
                 stale_after: timedelta = DEFAULT_STALE_AFTER, max_reply_chars: int = 600):
        self.client, self.settings, self.model = client, settings, model
        self.stale_after = stale_after
        self.max_reply_chars = max_reply_chars
        self.facts: dict[tuple[str, str], ProfileFact] = {}
        self.history: list[ProfileFact] = []  # facts a newer statement replaced
        self.rejected: list[str] = []

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use this client/settings unless others were given explicitly."""
        self.client = self.client if self.client is not None else client
        self.settings = self.settings if self.settings is not None else settings

    def __len__(self) -> int:
        return len(self.facts)

    def get(self, key: str, topic: str | None = None) -> ProfileFact | None:
        """The current fact for ``key`` (and ``topic``; the key itself when omitted), or None."""
        return self.facts.get((key, topic or key))

    # -- extracting
    def prompt(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[dict]:
        """The extraction request for one turn."""
        body = f"USER SAID (turn {turn_id}):\n{user_text}"
        if assistant_text:
            clipped = " ".join(assistant_text.split())[: self.max_reply_chars]
            body += f"\n\nASSISTANT REPLIED (context only, never a source of facts):\n{clipped}"
        return [{"role": "system", "content": EXTRACTOR_PROMPT}, {"role": "user", "content": body}]

    def update(self, turn_id: int, user_text: str, assistant_text: str = "") -> ProfileUpdate:
        """Extract the user's facts from one turn and merge them (see the module docstring)."""
        if not is_substantive(user_text):
            return ProfileUpdate()
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

    def merge(self, turn_id: int, items: Sequence[dict], user_text: str, at: datetime | None = None) -> ProfileUpdate:
        """Add validated items from turn ``turn_id``; values not in ``user_text`` are rejected and logged."""
        update = ProfileUpdate()
        said = _normal(user_text)
        stamp = (at or clock.now()).isoformat()
        for item in items:
            value = " ".join(item["value"].split()).strip(" .")
            if _normal(value) not in said:
                reason = f"turn {turn_id}: {item['key']} {value!r} is not in the user's words"
                log.warning("profile fact rejected: %s", reason)
                self.rejected.append(reason)
                update.rejected.append(reason)
                continue
            topic = "name" if item["key"] == "name" else " ".join(item["topic"].lower().split())
            fact = ProfileFact(item["key"], topic, value, turn_id, stamp)
            old = self.facts.get((fact.key, fact.topic))
            if old is not None and (old.turn_id > turn_id or old.value == value):
                continue  # an older statement never overrides a newer one; a repeat changes nothing
            if old is not None:
                self.history.append(old)
                update.replaced.append(old)
            self.facts[(fact.key, fact.topic)] = fact
            update.added.append(fact)
        return update

    def discard(self, turn_id: int) -> None:
        """Forget facts from ``turn_id`` (after an undo), bringing back what they had replaced."""
        for slot, fact in list(self.facts.items()):
            if fact.turn_id == turn_id:
                del self.facts[slot]
                earlier = [h for h in self.history if (h.key, h.topic) == slot]
                if earlier:
                    self.history.remove(earlier[-1])
                    self.facts[slot] = earlier[-1]

    # -- showing
    def is_stale(self, fact: ProfileFact, now: datetime | None = None) -> bool:
        """True when the fact is older than ``stale_after``."""
        return fact.age(now) > self.stale_after

    def lines(self, now: datetime | None = None) -> list[str]:
        """One ``- key/topic: value (turn N, date)`` line per fact, most important keys first."""
        order = {k: i for i, k in enumerate(PROFILE_KEYS)}
        out = []
        for fact in sorted(self.facts.values(), key=lambda f: (order[f.key], f.turn_id)):
            label = fact.key if fact.topic in (fact.key, "") else f"{fact.key}/{fact.topic}"
            note = "; possibly outdated" if self.is_stale(fact, now) else ""
            out.append(f"- {label}: {fact.value} (turn {fact.turn_id}, {fact.recorded_at[:10]}{note})")
        return out

    def block(self, now: datetime | None = None) -> dict | None:
        """The system message that carries the profile (None while it is empty)."""
        lines = self.lines(now)
        return {"role": "system", "content": PROFILE_HEADER + "\n" + "\n".join(lines)} if lines else None

    # -- saving
    def state(self) -> dict:
        """JSON-ready state."""
        return {"facts": [asdict(f) for f in self.facts.values()], "history": [asdict(f) for f in self.history]}

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``."""
        state = state or {}
        self.facts = {(f["key"], f["topic"]): ProfileFact(**f) for f in state.get("facts", [])}
        self.history = [ProfileFact(**f) for f in state.get("history", [])]

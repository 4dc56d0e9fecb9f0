"""One fact pipeline (notebooks 09-10): a turn in, fact candidates out, whatever the facts are about.

An **extractor** reads one turn - what the user said, and what the assistant replied (context only) -
and returns ``Candidate`` s for the fact store (``helpers.facts.writer.FactMemory``), with provenance:
source ``chat:<user_id>``, kind ``user``, version the turn id. What it looks for is an **attribute
set**, one per domain: the attributes (``AttributeSpec``), the offline rules that find them, and how a
model is asked for them and its reply read (strictly: a reply of the wrong shape gives nothing). Two
domains use it:

* delivery and contact facts (``helpers.facts.extract.delivery_set``, notebook 10): delivery window,
  shipping address, preferred contact, allergies - a closed list;
* campus facts (``helpers.memory.profile_extraction.CAMPUS``, notebook 09): name, goals, constraints,
  preferences and any "my <attribute> is <value>" - open-ended, so an attribute is defined when first named.

Two extractors, one interface (``Extractor``):

* ``RuleExtractor(domain, user_id=...)``: the domain's rules, offline, no server;
* ``ModelExtractor(domain, user_id=..., client=...)``: one chat completion through ``helpers.client.chat``
  with ``response_format={"type": "json_object"}`` and a bound on the reply; ``ReplyFormatError`` when
  the reply is not the domain's shape.

``MultiExtractor`` runs several over one turn, and ``write_turn`` writes what an extractor found into a
``FactMemory`` (defining an open domain's new attributes first): every domain's facts about one user in
one store, with one audit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from helpers.client import chat
from helpers.errors import ConfigError, WorkshopError
from helpers.facts.decisions import FactDecision
from helpers.facts.schema import AttributeSpec, Candidate

OPEN_DESCRIPTION = "stated by the user"  # what an open domain's attribute is described as when first named


class ReplyFormatError(WorkshopError, ValueError):
    """A model extractor's reply was not its domain's strict shape: nothing of it is used."""

    def __init__(self, problems: Sequence[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class Found:
    """What a rule or a model found in a turn: an attribute, its value, the words it came from."""

    attribute: str
    value: str
    evidence: str = ""
    correction: bool = False  # the speaker changes something they said before (written synchronously)
    subject: str = "user"


@dataclass
class AttributeSet:
    """One domain's facts: its attributes, the rules that find them, and how a model is asked for them.

    ``rules(user_text)`` finds what the user states; ``claims(assistant_text)`` what an assistant says it
    did (recorded as ineligible proposals). ``request(turn_id, user_text, assistant_text)`` is a model's
    request for one turn and ``read_reply(text)`` reads its reply strictly (``ReplyFormatError``), both with
    ``max_tokens`` and ``options`` (more request fields). ``open``: any attribute a statement names is
    accepted and defined on first use (described as ``OPEN_DESCRIPTION``).
    """

    name: str
    attributes: Mapping[str, AttributeSpec]
    rules: Callable[[str], list[Found]]
    request: Callable[[int, str, str], list[dict]]
    read_reply: Callable[[str], list[Found]]
    open: bool = False
    claims: Callable[[str], list[Found]] | None = None
    max_tokens: int = 600
    options: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, attribute: str) -> AttributeSpec | None:
        """The attribute's spec: listed, or (an open domain) a new one; None when the domain has no such fact."""
        if attribute in self.attributes:
            return self.attributes[attribute]
        return AttributeSpec(attribute, description=OPEN_DESCRIPTION) if self.open else None

    def define(self, memory: Any, candidates: Iterable[Candidate]) -> None:
        """Make ``memory`` (a ``FactMemory``) know every attribute of ``candidates`` this domain defines."""
        for candidate in candidates:
            spec = None if candidate.attribute in memory.attributes else self.spec(candidate.attribute)
            if spec is not None:
                memory.attributes[candidate.attribute] = spec


def source_of(role: str, user_id: str) -> tuple[str, str]:
    """(source id, source kind): ``chat:<user>``/``user`` for the user's words, ``assistant:<user>``/``assistant``."""
    return (f"chat:{user_id}", "user") if role == "user" else (f"assistant:{user_id}", "assistant")


def candidates_from(found: Iterable[Found], *, user_id: str, turn_id: int, role: str = "user",
                    evidence: str = "") -> list[Candidate]:
    """``Found`` items as candidates from ``role``'s words at version ``turn_id`` (``evidence`` when none)."""
    source_id, kind = source_of(role, user_id)
    return [Candidate(user_id, f.subject, f.attribute, f.value, source_id, kind, turn_id, f.evidence or evidence,
                      f.correction) for f in found]


@runtime_checkable
class Extractor(Protocol):
    """A turn in, candidates out: what the user stated about themselves in the turn ``turn_id``.

    ``define`` makes a ``FactMemory`` know the attributes of candidates it found (an open domain names new
    ones); ``write_turn`` calls both.
    """

    user_id: str

    def extract(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[Candidate]:
        ...

    def define(self, memory: Any, candidates: Iterable[Candidate]) -> None:
        ...


class _OneDomain:
    domain: AttributeSet

    def define(self, memory: Any, candidates: Iterable[Candidate]) -> None:
        """Make ``memory`` know every attribute of ``candidates`` this extractor's domain defines."""
        self.domain.define(memory, candidates)


class RuleExtractor(_OneDomain):
    """The domain's rules on the user's words (and, with ``assistant_claims``, the assistant's claims)."""

    def __init__(self, domain: AttributeSet, *, user_id: str = "user", assistant_claims: bool = False):
        self.domain, self.user_id, self.assistant_claims = domain, user_id, assistant_claims

    def extract(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[Candidate]:
        found = candidates_from(self.domain.rules(str(user_text or "")), user_id=self.user_id, turn_id=turn_id,
                                evidence=" ".join(str(user_text or "").split())[:500])
        if self.assistant_claims and assistant_text:
            found += self.claims(turn_id, assistant_text)
        return found

    def claims(self, turn_id: int, assistant_text: str) -> list[Candidate]:
        """What the assistant says it did, as ``assistant`` proposals (the writer never makes them facts)."""
        if self.domain.claims is None:
            return []
        return candidates_from(self.domain.claims(str(assistant_text)), user_id=self.user_id, turn_id=turn_id,
                               role="assistant")


class ModelExtractor(_OneDomain):
    """The domain's request to a model, its reply read strictly (``ReplyFormatError`` when malformed).

    The request goes through ``helpers.client.chat`` (the one call path: server quirks, errors explained);
    ``model`` wins, then the settings' chat model.
    """

    def __init__(self, domain: AttributeSet, *, user_id: str = "user", client: Any = None, settings: Any = None,
                 model: str | None = None):
        self.domain, self.user_id = domain, user_id
        self.client, self.settings, self.model = client, settings, model

    def ask(self, turn_id: int, user_text: str, assistant_text: str = "") -> str | None:
        """The model's reply (its text, None without any) to the domain's request for one turn; a failed
        request raises."""
        response = chat(self.domain.request(turn_id, user_text, assistant_text), client=self.client,
                        settings=self.settings, response_format={"type": "json_object"},
                        max_tokens=self.domain.max_tokens, **dict(self.domain.options),
                        **({"model": self.model} if self.model else {}))  # else the settings' chat model
        return response.choices[0].message.content

    def read(self, reply: Any) -> list[Found]:
        """What a reply states (strict: ``ReplyFormatError`` for anything but the domain's shape)."""
        if not isinstance(reply, str):
            raise ReplyFormatError(f"the reply has no text content (got {type(reply).__name__})")
        return self.domain.read_reply(reply)

    def extract(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[Candidate]:
        found = self.read(self.ask(turn_id, user_text, assistant_text))
        return candidates_from(found, user_id=self.user_id, turn_id=turn_id,
                               evidence=" ".join(str(user_text or "").split())[:500])


class MultiExtractor:
    """Several extractors over one turn (one per domain, say): their candidates, in order."""

    def __init__(self, *extractors: Extractor):
        if not extractors:
            raise ConfigError("MultiExtractor needs at least one extractor")
        self.extractors = list(extractors)
        self.user_id = extractors[0].user_id

    def extract(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[Candidate]:
        return [c for e in self.extractors for c in e.extract(turn_id, user_text, assistant_text)]

    def define(self, memory: Any, candidates: Iterable[Candidate]) -> None:
        candidates = list(candidates)
        for extractor in self.extractors:
            extractor.domain.define(memory, candidates)


def write_turn(memory: Any, extractor: Extractor, turn_id: int, user_text: str,
               assistant_text: str = "") -> list[FactDecision]:
    """Extract one turn and write its candidates to ``memory`` (a ``FactMemory``): one transaction, each
    decision audited. An open domain's new attributes are defined first."""
    candidates = extractor.extract(turn_id, user_text, assistant_text)
    extractor.define(memory, candidates)
    return memory.write_many(candidates) if candidates else []

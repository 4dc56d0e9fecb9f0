"""One fact pipeline (notebooks 09-10): a turn in, fact candidates out, whatever the facts are about.

An **extractor** reads one turn - what the user said, and what the assistant replied (context only) -
and returns ``Candidate`` s for the fact store (``helpers.facts.writer.FactMemory``), with provenance:
source ``chat:<user_id>``, kind ``user``, version the turn id (``write_turn`` raises it above what the
source has recorded: ``FactMemory.reserve_version``). What it looks for is an **attribute
set**, one per domain: the attributes (``AttributeSpec``), the offline rules that find them, and whether
the list is closed or open. Two domains use it:

* delivery and contact facts (``helpers.facts.extract.delivery_set``, notebook 10): delivery window,
  shipping address, preferred contact, allergies - a closed list;
* campus facts (``helpers.memory.profile_extraction.CAMPUS``, notebook 09): name, goals, constraints,
  preferences and any "my <attribute> is <value>" - open-ended, so an attribute is defined when first named.

Two extractors, one interface (``Extractor``):

* ``RuleExtractor(domain, user_id=...)``: the domain's rules, offline, no server;
* ``ModelExtractor(domain, user_id=..., client=...)``: one chat completion through ``helpers.llm.client.chat``
  with ``response_format={"type": "json_object"}`` and a bound on the reply.

A model is asked the same way for every domain: ``extraction_request`` is one system prompt
(``extraction_prompt``: the task, the domain's attributes with their descriptions, closed or open) and the
turn in sections (``USER SAID``, ``ASSISTANT REPLIED``). Every domain's reply has one shape,
``{"facts": [{"attribute": ..., "value": ..., "evidence": ...}]}``, written and read by
``helpers.core.context_format`` (``write_fact_reply`` / ``read_fact_reply``: the offline stand-in answers with the
same writer), and ``read_reply`` reads it strictly for a domain: a closed domain's attribute must be one of
its list, an open domain's a label (``name``, ``locker number``, or a kind and a topic: ``constraint/diet``).
Any problem anywhere gives ``ReplyFormatError`` naming it, and nothing of the reply is used. Whether a turn
corrects what the user said before is the domain's cue rule (``corrects``), not the model's word.

``MultiExtractor`` runs several over one turn, and ``write_turn`` writes what an extractor found into a
``FactMemory`` (defining an open domain's new attributes first): every domain's facts about one user in
one store, with one audit.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from helpers.llm.client import chat
from helpers.core.context_format import (ASSISTANT_REPLIED, FACT_EXTRACTOR, USER_SAID, ReplyFact, is_fact_label,
                                    read_fact_reply, task_intro, write_attributes, write_fact_reply,
                                    write_section)  # the request's sections and the reply's one shape
from helpers.core.errors import ConfigError, WorkshopError
from helpers.facts.decisions import FactDecision
from helpers.facts.schema import MAX_EVIDENCE_CHARS, MAX_VALUE_CHARS, AttributeSpec, Candidate
from helpers.core.text import shorten

OPEN_DESCRIPTION = "stated by the user"  # what an open domain's attribute is described as when first named
MAX_PROBLEMS = 5  # a rejected reply's error names this many problems, then how many more there were


class ReplyFormatError(WorkshopError, ValueError):
    """A model extractor's reply was not the strict shape, or named what its domain has not: nothing of it is
    used. ``problems`` lists what is wrong, each with its place (``facts[1].value is empty``)."""

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
    """One domain's facts: its attributes, the rules that find them, and whether the list is open.

    ``rules(user_text)`` finds what the user states; ``claims(assistant_text)`` what an assistant says it
    did (recorded as ineligible proposals); ``corrects(user_text)``: do the user's words change something
    said before (their facts are then explicit corrections, written synchronously). ``open``: any attribute
    a statement names is accepted and defined on first use (described as ``OPEN_DESCRIPTION``). A model is
    asked with ``request`` (the assistant's reply clipped to ``context_chars``), bounded by ``max_tokens``,
    with ``options`` (more request fields); its reply is read by ``read_reply``, which raises ``error`` (a
    ``ReplyFormatError``) for a reply of the wrong shape.
    """

    name: str
    attributes: Mapping[str, AttributeSpec]
    rules: Callable[[str], list[Found]]
    open: bool = False
    claims: Callable[[str], list[Found]] | None = None
    corrects: Callable[[str], bool] | None = None
    max_tokens: int = 600
    context_chars: int = 600
    options: Mapping[str, Any] = field(default_factory=dict)
    error: type[ReplyFormatError] = ReplyFormatError

    def request(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[dict]:
        """A model's request for one turn: ``extraction_request`` for this domain."""
        return extraction_request(self, turn_id, user_text, assistant_text)

    def read_reply(self, reply: Any) -> list[Found]:
        """What a model's reply states, read strictly for this domain: ``read_reply``."""
        return read_reply(self, reply)

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


# ---------------------------------------------------------------- asking a model, for any domain

REPLY_SHAPE = write_fact_reply([ReplyFact("...", "...", "...")])  # what the prompt shows: the reply's one shape
NEW_LABELS = ("Name any other attribute the way these are named: a short label for what the fact is about "
              "('locker number'), or a kind and a topic joined by '/' ('preference/stop').")
ONLY_LISTED = "Use only these attribute names; leave out any other fact."


def _described(spec: AttributeSpec) -> str:
    allowed = f" (one of {', '.join(sorted(spec.allowed))})" if spec.allowed else ""
    return spec.description + allowed


def extraction_prompt(domain: AttributeSet) -> str:
    """The one system prompt of every model extractor: the task, ``domain``'s attributes (each with its
    description; closed, or open to new ones) and the reply's shape."""
    return "\n".join([
        f"{task_intro(FACT_EXTRACTOR)}. List the facts the user states about themselves in the {USER_SAID} "
        f"section only; the {ASSISTANT_REPLIED} section is context, never a source of facts, and a question "
        "states no fact.",
        write_attributes(((name, _described(spec)) for name, spec in domain.attributes.items()), open=domain.open),
        NEW_LABELS if domain.open else ONLY_LISTED,
        "For each fact, attribute is what it is about, value is the user's own words for it (copied exactly) and "
        "evidence is the user's sentence that states it.",
        f"Reply with JSON only, exactly: {REPLY_SHAPE}, with an empty list when the user states none."])


def extraction_request(domain: AttributeSet, turn_id: int, user_text: str, assistant_text: str = "") -> list[dict]:
    """A model's request for one turn: ``extraction_prompt(domain)``, then the user's words (``USER SAID``) and
    the assistant's reply as context only (``ASSISTANT REPLIED``, clipped to ``domain.context_chars``)."""
    body = write_section(USER_SAID, str(user_text or ""), f"turn {turn_id}")  # helpers.core.context_format: sections
    if assistant_text:
        clipped = " ".join(str(assistant_text).split())[:domain.context_chars]
        body += "\n\n" + write_section(ASSISTANT_REPLIED, clipped, "context only, never a source of facts")
    return [{"role": "system", "content": extraction_prompt(domain)}, {"role": "user", "content": body}]


def _open_label(text: str) -> str:
    """An open domain's attribute as the store names it: lower case, single spaces, none around the ``/``."""
    return "/".join(" ".join(part.split()) for part in text.lower().split("/"))


def read_reply(domain: AttributeSet, reply: Any) -> list[Found]:
    """What a model's reply states for ``domain``, or ``domain.error`` (a ``ReplyFormatError``) naming every
    problem: the shape of ``helpers.core.context_format.read_fact_reply``, then each attribute one of a closed
    domain's list or, in an open domain, a label (``is_fact_label``), each value and evidence within the
    store's limits. Strict: one problem anywhere, and nothing of the reply is used."""
    facts, problems = read_fact_reply(reply)
    found = []
    for index, fact in enumerate(facts):
        attribute = _open_label(fact.attribute) if domain.open else fact.attribute
        named = repr(shorten(fact.attribute, 60, flatten=False))
        if domain.open and not is_fact_label(attribute):
            problems.append(f"facts[{index}].attribute {named} is not a label: at most 40 letters, digits, "
                            "spaces, _ ' and -, with at most one / between a kind and its topic")
        elif domain.spec(attribute) is None:
            problems.append(f"facts[{index}].attribute {named} is not one of {', '.join(sorted(domain.attributes))}")
        if len(fact.value) > MAX_VALUE_CHARS:
            problems.append(f"facts[{index}].value is {len(fact.value)} characters; at most {MAX_VALUE_CHARS}")
        if len(fact.evidence) > MAX_EVIDENCE_CHARS:
            problems.append(f"facts[{index}].evidence is {len(fact.evidence)} characters; at most "
                            f"{MAX_EVIDENCE_CHARS}")
        found.append(Found(attribute, fact.value, fact.evidence))
    if problems:
        more = len(problems) - MAX_PROBLEMS
        raise domain.error(problems[:MAX_PROBLEMS] + ([f"and {more} more problem{'s' * (more > 1)}"] if more > 0
                                                      else []))
    return found


# ---------------------------------------------------------------- from found facts to candidates

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
    """The domain's request to a model (``extraction_request``), its reply read strictly (``read_reply``:
    ``ReplyFormatError`` when malformed); the domain's ``corrects`` rule marks corrections.

    The request goes through ``helpers.llm.client.chat`` (the one call path: server quirks, errors explained);
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

    def read(self, reply: Any, user_text: str = "") -> list[Found]:
        """What a reply states (strict: ``ReplyFormatError`` for anything but the one shape), each fact a
        correction when the domain's ``corrects`` rule finds one in ``user_text``."""
        found = self.domain.read_reply(reply)
        if found and self.domain.corrects is not None and self.domain.corrects(str(user_text or "")):
            found = [replace(f, correction=True) for f in found]
        return found

    def extract(self, turn_id: int, user_text: str, assistant_text: str = "") -> list[Candidate]:
        found = self.read(self.ask(turn_id, user_text, assistant_text), user_text)
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
               assistant_text: str = "", *, version: int | None = None) -> list[FactDecision]:
    """Extract one turn and write its candidates to ``memory`` (a ``FactMemory``): one transaction, each
    decision audited. An open domain's new attributes are defined first.

    The candidates' version is ``version`` when given (writing a turn again with the version it had is a
    replay, a ``noop``); else one reserved per source from ``memory`` (``reserve_version``: the turn id, or
    higher when the source already recorded that much), so a turn of a new session always counts."""
    candidates = extractor.extract(turn_id, user_text, assistant_text)
    reserved: dict[tuple[str, str], int] = {}
    for candidate in candidates:
        where = (candidate.user_id, candidate.source_id)
        if version is not None:
            candidate.source_version = version
        elif hasattr(memory, "reserve_version"):
            if where not in reserved:
                reserved[where] = memory.reserve_version(*where, at_least=max(int(turn_id), 0))
            candidate.source_version = reserved[where]
    extractor.define(memory, candidates)
    return memory.write_many(candidates) if candidates else []

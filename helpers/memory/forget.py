"""Forgetting for real (notebook 13): "forget X" takes X out of every layer, "forget me" deletes a user.

**Forget X.** ``forget_topic`` finds what X is in the user's memory, then removes it everywhere it lives:

1. *what matches* (``Topic``): a sentence is forgotten when it names every content word of X ("my sister" ->
   ``sister``, plurals folded), names a value of a forgotten fact, or names a name a forgotten sentence gave
   ("Maya" from "My sister Maya's birthday is June 3"); a fact is forgotten when its attribute, its value or
   its evidence matches;
2. *the facts* (``helpers.facts.fact_store``'s ``forget``): the facts are deleted with their provenance, and
   every audit row and evidence that quoted them has the text replaced by ``[forgotten]``. The audit keeps a
   ``forgotten`` row per deletion: a decision was made, and when, but not what it was about;
3. *each conversation of the user* (``forget_in_session``): every string of its snapshot - the window's
   messages, the turn records, dropped turns, the summary's lines, the turns waiting for it, pins, the
   profile's statements - with each forgotten sentence and value replaced by ``[forgotten]`` (so a summary
   that quoted it is *marked*), and each changed turn read again by the memory (``unread``): its recall
   pieces, lexical index and vectors rebuilt from the text that is left. The whole snapshot is then saved,
   so the stored turn rows and recall vectors are replaced too.

**Forget me.** ``forget_user`` deletes every session of the user (turn rows and vectors go with them) and
every fact-store row (``forget_user_rows``: every table the fact store owns), on SQLite and PostgreSQL alike.

``forget_request`` reads "forget what I told you about my sister" as a request to forget "my sister": the
assistant handles it before any turn runs, so the request itself is never stored either.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from helpers.core.clock import MONTHS, WEEKDAYS, now
from helpers.facts.fact_store import FORGOTTEN

STOP_WORDS = frozenset(
    "a an the my our your his her their its i me we you he she they it this that these those of about to for "
    "in on at with and or what which who whom told tell said say everything anything all things thing stuff "
    "ever please you've i've i'd i'm is are was were be been being have has had do did does from any some "
    "just also know knew".split())
MONTHS_AND_DAYS = frozenset(MONTHS) | {day.lower() for day in WEEKDAYS}  # the clock's names
REQUEST = re.compile(r"^\s*(?:please\s+)?(?:forget|delete|erase|remove|stop remembering)\b(.*)$", re.I | re.S)
ABOUT = re.compile(r"\b(?:about|regarding|concerning|that)\s+(.+)$", re.I | re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _stem(word: str) -> str:
    """A word folded for matching: lower case, possessive and plural ``s`` removed ("sisters" -> "sister")."""
    word = word.lower().replace("\u2019", "'")
    word = re.sub(r"'s?$", "", word)
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its meaning (stop words left out), folded by ``_stem``."""
    return {_stem(w) for w in re.findall(r"[\w'\u2019-]+", str(text)) if w.lower() not in STOP_WORDS}


def forget_request(text: str) -> str | None:
    """What a message asks to forget ("forget what I told you about my sister" -> "my sister"), or None when it
    is not such a request. "Forget me" is never one: deleting a user is ``forget_user``, asked for apart."""
    match = REQUEST.match(str(text or ""))
    if not match:
        return None
    rest = match.group(1).strip().rstrip(".!?")
    about = ABOUT.search(rest)
    topic = (about.group(1) if about else rest).strip()
    if not content_words(topic) or topic.lower() in ("me", "about me", "everything about me", "all about me"):
        return None
    return topic


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences (cut after ``.``/``!``/``?`` and a space, and at line breaks)."""
    return [part for part in _SENTENCE.split(str(text)) if part.strip()]


@dataclass
class Topic:
    """What one "forget X" removes: the words of X, then the values and names that forgetting found."""

    words: set[str]
    values: set[str] = field(default_factory=set)  # texts replaced wherever they stand (fact values, names)

    @classmethod
    def of(cls, topic: str) -> "Topic":
        return cls(content_words(topic))

    def matches(self, sentence: str) -> bool:
        """Does this sentence speak of the topic: all of its words, or one of its values?"""
        words = content_words(sentence)
        if self.words and self.words <= words:
            return True
        return any(re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", sentence, re.I) for value in self.values)

    def learn_names(self, sentence: str) -> None:
        """Add the names a forgotten sentence gives (capitalised words after its first; months, days and the
        tags of quoted turns, ``[turn 3, 2026-11-30]``, excepted): where they stand elsewhere they are part of
        what is forgotten. Numbers are not learnt: a forgotten fact's value carries its own."""
        words = re.findall(r"[\w'\u2019-]+", re.sub(r"\[[^\]]*\]", " ", sentence))
        for word in words[1:]:
            bare = re.sub(r"['\u2019]s?$", "", word)
            if bare[:1].isupper() and bare.lower() not in MONTHS_AND_DAYS and bare.lower() not in STOP_WORDS:
                self.values.add(bare)

    def scrub(self, text: str) -> str:
        """``text`` with every matching sentence, then every value, replaced by ``[forgotten]``."""
        pieces = re.split(r"((?<=[.!?])\s+|\n+)", str(text))
        kept = [FORGOTTEN if (i % 2 == 0 and piece.strip() and self.matches(piece)) else piece
                for i, piece in enumerate(pieces)]
        out = "".join(kept)
        for value in sorted(self.values, key=len, reverse=True):
            out = re.sub(r"(?<!\w)" + re.escape(value) + r"(?!\w)", FORGOTTEN, out, flags=re.I)
        return out


def scrub_value(value: Any, topic: Topic) -> Any:
    """Every string inside ``value`` (dicts, lists, JSON kept in a string) scrubbed by ``topic``."""
    if isinstance(value, dict):
        return {k: scrub_value(v, topic) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, topic) for v in value]
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    if stripped[:1] in "{[":
        try:
            decoded = json.loads(stripped)
        except ValueError:
            decoded = None
        if isinstance(decoded, (dict, list)):
            cleaned = scrub_value(decoded, topic)
            return value if cleaned == decoded else json.dumps(cleaned, ensure_ascii=False)
    return topic.scrub(value)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def gather(topic: Topic, texts: Iterable[str], facts: Sequence[Any] = ()) -> list[str]:
    """Grow ``topic`` from what the user's memory holds: the sentences that match it (their names and numbers
    join it) and the facts that match (their values join it), until nothing new is found. Returns the
    forgotten sentences."""
    texts = list(texts)
    found: list[str] = []
    for _ in range(3):  # a name found may reveal one more sentence; three rounds reach every one in practice
        before = (len(found), len(topic.values))
        for text in texts:
            for sentence in split_sentences(text):
                if sentence not in found and topic.matches(sentence) and sentence.strip() != FORGOTTEN:
                    found.append(sentence)
                    topic.learn_names(sentence)
        for fact in facts:
            if fact_matches(topic, fact, found):
                topic.values.add(fact.value)
        if (len(found), len(topic.values)) == before:
            break
    return found


def fact_matches(topic: Topic, fact: Any, sentences: Sequence[str] = ()) -> bool:
    """Is ``fact`` (a ``StoredFact``) part of the topic: its label, value or evidence matches, or its evidence
    is one of the forgotten sentences?"""
    evidence = [p.evidence for p in getattr(fact, "provenance", ())]
    return (topic.matches(fact.attribute.replace("/", " ")) or topic.matches(fact.value)
            or any(topic.matches(e) for e in evidence if e)
            or any(e and (e in s or s in e) for e in evidence for s in sentences))


ALL_STATUSES = ("active", "superseded", "conflict", "ineligible")


@dataclass
class ForgetReport:
    """What one "forget X" removed: facts deleted, sentences replaced, sessions rewritten, turns re-read."""

    topic: str
    facts: list[str] = field(default_factory=list)       # "attribute = value" of each deleted fact
    sentences: int = 0
    sessions: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        if not (self.facts or self.sentences):
            return f"Nothing about {self.topic!r} was found to forget."
        return (f"Forgotten: {self.topic!r} - {len(self.facts)} fact{'s' * (len(self.facts) != 1)} deleted "
                f"(audited as deletions), {self.sentences} sentence{'s' * (self.sentences != 1)} replaced by "
                f"{FORGOTTEN} in {len(self.sessions)} conversation{'s' * (len(self.sessions) != 1)} "
                "(turns, summary, recall and profile rebuilt).")


def forget_in_session(session: Any, topic: Topic) -> list[int]:
    """Scrub one ``PersistentSession`` (or ``ChatSession``) by ``topic`` (see the module, step 3), save it
    whole when it is persistent; returns the ids of the turns that changed."""
    chat = getattr(session, "session", session)
    state = chat.snapshot()
    cleaned = {k: (v if k == "system_prompt" else scrub_value(v, topic)) for k, v in state.items()}
    if cleaned == state:
        return []
    turns_of = {}
    for key in ("turns",):
        for before, after in zip(state.get(key, []), cleaned.get(key, [])):
            if before != after:
                turns_of[int(before["turn_id"])] = True
    for before, after in zip(state.get("dropped", []), cleaned.get("dropped", [])):
        if before != after:
            turns_of[int(before["turn_id"])] = True
    window = getattr(chat, "_window", None)
    if window is not None:
        cleaned_chat = [m for m in cleaned.get("messages", [])]
        position = 0
        for turn_id, messages in window.turns():
            if cleaned_chat[position:position + len(messages)] != state["messages"][position:position + len(messages)]:
                turns_of[int(turn_id)] = True
            position += len(messages)
    memory = cleaned.get("memory")
    if isinstance(memory, dict):
        parts = memory.get("turns") or {}
        for key, part in list(parts.items()):
            if part != (state.get("memory") or {}).get("turns", {}).get(key):
                turns_of[int(key)] = True
        for turn_id in turns_of:
            parts.pop(str(turn_id), None)  # read again from the text that is left (recall, vectors, profile)
        memory["unread"] = sorted(turns_of)
    chat.load_snapshot(cleaned, catch_up=True)
    drop = getattr(getattr(chat, "memory", None), "drop_deferred", None)
    if drop is not None:
        drop()  # the facts a re-read turn states are in the fact store already: nothing to write again
    if hasattr(session, "store") and hasattr(session, "revision"):
        session._synced = None  # store the whole snapshot: every row forgetting changed is replaced
        session.save()
    return sorted(turns_of)


def forget_topic(text: str, *, user_id: str, facts: Any = None, sessions: Sequence[Any] = (),
                 source_id: str | None = None) -> ForgetReport:
    """Forget ``text`` (a topic: "my sister") for ``user_id`` in ``facts`` (a ``FactMemory``) and every session
    of ``sessions`` (``PersistentSession`` or ``ChatSession`` objects); returns a ``ForgetReport``."""
    topic, report = Topic.of(text), ForgetReport(str(text))
    stored = facts.store.read_facts(user_id, ALL_STATUSES) if facts is not None else []
    texts = [s for session in sessions for s in _strings(getattr(session, "session", session).snapshot())]
    sentences = gather(topic, texts + [p.evidence for f in stored for p in f.provenance], stored)
    doomed = [f for f in stored if fact_matches(topic, f, sentences)]
    if doomed:
        facts.store.forget(user_id, [f.id for f in doomed], source_id=source_id or f"chat:{user_id}",
                           reason="deleted at the user's request (forget)", at=now().isoformat(),
                           texts=sentences)
    report.facts = [f"{f.attribute} = {f.value}" for f in doomed]
    report.sentences = len(sentences)
    for session in sessions:
        changed = forget_in_session(session, topic)
        if changed:
            report.sessions.append(getattr(session, "session_id", "this conversation"))
            report.turns += changed
    return report


def forget_user(user_id: str, *, store: Any = None, facts: Any = None) -> dict[str, int]:
    """Delete every row of ``user_id``: every session in ``store`` (a session store; turn rows and vectors go
    with each) and every fact-store row of ``facts`` (a ``FactMemory``). Returns what went, by store."""
    gone = {"sessions": 0, "fact rows": 0}
    if store is not None:
        for info in store.list_sessions(user_id):
            gone["sessions"] += bool(store.delete(user_id, info.session_id))
    if facts is not None:
        gone["fact rows"] = facts.store.forget_user(user_id)
    return gone

"""What ChatSession asks of its memory (helpers/chat/memory_protocol.py): the Memory protocol lists every member
the session layer uses and nothing else; a TurnPartedMemory's state is a shared part plus one part per turn, the
parts add up to the whole state, a checkpoint takes a failed turn back exactly, and a session with recall and a
profile saves in the time of one turn, whatever its length."""
from __future__ import annotations

from helpers.core import clock

import ast
import copy
import json
import random
from pathlib import Path

import pytest

from helpers.memory.assembler import MemoryAssembler
from helpers.memory.profile import ProfileMemory
from helpers.chat.chat_session import ChatSession
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionStoreError, SQLiteSessionStore
from helpers.chat.chat_session import Memory
from helpers.chat.memory_protocol import TurnPartedMemory

from support import QUESTIONS


SAID = ["My name is Ada.", "I'm vegetarian.", "My locker number is 4471.", "Actually my locker number is 5120.",
        "My bike is blue and my advisor is Dr. Okafor.", "I want to join the robotics club."]
ASKED = ["When does the AI club meet?", "What is my locker number?", "Where can I print a poster?", "hi", "thanks!"]


def whole_from_parts(memory: MemoryAssembler, ids) -> dict:
    """``shared_state`` with every turn's ``turn_state``: what a store rebuilds from the header and the rows."""
    state = memory.shared_state()
    state["turns"] = {str(i): part for i in sorted(ids) if (part := memory.turn_state(i)) is not None}
    return state


def assistant_like() -> MemoryAssembler:
    return MemoryAssembler(profile=ProfileMemory(user_id="ada"), window_turns=2)


def test_the_parts_add_up_to_the_state_and_it_restores_exactly():
    session = ChatSession(memory=assistant_like(), max_turns=2)
    for n in range(12):
        session.chat(SAID[n % len(SAID)] if n % 2 == 0 else ASKED[n % len(ASKED)])
    memory = session.memory
    state = memory.state()
    assert state["turns"] and all(isinstance(k, str) for k in state["turns"])
    assert whole_from_parts(memory, range(session._next_id)) == state
    assert any("profile" in p for p in state["turns"].values()) and any("recall" in p for p in state["turns"].values())
    assert any(p.get("recall") == {"skipped": True} for p in state["turns"].values())  # small talk is noted too
    json.dumps(state)  # JSON-ready
    other = assistant_like()
    other.restore(copy.deepcopy(state))
    assert other.state() == state
    shared = memory.shared_state()
    assert shared["turns"] == {} and len(json.dumps(shared)) < len(json.dumps(state)) / 3


def test_a_state_saved_before_turns_had_parts_still_restores():
    old = {"summary": {"text": "", "covers": []}, "pending": [], "keep": [],
           "recall": {"quotes": {"3": "[turn 3] user: My bike is blue."}, "texts": {"3": ["My bike is blue."]},
                      "skipped": [4], "answers": {}},
           "profile": {"user_id": "ada", "statements": [
               {"turn_id": 3, "key": "bike", "topic": "bike", "value": "blue", "evidence": "My bike is blue.",
                "at": "2026-12-01T09:00:00+00:00"}]}}
    memory = assistant_like()
    memory.restore(old)
    state = memory.state()
    assert state["turns"]["3"]["recall"] == {"quote": "[turn 3] user: My bike is blue.", "texts": ["My bike is blue."]}
    assert [s["value"] for s in state["turns"]["3"]["profile"]] == ["blue"]
    assert state["turns"]["4"] == {"recall": {"skipped": True}}
    assert memory.profile.get("bike").value == "blue"


@pytest.mark.parametrize("seed", range(6))
def test_a_checkpoint_brings_back_exactly_the_state_it_was_taken_at(seed):
    rng = random.Random(seed)
    session = ChatSession(memory=assistant_like(), max_turns=2)
    for _ in range(4):
        session.chat(rng.choice(SAID))
    memory = session.memory
    for _ in range(8):
        point, before = memory.checkpoint(), copy.deepcopy(memory.state())
        for _ in range(rng.randint(1, 4)):  # turns, undos and a reset, then back
            op = rng.choice(["said", "asked", "undo", "undo", "reset"] if rng.random() < 0.2 else
                            ["said", "asked", "undo"])
            if op == "said":
                session.chat(rng.choice(SAID))
            elif op == "asked":
                session.chat(rng.choice(ASKED))
            elif op == "undo":
                session.undo()
            else:
                memory.reset()
        assert memory.state_at(point) == before
        memory.rollback(point)
        assert memory.state() == before
        assert {(f.key, f.value) for f in memory.profile.facts.values()} == \
            {(s["key"], s["value"]) for s in _current(before)}  # the private store was rebuilt to match
        session.chat(rng.choice(SAID))


def _current(state: dict) -> list[dict]:
    """The newest statement per attribute in a state (what a private profile shows)."""
    newest = {}
    for part in sorted(state["turns"].items(), key=lambda kv: int(kv[0])):
        for statement in part[1].get("profile", []):
            newest[(statement["key"], statement["topic"])] = statement
    return list(newest.values())


def test_a_failed_turn_keeps_every_recall_vector_and_embeds_nothing_again(monkeypatch):
    session = ChatSession(memory=assistant_like(), max_turns=1)
    for text in SAID[:4]:
        session.chat(text)
    session.chat(ASKED[1])  # the search embeds every statement turn
    recall = session.memory.recall
    rows, requests, state = recall.rows, recall.embed_requests, session.snapshot()
    assert rows and not recall.pending

    def broken(*args, **kwargs):
        raise RuntimeError("the server went away (simulated)")

    monkeypatch.setattr(session.memory.profile, "update", broken)  # fails after recall took the turn in
    with pytest.raises(RuntimeError):
        session.chat("My locker number is 9000. Where is the gym?")
    monkeypatch.undo()
    assert session.snapshot() == state and recall.rows == rows and not recall.pending
    session.chat(ASKED[0])
    assert recall.embed_requests - requests <= 2  # the new question (and the new statement), nothing older


def test_an_undone_small_talk_turn_leaves_no_trace():
    session = ChatSession(memory=assistant_like())
    session.chat("hi")
    assert session.memory.state()["turns"] == {"0": {"at": clock.now().isoformat(), "recall": {"skipped": True}}}
    session.undo()
    assert session.memory.state()["turns"] == {} and session.memory.recall.skipped == []


def statements_of_a_turn(store, session, text) -> tuple[list[str], int]:
    """The SQL one saved turn runs (statement and table), and the bytes of data it sends."""
    conn = store._connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        session.chat(text)
    finally:
        conn.set_trace_callback(None)
    writes = [s for s in seen if s.startswith(("INSERT", "UPDATE", "DELETE"))]
    return [" ".join(s.split()[:3]) for s in seen], sum(len(s) for s in writes)


def test_a_save_with_recall_and_profile_writes_one_turns_worth_at_turn_60_as_at_turn_8(tmp_path):
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    texts = [t for pair in zip(SAID, ASKED) for t in pair]
    for n in range(8):
        session.chat(texts[n % len(texts)])
    early, early_bytes = statements_of_a_turn(store, session, "My desk is in room 12.")
    for n in range(9, 60):
        session.chat(f"My favourite number is {n}." if n % 3 == 0 else texts[n % len(texts)])
    late, late_bytes = statements_of_a_turn(store, session, "My desk is in room 12.")
    assert early == late
    assert not any(s.startswith("SELECT turn_id, model") or s.startswith("SELECT turn_id, digest") for s in late)
    assert late_bytes < early_bytes * 1.3  # the header does not grow with the history
    header = json.loads(store._connection().execute("SELECT header FROM sessions").fetchone()[0])
    assert header["memory"]["turns"] == {} and header["memory"]["recall"] == {}
    assert store.load_state("ada", "s1").state == session.snapshot()
    store.close()


def test_a_save_that_fails_keeps_the_memory_and_the_store_as_they_were(tmp_path, monkeypatch):
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    for text in SAID[:3] + ASKED[:2]:
        session.chat(text)
    before, rows = session.snapshot(), session.session.memory.recall.rows
    monkeypatch.setattr(store, "_transaction_for", lambda *a: (_ for _ in ()).throw(
        SessionStoreError("the disk is read-only (simulated)")))
    with pytest.raises(SessionStoreError):
        session.chat("My locker number is 8080.")
    monkeypatch.undo()
    assert session.snapshot() == before and store.load_state("ada", "s1").state == before
    assert session.session.memory.recall.rows >= rows
    session.chat("My locker number is 8080.")
    reopened = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    assert reopened.snapshot() == session.snapshot()
    assert reopened.session.memory.profile.get("locker number").value == "8080"
    store.close()


def test_a_session_stored_with_its_whole_memory_in_the_header_keeps_every_turn_after_the_next_save(tmp_path):
    """Sessions saved before memories kept one part per turn: the first save stores everything once."""
    from helpers.memory.assembler import _split_turns

    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    for text in SAID[:4] + ASKED[:2]:
        session.chat(text)
    state = session.snapshot()
    recall, profile, _ = _split_turns(state["memory"].pop("turns"), {}, {"user_id": "ada"})
    state["memory"].update(recall=recall, profile=profile)  # the layout older saves wrote: all in the header
    store.save("ada", "s1", state)
    assert all("memory" not in json.loads(body) for (body,) in
               store._connection().execute("SELECT body FROM session_turns").fetchall())
    old = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    texts = dict(old.session.memory.recall.texts)
    assert len(texts) >= 4
    old.chat("My bike is green.")
    again = PersistentSession.open(store, "ada", "s1", memory=assistant_like(), max_turns=2)
    assert again.snapshot() == old.snapshot()
    assert {i: again.session.memory.recall.texts[i] for i in texts} == texts  # no older turn lost its part
    store.close()


ROOT = Path(__file__).resolve().parents[1]


MEMBERS = {"window_turns", "attach", "forget", "build", "count", "remember", "discard", "reset", "state",
           "restore"}


PARTED = {"shared_state", "turn_state", "checkpoint", "rollback", "state_at"}  # TurnPartedMemory's additions


def test_the_memory_protocol_lists_what_chatsession_uses_and_the_assembler_has_it():
    declared = {n for n in vars(Memory) if not n.startswith("_")} | set(Memory.__annotations__)
    assert declared == MEMBERS
    assert {n for n in vars(TurnPartedMemory) if not n.startswith("_")} == PARTED
    assert isinstance(MemoryAssembler(), Memory) and isinstance(MemoryAssembler(), TurnPartedMemory)
    assert not isinstance(object(), Memory) and not isinstance(OnlyTheProtocol(), TurnPartedMemory)


def test_the_session_layer_reads_no_other_member_of_its_memory():
    used = set()
    for module in ("helpers/chat/chat_session.py", "helpers/chat/snapshot.py"):
        for node in ast.walk(ast.parse((ROOT / module).read_text())):
            if isinstance(node, ast.Attribute) and (
                    (isinstance(node.value, ast.Attribute) and node.value.attr == "memory"
                     and isinstance(node.value.value, ast.Name) and node.value.value.id == "self")
                    or (isinstance(node.value, ast.Name) and node.value.id == "memory")):
                used.add(node.attr)
    assert used and used <= MEMBERS | PARTED, used - MEMBERS - PARTED


class OnlyTheProtocol:
    """A memory with exactly the protocol's members (each forwarded to a MemoryAssembler), noting which are used."""

    __slots__ = ("_inner", "used")

    def __init__(self):
        self._inner = MemoryAssembler(window_turns=2)
        self.used: set[str] = set()

    @property
    def window_turns(self):
        self.used.add("window_turns")
        return self._inner.window_turns

    def _call(self, name, *args, **kwargs):
        self.used.add(name)
        return getattr(self._inner, name)(*args, **kwargs)

    def attach(self, client=None, settings=None):
        return self._call("attach", client, settings)

    def forget(self, turns):
        return self._call("forget", turns)

    def build(self, system_prompt, window, question, *, budget=None, tools=None):
        return self._call("build", system_prompt, window, question, budget=budget, tools=tools)

    def count(self, message):
        return self._call("count", message)

    def remember(self, turn_id, messages):
        return self._call("remember", turn_id, messages)

    def discard(self, turn_id):
        return self._call("discard", turn_id)

    def reset(self):
        return self._call("reset")

    def state(self):
        return self._call("state")

    def restore(self, state):
        return self._call("restore", state)


def test_a_session_works_with_a_memory_that_has_only_the_protocol(tmp_path):
    memory = OnlyTheProtocol()
    assert isinstance(memory, Memory)
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1", memory=memory)  # a store needs nothing more either
    for question in QUESTIONS[:4]:
        session.chat(question)
    assert "".join(session.stream(QUESTIONS[1]))
    session.undo()
    copy = ChatSession.from_snapshot(session.snapshot(), memory=OnlyTheProtocol())
    assert copy.turn_ids == session.turn_ids
    session.reset()
    assert memory.used | copy.memory.used == MEMBERS  # restore: the copy's memory loaded the snapshot
    store.close()

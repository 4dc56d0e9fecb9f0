"""The front ends' one interface: ``Conversation`` (helpers/sessions/conversation.py).

Every implementer declares it and defines every member explicitly - in its own class, in a base of its own
below the protocol (``ForwardsToSession``, the forwarding the three share), or on the instance - and none
through ``__getattr__``; PersistentSession forwards nothing implicitly; ChatUI and TerminalChat work on a fake
that has the protocol's members and nothing else; both front ends show the one ``memory_report``."""
import inspect

import pytest

from helpers.app import chat_window, terminal_chat
from helpers.app.assistant import Assistant, open_assistant
from helpers.app.chat_window import ChatUI
from helpers.app.terminal_chat import TerminalChat
from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import TurnRecord
from helpers.sessions import conversation
from helpers.sessions.conversation import (CONVERSATION_MEMBERS, Conversation, ForwardsToSession,
                                           UnsavedConversation, memory_report)
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore


def below_the_protocol(cls) -> list[type]:
    """The classes of ``cls``'s MRO before ``Conversation``: the class itself and the bases of its own."""
    return list(cls.__mro__[:cls.__mro__.index(Conversation)])


def test_the_members_are_the_protocols():
    members = {name for name in vars(Conversation) if not name.startswith("_")} \
        | set(Conversation.__annotations__)
    assert members == set(CONVERSATION_MEMBERS)


@pytest.fixture
def implementers(tmp_path):
    """One open instance of each implementer: name -> instance."""
    store = SQLiteSessionStore(tmp_path / "s.db")
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db") as assistant:
        yield {"PersistentSession": PersistentSession.open(store, "ada", "s1"), "Assistant": assistant,
               "UnsavedConversation": UnsavedConversation(ChatSession())}
    store.close()


@pytest.mark.parametrize("cls", [PersistentSession, Assistant, UnsavedConversation])
def test_each_implementer_declares_and_defines_every_member(cls, implementers):
    """Each member is written out: in the class or a base of its own below the protocol, or set on the
    instance (its data members); never the protocol's empty stub, never found through ``__getattr__``."""
    assert Conversation in cls.__mro__
    instance = implementers[cls.__name__]
    assert type(instance) is cls
    for klass in cls.__mro__[:-1]:  # every class but object
        assert "__getattr__" not in vars(klass) and "__getattribute__" not in vars(klass), klass
    own = below_the_protocol(cls)
    missing = [m for m in CONVERSATION_MEMBERS
               if m not in vars(instance) and not any(m in vars(klass) for klass in own)]
    assert missing == []
    stubs = [m for m in CONVERSATION_MEMBERS if m in vars(Conversation)
             and inspect.getattr_static(instance, m) is vars(Conversation)[m]]
    assert stubs == []


def test_the_forwarding_is_written_once(implementers):
    """What a conversation holds is read from its ``session`` by one piece, ForwardsToSession, for all three."""
    forwarded = ("turns", "turn_ids", "dropped", "messages", "memory", "snapshot", "memory_state")
    for cls in (PersistentSession, Assistant, UnsavedConversation):
        assert ForwardsToSession in below_the_protocol(cls)
        for name in forwarded:
            assert inspect.getattr_static(cls, name) is vars(ForwardsToSession)[name], (cls.__name__, name)
    assert "__getattr__" not in vars(ForwardsToSession)
    for conversation_ in implementers.values():
        inner = conversation_.session
        assert conversation_.turns == inner.turns and conversation_.turn_ids == inner.turn_ids
        assert conversation_.dropped == inner.dropped and conversation_.messages == inner.messages
        assert conversation_.memory is inner.memory and conversation_.snapshot() == inner.snapshot()
        assert conversation_.memory_state() == inner.memory_state()


def test_both_implementers_satisfy_the_protocol_at_runtime(tmp_path):
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1")
    assert isinstance(session, Conversation)
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db") as assistant:
        assert isinstance(assistant, Conversation)
        assert all(hasattr(assistant, m) for m in CONVERSATION_MEMBERS)
    assert all(hasattr(session, m) for m in CONVERSATION_MEMBERS)
    assert isinstance(UnsavedConversation(ChatSession()), Conversation)
    store.close()


def test_persistent_session_forwards_nothing_implicitly(tmp_path):
    assert "__getattr__" not in vars(PersistentSession)
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = PersistentSession.open(store, "ada", "s1")
    for name in ("ledger", "tools", "registry", "load_snapshot", "mark"):  # ChatSession's, never forwarded
        assert hasattr(session.session, name) and not hasattr(session, name)
    session.chat("When does the AI club meet?")
    assert session.turns == session.session.turns and session.turn_ids == [0]
    assert session.messages == session.session.messages and session.snapshot() == session.session.snapshot()
    assert session.ask("Where can I print a poster?") == session.turns[-1].answer
    store.close()


class Fake:
    """The protocol's members and nothing more (a class with __slots__: no attribute can be added)."""

    __slots__ = ("user_id", "session_id", "store", "facts", "settings", "revision", "_turns", "calls")

    def __init__(self):
        self.user_id, self.session_id, self.store, self.facts, self.settings = "ada", "s1", None, None, None
        self.revision, self._turns, self.calls = 0, [], []

    name = property(lambda self: "ada/s1")
    closed = property(lambda self: False)
    turns = property(lambda self: list(self._turns))
    turn_ids = property(lambda self: [t.turn_id for t in self._turns])
    dropped = property(lambda self: [])
    messages = property(lambda self: [])

    def ask(self, text):
        self.calls.append("ask")
        self._turns.append(TurnRecord(turn_id=len(self._turns), question=text, answer=f"echo {text}", steps=1))
        return f"echo {text}"

    def stream(self, text):
        self.calls.append("stream")
        answer = self.ask(text)
        yield answer
        return answer

    def undo(self):
        return self._turns.pop() if self._turns else None

    def reset(self):
        self._turns.clear()

    def reload(self):
        self.calls.append("reload")

    def snapshot(self):
        return {"turns": [vars(t) for t in self._turns]}

    def memory_report(self, *, facts=True):
        return "FAKE MEMORY REPORT"

    def audit_report(self):
        return "FAKE AUDIT"

    def close(self):
        pass


def test_the_fake_is_a_conversation():
    assert isinstance(Fake(), Conversation)


def test_the_chat_window_works_on_the_protocol_alone():
    fake = Fake()
    ui = ChatUI(fake)
    assert ui.session is fake and ui.user_id == "ada" and ui.facts is None and ui.stream
    assert ui.send("hello") == "echo hello" and fake.calls[:1] == ["stream"]
    assert ChatUI(fake, stream=False).send("again") == "echo again" and fake.calls[-1] == "ask"
    assert ui.memory_text()["Summary / profile"] == "FAKE MEMORY REPORT"
    assert ui.undo() and ui.reset() and ui.session.turns == []
    assert ui.reload() is False and "not saved anywhere" in ui.last_error  # store is None
    assert "ada/s1" in ui._repr_mimebundle_()["text/plain"]


def test_the_terminal_works_on_the_protocol_alone():
    fake, shown = Fake(), []
    chat = TerminalChat(fake, db="chat.db", write=shown.append, stream=False)
    chat.ask("hello")
    assert shown[-1] == "assistant> echo hello"
    for command in ("/history", "/memory", "/facts", "/undo", "/reset", "/help"):
        chat.command(command)
    out = "\n".join(shown)
    assert "FAKE MEMORY REPORT" in out and "FAKE AUDIT" in out and "Undid turn 0" in out
    assert "error" not in out


def test_the_front_ends_probe_nothing():
    for module in (chat_window, terminal_chat):
        source = open(module.__file__).read()
        for probe in ('getattr(self.session', 'hasattr(self.session', "getattr(session", "hasattr(session",
                      "self.session.session.", "_inner("):
            assert probe not in source, (module.__name__, probe)


def test_one_memory_report_for_both_front_ends(tmp_path):
    assert chat_window.__dict__.get("_describe_memory") is None
    assert "\ndef memory_report" not in open(Assistant.__module__.replace(".", "/") + ".py").read()
    from helpers.app import assistant
    assert assistant.memory_report is conversation.memory_report
    store = SQLiteSessionStore(tmp_path / "s.db")
    plain = PersistentSession.open(store, "ada", "s1")
    assert plain.memory_report() == conversation.NO_MEMORY  # a plain session says what it keeps
    window = ChatUI(plain).memory_text()["Summary / profile"]
    shown = []
    TerminalChat(plain, db=str(tmp_path / "s.db"), write=shown.append).command("/memory")
    assert window == plain.memory_report() and plain.memory_report() in shown
    with open_assistant(None, "ada", "main", db=tmp_path / "campus.db") as helper:
        helper.ask("I'm vegetarian, and my locker number is 4471.")
        report = memory_report(helper.memory, helper.facts, "ada")
        assert helper.memory_report() == report and "Facts:\n- " in report
        assert ChatUI(helper).memory_text()["Summary / profile"] == helper.memory_report(facts=False)
        shown.clear()
        TerminalChat(helper, db=str(tmp_path / "campus.db"), write=shown.append).command("/memory")
        assert report in shown
    store.close()

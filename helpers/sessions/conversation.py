"""What a front end talks to (lesson 11-12): the ``Conversation`` protocol, and the one memory report.

The chat window (``helpers.app.chat_window.ChatUI``) and the terminal chat
(``helpers.app.terminal_chat.TerminalChat``) are written against ``Conversation`` only: they call its
members and probe nothing. Three classes implement it, each explicitly (a test checks every member):

* ``PersistentSession`` (``helpers.sessions.persistent``): one user's conversation, saved after every change;
* ``Assistant`` (``helpers.app.assistant``): a PersistentSession with guardrails and a fact store (notebook 12);
* ``UnsavedConversation`` (below): a plain ``ChatSession`` in a window, saved nowhere (``as_conversation``).

Each holds its conversation in ``session`` (a ChatSession, or an Assistant's PersistentSession), and reads what
the conversation holds - ``turns``, ``turn_ids``, ``dropped``, ``messages``, ``memory``, ``snapshot()`` - from it
the same way: ``ForwardsToSession`` (below) defines those members once, each by name, for all three.

``memory_report`` is the one report of what a conversation remembers; every implementer's
``memory_report()`` and so both front ends show it.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Protocol, runtime_checkable

from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import TurnRecord
from helpers.facts.writer import FactMemory, format_facts
from helpers.memory.assembler import MemoryAssembler
from helpers.sessions.protocol import SessionStore, SessionStoreError

NO_MEMORY = "Memory: none - this session keeps no summary or profile (the message list is its whole memory)."


@runtime_checkable
class Conversation(Protocol):
    """One conversation as a front end drives it: ask, stream, undo, reset, reload; what it holds; its reports."""

    user_id: str | None  # whose conversation (None: not saved under any user)
    session_id: str | None
    store: SessionStore | None  # where every change is saved (None: saved nowhere, nothing to reload)
    facts: FactMemory | None  # the fact memory whose facts it shows (None: none attached)
    settings: Any  # the settings its requests use (a front end hides their API key and URL secrets)
    revision: int  # the stored revision this copy holds (0: nothing stored yet)

    @property
    def name(self) -> str:
        """``user_id/session_id``, as messages show it."""

    @property
    def closed(self) -> bool:
        """True once its store was closed: nothing can be saved or reloaded."""

    @property
    def turns(self) -> list[TurnRecord]:
        """Every kept turn's record (question, answer), oldest first: the transcript."""

    @property
    def turn_ids(self) -> list[int]:
        """The ids of the turns held in memory (sent whole), oldest first."""

    @property
    def dropped(self) -> list:
        """The turns trimming dropped from memory (``DroppedTurn``: turn_id, messages, tokens)."""

    @property
    def messages(self) -> list[dict]:
        """The messages held in memory."""

    def ask(self, text: str) -> str:
        """One question; returns the answer the user sees (saved first, where it is saved)."""

    def stream(self, text: str) -> Iterator[str]:
        """``ask``, with the answer yielded in pieces as it arrives; the generator returns the answer."""

    def undo(self) -> TurnRecord | None:
        """Forget the newest turn; returns its record (None when there was nothing)."""

    def reset(self) -> None:
        """Forget the whole conversation."""

    def reload(self) -> None:
        """Continue from the stored conversation (after another writer saved it)."""

    def snapshot(self) -> dict:
        """The conversation as the store keeps it (compared with what the store holds)."""

    def memory_report(self, *, facts: bool = True) -> str:
        """What it remembers (``memory_report``); ``facts=False`` leaves the active facts out."""

    def audit_report(self) -> str:
        """The fact store's decisions about this user, one line each (or why there are none)."""

    def close(self) -> None:
        """Release what it opened."""


CONVERSATION_MEMBERS = ("user_id", "session_id", "name", "store", "facts", "settings", "revision", "closed",
                        "turns", "turn_ids", "dropped", "messages", "ask", "stream", "undo", "reset", "reload",
                        "snapshot", "memory_report", "audit_report", "close")


def memory_report(memory: Any, facts: FactMemory | None = None, user_id: str | None = None, *,
                  state: dict | None = None) -> str:
    """What a conversation remembers: the summary, the profile (read from the fact store), the recall index and
    the active facts.

    ``memory`` is the session's memory: a ``MemoryAssembler`` reports its summary, its profile and how many
    turns its recall index holds; any other memory reports its ``state`` as JSON, and a session without one
    says that the message list is all it keeps. The active facts follow when ``facts`` is given.
    """
    if isinstance(memory, MemoryAssembler):
        summary = memory.summary
        lines = [f"{summary.header()}\n{summary.lines_text()}" if summary.text else "Summary: nothing yet."]
        profile = memory.profile.lines() if memory.profile is not None else []
        lines.append("Profile:\n" + "\n".join(profile) if profile else "Profile: nothing recorded yet.")
        if memory.recall is not None:
            indexed = len(memory.recall)  # the turns recall can bring back (small talk is not indexed)
            lines.append(f"Recall index: {indexed} {'turn' if indexed == 1 else 'turns'}.")
    elif state:
        lines = [json.dumps(state, indent=2, ensure_ascii=False)]
    else:
        lines = [NO_MEMORY]
    if facts is not None:
        lines.append(format_facts(facts.active_facts(user_id), title="Facts"))
    return "\n".join(lines)


class ForwardsToSession:
    """What a conversation holds, read from the session it wraps (``self.session``): each member by name.

    ``PersistentSession`` (over a ``ChatSession``), ``Assistant`` (over a ``PersistentSession``) and
    ``UnsavedConversation`` (over a ``ChatSession``) forward these members the same way, so they are written
    once, here. Nothing else is forwarded: there is no ``__getattr__``, and a member not named below is the
    implementer's own.
    """

    session: Any  # the conversation this one wraps

    @property
    def turns(self) -> list[TurnRecord]:
        """Every kept turn's record (question, answer), oldest first: the session's ``turns``."""
        return self.session.turns

    @property
    def turn_ids(self) -> list[int]:
        """The ids of the turns held in memory (sent whole), oldest first: the session's ``turn_ids``."""
        return self.session.turn_ids

    @property
    def dropped(self) -> list:
        """The turns trimming dropped from memory: the session's ``dropped``."""
        return self.session.dropped

    @property
    def messages(self) -> list[dict]:
        """The messages held in memory: the session's ``messages``."""
        return self.session.messages

    @property
    def memory(self) -> Any:
        """The memory plug-in that assembles each request (a ``MemoryAssembler``, or None): the session's."""
        return self.session.memory

    def snapshot(self) -> dict:
        """The conversation as the store keeps it: the session's ``snapshot()``."""
        return self.session.snapshot()

    def memory_state(self) -> dict:
        """The memory's state as snapshots carry it: the session's ``memory_state()``."""
        return self.session.memory_state()


NO_FACT_STORE = "No fact store: this chat keeps no facts."


class UnsavedConversation(ForwardsToSession, Conversation):
    """A plain ``ChatSession`` as a ``Conversation``: the same turns, saved nowhere (``store`` is None)."""

    user_id: str | None = None
    session_id: str | None = None
    revision = 0
    store = None
    facts = None

    def __init__(self, session: ChatSession):
        self.session = session

    @property
    def closed(self) -> bool:
        """Never: there is no store to close."""
        return False

    @property
    def name(self) -> str:
        """An unsaved session has no ids: "unsaved"."""
        return "unsaved"

    @property
    def settings(self) -> Any:
        """The session's settings."""
        return self.session.settings

    def ask(self, text: str) -> str:
        """``ChatSession.chat``."""
        return self.session.chat(text)

    def stream(self, text: str) -> Iterator[str]:
        """``ChatSession.stream``."""
        return self.session.stream(text)

    def undo(self) -> TurnRecord | None:
        """``ChatSession.undo``."""
        return self.session.undo()

    def reset(self) -> None:
        """``ChatSession.reset``."""
        self.session.reset()

    def reload(self) -> None:
        """Refused: nothing is stored to continue from."""
        raise SessionStoreError("this session is not saved anywhere, so there is nothing to reload")

    def memory_report(self, *, facts: bool = True) -> str:
        """``memory_report`` of the session's memory (it has no fact memory)."""
        return memory_report(self.memory, state=self.memory_state())

    def audit_report(self) -> str:
        """It keeps no facts, so no decisions."""
        return NO_FACT_STORE

    def close(self) -> None:
        """Nothing to release."""


def as_conversation(session: Conversation | ChatSession) -> Conversation:
    """``session`` as a ``Conversation``: a plain ``ChatSession`` becomes an ``UnsavedConversation``."""
    return UnsavedConversation(session) if isinstance(session, ChatSession) else session

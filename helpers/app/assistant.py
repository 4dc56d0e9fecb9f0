"""One assistant for every front end (notebook 12): the series' pieces composed around one user's conversation.

``open_assistant(settings, user_id, session_id, db=...)`` returns an ``Assistant``; notebook 12 builds
it in cells, the chat window (``ChatUI(assistant)``, 11) and ``python -m helpers chat`` use it.
Each message goes through three steps:

1. **Scope rule (03)** before anything is sent: an unsafe request gets the fixed ``REFUSAL`` (so does a
   verdict that cannot be read: fail closed). No turn runs, nothing is stored. Staying on campus is
   left to the system prompt, since people also talk about themselves ("my locker number is 4471").
2. **The turn**: ``PersistentSession.chat`` (11) runs ``ChatSession.chat`` (07): the memory assembles the
   request under the token budget (08-09), the agent loop calls tools (05-06), the turn is saved before
   the answer returns, and only then are the facts it stated written to the fact store (10).
3. **Grounding check (03)** after a turn that used tools: an answer the tool results do not support is
   undone, so later turns never build on it, and the fixed ``FALLBACK`` is returned instead.

Notebook 13 adds two things to every front end. **Procedural memory**: once a turn is saved, the instructions
its user's words give ("no bullet points, please") are written to the fact store (``Assistant.learn``,
``helpers.memory.procedural``) and shown in the system prompt's own block from the next request on; they are
listed, undone and forgotten with ``instructions_report``, ``undo_instruction`` and ``forget_instruction``.
**Forgetting**: a message that asks to forget ("forget what I told you about my sister") is carried out
before any turn runs (``forget``: every layer of every conversation of the user, facts audited as
deletions), and ``forget_me`` deletes every row of the user in both stores (``helpers.memory.forget``).

Each step is a small function of the session it works on: ``refused`` (step 1), ``checked`` (step 3),
``answered`` (the three in order) and ``streamed`` (the same, with the answer yielded as it arrives and
``TAKEN_BACK`` said before a fallback that replaces what was shown); ``audit_lines`` writes the audit, and
``memory_report`` (``helpers.sessions.conversation``, shared with every front end) the memory report.
``Assistant`` holds one user's session and facts and calls them. Notebook 12 builds
each in a cell of its own, except ``streamed``, which its Exercise 4 asks the learner to write.

``db`` is a SQLite file (conversations and facts in one file) or a PostgreSQL DSN, as a URL or libpq's
``key=value`` pairs (many processes, many users); or pass open stores as ``store=`` and ``facts=``. The settings are the ones
every notebook uses (``helpers.llm.config``; default ``get_settings()``).
"""
from __future__ import annotations

from typing import Any, Callable

from helpers.llm.client import get_client, get_settings                          # 01: one client, one config
from helpers.core.dsn import parse_database
from helpers.core.errors import ConfigError
from helpers.facts.writer import FactMemory                                # 10: durable facts, audited
from helpers.retrieval.guardrails import FALLBACK, REFUSAL, check_grounding, check_scope, evidence_from_turn  # 03
from helpers.memory.assembler import MemoryAssembler                         # 08-09: memory under a budget
from helpers.memory.budget import DEFAULT_SHARES, Shares
from helpers.memory.profile import ProfileMemory                             # 09: a view over 10's facts
from helpers.memory.procedural import InstructedAssembler, Instructions, ProfileFacts  # 13: how to answer
from helpers.memory.forget import ForgetReport, forget_request, forget_topic, forget_user  # 13: forgetting
from helpers.core.context_format import one_line
from helpers.sessions.conversation import Conversation, ForwardsToSession, memory_report  # 11-12: front ends
from helpers.sessions.persistent import PersistentSession                    # 11: saved after every turn
from helpers.sessions.protocol import check_ids

TAKEN_BACK = "\n(That answer was not supported by what the tools returned, so it was taken back.)\n"


# -- the steps of one message (each a function of the session it works on)
def refused(text: str, *, client: Any, settings: Any) -> bool:
    """True for an unsafe request, or a scope verdict that cannot be read (fail closed)."""
    if not isinstance(text, str) or not text.strip():
        return False  # the session refuses an empty message itself (EmptyMessageError), storing nothing
    scope = check_scope(text, client=client, settings=settings)
    return scope.category == "unsafe" or scope.reason.startswith("fail-closed")


def checked(session: Any, answer: str, newest: list[int], *, client: Any, settings: Any) -> str:
    """The answer, or ``FALLBACK`` (and the turn undone) when the tool results do not support it.

    ``newest`` is ``session.turn_ids[-1:]`` from before the question.
    """
    if session.turn_ids[-1:] == newest:
        return answer  # no turn was kept (the model said nothing): nothing to check or undo
    passages = evidence_from_turn(session.messages)  # what the tools returned this turn
    if passages and not check_grounding(answer, passages, client=client, settings=settings).supported:
        session.undo()  # saved too: the stored conversation is as before the question
        return FALLBACK
    return answer


def answered(session: Any, text: str, *, client: Any, settings: Any) -> str:
    """Scope rule, one saved turn, grounding check; returns the answer the user sees."""
    if refused(text, client=client, settings=settings):
        return REFUSAL  # no turn runs, nothing is stored
    newest = session.turn_ids[-1:]
    answer = session.chat(text)
    return checked(session, answer, newest, client=client, settings=settings)


def streamed(session: Any, text: str, *, client: Any, settings: Any):
    """``answered``, with the answer's text yielded as it arrives; returns the answer the user sees."""
    if refused(text, client=client, settings=settings):
        yield REFUSAL
        return REFUSAL
    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:  # already shown, piece by piece: say that it was taken back
        yield TAKEN_BACK + shown
    return shown


# -- what it remembers, and why (memory_report: helpers.sessions.conversation, one report for every front end)
def audit_lines(rows: list) -> str:
    """Audit rows (``AuditEntry``) as lines: when, which turn, what was decided and why."""
    lines = [f"{row.decided_at[:16]} turn {'-' if row.source_version is None else row.source_version} "
             f"{row.outcome:<10} {one_line(row.attribute)} = {one_line(row.value)!r}: {one_line(row.reason)}"
             for row in rows]
    return "\n".join(lines) if lines else "Audit: no decisions yet."


class Assistant(ForwardsToSession, Conversation):
    """One user's campus assistant: guarded turns, memory under a token budget, facts and turns stored.

    A ``Conversation`` (``helpers.sessions.conversation``): the chat window and the terminal chat drive it.
    What the conversation holds (``turns``, ``turn_ids``, ``dropped``, ``messages``, ``memory``, ``snapshot()``)
    is its session's, read as every conversation reads it (``ForwardsToSession``)."""

    def __init__(self, session: PersistentSession, facts: FactMemory, *, client: Any, settings: Any,
                 owned: tuple = (), open_session: Callable[[str], PersistentSession] | None = None):
        self.session, self.facts = session, facts
        self.client, self.settings = client, settings
        self.user_id, self.session_id = session.user_id, session.session_id
        self.store = session.store
        self._owned = owned  # the stores open_assistant opened, closed by close()
        self.instructions = Instructions(facts, self.user_id)  # 13: procedural memory, kept as facts
        self.open_session = open_session  # session id -> that PersistentSession of this user (for forget)

    def ask(self, text: str) -> str:
        """Scope rule, one saved turn, grounding check; returns the answer the user sees. A request to forget
        is carried out instead (no turn runs); the instructions a saved turn gives are learnt (13)."""
        topic = forget_request(text) if isinstance(text, str) else None
        if topic is not None:
            return str(self.forget(topic))
        newest = self.session.turn_ids[-1:]
        answer = answered(self.session, text, client=self.client, settings=self.settings)
        self.learn(text, newest)
        return answer

    def stream(self, text: str):
        """``ask``, with the answer's text yielded as it arrives; returns the answer the user sees."""
        topic = forget_request(text) if isinstance(text, str) else None
        if topic is not None:
            shown = str(self.forget(topic))
            yield shown
            return shown
        newest = self.session.turn_ids[-1:]
        answer = yield from streamed(self.session, text, client=self.client, settings=self.settings)
        self.learn(text, newest)
        return answer

    # -- procedural memory and forgetting (notebook 13)
    def learn(self, text: str, newest: list[int]) -> list:
        """Once a turn is saved, write the instructions its user's words give (the user's words only: never a
        tool result, a passage or the reply), at that turn's version; a refused or undone turn writes none.
        ``newest`` is ``session.turn_ids[-1:]`` from before the question."""
        kept = self.session.turn_ids[-1:]
        if kept == newest or not kept or not isinstance(text, str):
            return []
        return self.instructions.learn(kept[0], text)

    def instructions_report(self) -> str:
        """The standing instructions as a numbered list."""
        return self.instructions.report()

    def undo_instruction(self) -> str:
        """Take back the newest instruction; returns what was said."""
        taken = self.instructions.undo()
        return "No instruction to undo." if taken is None else f'Taken back: "{taken.value}".'

    def forget_instruction(self, number: int) -> str:
        """Delete the ``number``-th instruction (1 = the oldest), audited as a deletion."""
        value = self.instructions.active()[number - 1].value if 1 <= number <= len(self.instructions.active()) \
            else None
        self.instructions.forget(number)
        return f'Forgotten: "{value}".'

    def forget(self, topic: str) -> ForgetReport:
        """Forget ``topic`` in every layer: facts (audited deletions), every conversation of this user (turns,
        summary, recall, profile statements), saved at once (``helpers.memory.forget``)."""
        sessions = [self.session]
        if self.open_session is not None:
            for info in self.store.list_sessions(self.user_id):
                if info.session_id != self.session_id:
                    sessions.append(self.open_session(info.session_id))
        return forget_topic(topic, user_id=self.user_id, facts=self.facts, sessions=sessions)

    def forget_me(self) -> dict:
        """Delete every row of this user in both stores; this conversation starts again, empty (unsaved)."""
        gone = forget_user(self.user_id, store=self.store, facts=self.facts)
        self.session.session.reset()
        self.session.revision, self.session._synced = 0, None  # nothing is stored any more
        return gone

    def memory_report(self, *, facts: bool = True) -> str:
        """The summary, the profile (read from the fact store) and, unless ``facts=False``, the active facts."""
        return memory_report(self.memory, self.facts if facts else None, self.user_id)

    def audit(self) -> list:
        """Every decision the fact store made about this user, oldest first (``AuditEntry`` rows)."""
        return self.facts.audit(self.user_id)

    def audit_report(self) -> str:
        """The audit as lines: when, which turn, what was decided and why."""
        return audit_lines(self.audit())

    # -- the rest of a session's controls, saved as they happen
    def undo(self):
        """Forget the newest turn (saved); returns its record, or None."""
        return self.session.undo()

    def reset(self) -> None:
        """Forget the conversation (saved); the facts stay, with their audit."""
        self.session.reset()

    def reload(self) -> None:
        """Continue from the stored conversation (after another window saved it)."""
        self.session.reload()

    # -- where the conversation stands (the session's; what it holds: ForwardsToSession)
    @property
    def resumed(self) -> bool:
        """True when this assistant continues a conversation that was already stored."""
        return self.session.resumed

    @property
    def revision(self) -> int:
        """The stored revision of the conversation this copy holds."""
        return self.session.revision

    @property
    def name(self) -> str:
        """``user_id/session_id``, as messages show it."""
        return self.session.name

    @property
    def closed(self) -> bool:
        """True once the session store was closed."""
        return self.session.closed

    def close(self) -> None:
        """Close the stores open_assistant opened: what a restart leaves behind is the database."""
        for store in self._owned:
            store.close()

    def __repr__(self) -> str:
        return (f"Assistant(user_id={self.user_id!r}, session_id={self.session_id!r}, "
                f"turns={len(self.session.turns)}, revision={self.revision})")

    def __enter__(self) -> "Assistant":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_stores(db: Any, *, schema: str | None = None,
                before_facts: Callable[[Any], None] | None = None) -> tuple[Any, FactMemory]:
    """(session store, fact memory) on one database: a SQLite file, or PostgreSQL for a DSN in any form
    libpq accepts (``postgresql://``/``postgres://`` URL or ``key=value`` pairs; ``helpers.core.dsn``).

    A string that starts like a DSN but cannot be read as one is refused before anything is opened, so
    it never becomes a file name. ``schema`` puts PostgreSQL's tables in that schema. ``before_facts(store)``
    runs once the session store is open; if it raises, the fact store is never opened, so a database
    whose session is refused gets no fact tables. The database is first inspected by both stores, reading
    only (``check_file``, ``check_database``), so one that either of them refuses is left untouched.
    """
    where = parse_database(db)
    if where.is_postgres:
        try:
            from helpers.facts.fact_store_pg import PostgresFactStore    # psycopg is needed only here
            from helpers.sessions.session_store_pg import PostgresSessionStore
        except ImportError:
            raise ConfigError(f'{where.describe()} needs psycopg: pip install "psycopg[binary]"') from None
        PostgresSessionStore.check_database(where.target, schema=schema)  # both look before either writes:
        PostgresFactStore.check_database(where.target, schema=schema)     # a database one refuses stays as it is
        store = PostgresSessionStore(where.target, schema=schema)  # a lock per (user, session); one transaction per save
        facts = lambda: FactMemory(PostgresFactStore(where.target, schema=schema))  # a lock per fact key
    else:
        if schema is not None:
            raise ConfigError(f"schema={schema!r} is for PostgreSQL; {where.describe()} keeps its tables in the file")
        from helpers.facts.fact_store import SQLiteFactStore
        from helpers.sessions.session_store import SQLiteSessionStore

        SQLiteSessionStore.check_file(where.target)          # both look before either writes:
        SQLiteFactStore.check_file(where.target)             # a file one store refuses stays untouched
        store = SQLiteSessionStore(where.target)             # conversations ...
        facts = lambda: FactMemory.open(where.target)        # ... and facts, in one file
    try:
        if before_facts is not None:
            before_facts(store)
        return store, facts()
    except BaseException:
        store.close()
        raise


def open_assistant(settings: Any = None, user_id: str = "learner", session_id: str = "main", *,
                   db: str | None = None, store: Any = None, facts: FactMemory | None = None,
                   client: Any = None, budget: int = 1500, window: int = 6, shares: Shares = DEFAULT_SHARES,
                   schema: str | None = None, verbose: bool = False) -> Assistant:
    """Open (or resume) ``user_id``'s conversation ``session_id`` with every piece of the series.

    ``db`` opens both stores (closed again by ``Assistant.close``); else pass ``store`` and ``facts``.
    ``budget`` caps each request in tokens, tool schemas included; ``window`` is how many newest turns
    are sent whole (older ones reach the model through the summary, recall and profile).
    """
    user_id, session_id = check_ids(user_id, session_id)  # as every store keys them (facts use the same rule)
    settings = settings or get_settings()
    client = client or get_client(settings, quiet=True)

    def session_on(store: Any, facts: FactMemory | None, name: str = session_id) -> PersistentSession:
        profile = ProfileMemory(facts=ProfileFacts(facts) if facts is not None else None,  # facts=None: a private
                                user_id=user_id)                                          # store in memory
        memory = InstructedAssembler(profile=profile, shares=shares,  # 13: the instructions' block
                                     instructions=Instructions(facts, user_id) if facts is not None else None)
        return PersistentSession.open(store, user_id, name, client=client, settings=settings,
                                      memory=memory, max_turns=window, max_tokens=budget, verbose=verbose)

    owned: tuple = ()
    if db is not None:  # the session must load before the fact store's tables are added to the database
        store, facts = owned = open_stores(db, schema=schema, before_facts=lambda store: session_on(store, None))
    if store is None or facts is None:
        raise ConfigError("open_assistant needs db=... (a SQLite file or a PostgreSQL DSN), or store= and facts=")
    try:
        session = session_on(store, facts)
    except BaseException:
        for opened in owned:
            opened.close()
        raise
    return Assistant(session, facts, client=client, settings=settings, owned=owned,
                     open_session=lambda name: session_on(store, facts, name))

"""Exercises of notebook 11: branch a stored session before a given question, and retry a failed turn.

Every check makes its own store in a temporary folder and talks to the offline stand-in, so it does not
touch the notebook's database, does not depend on the configured backend, and gives the same verdict on
any day (the follow-up is judged by the weekday it names, never by a count of days).
"""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import httpx2
import openai

from helpers.client import EndpointError
from helpers.config import load_settings
from helpers.exercises import Exercise, Hint
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.store import SQLiteSessionStore
from helpers.standin.server import handle

AI_CLUB = "When does the AI club meet?"
OFFICE_HOURS = "And when are the faculty office hours?"
PRINTING = "Where can I print a poster?"
LIBRARY = "When is the library open?"
FOLLOW_UP = "How many days until that?"


def offline_client(fails: Callable[[int], bool] = lambda n: False) -> openai.OpenAI:
    """A client of the offline stand-in whose ``n``-th request (from 1) gets HTTP 503 when ``fails(n)``."""
    seen = {"n": 0}

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen["n"] += 1
        if fails(seen["n"]):
            error = {"message": "overloaded (simulated)", "type": "server_error"}
            return httpx2.Response(503, json={"error": error})
        return handle(request)

    client = openai.OpenAI(api_key="offline", base_url="http://offline.stand-in/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    client.requests_seen = seen  # so a check can count the attempts
    return client


@contextmanager
def scratch_store() -> Iterator[SQLiteSessionStore]:
    """A session store in a temporary folder, closed and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="nb11-exercise-"))
    store = SQLiteSessionStore(folder / "exercise.db")
    try:
        yield store
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def _open(store: SQLiteSessionStore, session_id: str, client: openai.OpenAI | None = None
          ) -> PersistentSession:
    return PersistentSession.open(store, "ada", session_id, client=client or offline_client(),
                                  settings=load_settings("offline"))


# ---------------------------------------------------------------- exercise 1: branch before a question

def _tour(store: SQLiteSessionStore, session_id: str, undo_second: bool) -> PersistentSession:
    """AI club, printing, library; with ``undo_second`` an office-hours turn is asked and undone in between,
    so the turn ids become 0, 2, 3 (ids are never reused)."""
    session = _open(store, session_id)
    session.chat(AI_CLUB)
    if undo_second:
        session.chat(OFFICE_HOURS)
        session.undo()
    session.chat(PRINTING)
    session.chat(LIBRARY)
    return session


def _check_fork(fork_before) -> str:
    if not callable(fork_before):
        raise Hint("fork_before must be a function: def fork_before(session, question, new_session_id): ...")
    with scratch_store() as store:
        tour, gapped = _tour(store, "tour", False), _tour(store, "tour-with-undo", True)
        cases = [(tour, PRINTING, [AI_CLUB]), (tour, AI_CLUB, []), (gapped, LIBRARY, [AI_CLUB, PRINTING])]
        branches = []
        for number, (session, question, wanted) in enumerate(cases, 1):
            original = store.load_state("ada", session.session_id).state
            branch_id = f"branch-{number}"
            branch = fork_before(session, question, branch_id)
            if not isinstance(branch, PersistentSession):
                raise Hint(f"fork_before returned {type(branch).__name__}; return what session.fork(...) "
                           "returns")
            if branch.session_id != branch_id:
                raise Hint(f"the branch is stored as {branch.session_id!r}; store it under new_session_id "
                           f"({branch_id!r})")
            if store.load_state("ada", session.session_id).state != original:
                raise Hint("the original session changed; fork() leaves it alone, so use fork and nothing "
                           "else")
            kept = [t.question for t in branch.turns]
            if kept != wanted:
                ids = [(t.turn_id, t.question) for t in session.turns]
                detail = (" Turn ids are never reused: after an undo, a turn's position in the list and its "
                          "turn_id differ. Use the turn_id of the TurnRecord that asked the question."
                          if session is gapped else "")
                raise Hint(f"in a session with turns {ids}, the branch before {question!r} kept {kept}, "
                           f"but it should keep {wanted}. fork(at_turn, ...) keeps the turns whose id is "
                           f"below at_turn.{detail}")
            branches.append(branch)
        answer = branches[0].chat(FOLLOW_UP)
        if "Thursday" not in answer:
            raise Hint(f"the branch answered {FOLLOW_UP!r} with {answer!r}: it should still know the AI club "
                       "(Thursdays)")
    return ("each branch keeps exactly the turns before the question (turn ids, not positions), the "
            "originals are unchanged, and a branch still resolves 'that' from its own turns")


exercise_1 = Exercise(
    "11.1", "branch before a question",
    stub='''def fork_before(session, question, new_session_id):
    """A new stored branch of ``session`` holding every turn before the one that asked ``question``."""
    return session.fork(1, new_session_id)''',
    solution_code='''def fork_before(session, question, new_session_id):
    """A new stored branch of ``session`` holding every turn before the one that asked ``question``."""
    asked = next(turn for turn in session.turns if turn.question == question)
    return session.fork(asked.turn_id, new_session_id)''',
    checker=_check_fork, answers=("fork_before",),
    hints=("session.turns lists a TurnRecord per turn, with .turn_id and .question. Find the one that asked "
           "the question.",
           "fork(at_turn, new_session_id) keeps the turns whose id is below at_turn: pass that turn's "
           "turn_id, not its position in the list (an undo leaves a gap in the ids)."),
)


# ---------------------------------------------------------------- exercise 2: retry without duplicates

RETRY_QUESTIONS = (AI_CLUB, PRINTING, LIBRARY, OFFICE_HOURS)


def _check_retry(ask_with_retry) -> str:
    if not callable(ask_with_retry):
        raise Hint("ask_with_retry must be a function: def ask_with_retry(session, text, tries=3): ...")
    with scratch_store() as store:
        flaky = offline_client(lambda n: n % 3 == 0)  # every third request fails, often in mid-turn
        session = _open(store, "retry", flaky)
        for question in RETRY_QUESTIONS:
            try:
                ask_with_retry(session, question)
            except EndpointError:
                raise Hint(f"{question!r} failed once and ask_with_retry let the EndpointError through. "
                           "Catch EndpointError and ask again, up to `tries` times.") from None
        saved = store.load_state("ada", "retry")
        stored = [t["question"] for t in saved.state["turns"]]
        if stored != list(RETRY_QUESTIONS):
            raise Hint(f"the store holds {stored}; each question should be stored exactly once, in order. "
                       "A failed turn saves nothing, so asking again with session.chat is all it takes.")
        if saved.info.revision != len(RETRY_QUESTIONS):
            raise Hint(f"the session was saved {saved.info.revision} times for {len(RETRY_QUESTIONS)} turns; "
                       "PersistentSession saves each completed turn itself, so do not call save() yourself")
        down = offline_client(lambda n: True)  # an endpoint that is down: every attempt fails
        session = _open(store, "down", down)
        try:
            ask_with_retry(session, AI_CLUB, tries=2)
        except EndpointError:
            pass
        else:
            raise Hint("when every try fails, ask_with_retry must raise the last EndpointError (not return): "
                       "the caller has to know there is no answer")
        if down.requests_seen["n"] != 2:
            raise Hint(f"with tries=2 and an endpoint that is down, ask_with_retry made "
                       f"{down.requests_seen['n']} attempt(s); make exactly `tries` attempts")
        if session.turns or any(info.session_id == "down" for info in store.list_sessions("ada")):
            raise Hint("the failed attempts left a turn behind; let PersistentSession.chat do the saving")
    return (f"{len(RETRY_QUESTIONS)} turns stored once each through an endpoint that fails every third "
            "request; with the endpoint down it gives up after `tries` attempts and raises")


exercise_2 = Exercise(
    "11.2", "retry without duplicates",
    stub='''def ask_with_retry(session, text, tries=3):
    """Ask ``text``; when the endpoint fails (EndpointError), ask again, up to ``tries`` attempts in all."""
    return session.chat(text)''',
    solution_code='''from helpers.client import EndpointError

def ask_with_retry(session, text, tries=3):
    """Ask ``text``; when the endpoint fails (EndpointError), ask again, up to ``tries`` attempts in all."""
    for attempt in range(1, tries + 1):
        try:
            return session.chat(text)
        except EndpointError:
            if attempt == tries:
                raise''',
    checker=_check_retry, answers=("ask_with_retry",),
    hints=("Wrap session.chat(text) in try/except EndpointError inside a loop over the attempts.",
           "On the last attempt, re-raise the error (a bare `raise` inside the except block); otherwise loop "
           "and ask again. Nothing needs undoing: a failed turn saves nothing."),
    context=lambda: {"EndpointError": EndpointError},
)

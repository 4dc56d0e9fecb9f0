"""Exercises of notebook 11: branch a stored session before a question, retry a failed turn, keep memory and file
in step when a save fails.

Every check makes its own store in a temporary folder and talks to the offline stand-in, so it does not
touch the notebook's database, does not depend on the configured backend, and gives the same verdict on
any day (the follow-up is judged by the weekday it names, never by a count of days).
"""
from __future__ import annotations

import json
import random
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx2
import openai

from helpers.llm.client import EndpointError, make_offline_client
from helpers.llm.config import load_settings
from helpers.exercises import Exercise, Hint
from helpers.chat.chat_session import ChatSession
from helpers.sessions.basic import load_session, open_db, save_session
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.protocol import ForkError, SessionConflictError, SessionSaveError
from helpers.sessions.session_store import SQLiteSessionStore
from helpers.standin.server import handle

AI_CLUB = "When does the AI club meet?"
OFFICE_HOURS = "And when are the faculty office hours?"
PRINTING = "Where can I print a poster?"
LIBRARY = "When is the library open?"
FOLLOW_UP = "How many days until that?"


class TooManyAttempts(BaseException):
    """Raised by a check's endpoint after far more requests than any answer needs (a retry loop with no end).

    A BaseException, so that neither the learner's ``except Exception`` nor the openai client's retries catch it."""


def offline_client(fails: Callable[[int], bool] = lambda n: False, status: Callable[[int], int] = lambda n: 503,
                   cap: int = 200) -> openai.OpenAI:
    """A client of the offline stand-in whose ``n``-th request (from 1) gets HTTP ``status(n)`` when ``fails(n)``.

    After ``cap`` requests it raises ``TooManyAttempts``, so a check never loops for ever."""
    seen = {"n": 0}

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen["n"] += 1
        if seen["n"] > cap:
            raise TooManyAttempts(f"more than {cap} requests")
        if fails(seen["n"]):
            error = {"message": "overloaded (simulated)", "type": "server_error"}
            return httpx2.Response(status(seen["n"]), json={"error": error})
        return handle(request)

    client = make_offline_client(answer)
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
            try:
                branch = fork_before(session, question, branch_id)
            except ForkError as error:
                raise Hint(f"fork refused: {error}. Store the branch under new_session_id ({branch_id!r}), "
                           "never under the session's own id") from None
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
                          if session is gapped and len(kept) == len(wanted) - 1 else "")
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


class _CountingSession:
    """A session that counts how often ``chat`` was called (everything else is the session's own)."""

    def __init__(self, session: PersistentSession):
        self.session, self.calls = session, 0

    def chat(self, text: str) -> str:
        self.calls += 1
        return self.session.chat(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _retry_through_flaky(ask_with_retry, store: SQLiteSessionStore) -> None:
    """Four questions through an endpoint that fails every third request: each stored once, in order."""
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
                   "A failed turn saves nothing, so asking again with session.chat is all it takes (no "
                   "undo, no save of your own).")
    if saved.info.revision != len(RETRY_QUESTIONS):
        raise Hint(f"the session was saved {saved.info.revision} times for {len(RETRY_QUESTIONS)} turns; "
                   "PersistentSession saves each completed turn itself, so do not call save() yourself")


def _retry_against_down(ask_with_retry, store: SQLiteSessionStore, tries: int) -> None:
    """An endpoint that is down (each attempt gets another 5xx status): ``tries`` attempts, the last error."""
    down = offline_client(lambda n: True, status=lambda n: 500 + n, cap=20)
    session = _open(store, f"down-{tries}", down)
    try:
        ask_with_retry(session, AI_CLUB, tries=tries)
    except EndpointError as error:
        raised = error
    except TooManyAttempts:
        raise Hint(f"with tries={tries} and an endpoint that is down, ask_with_retry kept asking (more than "
                   "20 attempts); stop after `tries` attempts") from None
    else:
        raise Hint("when every try fails, ask_with_retry must raise the last EndpointError (not return): "
                   "the caller has to know there is no answer")
    if down.requests_seen["n"] != tries:
        raise Hint(f"with tries={tries} and an endpoint that is down, ask_with_retry made "
                   f"{down.requests_seen['n']} attempt(s); make exactly `tries` attempts")
    if f"HTTP {500 + tries})" not in str(raised):
        first = next((n for n in range(1, tries) if f"HTTP {500 + n})" in str(raised)), None)
        which = f"the error of attempt {first}" if first else "an error that is not the last attempt's"
        status = f" (HTTP {500 + first})" if first else ""
        raise Hint(f"with tries={tries} against an endpoint that answers each attempt with another error, "
                   f"ask_with_retry raised {which}{status}; raise the LAST EndpointError (HTTP {500 + tries}): "
                   "it says what the endpoint does now (a bare `raise` in the except block of the last "
                   "attempt)")
    if session.turns or any(info.session_id == f"down-{tries}" for info in store.list_sessions("ada")):
        raise Hint("the failed attempts left a turn behind; let PersistentSession.chat do the saving")


def _no_retry_after_a_refused_save(ask_with_retry, store: SQLiteSessionStore) -> None:
    """A save refused because another copy saved first: not the endpoint's fault, so one attempt, error raised."""
    first = _open(store, "two-copies")
    first.chat(AI_CLUB)
    mine, theirs = _open(store, "two-copies"), _open(store, "two-copies")
    theirs.chat(PRINTING)  # the other copy saves first: mine is now one revision behind
    counting = _CountingSession(mine)
    try:
        ask_with_retry(counting, LIBRARY)
    except SessionSaveError:
        pass
    except EndpointError:
        raise Hint("a refused save raised an EndpointError from ask_with_retry; let other errors through as "
                   "they are") from None
    else:
        raise Hint("the save of this turn was refused (another copy of the session saved first), and "
                   "ask_with_retry did not raise the SessionSaveError; catch only EndpointError") from None
    if counting.calls != 1:
        raise Hint(f"the save of this turn was refused (SessionSaveError: another copy of the session saved "
                   f"first), and ask_with_retry asked {counting.calls} times: each attempt ran the whole turn "
                   "and failed the same way. Only an EndpointError means 'ask again': catch EndpointError, "
                   "not Exception")


def _check_retry(ask_with_retry) -> str:
    if not callable(ask_with_retry):
        raise Hint("ask_with_retry must be a function: def ask_with_retry(session, text, tries=3): ...")
    with scratch_store() as store:
        _retry_through_flaky(ask_with_retry, store)
        for tries in (2, 4):
            _retry_against_down(ask_with_retry, store, tries)
        _no_retry_after_a_refused_save(ask_with_retry, store)
    return (f"{len(RETRY_QUESTIONS)} turns stored once each through an endpoint that fails every third "
            "request; with the endpoint down it gives up after `tries` attempts and raises the last error; "
            "a refused save is raised at once, not retried")


exercise_2 = Exercise(
    "11.2", "retry without duplicates",
    stub='''def ask_with_retry(session, text, tries=3):
    """Ask ``text``; when the endpoint fails (EndpointError), ask again, up to ``tries`` attempts in all."""
    return session.chat(text)''',
    solution_code='''from helpers.llm.client import EndpointError

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
           "Catch EndpointError only: other errors (a refused save, an empty question) are not the endpoint "
           "failing, and asking again does not help.",
           "On the last attempt, re-raise the error (a bare `raise` inside the except block); otherwise loop "
           "and ask again. Nothing needs undoing: a failed turn saves nothing."),
    context=lambda: {"EndpointError": EndpointError},
)


# ---------------------------------------------------------------- exercise 3: a failed save puts memory back

SAVE_QUESTIONS = (AI_CLUB, FOLLOW_UP, OFFICE_HOURS, PRINTING, LIBRARY, "When does the robotics club meet?")
SAVE_FAILS = "disk full (simulated)"


def _failing_db(folder: Path, name: str) -> sqlite3.Connection:
    """``open_db`` (section 1) plus a switch: while ``save_fails`` holds a row, every save raises sqlite3.Error."""
    db = open_db(folder / f"{name}.db")
    with db:
        db.execute("CREATE TABLE save_fails (on_ INTEGER)")
        for event in ("INSERT", "UPDATE"):
            db.execute(f"CREATE TRIGGER fail_{event.lower()} BEFORE {event} ON saved_sessions "
                       f"WHEN EXISTS (SELECT 1 FROM save_fails) BEGIN SELECT RAISE(ABORT, '{SAVE_FAILS}'); END")
    return db


def _switch(db: sqlite3.Connection, failing: bool) -> None:
    with db:
        db.execute("DELETE FROM save_fails")
        if failing:
            db.execute("INSERT INTO save_fails VALUES (1)")


def _stored(db: sqlite3.Connection, session_id: str) -> dict | None:
    row = db.execute("SELECT snapshot FROM saved_sessions WHERE user_id = 'ada' AND session_id = ?",
                     (session_id,)).fetchone()
    return None if row is None else _plain(json.loads(row[0]))


def _plain(state: Any) -> dict | None:
    """A snapshot as stored (through JSON), without ``next_id``: an undone turn's id is never reused, so
    the counter may run ahead of the file while memory and file hold the same conversation."""
    if isinstance(state, ChatSession):
        state = state.snapshot()
    if state is None:
        return None
    plain = json.loads(json.dumps(state))
    plain.pop("next_id", None)
    return plain


def save_schedule(seed: int, steps: int = 8) -> list[tuple[str, str]]:
    """(question, what happens) for one generated conversation: "ok", "save fails" or "endpoint fails".

    Every schedule has a failing save once the window is full (trimming drops a turn during that
    question), and seed 0 starts with one (nothing stored yet)."""
    rng = random.Random(seed)
    outcomes = ["ok"] * steps
    late = rng.randrange(3, steps)
    outcomes[late] = "save fails"
    outcomes[rng.choice([i for i in range(1, steps) if i != late])] = rng.choice(["save fails", "endpoint fails"])
    if seed == 0:
        outcomes[0] = "save fails"
    return [(rng.choice(SAVE_QUESTIONS), outcome) for outcome in outcomes]


def _check_step(chat_and_save, db, session, question: str, outcome: str, session_id: str) -> None:
    before, stored_before = _plain(session), _stored(db, session_id)
    questions_before = [t.question for t in session.turns]
    _switch(db, outcome == "save fails")
    raised: BaseException | None = None
    try:
        answer = chat_and_save(db, "ada", session_id, session, question)
    except (sqlite3.Error, EndpointError) as error:
        raised = error
    finally:
        _switch(db, False)
    now, stored_now = _plain(session), _stored(db, session_id)
    asked = [t.question for t in session.turns]
    if outcome == "ok":
        if raised is not None:
            raise Hint(f"asking {question!r} raised {type(raised).__name__} ({raised}) though nothing failed")
        if not isinstance(answer, str) or not answer:
            raise Hint(f"chat_and_save returned {answer!r}; return the answer of session.chat(text)")
        if stored_now != now:
            raise Hint(f"after {question!r} was answered, the file does not hold what memory holds (the "
                       f"file's turns: {[t['question'] for t in (stored_now or {}).get('turns', [])]}); save "
                       "once session.chat has returned, with save_session")
        return
    if outcome == "endpoint fails":
        if not isinstance(raised, EndpointError):
            raise Hint(f"the endpoint failed during {question!r}, and chat_and_save did not raise the "
                       "EndpointError; let it through (the turn was rolled back, nothing to save)")
        if stored_now != stored_before or now != before:
            raise Hint("a turn that failed before its save changed memory or the file; a turn that raises "
                       "saves nothing, so call save_session only after session.chat returned")
        return
    # the save failed
    if raised is None:
        raise Hint(f"the save of {question!r} failed ({SAVE_FAILS}) and chat_and_save returned {answer!r}; "
                   "raise the save's error after putting memory back, so the caller knows the turn was not "
                   "saved")
    if not isinstance(raised, sqlite3.Error):
        raise Hint(f"the save failed, and chat_and_save raised {type(raised).__name__}; raise the save's own "
                   "error (sqlite3.Error)")
    if stored_now != stored_before:
        raise Hint("after a failed save the file changed; leave the file to save_session")
    if now == before:
        return
    if stored_before is None and not asked:
        return  # nothing was stored yet, and memory holds nothing either
    if question in asked and len(asked) > len(questions_before):
        raise Hint(f"the save of {question!r} failed, but memory still holds that turn, which the file does "
                   "not: take `before = session.snapshot()` before session.chat, and put it back in place "
                   "with session.load_snapshot(before) (giving the name `session` a new object inside your "
                   "function does not change the caller's session)")
    if len(asked) < len(questions_before):
        raise Hint(f"after the failed save memory holds the turns {asked}, but the file still holds "
                   f"{questions_before}: put back the snapshot taken before the question, not an empty "
                   "session")
    raise Hint(f"after the failed save of {question!r} memory and file disagree: while it was asked, trimming "
               "dropped the oldest turn of the window, and undo() only removes the newest turn, so memory no "
               "longer holds what the file does. Put back the whole snapshot taken before the question "
               "(session.load_snapshot(before))")


def _check_save(chat_and_save) -> str:
    if not callable(chat_and_save):
        raise Hint("chat_and_save must be a function: def chat_and_save(db, user_id, session_id, session, text): ...")
    folder = Path(tempfile.mkdtemp(prefix="nb11-exercise-"))
    checked = failed = 0
    try:
        for seed in (0, 1, 2):
            db = _failing_db(folder, f"seed-{seed}")
            try:
                schedule = save_schedule(seed)
                fails_at = {i for i, (_, outcome) in enumerate(schedule) if outcome == "endpoint fails"}
                now = {"step": -1}
                client = offline_client(lambda n: now["step"] in fails_at)  # every request of such a step fails
                session = ChatSession(client=client, settings=load_settings("offline"), max_turns=2)
                for step, (question, outcome) in enumerate(schedule):
                    now["step"] = step
                    _check_step(chat_and_save, db, session, question, outcome, f"seed-{seed}")
                    checked += 1
                    failed += outcome != "ok"
            finally:
                db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return (f"{checked} questions in 3 generated conversations (a window of 2 turns, so trimming drops turns): "
            f"after each of the {failed} failures memory and file agree, and the error reaches the caller")


STUB_3 = '''def chat_and_save(db, user_id, session_id, session, text):
    """Ask one question; save once the turn is complete. If the save fails, put the session back as it was
    before the question (memory and file agree again), then raise the save's error."""
    answer = session.chat(text)
    save_session(db, user_id, session_id, session)
    return answer'''
SOLUTION_3 = '''def chat_and_save(db, user_id, session_id, session, text):
    """Ask one question; save once the turn is complete. If the save fails, put the session back as it was
    before the question (memory and file agree again), then raise the save's error."""
    before = session.snapshot()          # plain data: what the file holds after the last save
    answer = session.chat(text)          # a turn that raises is rolled back by the session itself
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.load_snapshot(before)    # in place: the caller's session object is the one to put back
        raise
    return answer'''


exercise_3 = Exercise(
    "11.3", "a failed save puts memory back", stub=STUB_3, solution_code=SOLUTION_3,
    checker=_check_save, answers=("chat_and_save",),
    context=lambda: {"save_session": save_session, "load_session": load_session, "sqlite3": sqlite3,
                     "json": json},
    hints=("Take the session's snapshot() before session.chat; it is what the file holds after the last save.",
           "Wrap only save_session in try/except sqlite3.Error; in the except block put the snapshot back with "
           "session.load_snapshot(before), then `raise`.",
           "undo() is not enough: while the question was asked, trimming may have dropped an older turn, and "
           "undo removes only the newest one."),
)


# ---------------------------------------------------------------- exercise 4: two copies save the same session

VERSIONED = ("CREATE TABLE versioned_sessions (user_id TEXT NOT NULL, session_id TEXT NOT NULL, "
             "revision INTEGER NOT NULL, snapshot TEXT NOT NULL, PRIMARY KEY (user_id, session_id))")


class _Rows:
    """The rows a SELECT read, served as its cursor would serve them."""

    rowcount = -1

    def __init__(self, rows: list):
        self._rows = list(rows)

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None

    def fetchall(self):
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self):
        return iter(self.fetchall())


class _RivalBetween:
    """A connection whose first read of the table lets another copy of the session save before it returns:
    the moment two processes race for one session."""

    def __init__(self, db: sqlite3.Connection, path: Path, user_id: str, session_id: str):
        self._db, self._path, self._ids, self.rival_saved = db, path, (user_id, session_id), None

    def execute(self, sql: str, *args):
        cursor = self._db.execute(sql, *args)
        if self.rival_saved is None and sql.lstrip().upper().startswith("SELECT") and "versioned_sessions" in sql:
            rows = _Rows(cursor.fetchall())  # read to the end, so the read holds no lock, as a finished read
            self.rival_saved = _rival_save(self._path, *self._ids)
            return rows
        return cursor

    def __enter__(self):
        return self._db.__enter__()

    def __exit__(self, *exc):
        return self._db.__exit__(*exc)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


def _rival_save(path: Path, user_id: str, session_id: str) -> bool:
    """Another process saves its turn now; False when the learner's transaction holds the write lock."""
    other = sqlite3.connect(path, timeout=0)
    try:
        with other:
            other.execute("UPDATE versioned_sessions SET revision = revision + 1, snapshot = ? "
                          "WHERE user_id = ? AND session_id = ?", (json.dumps({"by": "rival"}), user_id, session_id))
        return True
    except sqlite3.OperationalError:  # "database is locked": the learner's write is already under way
        return False
    finally:
        other.close()


def _stored_revision(db, user_id: str, session_id: str):
    row = db.execute("SELECT revision, snapshot FROM versioned_sessions WHERE user_id = ? AND session_id = ?",
                     (user_id, session_id)).fetchone()
    return None if row is None else (row[0], json.loads(row[1]))


def _save(save_revision, db, user_id, session_id, snapshot, expected, step: str):
    """(returned value, None) or (None, the exception): a conflict is an answer here, not a failure."""
    try:
        return save_revision(db, user_id, session_id, snapshot, expected), None
    except SessionConflictError as error:
        return None, error
    except Exception as error:
        raise Hint(f"In {step}, save_revision raised {type(error).__name__}: {error}. Refuse a stale save "
                   "with SessionConflictError; let nothing else escape.") from None


def _check_revisions(save_revision) -> str:
    if not callable(save_revision):
        raise Hint("save_revision must be a function: def save_revision(db, user_id, session_id, snapshot, "
                   "expected): ...")
    folder = Path(tempfile.mkdtemp(prefix="exercise-11-4-"))
    try:
        path = folder / "revisions.db"
        db = sqlite3.connect(path)
        db.execute(VERSIONED)
        first, second, a_turn, b_turn = ({"turn": n} for n in range(4))
        got, error = _save(save_revision, db, "ada", "plan", first, 0, "the first save (expected=0)")
        if error is not None or got != 1 or _stored_revision(db, "ada", "plan") != (1, first):
            raise Hint(f"The first save (expected=0, nothing stored) should store the snapshot as revision 1 and "
                       f"return 1; it returned {got!r} and the table holds {_stored_revision(db, 'ada', 'plan')!r}.")
        got, error = _save(save_revision, db, "ada", "plan", second, 1, "the second save (expected=1)")
        if error is not None or got != 2 or _stored_revision(db, "ada", "plan") != (2, second):
            raise Hint(f"Saving on top of revision 1 should store revision 2 and return 2; it returned {got!r} "
                       f"and the table holds {_stored_revision(db, 'ada', 'plan')!r}. Store and return expected + 1.")
        db.execute("INSERT INTO versioned_sessions VALUES ('bo', 'plan', 2, ?)", (json.dumps({"bo": 1}),))
        db.commit()
        _save(save_revision, db, "ada", "plan", a_turn, 2, "copy A's save")  # A and B both loaded revision 2
        got, error = _save(save_revision, db, "ada", "plan", b_turn, 2, "copy B's save")
        if _stored_revision(db, "ada", "plan") != (3, a_turn):
            raise Hint(f"Copies A and B both loaded revision 2; A saved revision 3, then B saved with expected=2, "
                       f"and the table now holds {_stored_revision(db, 'ada', 'plan')!r}: B overwrote A's turn. Write only "
                       "when the stored revision is still the one the copy loaded.")
        if error is None:
            raise Hint(f"B's stale save wrote nothing, but returned {got!r} as if it had: the caller believes its "
                       "turn is saved. Raise SessionConflictError, so it loads the session again.")
        if _stored_revision(db, "bo", "plan") != (2, {"bo": 1}):
            raise Hint("Bo's session with the same session id changed: scope every write by user id and "
                       "session id together.")
        got, error = _save(save_revision, db, "ada", "plan", first, 0, "a first save over a stored session")
        if error is None or _stored_revision(db, "ada", "plan") != (3, a_turn):
            raise Hint("A copy that found nothing stored (expected=0) saved after another copy had created the "
                       f"session; the table now holds {_stored_revision(db, 'ada', 'plan')!r} and it returned {got!r}. "
                       "expected=0 means 'only if nothing is stored yet': refuse it otherwise.")
        racing = _RivalBetween(db, path, "ada", "plan")
        got, error = _save(save_revision, racing, "ada", "plan", b_turn, 3, "the race")
        if racing.rival_saved and (error is None or _stored_revision(db, "ada", "plan") != (4, {"by": "rival"})):
            raise Hint("Between your SELECT of the revision and your write, another copy saved revision 4, and "
                       f"your save went ahead (the table holds {_stored_revision(db, 'ada', 'plan')!r}). Make the check "
                       "part of the write: UPDATE ... WHERE revision = ?, then read the cursor's rowcount.")
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return ("first save, a save on top, two copies racing for one session (the second refused, the first kept), "
            "a stale first save and a save raced between its read and its write: each judged right.")


STUB_4 = '''import json

from helpers.sessions.protocol import SessionConflictError  # section 4: a stale save is refused


def save_revision(db, user_id, session_id, snapshot, expected):
    """Store snapshot as revision expected + 1, unless another copy saved since revision `expected`."""
    with db:
        db.execute("INSERT OR REPLACE INTO versioned_sessions VALUES (?, ?, ?, ?)",
                   (user_id, session_id, expected + 1, json.dumps(snapshot)))
    return expected + 1'''
SOLUTION_4 = '''import json

from helpers.sessions.protocol import SessionConflictError  # section 4: a stale save is refused


def save_revision(db, user_id, session_id, snapshot, expected):
    """Store snapshot as revision expected + 1, unless another copy saved since revision `expected`."""
    text = json.dumps(snapshot)
    with db:  # the check is part of the write, so no other save can slip in between
        if expected == 0:
            changed = db.execute("INSERT OR IGNORE INTO versioned_sessions VALUES (?, ?, 1, ?)",
                                 (user_id, session_id, text)).rowcount
        else:
            changed = db.execute("UPDATE versioned_sessions SET revision = ?, snapshot = ? "
                                 "WHERE user_id = ? AND session_id = ? AND revision = ?",
                                 (expected + 1, text, user_id, session_id, expected)).rowcount
    if changed != 1:
        raise SessionConflictError(f"{user_id}/{session_id} was saved by another copy since revision "
                                   f"{expected}: load it again, then ask again")
    return expected + 1'''

exercise_4 = Exercise(
    "11.4", "two copies save the same session", stub=STUB_4, solution_code=SOLUTION_4,
    checker=_check_revisions, answers=("save_revision",),
    context=lambda: {"json": json, "sqlite3": sqlite3, "SessionConflictError": SessionConflictError},
    hints=("Run the check: which copy's turn is in the table after both saved from revision 2?",
           "Write only if the stored revision is still `expected`: put that condition in the UPDATE's WHERE, "
           "and look at the cursor's rowcount to see whether it wrote.",
           "expected == 0 means nothing is stored yet: INSERT OR IGNORE, and a rowcount of 0 is a conflict."),
)

"""Notebook 11's exercise checks: a branch is cut by turn id (not by position); a retry stores each question
once, gives up after its tries with the last error and retries nothing but the endpoint failing; a failed save
puts memory back as the file holds it. Each check refuses plausible wrong answers with the hint a learner
needs, accepts independently written right ones, and does not depend on the day it runs."""
import pytest
from exercise_support import defined, quiet_check, run

from helpers.exercises.nb11 import exercise_1, exercise_2, exercise_3, offline_client, save_schedule


# Days other than the frozen one: on that day test_exercises.py checks every solution and stub already.
@pytest.mark.parametrize("now", ["2026-12-02T10:00:00-08:00", "2026-12-03T19:30:00-08:00",
                                 "2027-03-06T08:00:00+01:00"])
def test_checks_give_the_same_verdicts_on_any_day(monkeypatch, now):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    for exercise in (exercise_1, exercise_2, exercise_3):
        assert quiet_check(exercise, *defined(exercise, exercise.solution_code))[0]
        assert not quiet_check(exercise, *defined(exercise, exercise.stub))[0]


def _function(name: str, body: str) -> str:
    return f"def {name}:\n" + body


# ---------------------------------------------------------------- 11.1 branch before a question

FORK = "fork_before(session, question, new_session_id)"
FORK_WRONG = {
    "the stub: always at turn 1": (exercise_1.stub, "keeps the turns whose id is below at_turn"),
    "by position in the list": (_function(FORK, '''
    position = [t.question for t in session.turns].index(question)
    return session.fork(position, new_session_id)'''), "never reused"),
    "one turn too many": (_function(FORK, '''
    asked = next(t for t in session.turns if t.question == question)
    return session.fork(asked.turn_id + 1, new_session_id)'''), "but it should keep ['When does the AI club meet?']"),
    "under the session's own id": (_function(FORK, '''
    asked = next(t for t in session.turns if t.question == question)
    return session.fork(asked.turn_id, session.session_id)'''), "Store the branch under new_session_id"),
    "the branch not returned": (_function(FORK, '''
    asked = next(t for t in session.turns if t.question == question)
    session.fork(asked.turn_id, new_session_id)'''), "return what session.fork(...) returns"),
    "undo, then fork": (_function(FORK, '''
    asked = next(t for t in session.turns if t.question == question)
    session.undo()
    return session.fork(asked.turn_id, new_session_id)'''), "original session changed"),
}
FORK_RIGHT = {
    "the solution": exercise_1.solution_code,
    "a loop": _function(FORK, '''
    for turn in session.turns:
        if turn.question == question:
            return session.fork(turn.turn_id, new_session_id)
    raise ValueError(f"no turn asked {question!r}")'''),
    "a dict of ids": _function(FORK, '''
    ids = {turn.question: turn.turn_id for turn in reversed(session.turns)}
    return session.fork(ids[question], new_session_id)'''),
}


@pytest.mark.parametrize("mistake", sorted(FORK_WRONG))
def test_a_wrong_fork_gets_its_hint(mistake):
    code, hint = FORK_WRONG[mistake]
    passed, said = run(exercise_1, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("answer", sorted(FORK_RIGHT))
def test_a_right_fork_passes(answer):
    passed, said = run(exercise_1, FORK_RIGHT[answer])
    assert passed, said


# ---------------------------------------------------------------- 11.2 retry without duplicates

RETRY = "ask_with_retry(session, text, tries=3)"
RETRY_WRONG = {
    "the stub: no retry": (exercise_2.stub, "let the EndpointError through"),
    "the last failure swallowed": (_function(RETRY, '''
    for _ in range(tries):
        try:
            return session.chat(text)
        except EndpointError:
            pass
    return None'''), "must raise the last EndpointError"),
    "one attempt too many": (_function(RETRY, '''
    for attempt in range(tries + 1):
        try:
            return session.chat(text)
        except EndpointError:
            if attempt == tries:
                raise'''), "make exactly `tries` attempts"),
    "every exception retried": (_function(RETRY, '''
    for attempt in range(1, tries + 1):
        try:
            return session.chat(text)
        except Exception:
            if attempt == tries:
                raise'''), "catch EndpointError, not Exception"),
    "the first error raised": (_function(RETRY, '''
    first = None
    for _ in range(tries):
        try:
            return session.chat(text)
        except EndpointError as error:
            first = first or error
    raise first'''), "raised the error of attempt 1"),
    "no limit": (_function(RETRY, '''
    while True:
        try:
            return session.chat(text)
        except EndpointError:
            continue'''), "kept asking"),
    "an undo before asking again": (_function(RETRY, '''
    for attempt in range(1, tries + 1):
        try:
            return session.chat(text)
        except EndpointError:
            session.undo()
            if attempt == tries:
                raise'''), "each question should be stored exactly once"),
}
RETRY_RIGHT = {
    "the solution": exercise_2.solution_code,
    "the last error kept": _function(RETRY, '''
    last_error = None
    for _ in range(tries):
        try:
            return session.chat(text)
        except EndpointError as error:
            last_error = error
    raise last_error'''),
    "recursion": _function(RETRY, '''
    try:
        return session.chat(text)
    except EndpointError:
        if tries <= 1:
            raise
        return ask_with_retry(session, text, tries - 1)'''),
}


@pytest.mark.parametrize("mistake", sorted(RETRY_WRONG))
def test_a_wrong_retry_gets_its_hint(mistake):
    code, hint = RETRY_WRONG[mistake]
    passed, said = run(exercise_2, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("answer", sorted(RETRY_RIGHT))
def test_a_right_retry_passes(answer):
    passed, said = run(exercise_2, RETRY_RIGHT[answer])
    assert passed, said


def test_the_flaky_client_fails_exactly_the_requests_asked_for():
    client = offline_client(lambda n: n == 2)
    client.models.list()
    with pytest.raises(Exception):
        client.models.list()
    client.models.list()
    assert client.requests_seen["n"] == 3


# ---------------------------------------------------------------- 11.3 a failed save puts memory back

SAVE = "chat_and_save(db, user_id, session_id, session, text)"
SAVE_WRONG = {
    "the stub: memory keeps the turn": (exercise_3.stub, "memory still holds that turn"),
    "undo instead of the snapshot": (_function(SAVE, '''
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.undo()
        raise
    return answer'''), "undo() only removes the newest turn"),
    "the error swallowed": (_function(SAVE, '''
    before = session.snapshot()
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.load_snapshot(before)
        return None
    return answer'''), "raise the save's error"),
    "the snapshot taken after the question": (_function(SAVE, '''
    answer = session.chat(text)
    before = session.snapshot()
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.load_snapshot(before)
        raise
    return answer'''), "take `before = session.snapshot()` before session.chat"),
    "a new session bound to the name": (_function(SAVE, '''
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session = load_session(db, user_id, session_id)
        raise
    return answer'''), "does not change the caller's session"),
    "reset on failure": (_function(SAVE, '''
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.reset()
        raise
    return answer'''), "not an empty session"),
    "saved before the question": (_function(SAVE, '''
    before = session.snapshot()
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error:
        session.load_snapshot(before)
        raise
    return session.chat(text)'''), "call save_session only after session.chat returned"),
    "every error turned into an apology": (_function(SAVE, '''
    before = session.snapshot()
    try:
        answer = session.chat(text)
        save_session(db, user_id, session_id, session)
    except Exception:
        session.load_snapshot(before)
        return "Sorry, something went wrong."
    return answer'''), "so the caller knows the turn was not saved"),
}
SAVE_RIGHT = {
    "the solution": exercise_3.solution_code,
    "a snapshot mark": _function(SAVE, '''
    mark = session.mark()
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
    except sqlite3.Error as error:
        session.restore_mark(mark)
        raise error
    return answer'''),
    "a JSON copy": _function(SAVE, '''
    saved_state = json.dumps(session.snapshot())
    answer = session.chat(text)
    try:
        save_session(db, user_id, session_id, session)
        return answer
    except sqlite3.DatabaseError:
        session.load_snapshot(json.loads(saved_state))
        raise'''),
}


@pytest.mark.parametrize("mistake", sorted(SAVE_WRONG))
def test_a_wrong_save_step_gets_its_hint(mistake):
    code, hint = SAVE_WRONG[mistake]
    passed, said = run(exercise_3, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("answer", sorted(SAVE_RIGHT))
def test_a_right_save_step_passes(answer):
    passed, said = run(exercise_3, SAVE_RIGHT[answer])
    assert passed, said


def test_every_generated_conversation_fails_a_save_once_the_window_is_full():
    for seed in (0, 1, 2):
        schedule = save_schedule(seed)
        assert any(outcome == "save fails" for _, outcome in schedule[3:]), schedule
    assert save_schedule(0)[0][1] == "save fails"   # and one fails before anything is stored


# ---------------------------------------------------------------- exercise 4: two copies save the same session

from helpers.exercises.nb11 import exercise_4  # noqa: E402

_UPDATE = ('db.execute("UPDATE versioned_sessions SET revision = ?, snapshot = ? WHERE user_id = ? AND session_id = ? '
           'AND revision = ?", (expected + 1, json.dumps(snapshot), user_id, session_id, expected)).rowcount')
_SAVE_HEAD = 'def save_revision(db, user_id, session_id, snapshot, expected):\n'
_FIRST = ('        if expected == 0:\n'
          '            changed = db.execute("INSERT OR IGNORE INTO versioned_sessions VALUES (?, ?, 1, ?)", '
          '(user_id, session_id, json.dumps(snapshot))).rowcount\n')
WRONG_SAVES = {  # name: (the cell, the hint it must get)
    "the stub: last write wins": (exercise_4.stub, "B overwrote A's turn"),
    "read, then write in another statement": (_SAVE_HEAD + (
        '    row = db.execute("SELECT revision FROM versioned_sessions WHERE user_id = ? AND session_id = ?",\n'
        '                     (user_id, session_id)).fetchone()\n'
        '    if (row[0] if row else 0) != expected:\n'
        '        raise SessionConflictError("stale")\n'
        '    with db:\n'
        '        db.execute("INSERT OR REPLACE INTO versioned_sessions VALUES (?, ?, ?, ?)",\n'
        '                   (user_id, session_id, expected + 1, json.dumps(snapshot)))\n'
        '    return expected + 1\n'), "Between your SELECT"),
    "a conflict returned as False": (_SAVE_HEAD + '    with db:\n' + _FIRST + (
        '        else:\n'
        f'            changed = {_UPDATE}\n'
        '    return expected + 1 if changed == 1 else False\n'), "returned False as if it had"),
    "the revision never moves": (_SAVE_HEAD + (
        '    with db:\n'
        '        db.execute("INSERT OR REPLACE INTO versioned_sessions VALUES (?, ?, ?, ?)",\n'
        '                   (user_id, session_id, expected, json.dumps(snapshot)))\n'
        '    return expected\n'), "as revision 1"),
    "scoped by session id alone": (_SAVE_HEAD + '    with db:\n' + _FIRST + (
        '        else:\n'
        '            changed = db.execute("UPDATE versioned_sessions SET revision = ?, snapshot = ? '
        'WHERE session_id = ? AND revision = ?", (expected + 1, json.dumps(snapshot), session_id, expected)).rowcount\n'
        '    if changed == 0:\n'
        '        raise SessionConflictError("stale")\n'
        '    return expected + 1\n'), "scope every write by user id and session id"),
    "a first save replaces what is there": (_SAVE_HEAD + (
        '    with db:\n'
        '        if expected == 0:\n'
        '            db.execute("INSERT OR REPLACE INTO versioned_sessions VALUES (?, ?, 1, ?)", '
        '(user_id, session_id, json.dumps(snapshot)))\n'
        '            return 1\n'
        f'        changed = {_UPDATE}\n'
        '    if changed != 1:\n'
        '        raise SessionConflictError("stale")\n'
        '    return expected + 1\n'), "expected=0 means 'only if nothing is stored yet'"),
    "the wrong error": (_SAVE_HEAD + '    with db:\n' + _FIRST + (
        '        else:\n'
        f'            changed = {_UPDATE}\n'
        '    if changed != 1:\n'
        '        raise ValueError("someone else saved first")\n'
        '    return expected + 1\n'), "with SessionConflictError"),
}
RIGHT_SAVES = {
    "the solution": exercise_4.solution_code,
    "hold the write lock while reading": (_SAVE_HEAD + (
        '    db.execute("BEGIN IMMEDIATE")  # no other writer until COMMIT\n'
        '    try:\n'
        '        row = db.execute("SELECT revision FROM versioned_sessions WHERE user_id = ? AND session_id = ?",\n'
        '                         (user_id, session_id)).fetchone()\n'
        '        if (row[0] if row else 0) != expected:\n'
        '            raise SessionConflictError(f"{user_id}/{session_id} moved on since revision {expected}")\n'
        '        db.execute("INSERT OR REPLACE INTO versioned_sessions VALUES (?, ?, ?, ?)",\n'
        '                   (user_id, session_id, expected + 1, json.dumps(snapshot)))\n'
        '        db.execute("COMMIT")\n'
        '    except BaseException:\n'
        '        db.execute("ROLLBACK")\n'
        '        raise\n'
        '    return expected + 1\n')),
    "one upsert with a condition": (_SAVE_HEAD + (
        '    with db:\n'
        '        cursor = db.execute(\n'
        '            "INSERT INTO versioned_sessions VALUES (?, ?, ?, ?) ON CONFLICT (user_id, session_id) "\n'
        '            "DO UPDATE SET revision = excluded.revision, snapshot = excluded.snapshot "\n'
        '            "WHERE versioned_sessions.revision = ?",\n'
        '            (user_id, session_id, expected + 1, json.dumps(snapshot), expected))\n'
        '    if cursor.rowcount == 0:\n'
        '        raise SessionConflictError("another copy saved first")\n'
        '    return expected + 1\n')),
}


@pytest.mark.parametrize("name", sorted(WRONG_SAVES))
def test_a_wrong_concurrent_save_gets_its_specific_hint(name):
    code, hint = WRONG_SAVES[name]
    passed, said = run(exercise_4, code)
    assert not passed and said.startswith("✗") and hint in said, said


@pytest.mark.parametrize("name", sorted(RIGHT_SAVES))
def test_a_right_concurrent_save_passes(name):
    passed, said = run(exercise_4, RIGHT_SAVES[name])
    assert passed and said.startswith("✓"), said

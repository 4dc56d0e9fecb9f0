"""What a saved turn costs as the history grows: a PersistentSession at turn 50 and at turn 10,000.

A ``PersistentSession(max_turns=20)`` saves after every turn. Each save writes what changed since the
stored revision (``ChatSession.changes_since``: the new turn's row, the row of the turn trimming just
dropped, the header), so it should cost the same at turn 10,000 as at turn 50. Measured, in the same run,
on the offline stand-in (a real ``openai`` client answered in-process; no model):

  save            the time PersistentSession spends saving a turn (``_commit``: what changed, encoded,
                  written in one transaction, and the new mark), SQLite and PostgreSQL
  saved turn      a whole ``PersistentSession.chat`` (the model request, the tools, the ledger, the save)
  unsaved turn    a whole ``ChatSession.chat`` on the same history, never saved
  whole snapshot  ``store.save(session)`` of the whole snapshot after a turn: what every save did
                  before it wrote only what changed (encode and hash every turn, read every digest)

Reaching turn 10,000 by asking 10,000 questions would take most of an hour, so each history is built
directly as a snapshot (turns copied from a few real offline turns, renumbered; the newest 20 kept, the
rest dropped turns with their records), stored with one whole save, and opened as a session. Every
number in the table is then measured on real turns and real saves at the end of that history. In each
round every session asks one question (in turn, so noise from other work on the machine falls on all
of them alike); a ratio is taken within each round, and the table shows the median over the rounds
with the spread (min-max). Times are wall-clock (``time.perf_counter``: PostgreSQL works in another
process), with the garbage collector paused while a turn is timed.

The assistant (``helpers.app.assistant.open_assistant``: guardrails, summary, recall with stored vectors, a
profile over the fact store, facts written after each save) is measured by asking it ``--assistant-turns``
real questions (default 3,000: a seeded ``convgen`` conversation of statements, corrections and campus
questions), on SQLite and PostgreSQL: one assistant asked ``near`` questions and one asked
``--assistant-turns``, then both ask the same campus question per round, in turn (as above). Its memory state is a shared part plus one part
per turn (``helpers.chat.memory_protocol.TurnPartedMemory``), so a save writes the new turn's part, not the
whole memory.

Targets: a save at turn 10,000 within 2x of a save at turn 50; a whole saved turn under 2x an unsaved
turn of a ChatSession at the same point. PostgreSQL is measured when a DSN is given (--dsn,
WORKSHOP_TEST_PG_DSN, or the one tests/setup_postgres.sh wrote); otherwise one line says it was skipped.
Run: python benchmarks/persist_benchmark.py [--near 50] [--far 10000] [--window 20] [--rounds 30] [--dsn DSN]
                                           [--assistant-turns 3000] (0 skips the assistant)
"""
from __future__ import annotations

import argparse
import copy
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("WORKSHOP_BACKEND", "offline")
os.environ.setdefault("WORKSHOP_NO_PROMPT", "1")

from helpers.llm.config import load_settings  # noqa: E402
from helpers.chat.chat_session import ChatSession  # noqa: E402
from helpers.sessions.persistent import PersistentSession  # noqa: E402
from helpers.sessions.session_store import SQLiteSessionStore  # noqa: E402
from helpers.standin.server import make_offline_client  # noqa: E402

QUESTIONS = ["When does the AI club meet?", "How many days until that?", "Where can I print a poster?",
             "And when are the faculty office hours?", "Is the library open on Sunday?"]
DSN_FILE = Path(os.environ.get("WORKSHOP_PG_DIR", "/tmp/agent-memory-workshop-pg")) / "dsn"
SCHEMA = "bench_persist"


def sample_turns(client, settings, window: int) -> list[tuple[list[dict], dict]]:
    """A few real offline turns: (messages, record) each, to copy into long histories."""
    session = ChatSession(max_turns=window, client=client, settings=settings)
    for question in QUESTIONS * 2:
        session.chat(question)
    records = {t.turn_id: vars(t) for t in session.turns}
    return [(copy.deepcopy(messages), records[turn_id]) for turn_id, messages in session._window.turns()]


def history(turns: int, window: int, samples, client, settings) -> dict:
    """The snapshot of a session after ``turns`` turns: the newest ``window`` kept, the rest dropped."""
    state = ChatSession(max_turns=window, client=client, settings=settings).snapshot()
    kept = list(range(max(turns - window, 0), turns))
    first = kept[0] if kept else turns

    def turn(n: int) -> list[dict]:
        return copy.deepcopy(samples[n % len(samples)][0])

    state.update(messages=[m for n in kept for m in turn(n)], turn_ids=kept, next_id=turns,
                 turns=[{**samples[n % len(samples)][1], "turn_id": n} for n in range(turns)],
                 dropped=[{"turn_id": n, "messages": turn(n), "tokens": 120} for n in range(first)])
    return state


def timed_saves(session: PersistentSession) -> list[float]:
    """Seconds spent in each of the session's saves from now on (its ``_commit``)."""
    seconds, commit = [], session._commit

    def timed(before, what):
        start = time.perf_counter()
        try:
            return commit(before, what)
        finally:
            seconds.append(time.perf_counter() - start)

    session._commit = timed
    return seconds


def turn_seconds(chat, question: str) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        chat(question)
        return time.perf_counter() - start
    finally:
        gc.enable()


def pg_dsn(given: str | None) -> tuple[str | None, str]:
    dsn = given or os.environ.get("WORKSHOP_TEST_PG_DSN") or (DSN_FILE.read_text().strip()
                                                            if DSN_FILE.is_file() else None)
    if not dsn:
        return None, ("no DSN: pass --dsn, set WORKSHOP_TEST_PG_DSN, or run 'bash tests/setup_postgres.sh'")
    try:
        import psycopg

        psycopg.connect(dsn, connect_timeout=3).close()
    except Exception as err:  # noqa: BLE001 - any reason is reported, and the SQLite rows still run
        from helpers.core.dsn import redact_dsn

        return None, f"the server does not answer ({redact_dsn(str(err).strip().splitlines()[0], dsn)})"
    return dsn, ""


def ms(values: list[float]) -> str:
    return (f"{statistics.median(values) * 1000:8.2f} ms ({min(values) * 1000:.2f}-"
            f"{max(values) * 1000:.2f})")


def ratio(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f}x ({min(values):.2f}-{max(values):.2f})"


def assistant_at(db: str, session_id: str, turns: int, schema: str | None = None):
    """An assistant that has been asked ``turns`` questions of a seeded conversation (statements, corrections,
    campus questions), with its saves timed from now on: (assistant, save times, the conversation)."""
    from helpers.app.assistant import open_assistant
    from helpers.memory.convgen import generate

    client, settings = make_offline_client(), load_settings("offline")
    texts = [t.user for t in generate(3, 200, 20).turns]
    assistant = open_assistant(settings, "bench", session_id, db=db, client=client, schema=schema)
    start = time.perf_counter()
    for n in range(turns):
        assistant.ask(texts[n % len(texts)])
        if (n + 1) % 500 == 0:
            print(f"  {session_id}: {n + 1:,} turns in {time.perf_counter() - start:.0f} s", flush=True)
    return assistant, timed_saves(assistant.session), texts


def assistant_rounds(db: str, near: int, far: int, rounds: int, schema: str | None = None) -> dict:
    """Two assistants on one database, at ``near`` and ``far`` turns, asking one question each per round (in
    turn, so load on the machine falls on both); per round: each one's save and whole turn, in seconds."""
    runs = {n: assistant_at(db, f"at-{n}", n, schema) for n in (near, far)}
    times: dict = {(what, n): [] for what in ("save", "turn") for n in runs}
    for r in range(rounds):
        for n in (list(runs) if r % 2 == 0 else list(runs)[::-1]):  # both ask the same question
            assistant, saves, _texts = runs[n]
            before = len(saves)
            times["turn", n].append(turn_seconds(assistant.ask, QUESTIONS[r % len(QUESTIONS)]))
            assert len(saves) == before + 1, "a campus question is always answered and saved"
            times["save", n].append(saves[-1])
    for assistant, _saves, _texts in runs.values():
        stored = assistant.store.load_state("bench", assistant.session_id).state
        assert stored == assistant.session.snapshot(), "the store does not hold what the assistant holds"
        assistant.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--near", type=int, default=50)
    parser.add_argument("--far", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=20, help="max_turns of every session")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--assistant-turns", type=int, default=3000)
    args = parser.parse_args()
    client, settings = make_offline_client(), load_settings("offline")
    kwargs = dict(max_turns=args.window, client=client, settings=settings)
    samples = sample_turns(client, settings, args.window)
    points = (args.near, args.far)
    states = {n: history(n, args.window, samples, client, settings) for n in points}

    stores = []
    folder = tempfile.TemporaryDirectory()
    stores.append(("SQLite", SQLiteSessionStore(Path(folder.name) / "sessions.db")))
    dsn, why = pg_dsn(args.dsn)
    if dsn:
        from helpers.core.postgres import drop_schema
        from helpers.sessions.session_store_pg import PostgresSessionStore

        drop_schema(dsn, SCHEMA)
        stores.append(("PostgreSQL", PostgresSessionStore(dsn, schema=SCHEMA)))
    saved: dict[tuple[str, int], PersistentSession] = {}
    for name, store in stores:
        for n in points:
            start = time.perf_counter()
            store.save("bench", f"at-{n}", states[n])
            saved[name, n] = PersistentSession.open(store, "bench", f"at-{n}", **kwargs)
            print(f"{name}: a {n:,}-turn history stored and opened in {time.perf_counter() - start:.1f} s")
    unsaved = {n: ChatSession.from_snapshot(states[n], **kwargs) for n in points}
    for session in [*saved.values(), *unsaved.values()]:  # warm up: the ledger learns the window's costs
        for question in QUESTIONS[:3]:
            session.chat(question)
    saves = {key: timed_saves(session) for key, session in saved.items()}

    turns: dict[object, list[float]] = {key: [] for key in [*saved, *unsaved]}
    order = [*saved, *unsaved]
    for r in range(args.rounds):
        question = QUESTIONS[r % len(QUESTIONS)]
        for key in order[r % len(order):] + order[:r % len(order)]:
            chat = saved[key].chat if key in saved else unsaved[key].chat
            turns[key].append(turn_seconds(chat, question))
    for key, session in saved.items():
        assert session.store.load_state(session.user_id, session.session_id).state == session.snapshot()

    whole: dict[tuple[str, int], list[float]] = {key: [] for key in saved}  # what every save did before
    for r in range(max(args.rounds // 3, 3)):
        for key, persistent in saved.items():
            persistent.session.chat(QUESTIONS[r % len(QUESTIONS)])
            gc.disable()
            start = time.perf_counter()
            persistent.revision = persistent.store.save(persistent.user_id, persistent.session_id,
                                                        persistent.session, expected_revision=persistent.revision)
            whole[key].append(time.perf_counter() - start)
            gc.enable()
            persistent._synced = persistent.session.mark(memory=False)

    near, far = points
    print(f"\nmax_turns={args.window}, offline stand-in; median over {args.rounds} rounds (min-max); "
          "ratios taken within each round")
    print(f"{'':<40} {'turn ' + format(near, ','):>27} {'turn ' + format(far, ','):>27}   "
          f"turn {far:,} / turn {near:,}")
    rows = [("unsaved ChatSession turn", turns[near], turns[far])]
    for name, _store in stores:
        rows += [(f"{name}: save (what changed)", saves[name, near], saves[name, far]),
                 (f"{name}: whole saved turn", turns[name, near], turns[name, far]),
                 (f"{name}: whole-snapshot save (before)", whole[name, near], whole[name, far])]
    for label, a, b in rows:
        print(f"{label:<40} {ms(a):>27} {ms(b):>27}   {ratio([y / x for x, y in zip(a, b)])}")
    print()
    for name, _store in stores:
        for n in points:
            print(f"{name}: saved turn / unsaved turn at turn {n:,}".ljust(58)
                  + ratio([s / u for s, u in zip(turns[name, n], turns[n])]) + "   (target < 2x)")
        print(f"{name}: save at turn {far:,} / save at turn {near:,}".ljust(58)
              + ratio([y / x for x, y in zip(saves[name, near], saves[name, far])]) + "   (target <= 2x)")
    if not dsn:
        print(f"PostgreSQL: skipped - {why}")
    for _name, store in stores:
        store.close()
    if dsn:
        drop_schema(dsn, SCHEMA)
    if args.assistant_turns <= args.near:
        return
    near, far = args.near, args.assistant_turns
    runs = [("SQLite", str(Path(folder.name) / "assistant.db"), None)]
    if dsn:
        runs.append(("PostgreSQL", dsn, SCHEMA + "_assistant"))
    results = {}
    for name, db, schema in runs:
        print(f"\nThe assistant on {name}: one asked {near:,} questions, one {far:,}")
        if schema:
            drop_schema(dsn, schema)
        results[name] = assistant_rounds(db, near, far, args.rounds, schema)
        if schema:
            drop_schema(dsn, schema)
    print(f"\nThe assistant (recall, profile, facts, guardrails); median over {args.rounds} rounds (min-max); "
          "ratios taken within each round")
    print(f"{'':<28} {'turn ' + format(near, ','):>27} {'turn ' + format(far, ','):>27}   "
          f"turn {far:,} / turn {near:,}")
    for name, times in results.items():
        for what, label in (("save", "save"), ("turn", "whole turn")):
            a, b = times[what, near], times[what, far]
            print(f"{name + ': ' + label:<28} {ms(a):>27} {ms(b):>27}   {ratio([y / x for x, y in zip(a, b)])}")

if __name__ == "__main__":
    main()

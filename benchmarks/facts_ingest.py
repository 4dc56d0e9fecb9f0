"""Benchmark: one day of fact statements through the reconciling writer (notebook 10).

A day is 20,000 statements: 11,800 first statements, 6,000 replays of an earlier source event
(queue retries, some arriving after a correction), 2,000 paraphrases of a stored value and
200 explicit corrections. The script checks that the exact expected final state is reached,
then times, in interleaved rounds on the same settings:

* the reconciling writer, ``FactMemory.write_many`` (one transaction per batch, every
  decision audited in the same transaction as its change);
* **the same rows written blind** - the target's baseline: every fact, provenance and audit
  row the writer stored, recorded from an untimed run and replayed with raw ``executemany``
  upserts/inserts into the same schema, in the same transactions, with no reads and no
  decisions. The writer's share of its throughput is what reading and deciding cost;
* for scale, a store with one row per statement (upserted by key; no rules, provenance or
  audit), with and without one audit row per statement.

It also measures the freshness of the background path: time from ``submit()`` returning (the
candidate is queued, not yet durable) until the decision is committed and readable, for a paced
stream and for a burst. ``submit(..., wait=True)`` returns only at the end of that gap.

Run: ``python benchmarks/facts_ingest.py [--batch 500] [--seed 7] [--repeat 7]``. Numbers depend on the
machine and on whatever else it runs: each path's best round is reported, the writer's median round beside
its best, and the spread of the per-round ratios (a round runs every path once, back to back).
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.facts import fact_store as facts_store  # noqa: E402
from helpers.facts.background import BackgroundWriter  # noqa: E402
from helpers.facts.writer import DEFAULT_ATTRIBUTES, Candidate, FactMemory  # noqa: E402
from helpers.facts.fact_store import SQLiteFactStore  # noqa: E402

FIRST, REPLAYS, PARAPHRASES, CORRECTIONS = 11_800, 6_000, 2_000, 200
TARGET = 25_000  # statements/s the writer should reach: the day of 20,000 in under a second
WINDOWS = {"morning": ["morning", "in the morning"], "afternoon": ["afternoon", "afternoons"],
           "evening": ["evening", "in the evenings"]}
WINDOW_PARAPHRASE = {"morning": "Mornings", "afternoon": "in the afternoon", "evening": "Evening deliveries"}
CONTACTS = {"email": ("email", "E-mail"), "sms": ("text message", "SMS"), "phone": ("phone", "Phone call")}
STREETS = ["Elm", "Harbor", "Cedar", "Larkspur", "Quarry", "Willow", "Beacon", "Orchard"]
ALLERGENS = ["peanuts", "shellfish", "gluten", "milk", "soy", "sesame", "eggs", "walnuts"]


def _address(rng: random.Random) -> tuple[str, str]:
    number, street = rng.randint(1, 999), rng.choice(STREETS)
    kind, short = rng.choice([("Street", "St"), ("Road", "Rd"), ("Avenue", "Ave")])
    return f"{number} {street} {kind}", f"{number} {street.upper()} {short}."


def make_day(seed: int) -> list[Candidate]:
    """The day's statements in arrival order (versions grow per user source; replays reuse a version)."""
    rng = random.Random(seed)
    attrs = ["delivery_window", "shipping_address", "preferred_contact", "allergy"]
    firsts = []  # (time, user, attribute, value, paraphrase of value)
    for index in range(FIRST):
        user, attribute = f"u{index // 4:05d}", attrs[index % 4]
        if attribute == "delivery_window":
            key = rng.choice(list(WINDOWS))
            value, para = rng.choice(WINDOWS[key]), WINDOW_PARAPHRASE[key]
        elif attribute == "shipping_address":
            value, para = _address(rng)
        elif attribute == "preferred_contact":
            value, para = CONTACTS[rng.choice(list(CONTACTS))]
        else:
            value = rng.choice(ALLERGENS)
            para = value.upper() + "!"
        firsts.append((float(index), user, attribute, value, para))
    single = [f for f in firsts if f[2] != "allergy"]
    chosen = rng.sample(range(len(single)), PARAPHRASES + CORRECTIONS)
    events = [(t, user, attribute, value) for t, user, attribute, value, _ in firsts]
    for n, pick in enumerate(chosen):
        t, user, attribute, value, para = single[pick]
        later = t + rng.uniform(1, 5_000)
        if n < PARAPHRASES:
            events.append((later, user, attribute, para))
            continue
        if attribute == "delivery_window":
            other = rng.choice([k for k in WINDOWS if k != DEFAULT_ATTRIBUTES[attribute].normalise(value)])
        elif attribute == "preferred_contact":
            other = rng.choice([k for k in CONTACTS if k != DEFAULT_ATTRIBUTES[attribute].normalise(value)])
        else:
            other = f"{rng.randint(1000, 2000)} New Lane"
        events.append((later, user, attribute, other))
    events.sort()
    versions: Counter = Counter()
    stamped = []
    for t, user, attribute, value in events:
        versions[user] += 1
        stamped.append((t, Candidate(user, "user", attribute, value, f"chat:{user}", "user", versions[user])))
    for _ in range(REPLAYS):
        t, original = rng.choice(stamped[:len(events)])
        stamped.append((t + rng.uniform(0.5, 3_000), original))
    stamped.sort(key=lambda pair: pair[0])
    assert len(stamped) == FIRST + REPLAYS + PARAPHRASES + CORRECTIONS
    return [candidate for _, candidate in stamped]


def expected_state(day: list[Candidate]) -> dict[tuple, str]:
    """Key -> normalised value of the highest version each key saw (computed without the writer)."""
    best: dict[tuple, tuple[int, str]] = {}
    for c in day:
        spec = DEFAULT_ATTRIBUTES[c.attribute]
        value_key = spec.normalise(c.value)
        key = (c.user_id, c.subject, c.attribute, value_key if spec.multi_valued else "")
        if key not in best or c.source_version > best[key][0]:
            best[key] = (c.source_version, value_key)
    return {key: value for key, (_, value) in best.items()}


def run_writer(path: Path, day: list[Candidate], batch: int) -> tuple[float, float, FactMemory, Counter]:
    """The reconciling writer, one write_many (one transaction) per batch: (wall, cpu, memory, outcomes)."""
    memory = FactMemory(SQLiteFactStore(str(path)))
    outcomes: Counter = Counter()
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(day), batch):
        outcomes.update(d.outcome for d in memory.write_many(day[i:i + batch]))
    checkpoint(memory.store._conn())
    return time.perf_counter() - wall, time.process_time() - cpu, memory, outcomes


def checkpoint(conn: sqlite3.Connection) -> None:
    """Every timed path ends by copying its WAL into the database file, so none leaves that work untimed."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise SystemExit("the final checkpoint could not complete (another connection is reading?)")


Recorded = list[list[tuple[str, list[tuple]]]]  # per transaction: the (sql, rows) the writer stored


def record_writes(path: Path, day: list[Candidate], batch: int) -> Recorded:
    """Run the writer once (untimed) and keep every statement and row each transaction stored."""
    recorded: Recorded = []
    plain_save = facts_store._SQLiteTransaction.save

    def recording_save(txn, changes) -> None:
        calls: list[tuple[str, list[tuple]]] = []

        def executemany(sql: str, rows: list) -> None:
            calls.append((sql, [tuple(row) for row in rows]))

        facts_store.save_changes(executemany, changes)
        recorded.append(calls)
        plain_save(txn, changes)

    facts_store._SQLiteTransaction.save = recording_save
    try:
        run_writer(path, day, batch)[2].close()
    finally:
        facts_store._SQLiteTransaction.save = plain_save
    return recorded


def run_same_rows(path: Path, recorded: Recorded) -> tuple[float, float]:
    """The baseline the target is about: the very rows the writer stored (facts, provenance, audit), in the
    same transactions, written blind (no reads, no decisions) into the same schema with the same settings."""
    store = SQLiteFactStore(str(path))  # migrations and connection settings exactly as the writer's
    conn = store._conn()
    wall, cpu = time.perf_counter(), time.process_time()
    for calls in recorded:
        conn.execute("BEGIN IMMEDIATE")
        for sql, rows in calls:
            conn.executemany(sql, rows)
        conn.execute("COMMIT")
    checkpoint(conn)
    result = time.perf_counter() - wall, time.process_time() - cpu
    store.close()
    return result


RAW_SQL = ("INSERT INTO raw_facts VALUES (?, ?, ?, ?, ?, ?, ?) "
           "ON CONFLICT (user_id, subject, attribute, slot) DO UPDATE SET value = excluded.value, "
           "source_id = excluded.source_id, "
           "source_version = excluded.source_version")


AUDIT_SQL = ("INSERT INTO raw_audit (user_id, attribute, value, source_id, source_version, decided_at) "
             "VALUES (?, ?, ?, ?, ?, ?)")


def run_raw_upsert(path: Path, day: list[Candidate], batch: int, *, audit: bool = False
                   ) -> tuple[float, float]:
    """The lightest store imaginable: each statement upserted into one row per key - no rules, no provenance,
    no audit (optionally one audit row each) - on a connection with the fact store's own settings."""
    store = SQLiteFactStore(str(path))
    conn = store._conn()
    conn.execute("CREATE TABLE raw_facts (user_id TEXT, subject TEXT, attribute TEXT, slot TEXT, value TEXT, "
                 "source_id TEXT, source_version INTEGER, PRIMARY KEY (user_id, subject, attribute, slot))")
    conn.execute("CREATE TABLE raw_audit (id INTEGER PRIMARY KEY, user_id TEXT, attribute TEXT, value TEXT, "
                 "source_id TEXT, source_version INTEGER, decided_at TEXT)")
    conn.execute("CREATE INDEX raw_audit_by_user ON raw_audit (user_id, id)")
    rows = [(c.user_id, c.subject, c.attribute, c.value if DEFAULT_ATTRIBUTES[c.attribute].multi_valued
             else "", c.value, c.source_id, c.source_version) for c in day]
    stamp = "2026-11-30T10:00:00-08:00"
    audit_rows = [(c.user_id, c.attribute, c.value, c.source_id, c.source_version, stamp) for c in day]
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(rows), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(RAW_SQL, rows[i:i + batch])
        if audit:
            conn.executemany(AUDIT_SQL, audit_rows[i:i + batch])
        conn.execute("COMMIT")
    checkpoint(conn)
    result = time.perf_counter() - wall, time.process_time() - cpu
    store.close()
    return result


def check_state(memory: FactMemory, expected: dict[tuple, str]) -> list[str]:
    """Problems with the final state (empty when it is exactly the expected one)."""
    conn = sqlite3.connect(memory.store.path)
    active = conn.execute("SELECT user_id, subject, attribute, slot, value_key FROM facts "
                          "WHERE status = 'active'").fetchall()
    problems = []
    keys = Counter(row[:4] for row in active)
    duplicates = sum(1 for n in keys.values() if n > 1)
    if duplicates:
        problems.append(f"{duplicates} keys have more than one active fact")
    got = {row[:4]: row[4] for row in active}
    wrong = sum(1 for key, value in expected.items() if got.get(key) != value)
    if wrong or len(got) != len(expected):
        problems.append(f"{wrong} keys differ from the expected value; {len(got)} active vs "
                        f"{len(expected)} expected")
    others = conn.execute("SELECT status, COUNT(*) FROM facts WHERE status != 'active' "
                          "GROUP BY status").fetchall()
    if dict(others) != {"superseded": CORRECTIONS}:
        problems.append(f"non-active facts {dict(others)}; expected only {CORRECTIONS} superseded")
    audited = conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
    if audited != FIRST + REPLAYS + PARAPHRASES + CORRECTIONS:
        problems.append(f"{audited} audit rows; expected one per statement")
    conn.close()
    return problems


def freshness(path: Path, day: list[Candidate], *, count: int, pace: float) -> list[float]:
    """Seconds from submit() returning to the decision being committed, for ``count`` statements."""
    memory = FactMemory.open(str(path))
    writer = BackgroundWriter(memory, batch_size=256)
    queued_at: dict[int, float] = {}
    lags: list[float] = []
    lock = threading.Lock()

    def done(index: int):
        def record(_future) -> None:
            with lock:
                lags.append(time.perf_counter() - queued_at[index])
        return record

    for index, candidate in enumerate(day[:count]):
        future = writer.submit(candidate)
        with lock:
            queued_at[index] = time.perf_counter()
        future.add_done_callback(done(index))
        if pace:
            time.sleep(pace)
    writer.close()
    reader = sqlite3.connect(path)
    readable = reader.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
    reader.close()
    memory.close()
    if readable != count or len(lags) != count:
        raise SystemExit(f"freshness run: {readable} audited, {len(lags)} futures resolved, expected {count}")
    return lags


def _ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


PATHS = (("writer", "reconciling writer"), ("same", "same rows written blind"),
         ("raw", "one row per statement"),
         ("raw_audit", "one row + one audit row"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=500, help="statements per transaction (default 500)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=7,
                        help="timed rounds; the best of each path is reported, and the writer's median")
    args = parser.parse_args()
    day = make_day(args.seed)
    expected = expected_state(day)
    gc.collect()
    gc.freeze()  # the generated day is long-lived: keep the collector from rescanning it during timing
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in PATHS}
    with tempfile.TemporaryDirectory() as tmp:
        recorded = record_writes(Path(tmp) / "recorded.db", day, args.batch)
        stored_rows = sum(len(rows) for calls in recorded for _, rows in calls)
        def timed(name: str, run: int) -> tuple[float, float]:
            path = Path(tmp) / f"{name}{run}.db"
            if name == "writer":
                wall, cpu, memory, outcomes[name] = run_writer(path, day, args.batch)
                problems = check_state(memory, expected)
                memory.close()
                if problems:
                    raise SystemExit(f"{name}: final state is wrong: " + "; ".join(problems))
                result = wall, cpu
            elif name == "same":
                result = run_same_rows(path, recorded)
            else:
                result = run_raw_upsert(path, day, args.batch, audit=name == "raw_audit")
            if name == "raw" and run == 0:
                outcomes["raw_wrong"] = _raw_wrong(path, expected)
            for leftover in Path(tmp).glob(f"{name}{run}.db*"):
                leftover.unlink()
            return result


        outcomes: dict = {}
        names = [name for name, _ in PATHS]
        for run in range(args.repeat):  # interleaved rounds, each starting at another path
            for name in names[run % len(names):] + names[:run % len(names)]:
                os.sync()  # earlier runs' dirty pages are not flushed during this one
                times[name].append(timed(name, run))
        raw_wrong, outcomes = outcomes["raw_wrong"], outcomes["writer"]
        paced = freshness(Path(tmp) / "paced.db", day, count=2_000, pace=0.001)
        burst = freshness(Path(tmp) / "burst.db", day, count=5_000, pace=0.0)
    n = len(day)
    best = {name: (min(w for w, _ in runs), min(c for _, c in runs)) for name, runs in times.items()}
    typical = tuple(statistics.median(column) for column in zip(*times["writer"]))  # the writer's (wall, cpu)
    print(f"Day: {n:,} statements = {FIRST:,} first + {REPLAYS:,} replays + {PARAPHRASES:,} paraphrases + "
          f"{CORRECTIONS} corrections; {args.batch} per transaction; "
          f"best of {args.repeat} interleaved rounds (and the writer's median round)")
    print("Decisions: " + ", ".join(f"{k} {v:,}" for k, v in sorted(outcomes.items())))
    print(f"Final state: exact ({len(expected):,} active facts, {CORRECTIONS} superseded, no duplicates, "
          f"{n:,} audit rows); the one-row upsert ends with {raw_wrong:,} keys wrong")
    print(f"The writer stored {stored_rows:,} rows (facts, provenance, audit) in {len(recorded)} "
          "transactions")
    print(f"\n{'path':<28}{'statements/s':>13}{'wall s':>9}{'cpu s':>8}{'writer share':>14}"
          f"{'per round (median)':>22}")
    for name, label in PATHS:
        wall, cpu = best[name]
        share = "" if name == "writer" else f"{wall / best['writer'][0]:.0%}"
        rounds = sorted(b[0] / w[0] for w, b in zip(times["writer"], times[name]))
        median = rounds[len(rounds) // 2]
        spread = "" if name == "writer" else f"{rounds[0]:.0%}-{rounds[-1]:.0%} ({median:.0%})"
        print(f"{label:<28}{n / wall:>13,.0f}{wall:>9.3f}{cpu:>8.3f}{share:>14}{spread:>22}")
        if name == "writer":
            print(f"{'  its median round':<28}{n / typical[0]:>13,.0f}{typical[0]:>9.3f}{typical[1]:>8.3f}")
    print("(writer share = the path's best wall time / the writer's: the writer's throughput as a share "
          "of it;")
    met = ["met" if n / wall >= TARGET else "missed" for wall in (best["writer"][0], typical[0])]
    print(f" the writer's target: >= {TARGET:,} statements/s, the whole day in under a second;")
    print(f" {met[0]} by its best round, {met[1]} by its median round)")
    print(f"\n{'freshness (queued -> readable)':<32}{'p50 ms':>8}{'p95 ms':>8}{'max ms':>8}")
    for name, lags in (("paced, 2,000 at ~1/ms", paced), ("burst, 5,000 at once", burst)):
        print(f"{name:<32}{_ms(lags, 0.5):>8}{_ms(lags, 0.95):>8}{_ms(lags, 1.0):>8}")


def _raw_wrong(path: Path, expected: dict[tuple, str]) -> int:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT user_id, subject, attribute, slot, value FROM raw_facts")
    got = {row[:4]: row[4] for row in rows}
    conn.close()
    wrong = 0
    for (user, subject, attribute, slot), value in expected.items():
        raw_value = got.get((user, subject, attribute, slot))
        if raw_value is None or DEFAULT_ATTRIBUTES[attribute].normalise(raw_value) != value:
            wrong += 1
    return wrong


if __name__ == "__main__":
    main()

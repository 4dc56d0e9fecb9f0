"""Release checks for durable facts (notebook 10): replays and assistant noise, 8 writers at once, SIGKILL."""
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.facts.extract import extract_candidates
from helpers.facts.writer import Candidate, FactMemory
from helpers.facts.fact_store import SQLiteFactStore
from test_facts import STORES  # every fact-store backend (PostgreSQL when a server is reachable)

ROOT = Path(__file__).resolve().parents[1]

TRANSCRIPT = {  # user id -> turns (seq, role, text)
    "u1": [(1, "user", "I prefer deliveries in the morning."),
           (2, "assistant", "Noted, mornings it is."),
           (3, "user", "Mornings work best for deliveries, really."),
           (4, "user", "My address is 12 Elm Street. I'm allergic to peanuts."),
           (6, "user", "Actually, make that evenings."),
           (7, "user", "Please contact me by email.")],
    "u2": [(1, "user", "I'd like my packages to arrive in the afternoon."),
           (2, "user", "My address is 48 Harbor Road.")],
}
TOOL_EVENTS = [Candidate("u1", "user", "shipping_address", "12 Elm St", "crm", "tool", 3),
               Candidate("u2", "user", "preferred_contact", "sms", "crm", "tool", 5),
               Candidate("u2", "user", "shipping_address", "48 Harbor Rd.", "orders", "tool", 11)]
ASSISTANT_NOISE = ["I have updated your address to 9 Oak Ave.",
                   "I've changed your delivery window to mornings.",
                   "I have set your contact preference to phone."]


def source_events():
    events = []
    for user, turns in TRANSCRIPT.items():
        for seq, role, text in turns:
            events += extract_candidates({"role": role, "content": text}, user_id=user, seq=seq).candidates
    return events + TOOL_EVENTS


def snapshot(memory, users=("u1", "u2")):
    return {user: sorted((f.attribute, f.value, f.status, f.support, tuple(sorted(f.supporters)))
                         for f in memory.active_facts(user)) for user in users}


def test_replaying_every_event_twice_with_assistant_noise_changes_nothing(tmp_path):
    memory = FactMemory.open(str(tmp_path / "facts.db"))
    events = source_events()
    memory.write_many(events)
    before = snapshot(memory)
    assert len(before["u1"]) == 4 and len(before["u2"]) == 3  # the scenario produced real facts
    noise = []
    for user in TRANSCRIPT:
        for n, text in enumerate(ASSISTANT_NOISE):
            noise += extract_candidates({"role": "assistant", "content": text}, user_id=user, seq=100 + n,
                                        save_ai_messages_to_memory=True).candidates
    assert len(noise) == 6
    decisions = memory.write_many(events + noise + events)
    assert {d.outcome for d in decisions[:len(events)]} == {"noop"}
    assert {d.outcome for d in decisions[len(events):len(events) + len(noise)]} <= {"rejected", "noop"}
    assert {d.outcome for d in decisions[len(events) + len(noise):]} == {"noop"}
    assert snapshot(memory) == before
    memory.close()


@pytest.mark.parametrize("backend", sorted(STORES))
def test_eight_threads_writing_conflicting_corrections_lose_no_provenance(tmp_path, backend):
    rounds, windows = 25, ["morning", "afternoon", "evening"]
    memory = FactMemory(STORES[backend](tmp_path))
    start, results, errors = threading.Barrier(8), {}, []

    def worker(n):
        try:
            start.wait()
            results[n] = [memory.write(Candidate("u1", "user", "delivery_window", windows[(n + v) % 3],
                                                 f"system{n}", "tool", v)) for v in range(1, rounds + 1)]
        except Exception as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    audit = memory.audit("u1")
    assert len(audit) == 8 * rounds
    assert sorted((e.source_id, e.source_version, e.outcome) for e in audit) == sorted(
        (d.source_id, d.source_version, d.outcome) for ds in results.values() for d in ds)
    live = memory.store.read_facts("u1", ("active", "conflict"))
    final = {f"system{n}": windows[(n + rounds) % 3] for n in range(8)}
    for source, value in final.items():  # every source's last word is live, at its last version, exactly once
        backing = [f for f in live if source in f.supporters]
        assert [f.value for f in backing] == [value]
        [prov] = [p for p in backing[0].provenance if p.source_id == source]
        assert prov.source_version == rounds
    assert {f.value for f in live} == set(final.values())
    assert {f.status for f in live} == ({"active"} if len(live) == 1 else {"conflict"})
    # Serialisable: replaying the audit log in commit order into a fresh store decides the same things.
    replay = FactMemory(SQLiteFactStore(":memory:"))
    again = [replay.write(Candidate(e.user_id, e.subject, e.attribute, e.value, e.source_id, e.source_kind,
                                    e.source_version)) for e in audit]
    assert [d.outcome for d in again] == [e.outcome for e in audit]
    assert snapshot(replay, ("u1",)) == snapshot(memory, ("u1",))
    live_replayed = replay.store.read_facts("u1", ("active", "conflict"))
    assert sorted((f.value, f.status, tuple(sorted(f.supporters))) for f in live_replayed) == sorted(
        (f.value, f.status, tuple(sorted(f.supporters))) for f in live)
    memory.close()
    replay.close()


CHILD = r"""
import sys
from helpers.facts.writer import Candidate, FactMemory
path, batch = sys.argv[1], int(sys.argv[2])
memory = FactMemory.open(path)
# new allergies and address corrections
events = [Candidate(f"u{i % 97}", "user", "shipping_address" if i % 2 else "allergy", f"{i} Elm Street",
                    f"chat:u{i % 97}", "user", i) for i in range(100_000)]
for number, start in enumerate(range(0, len(events), batch), 1):
    memory.write_many(events[start:start + batch] + events[max(0, start - 5):start])  # plus 5 replays
    print(f"committed {number}", flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_process_killed_mid_ingest_keeps_every_commit_and_no_partial_write(tmp_path):
    path, batch = str(tmp_path / "facts.db"), 200
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(batch)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True)
    committed = 0
    for line in child.stdout:
        committed = int(line.split()[1])
        if committed >= 4:
            os.kill(child.pid, signal.SIGKILL)  # lands while the next batch is being written
            break
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    audited = conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
    per_transaction = batch + 5  # every batch after the first carries 5 replays
    assert audited >= batch + (committed - 1) * per_transaction  # nothing acknowledged was lost
    assert (audited - batch) % per_transaction == 0  # whole transactions only
    checks = {
        "provenance without a fact": "SELECT COUNT(*) FROM provenance p LEFT JOIN facts f "
                                     "ON f.id = p.fact_id WHERE f.id IS NULL",
        "facts without provenance": "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS "
                                    "(SELECT 1 FROM provenance p WHERE p.fact_id = f.id)",
        "facts without the audit row that made them": (
            "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM audit a WHERE a.fact_id = f.id "
            "AND a.outcome != 'noop')"),
        "audit rows naming a missing fact": "SELECT COUNT(*) FROM audit a LEFT JOIN facts f "
                                            "ON f.id = a.fact_id "
                                            "WHERE a.fact_id IS NOT NULL AND f.id IS NULL",
        "keys with two active values": "SELECT COUNT(*) FROM (SELECT 1 FROM facts WHERE status = 'active' "
                                       "GROUP BY user_id, subject, attribute, slot HAVING COUNT(*) > 1)",
        "superseded facts not pointing at a fact": "SELECT COUNT(*) FROM facts s LEFT JOIN facts f "
                                                   "ON f.id = s.superseded_by WHERE s.status = 'superseded' "
                                                   "AND f.id IS NULL",
    }
    found = {name: conn.execute(sql).fetchone()[0] for name, sql in checks.items()}
    outcomes = dict(conn.execute("SELECT outcome, COUNT(*) FROM audit GROUP BY outcome").fetchall())
    facts = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
    conn.close()
    assert found == {name: 0 for name in checks}
    assert facts == outcomes["insert"] + outcomes["correction"]  # each new value came with its own decision
    assert outcomes["noop"] == (audited - batch) // per_transaction * 5

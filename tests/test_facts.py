"""Durable facts (notebook 10): store, schema, one test per write rule, extraction, both write paths."""
import json
import logging
import random
import sqlite3
import threading
from collections.abc import Mapping

import httpx2
import openai
import pytest
from hypothesis import given, settings as hyp_settings, strategies as st

from helpers.facts.background import BackgroundWriter, FactWriteError
from helpers.facts.extract import (
    DELIVERY, ExtractionError, extract_candidates, extract_with_rules, ingest_turn,
)
from helpers.facts.pipeline import ReplyFormatError
from helpers.facts.writer import (
    DEFAULT_ATTRIBUTES, PREVIEW_CHARS, REASON_CHARS, Candidate, FactMemory, FactResolutionError,
    check_candidate, format_facts, normalise_text,
)
from helpers.facts.fact_store import MIGRATIONS, FactStoreError, SQLiteFactStore

from test_postgres import pg_dsn, pg_fact_store  # noqa: E402  (skips without a server: setup_postgres.sh)

# A second backend (PostgreSQL, say) adds a factory here and inherits every test in this file.
STORES = {"sqlite": lambda tmp_path: SQLiteFactStore(str(tmp_path / "facts.db")), "postgres": pg_fact_store}


@pytest.fixture(params=sorted(STORES))
def memory(request, tmp_path):
    memory = FactMemory(STORES[request.param](tmp_path))
    yield memory
    memory.close()


def said(value, version, *, source="chat:u1", kind="user", attribute="delivery_window", user="u1",
         subject="user"):
    return Candidate(user, subject, attribute, value, source, kind, version, evidence=f"said {value}")


def active_values(memory, user="u1"):
    return {(f.attribute, f.value) for f in memory.active_facts(user)}


# --- store --------------------------------------------------------------------------------------------------

def test_migration_creates_exactly_these_columns(tmp_path):
    SQLiteFactStore(str(tmp_path / "f.db")).close()
    conn = sqlite3.connect(tmp_path / "f.db")
    columns = {table: [row[1] for row in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))]
               for table in ("facts", "provenance", "audit", "schema_migrations")}
    assert columns == {
        "facts": ["id", "user_id", "subject", "attribute", "slot", "value", "value_key", "status",
                  "superseded_by", "created_at", "updated_at"],
        "provenance": ["fact_id", "source_id", "source_kind", "source_version", "evidence", "recorded_at",
                       "withdrawn_at"],
        "audit": ["id", "user_id", "subject", "attribute", "value", "source_id", "source_kind",
                  "source_version", "outcome", "reason", "fact_id", "support", "decided_at"],
        "schema_migrations": ["version", "name", "applied_at"],
    }


def test_reopening_does_not_reapply_migrations(tmp_path):
    for _ in range(2):
        store = SQLiteFactStore(str(tmp_path / "f.db"))
        assert store.schema_version() == MIGRATIONS[-1][0]
        store.close()
    conn = sqlite3.connect(tmp_path / "f.db")
    assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)


def test_fact_and_session_stores_share_one_migration_runner(tmp_path, monkeypatch):
    """Both SQLite stores migrate through helpers.core.migrations.apply_migrations, each into its own table."""
    from helpers.core import migrations
    from helpers.facts import fact_store as fact_store_module
    from helpers.sessions import session_store as session_store_module

    seen = []

    def recording(conn, table, steps):
        seen.append(table)
        return real(conn, table, steps)

    real = migrations.apply_migrations
    monkeypatch.setattr(fact_store_module, "apply_migrations", recording)
    monkeypatch.setattr(session_store_module, "apply_migrations", recording)
    SQLiteFactStore(str(tmp_path / "both.db")).close()
    session_store_module.SQLiteSessionStore(tmp_path / "both.db").close()
    assert seen == ["schema_migrations", "session_schema"]
    conn = sqlite3.connect(tmp_path / "both.db")
    migrations.apply_migrations(conn, "schema_migrations", MIGRATIONS)  # again: nothing to do
    assert conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall() == \
        [(version, name) for version, name, _ in MIGRATIONS]  # each migration once


def test_sqlite_store_uses_wal_and_a_busy_timeout(tmp_path):
    store = SQLiteFactStore(str(tmp_path / "f.db"), timeout=7.5)
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7500
    store.close()


def test_in_memory_store_runs_the_same_rules():
    memory = FactMemory(SQLiteFactStore(":memory:"))
    assert memory.write(said("morning", 1)).outcome == "insert"
    assert memory.write(said("morning", 1)).outcome == "noop"
    memory.close()


def test_closed_store_says_how_to_continue(tmp_path):
    store = SQLiteFactStore(str(tmp_path / "f.db"))
    store.close()
    with pytest.raises(FactStoreError, match="open a new one"):
        store.read_audit("u1")


# --- schema and normaliser ----------------------------------------------------------------------------------

@pytest.mark.parametrize("attribute, a, b", [
    ("delivery_window", "mornings", "In the morning."),
    ("delivery_window", "Evening deliveries", "evening"),
    ("delivery_window", "before noon", "morning"),
    ("shipping_address", "12 Elm Street, Apt 4", "12 elm st apt 4"),
    ("shipping_address", "12  ELM   Street", "12 Elm St."),
    ("preferred_contact", "E-mail", "email"),
    ("preferred_contact", "text message", "SMS"),
])
def test_normaliser_maps_documented_paraphrases_to_one_value(attribute, a, b):
    spec = DEFAULT_ATTRIBUTES[attribute]
    assert spec.normalise(a) == spec.normalise(b)


@pytest.mark.parametrize("attribute, a, b", [
    ("delivery_window", "morning", "evening"),
    ("shipping_address", "12 Elm Street", "21 Elm Street"),
    ("preferred_contact", "email", "phone"),
])
def test_normaliser_keeps_different_values_apart(attribute, a, b):
    spec = DEFAULT_ATTRIBUTES[attribute]
    assert spec.normalise(a) != spec.normalise(b)


def test_normalise_text_folds_case_punctuation_and_spaces():
    assert normalise_text("  Don't   SHIP—before\tNoon!! ") == "dont ship before noon"
    assert normalise_text("  Don't   SHIP-before\tNoon!! ") == "dont shipbefore noon"


@pytest.mark.parametrize("broken, problem", [
    (said("morning", 1, attribute="favourite_colour"), "unknown attribute"),
    (said("at midnight", 1), "is not a delivery_window"),
    (said("   ", 1), "value must be a non-empty string"),
    (said("!!!", 1, attribute="shipping_address"), "has no letters or digits"),
    (said("morning", -1), "source_version must be a whole number"),
    (said("morning", "2"), "source_version must be a whole number"),
    (said("morning", 1, kind="robot"), "source_kind must be one of"),
    (said("morning", 1, user=""), "user_id must be a non-empty string"),
    (said("x" * 301, 1, attribute="shipping_address"), "the limit is 300"),
])
def test_malformed_candidate_is_rejected_audited_and_never_stored(memory, broken, problem):
    decision = memory.write(broken)
    assert decision.outcome == "rejected" and problem in decision.reason
    assert decision.fact_id is None
    user = broken.user_id
    assert memory.store.read_facts(user, ("active", "conflict", "ineligible", "superseded")) == []
    assert [(e.outcome, e.reason) for e in memory.audit(user)] == [("rejected", decision.reason)]


@pytest.mark.parametrize("candidate", [
    said("mornings", 1), said(" In the Evening ", 2), said("peanuts", 3, attribute="allergy"),
    said("morning", 1, kind="assistant"), said("noon", 1), said("morning", True), said("", 1),
    said("morning", 1, user="  "), said("x" * 301, 1, attribute="shipping_address"),
])
def test_candidate_objects_and_mappings_get_the_same_verdict(candidate):
    fast, fast_problems = check_candidate(candidate)
    slow, slow_problems = check_candidate(dict(vars(candidate)))
    assert fast == slow and bool(fast_problems) == bool(slow_problems)


def test_mapping_with_an_unexpected_field_is_rejected(memory):
    item = {"user_id": "u1", "subject": "user", "attribute": "delivery_window", "value": "morning",
            "source_id": "chat:u1", "source_version": 1, "confidence": 0.9}
    decision = memory.write(item)
    assert decision.outcome == "rejected" and "unexpected field 'confidence'" in decision.reason


def test_well_formed_mapping_is_accepted(memory):
    item = {"user_id": "u1", "subject": "user", "attribute": "delivery_window", "value": "morning",
            "source_id": "chat:u1", "source_kind": "user", "source_version": 1}
    assert memory.write(item).outcome == "insert"


def test_something_that_is_not_a_candidate_is_rejected(memory):
    decision = memory.write(42)
    assert decision.outcome == "rejected" and "expected a Candidate or a mapping, got int" in decision.reason


# --- the write rules ----------------------------------------------------------------------------------------

def test_first_statement_is_inserted_with_its_provenance(memory):
    decision = memory.write(said("mornings", 1))
    assert (decision.outcome, decision.reason, decision.support) == ("insert", "new fact", 1)
    [fact] = memory.active_facts("u1")
    assert (fact.value, fact.value_key, fact.status) == ("mornings", "morning", "active")
    [prov] = fact.provenance
    assert (prov.source_id, prov.source_kind, prov.source_version, prov.evidence) == ("chat:u1", "user", 1,
                                                                                      "said mornings")


def test_replayed_event_is_a_noop_and_support_stays_one(memory):
    memory.write(said("morning", 1))
    replays = [memory.write(said("morning", 1)) for _ in range(3)]
    assert [d.outcome for d in replays] == ["noop"] * 3
    assert all("replay" in d.reason for d in replays)
    [fact] = memory.active_facts("u1")
    assert fact.support == 1 and len(fact.provenance) == 1


def test_paraphrase_from_the_same_source_is_a_noop(memory):
    memory.write(said("I'd like mornings", 1, attribute="shipping_address"))
    memory.write(said("morning", 1))
    decision = memory.write(said("In the mornings!", 4))
    assert decision.outcome == "noop" and "paraphrase" in decision.reason
    assert [f.support for f in memory.active_facts("u1") if f.attribute == "delivery_window"] == [1]


def test_matching_value_from_an_independent_source_adds_one_support(memory):
    memory.write(said("12 Elm Street", 1, attribute="shipping_address"))
    decision = memory.write(said("12 elm st.", 3, source="crm", kind="tool", attribute="shipping_address"))
    assert decision.outcome == "insert" and decision.support == 2 and "support 1 -> 2" in decision.reason
    [fact] = memory.active_facts("u1")
    assert fact.value == "12 Elm Street" and fact.supporters == {"chat:u1", "crm"}


def test_independent_source_counts_once_however_often_it_repeats(memory):
    memory.write(said("12 Elm Street", 1, attribute="shipping_address"))
    for version in (3, 3, 4):
        memory.write(said("12 Elm St", version, source="crm", kind="tool", attribute="shipping_address"))
    assert [f.support for f in memory.active_facts("u1")] == [2]


def test_higher_version_from_the_same_source_is_a_correction_kept_as_history(memory):
    first = memory.write(said("morning", 1))
    decision = memory.write(said("evenings", 5))
    assert decision.outcome == "correction" and decision.superseded == (first.fact_id,)
    assert active_values(memory) == {("delivery_window", "evenings")}
    [old] = memory.history("u1")
    assert (old.value, old.status, old.superseded_by) == ("morning", "superseded", decision.fact_id)


def test_older_version_arriving_after_a_correction_is_a_stale_noop(memory):
    memory.write(said("morning", 1))
    memory.write(said("evening", 5))
    decision = memory.write(said("morning", 3))
    assert decision.outcome == "noop" and decision.reason.startswith("stale")
    assert active_values(memory) == {("delivery_window", "evening")}


def test_older_version_arriving_first_is_corrected_by_the_newer_one_regardless_of_order(memory):
    memory.write(said("evening", 5))
    assert memory.write(said("morning", 1)).outcome == "noop"
    assert active_values(memory) == {("delivery_window", "evening")}


def test_same_version_with_a_different_value_is_a_noop(memory):
    memory.write(said("morning", 2))
    assert memory.write(said("evening", 2)).outcome == "noop"
    assert active_values(memory) == {("delivery_window", "morning")}


def test_assistant_proposal_is_recorded_as_ineligible_and_not_active(memory):
    decision = memory.write(said("9 Oak Ave", 7, source="assistant:u1", kind="assistant",
                                 attribute="shipping_address"))
    assert decision.outcome == "rejected" and "ineligible" in decision.reason
    assert memory.active_facts("u1") == []
    [proposal] = memory.ineligible("u1")
    assert (proposal.value, proposal.support) == ("9 Oak Ave", 0)


def test_assistant_proposal_cannot_replace_the_active_value(memory):
    memory.write(said("12 Elm Street", 1, attribute="shipping_address"))
    memory.write(said("9 Oak Ave", 7, source="assistant:u1", kind="assistant", attribute="shipping_address"))
    assert active_values(memory) == {("shipping_address", "12 Elm Street")}


def test_assistant_restating_the_active_value_adds_no_support(memory):
    memory.write(said("morning", 1))
    decision = memory.write(said("mornings", 2, source="assistant:u1", kind="assistant"))
    assert decision.outcome == "noop" and decision.support == 1
    assert [f.support for f in memory.active_facts("u1")] == [1]


def test_user_statement_promotes_the_matching_proposal(memory):
    memory.write(said("9 Oak Ave", 7, source="assistant:u1", kind="assistant", attribute="shipping_address"))
    decision = memory.write(said("9 Oak Avenue", 8, attribute="shipping_address"))
    assert decision.outcome == "insert" and "assistant proposal" in decision.reason
    assert memory.ineligible("u1") == []
    [fact] = memory.active_facts("u1")
    assert fact.value == "9 Oak Ave" and fact.support == 1


def test_disagreeing_authoritative_sources_make_a_conflict_kept_out_of_active_facts(memory):
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    decision = memory.write(said("48 Harbor Road", 8, source="orders", kind="tool",
                                 attribute="shipping_address"))
    assert decision.outcome == "conflict" and "crm" in decision.reason
    assert memory.active_facts("u1") == []
    assert {f.value for f in memory.conflicts("u1")} == {"12 Elm Street", "48 Harbor Road"}


def test_resolve_activates_the_chosen_value_and_audits_who_chose(memory):
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    memory.write(said("48 Harbor Road", 8, source="orders", kind="tool", attribute="shipping_address"))
    decision = memory.resolve("u1", "user", "shipping_address", "48 harbor rd", reviewer="agent:sam",
                              note="customer confirmed by phone")
    assert decision.outcome == "correction"
    assert active_values(memory) == {("shipping_address", "48 Harbor Road")}
    assert memory.conflicts("u1") == []
    last = memory.audit("u1")[-1]
    assert (last.source_id, last.source_kind) == ("agent:sam", "reviewer") and "phone" in last.reason


def test_resolve_without_an_open_conflict_says_where_to_look(memory):
    memory.write(said("morning", 1))
    with pytest.raises(FactResolutionError, match="conflicts"):
        memory.resolve("u1", "user", "delivery_window", "morning", reviewer="agent:sam")


def test_resolve_with_a_value_not_in_the_conflict_lists_the_choices(memory):
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    memory.write(said("48 Harbor Road", 8, source="orders", kind="tool", attribute="shipping_address"))
    with pytest.raises(FactResolutionError, match="Harbor"):
        memory.resolve("u1", "user", "shipping_address", "1 Nowhere Lane", reviewer="agent:sam")


def test_source_revising_to_agree_settles_the_conflict(memory):
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    memory.write(said("48 Harbor Road", 8, source="orders", kind="tool", attribute="shipping_address"))
    decision = memory.write(said("12 Elm St", 9, source="orders", kind="tool", attribute="shipping_address"))
    assert decision.outcome == "correction" and "settled" in decision.reason
    [fact] = memory.active_facts("u1")
    assert fact.value == "12 Elm Street" and fact.supporters == {"crm", "orders"}


def test_correcting_a_value_another_source_still_backs_is_a_conflict(memory):
    memory.write(said("12 Elm Street", 1, attribute="shipping_address"))
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    decision = memory.write(said("9 Oak Avenue", 6, attribute="shipping_address"))
    assert decision.outcome == "conflict"
    elm = next(f for f in memory.conflicts("u1") if f.value == "12 Elm Street")
    assert elm.supporters == {"crm"}
    assert {p.source_id for p in elm.provenance} == {"chat:u1", "crm"}  # withdrawn, not deleted


def test_values_of_a_multi_valued_attribute_do_not_compete(memory):
    memory.write(said("peanuts", 1, attribute="allergy"))
    decision = memory.write(said("shellfish", 2, attribute="allergy"))
    assert decision.outcome == "insert"
    assert memory.write(said("Peanuts!", 3, attribute="allergy")).outcome == "noop"
    assert active_values(memory) == {("allergy", "peanuts"), ("allergy", "shellfish")}


def test_every_decision_is_audited_in_order(memory):
    outcomes = [memory.write(c).outcome for c in (
        said("morning", 1), said("morning", 1), said("evening", 2), said("noon", 3),
        said("9 Oak Ave", 4, source="assistant:u1", kind="assistant", attribute="shipping_address"))]
    assert [e.outcome for e in memory.audit("u1")] == outcomes == [
        "insert", "noop", "correction", "rejected", "rejected"]


def test_every_candidate_is_decided_by_the_decide_function_notebook_10_builds(memory, monkeypatch):
    """The writer opens with ``decide`` (the rules the notebook builds) and really uses it for every write."""
    from helpers.facts import writer

    plans, real = [], writer.decide

    def recording(candidate, stored):
        plans.append(real(candidate, stored))
        return plans[-1]

    monkeypatch.setattr(writer, "decide", recording)
    decisions = memory.write_many([said("morning", 1), said("morning", 1), said("evening", 2),
                                   said("9 Oak Ave", 3, source="assistant:u1", kind="assistant",
                                        attribute="shipping_address")])
    assert [(p.outcome, p.rule) for p in plans] == [
        ("insert", "new"), ("noop", "replay"), ("correction", "correction"), ("rejected", "assistant")]
    assert [d.outcome for d in decisions] == [p.outcome for p in plans]


def test_a_batch_of_many_new_keys_is_loaded_and_decided_in_one_transaction(memory):
    batch = [said(f"peanut {n}", 1, attribute="allergy", user=f"u{n % 7}", source=f"chat:u{n % 7}")
             for n in range(700)]
    assert {d.outcome for d in memory.write_many(batch)} == {"insert"}
    assert {d.outcome for d in memory.write_many(batch)} == {"noop"}
    assert len(memory.active_facts("u3")) == 100


def test_a_batch_is_decided_in_order_inside_one_transaction(memory):
    decisions = memory.write_many([said("morning", 1), said("morning", 1), said("evening", 2),
                                   said("morning", 1)])
    assert [d.outcome for d in decisions] == ["insert", "noop", "correction", "noop"]
    assert active_values(memory) == {("delivery_window", "evening")}


def test_audit_and_fact_change_commit_together_or_not_at_all(memory, monkeypatch):
    if not isinstance(memory.store, SQLiteFactStore):
        pytest.skip("injects a sqlite3 error; tests/test_postgres.py has the PostgreSQL version")
    from helpers.facts import fact_store as facts_store

    def broken_save(self, changes):
        original_save(self, changes)
        raise sqlite3.OperationalError("disk I/O error (simulated after the writes)")

    original_save = facts_store._SQLiteTransaction.save
    monkeypatch.setattr(facts_store._SQLiteTransaction, "save", broken_save)
    with pytest.raises(FactStoreError, match="rolled back"):
        memory.write(said("morning", 1))
    monkeypatch.undo()
    assert memory.active_facts("u1") == [] and memory.audit("u1") == []


def test_a_write_after_a_rolled_back_one_decides_from_the_database(tmp_path, monkeypatch):
    """The writer changes loaded rows before saving; after a rollback the next write must see the database."""
    from helpers.facts import fact_store as facts_store

    memory = FactMemory.open(str(tmp_path / "f.db"))
    assert memory.write(said("morning", 1)).outcome == "insert"

    def broken_save(self, changes):
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setattr(facts_store._SQLiteTransaction, "save", broken_save)
    with pytest.raises(FactStoreError, match="rolled back"):
        memory.write(said("evening", 2))
    monkeypatch.undo()
    assert memory.write(said("evening", 2)).outcome == "correction"
    assert active_values(memory) == {("delivery_window", "evening")}
    assert [f.value for f in memory.history("u1")] == ["morning"]
    memory.close()


def test_two_stores_on_one_file_see_each_others_commits(tmp_path):
    """Two stores on one file (two processes, say): each sees what the other committed before deciding."""
    first, second = (FactMemory.open(str(tmp_path / "f.db")) for _ in range(2))
    assert first.write(said("morning", 1)).outcome == "insert"
    assert second.write(said("evening", 2)).outcome == "correction"
    replay = first.write(said("evening", 2))
    assert replay.outcome == "noop" and "replay" in replay.reason
    assert first.write(said("afternoon", 3)).outcome == "correction"
    assert active_values(second) == {("delivery_window", "afternoon")}
    assert sorted(f.value for f in second.history("u1")) == ["evening", "morning"]
    first.close()
    second.close()


def test_a_source_confirming_its_own_proposal_counts_as_that_kind_in_later_transactions(memory):
    """The stored provenance takes the newest kind of a source, so a reload decides like the batch did."""
    memory.write(said("morning", 1, source="s", kind="assistant"))
    assert memory.write(said("morning", 2, source="s")).outcome == "insert"  # confirms the proposal
    assert [f.supporters for f in memory.active_facts("u1")] == [{"s"}]
    assert memory.write(said("evening", 3, source="s")).outcome == "correction"
    assert active_values(memory) == {("delivery_window", "evening")}


def test_two_writers_sharing_a_file_decide_exactly_like_one(tmp_path):
    """Batches alternating between two stores on one file get the same decisions as one store."""
    rng = random.Random(7)
    day = []
    for version in range(1, 400):
        user = f"u{rng.randrange(6)}"
        attribute = rng.choice(["delivery_window", "preferred_contact", "allergy"])
        value = rng.choice({"delivery_window": ["morning", "evenings", "afternoon"],
                            "preferred_contact": ["email", "text", "phone"],
                            "allergy": ["peanuts", "soy"]}[attribute])
        kind = rng.choice(["user", "user", "tool", "assistant"])
        day.append(Candidate(user, "user", attribute, value, f"s{rng.randrange(3)}:{user}", kind, version))
    day += rng.sample(day, 150)  # replays, arriving late
    outcomes = []
    for stores in ([SQLiteFactStore(str(tmp_path / "one.db"))],
                   [SQLiteFactStore(str(tmp_path / "other.db")) for _ in range(2)]):
        writers = [FactMemory(store) for store in stores]
        for start in range(0, len(day), 7):
            writers[start % len(writers)].write_many(day[start:start + 7])
        outcomes.append([(e.outcome, e.fact_id, e.support) for user in sorted({c.user_id for c in day})
                         for e in writers[0].audit(user)])
        for writer in writers:
            writer.close()
    assert outcomes[0] == outcomes[1]
    assert {o for o, _, _ in outcomes[0]} >= {"insert", "noop", "correction", "conflict", "rejected"}


def test_users_are_isolated(memory):
    memory.write(said("morning", 1))
    memory.write(said("evening", 1, user="u2", source="chat:u2"))
    memory.write(said("12 Elm St", 2, source="crm", kind="tool", attribute="shipping_address", user="u2"))
    assert active_values(memory, "u1") == {("delivery_window", "morning")}
    assert active_values(memory, "u2") == {("delivery_window", "evening"), ("shipping_address", "12 Elm St")}
    assert {e.user_id for e in memory.audit("u1")} == {"u1"}


def test_same_source_id_for_another_user_is_a_different_key(memory):
    memory.write(said("morning", 5, source="crm", kind="tool"))
    assert memory.write(said("evening", 1, source="crm", kind="tool", user="u2")).outcome == "insert"


def test_timestamps_come_from_the_workshop_clock(memory, monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", "2027-03-04T05:06:07+00:00")
    memory.write(said("morning", 1))
    [fact] = memory.active_facts("u1")
    assert fact.created_at.startswith("2027-03-03T21:06:07")  # shown in America/Los_Angeles
    assert memory.audit("u1")[0].decided_at == fact.created_at


def test_format_facts_lists_each_value_with_its_sources(memory):
    memory.write(said("12 Elm Street", 1, attribute="shipping_address"))
    memory.write(said("12 Elm St", 2, source="crm", kind="tool", attribute="shipping_address"))
    memory.write(said("evenings", 3))
    text = format_facts(memory.active_facts("u1"))
    assert text.splitlines() == ["Known facts about the user:",
                                 "- delivery window: evenings (source: chat:u1)",
                                 "- shipping address: 12 Elm Street (source: chat:u1, crm)"]


def test_facts_message_marks_each_value_and_the_stand_in_answers_with_the_current_one(memory):
    from helpers.facts.prompt import facts_message
    from helpers.standin.policy import decide as stand_in

    memory.write_many([said("morning", 1), said("evenings", 2),
                       said("12 Elm St", 3, attribute="shipping_address"),
                       said("48 Harbor Rd", 3, attribute="shipping_address", source="orders", kind="tool")])
    message = facts_message(memory, "u1")
    assert message["role"] == "system" and message["content"].splitlines()[1:] == [
        "- delivery window: evenings (current); source: chat:u1",
        '- delivery window: morning (superseded); replaced by "evenings"',
        "- shipping address: not settled, sources disagree; ask the user"]
    answer = stand_in([message, {"role": "user", "content": "When is my delivery window?"}]).content
    assert "evenings" in answer and "morning" not in answer
    assert facts_message(memory, "nobody")["content"].endswith("- none recorded")


def test_format_facts_says_when_nothing_is_known():
    assert format_facts([]) == "Known facts about the user: none recorded."


# --- extraction ---------------------------------------------------------------------------------------------

def user_turn(text):
    return {"role": "user", "content": text}


def test_rules_extract_a_delivery_preference_with_provenance():
    turn = user_turn("Hi! I prefer deliveries in the morning.")
    [c] = extract_candidates(turn, user_id="u1", seq=3).candidates
    assert (c.attribute, c.value, c.source_id, c.source_kind, c.source_version) == (
        "delivery_window", "morning", "chat:u1", "user", 3)
    assert c.evidence == "I prefer deliveries in the morning" and not c.explicit_correction


def test_rules_mark_an_explicit_correction():
    [c] = extract_with_rules("Actually, make that evenings.", role="user", user_id="u1", seq=9)
    assert (c.attribute, c.value, c.explicit_correction) == ("delivery_window", "evenings", True)


def test_rules_extract_address_contact_and_each_allergy():
    text = "My address is 12 Elm Street. Please contact me by e-mail. I'm allergic to peanuts and shellfish."
    found = {(c.attribute, c.value) for c in extract_with_rules(text, role="user", user_id="u1", seq=1)}
    assert found == {("shipping_address", "12 Elm Street"), ("preferred_contact", "e-mail"),
                     ("allergy", "peanuts"), ("allergy", "shellfish")}


def test_rules_keep_only_the_last_mention_of_a_key_in_one_turn():
    found = extract_with_rules("I prefer deliveries in the morning - no wait, make that evenings.",
                               role="user", user_id="u1", seq=1)
    assert [(c.attribute, c.value) for c in found] == [("delivery_window", "evenings")]


def test_small_talk_yields_no_candidates():
    small_talk = user_turn("Thanks, that's all for today!")
    assert extract_candidates(small_talk, user_id="u1", seq=1).candidates == []


def test_assistant_messages_are_not_saved_by_default():
    turn = {"role": "assistant", "content": "I have updated your address to 9 Oak Ave."}
    result = extract_candidates(turn, user_id="u1", seq=4)
    assert result.candidates == [] and "save_ai_messages_to_memory=False" in result.problems[0]


def test_enabled_assistant_messages_become_ineligible_proposals(memory):
    turn = {"role": "assistant", "content": "I have updated your address to 9 Oak Ave."}
    [c] = extract_candidates(turn, user_id="u1", seq=4, save_ai_messages_to_memory=True).candidates
    assert (c.source_kind, c.source_id, c.attribute, c.value) == (
        "assistant", "assistant:u1", "shipping_address", "9 Oak Ave")
    assert memory.write(c).outcome == "rejected" and memory.active_facts("u1") == []


def test_user_messages_can_be_switched_off():
    result = extract_candidates(user_turn("I prefer deliveries in the morning."), user_id="u1", seq=1,
                                save_user_messages_to_memory=False)
    assert result.candidates == [] and result.method == "skipped"


def test_tool_turns_are_not_extracted_and_the_reason_says_what_to_do():
    result = extract_candidates({"role": "tool", "content": "{}"}, user_id="u1", seq=1)
    assert result.candidates == [] and "Candidate(source_kind='tool')" in result.problems[0]


def fake_llm(reply, seen=None, status=200):
    def handler(request):
        if seen is not None:
            seen.append(json.loads(request.content))
        if status != 200:
            return httpx2.Response(status, json={"error": {"message": "boom", "type": "server_error"}})
        return httpx2.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}]})
    return openai.OpenAI(api_key="x", base_url="http://test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


GOOD_ITEM = {"attribute": "delivery_window", "value": "evenings", "evidence": "make that evenings"}


def test_llm_extraction_asks_for_a_json_object_and_keeps_provenance():
    seen = []
    client = fake_llm(json.dumps({"facts": [GOOD_ITEM]}), seen)
    result = extract_candidates(user_turn("Actually, make that evenings."), user_id="u1", seq=9,
                                client=client, model="m")
    assert seen[0]["response_format"] == {"type": "json_object"} and seen[0]["model"] == "m"
    [c] = result.candidates
    assert (result.method, c.value, c.source_id, c.source_version, c.explicit_correction, c.evidence) == (
        "llm", "evenings", "chat:u1", 9, True, "make that evenings")


def test_the_turns_words_not_the_model_mark_a_correction():
    result = extract_candidates(user_turn("I prefer evenings for deliveries."), user_id="u1", seq=9,
                                client=fake_llm(json.dumps({"facts": [GOOD_ITEM]})), model="m")
    assert [c.explicit_correction for c in result.candidates] == [False]  # no correction cue in the turn


@pytest.mark.parametrize("reply, problem", [
    ("Sure! Here are the facts: evenings", "not JSON"),
    (json.dumps([GOOD_ITEM]), 'exactly one key, "facts"'),
    (json.dumps({"facts": [GOOD_ITEM], "notes": "x"}), 'exactly one key, "facts"'),
    (json.dumps({"facts": [{**GOOD_ITEM, "confidence": 0.9}]}), "must have exactly the keys"),
    (json.dumps({"facts": [{**GOOD_ITEM, "subject": "user", "correction": True}]}), "must have exactly the keys"),
    (json.dumps({"facts": [{**GOOD_ITEM, "value": 3}]}), "value must be text (got int)"),
    (json.dumps({"facts": [{**GOOD_ITEM, "attribute": "mood"}]}), "is not one of"),
    (json.dumps({"facts": [GOOD_ITEM] * 21}), "at most 20"),
])
def test_malformed_llm_reply_gives_no_candidates_and_a_logged_reason(reply, problem, caplog):
    with caplog.at_level(logging.WARNING, logger="helpers.facts.extract"):
        result = extract_candidates(user_turn("make that evenings"), user_id="u1", seq=1,
                                    client=fake_llm(reply), model="m")
    assert result.candidates == [] and any(problem in p for p in result.problems)
    assert problem in caplog.text


def test_one_bad_item_rejects_the_whole_reply():
    with pytest.raises(ReplyFormatError) as raised:
        DELIVERY.read_reply(json.dumps({"facts": [GOOD_ITEM, {**GOOD_ITEM, "value": 3}]}))
    assert raised.value.problems == ["facts[1].value must be text (got int)"]


def test_failed_llm_call_gives_no_candidates_and_a_reason():
    result = extract_candidates(user_turn("evenings please"), user_id="u1", seq=1,
                                client=fake_llm("", status=500), model="m")
    assert result.candidates == [] and "extraction call failed" in result.problems[0]


def test_llm_extraction_needs_a_model_name():
    with pytest.raises(ExtractionError, match="model="):
        extract_candidates(user_turn("hi"), user_id="u1", seq=1, client=fake_llm("{}"))


# --- synchronous and background paths -----------------------------------------------------------------------

def test_ingest_writes_corrections_now_and_queues_the_rest(memory):
    with BackgroundWriter(memory) as queue:
        first = ingest_turn(memory, user_turn("I prefer deliveries in the morning."), user_id="u1", seq=1,
                            background=queue)
        assert first.written == [] and len(first.queued) == 1
        queue.flush()
        fix = ingest_turn(memory, user_turn("Actually, make that evenings."), user_id="u1", seq=2,
                          background=queue)
        assert [d.outcome for d in fix.written] == ["correction"] and fix.queued == []
        assert active_values(memory) == {("delivery_window", "evenings")}  # readable before any flush


def test_without_a_background_writer_everything_is_written_before_returning(memory):
    report = ingest_turn(memory, user_turn("I prefer deliveries in the morning."), user_id="u1", seq=1)
    assert [d.outcome for d in report.written] == ["insert"] and report.queued == []


def test_flush_makes_queued_candidates_readable(memory):
    queue = BackgroundWriter(memory, batch_size=4)
    futures = [queue.submit(said(v, n, attribute="allergy"))
               for n, v in enumerate(["milk", "soy", "eggs"] * 3)]
    queue.flush(timeout=10)
    assert [f.result().outcome for f in futures] == ["insert"] * 3 + ["noop"] * 6
    assert {v for _, v in active_values(memory)} == {"milk", "soy", "eggs"}
    queue.close()


def test_failed_background_batch_is_reported_by_flush(tmp_path):
    memory = FactMemory(SQLiteFactStore(str(tmp_path / "f.db")))
    queue = BackgroundWriter(memory)
    memory.store.close()
    future = queue.submit(said("morning", 1))
    with pytest.raises(FactWriteError, match="resubmit"):
        queue.flush(timeout=10)
    assert isinstance(future.exception(), FactStoreError)
    queue.close()


def test_closed_background_writer_refuses_new_candidates(memory):
    queue = BackgroundWriter(memory)
    queue.close()
    with pytest.raises(FactWriteError, match="closed"):
        queue.submit(said("morning", 1))


# --- bad input costs only itself ----------------------------------------------------------------------------

def _wide(n, seed):
    """n random CJK Extension B letters (4 UTF-8 bytes each, incompressible): ids that fill an index entry."""
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x20000, 0x2A6D0)) for _ in range(n))


BAD = {
    "version 2**63": said("morning", 2**63),
    "version too long to print": said("morning", 10**5000),
    "negative version": said("morning", -1),
    "bool version": said("morning", True),
    "float version": said("morning", 1.0),
    "surrogate in value": said("12 Elm\ud800 St", 1, attribute="shipping_address"),
    "surrogate in subject": said("morning", 1, subject="us\udce9r"),
    "surrogate in source_id": said("morning", 1, source="chat:\udfffu1"),
    "surrogate in user_id": said("morning", 1, user="u\ud83d"),
    "surrogate in evidence": Candidate("u1", "user", "delivery_window", "morning", "chat:u1", "user", 1,
                                       "\ud800"),
    "NUL in value": said("12 Elm\x00 St", 1, attribute="shipping_address"),
    "NUL in user_id": said("morning", 1, user="u1\x00"),
    "NUL in subject": said("morning", 1, subject="user\x00"),
    "NUL in source_id": said("morning", 1, source="chat:u1\x00"),
    "NUL in evidence": Candidate("u1", "user", "delivery_window", "morning", "chat:u1", "user", 1, "a\x00b"),
    "3 KB user_id": said("morning", 1, user=_wide(750, 1)),
    "3 KB subject": said("morning", 1, subject=_wide(750, 2)),
    "3 KB source_id": said("morning", 1, source=_wide(750, 3)),
    "key over the index limit": said(_wide(300, 4), 1, attribute="allergy", user=_wide(200, 5),
                                     subject=_wide(200, 6)),
    "1 MB value": said("9 Oak Avenue " * 80_000, 1, attribute="shipping_address"),
    "list as attribute": said("morning", 1, attribute=["delivery_window"]),
}


def storable(text):
    return "\x00" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_candidate_is_rejected_alone_and_the_batch_commits(memory, name):
    good = [said("evening", 1, user="u9", source="chat:u9"),
            said("peanuts", 2, attribute="allergy", user="u9", source="chat:u9")]
    decisions = memory.write_many([good[0], BAD[name], good[1]])
    assert [d.outcome for d in decisions] == ["insert", "rejected", "insert"]
    assert active_values(memory, "u9") == {("delivery_window", "evening"), ("allergy", "peanuts")}
    rejected = decisions[1]
    fields = (rejected.user_id, rejected.subject, rejected.attribute, rejected.value, rejected.source_id,
              rejected.source_kind, rejected.reason)
    assert all(storable(text) for text in fields)
    assert max(len(text) for text in fields[:-1]) <= PREVIEW_CHARS + 60
    assert len(rejected.reason) <= REASON_CHARS + 60
    assert rejected.source_version is None or rejected.source_version < 2**63
    [row] = memory.audit(rejected.user_id)[-1:]
    assert (row.outcome, row.reason, row.value) == ("rejected", rejected.reason, rejected.value)


class _BrokenMapping(Mapping):
    """A mapping whose every lookup fails (a lazy record whose backing store went away, say)."""

    def __getitem__(self, key):
        raise RuntimeError("the record is gone")

    def __iter__(self):
        return iter(["user_id", "value"])

    def __len__(self):
        return 2


def test_a_candidate_that_fails_while_being_checked_costs_only_itself(memory):
    decisions = memory.write_many([said("morning", 1), _BrokenMapping(),
                                   said("peanuts", 2, attribute="allergy")])
    assert [d.outcome for d in decisions] == ["insert", "rejected", "insert"]
    assert "could not be checked (RuntimeError)" in decisions[1].reason
    assert active_values(memory) == {("delivery_window", "morning"), ("allergy", "peanuts")}


def test_the_audit_keeps_a_marked_preview_of_a_rejected_input(memory):
    decision = memory.write(BAD["1 MB value"])
    assert decision.value.startswith("9 Oak Avenue 9 Oak Avenue")
    cut = len("9 Oak Avenue " * 80_000) - PREVIEW_CHARS
    assert decision.value.endswith(f"... [{cut} more characters not stored]")
    assert "the limit is 300" in decision.reason
    nul = memory.write(BAD["NUL in value"])
    assert nul.value == "12 Elm\\x00 St" and "NUL character at character 6" in nul.reason
    surrogate = memory.write(BAD["surrogate in user_id"])
    assert surrogate.user_id == "u\\ud83d" and "lone surrogate" in surrogate.reason
    assert [e.value for e in memory.audit("u\\ud83d")] == ["morning"]


def test_bad_candidates_get_the_same_decisions_on_every_backend(tmp_path):
    batch = [item for n, bad in enumerate(BAD.values()) for item in (said("morning", n + 1, user="u9",
                                                                         source="chat:u9"), bad)]
    seen = []
    for backend in sorted(STORES):
        memory = FactMemory(STORES[backend](tmp_path))
        decisions = memory.write_many(batch)
        audit = [memory.audit(user) for user in sorted({d.user_id for d in decisions})]
        rows = [(e.user_id, e.value, e.outcome, e.reason, e.source_version) for part in audit for e in part]
        seen.append(([str(d) for d in decisions], rows))
        memory.close()
    assert seen[0] == seen[1]
    assert [line.split()[0] for line in seen[0][0]].count("rejected") == len(BAD)


def test_object_and_mapping_verdicts_agree_on_unstorable_input():
    for name, bad in BAD.items():
        fast, fast_problems = check_candidate(bad)
        slow, slow_problems = check_candidate(dict(vars(bad)))
        assert fast is None and slow is None and fast_problems == slow_problems, name


# --- assistant proposals and the stale check ----------------------------------------------------------------

def window(user, value, source, kind, version):
    return Candidate(user, "user", "delivery_window", value, source, kind, version)


def test_a_replayed_assistant_proposal_stays_a_noop_after_a_correction(memory):
    memory.write(window("u", "morning", "chat:u", "user", 1))
    proposal = window("u", "morning", "assistant:u", "assistant", 2)
    assert memory.write(proposal).outcome == "noop"
    assert memory.write(window("u", "evening", "chat:u", "user", 3)).outcome == "correction"
    replay = memory.write(proposal)
    assert replay.outcome == "noop" and replay.reason.startswith("replay")
    assert memory.ineligible("u") == []
    assert [e.outcome for e in memory.audit("u")] == ["insert", "noop", "correction", "noop"]
    assert active_values(memory, "u") == {("delivery_window", "evening")}
    newer = memory.write(window("u", "morning", "assistant:u", "assistant", 4))
    assert newer.outcome == "rejected" and [f.value for f in memory.ineligible("u")] == ["morning"]


def test_an_assistant_claim_under_the_users_source_id_does_not_block_the_user(memory):
    memory.write(window("c", "morning", "chat:c", "user", 1))
    assert memory.write(window("c", "evening", "chat:c", "assistant", 9)).outcome == "rejected"
    assert memory.write(window("c", "afternoon", "chat:c", "user", 2)).outcome == "correction"
    assert active_values(memory, "c") == {("delivery_window", "afternoon")}
    assert memory.write(window("c", "morning", "chat:c", "user", 1)).outcome == "noop"


def test_an_assistant_claim_arriving_first_under_the_users_source_id_does_not_block_the_user(memory):
    assert memory.write(window("c", "evening", "chat:c", "assistant", 9)).outcome == "rejected"
    assert memory.write(window("c", "morning", "chat:c", "user", 1)).outcome == "insert"
    assert active_values(memory, "c") == {("delivery_window", "morning")}
    assert memory.write(window("c", "afternoon", "chat:c", "user", 2)).outcome == "correction"
    assert active_values(memory, "c") == {("delivery_window", "afternoon")}


# --- ids: one key per id, however it is spelled -------------------------------------------------------------

@pytest.mark.parametrize("field", ["user_id", "subject", "source_id"])
def test_nfc_and_nfd_spellings_of_an_id_are_one_key(memory, field):
    composed, decomposed = "zo\u00eb", "zoe\u0308"

    def stated(value, version, spelling):
        ids = {"user_id": "u1", "subject": "user", "source_id": "chat:u1", field: spelling}
        return Candidate(ids["user_id"], ids["subject"], "delivery_window", value, ids["source_id"], "user",
                         version)

    assert memory.write(stated("morning", 1, composed)).outcome == "insert"
    assert memory.write(stated("mornings", 2, decomposed)).outcome == "noop"
    assert memory.write(stated("evening", 3, decomposed)).outcome == "correction"
    user = composed if field == "user_id" else "u1"
    assert active_values(memory, user) == {("delivery_window", "evening")}
    if field == "user_id":
        assert memory.active_facts(decomposed) == memory.active_facts(composed)
        assert len(memory.audit(decomposed)) == 3


def test_padded_ids_are_normalised_the_same_way_on_write_and_read(memory):
    memory.write(Candidate(" u1\t", " user ", "delivery_window", "morning", " chat:u1 ", "user", 1))
    assert memory.write(said("evening", 2)).outcome == "correction"
    for spelling in ("u1", " u1 ", "u1\n"):
        assert active_values(memory, spelling) == {("delivery_window", "evening")}
        assert [e.outcome for e in memory.audit(spelling)] == ["insert", "correction"]


# --- acknowledged after the commit --------------------------------------------------------------------------

def second_store(store):
    """Another store (its own connections) on the same database as ``store``."""
    if isinstance(store, SQLiteFactStore):
        return SQLiteFactStore(store.path)
    from helpers.facts.fact_store_pg import PostgresFactStore

    return PostgresFactStore(pg_dsn(), schema=store._conns.schema)


def test_submit_with_wait_returns_only_after_the_row_is_readable_elsewhere(memory, monkeypatch):
    other = FactMemory(second_store(memory.store))
    gate, result = threading.Event(), {}
    write_many = memory.write_many
    monkeypatch.setattr(memory, "write_many", lambda batch: (gate.wait(60), write_many(batch))[1])
    queue = BackgroundWriter(memory)

    def producer():
        future = queue.submit(said("morning", 1), wait=True)
        result.update(done=future.done(), outcome=future.result().outcome, seen=active_values(other))

    thread = threading.Thread(target=producer)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive() and result == {}  # the batch is held before its commit: submit is still waiting
    gate.set()
    thread.join()
    assert result == {"done": True, "outcome": "insert", "seen": {("delivery_window", "morning")}}
    queue.close()
    other.close()


def test_submit_with_wait_and_a_timeout_says_the_candidate_is_not_durable(memory, monkeypatch):
    gate = threading.Event()
    write_many = memory.write_many
    monkeypatch.setattr(memory, "write_many", lambda batch: (gate.wait(60), write_many(batch))[1])
    queue = BackgroundWriter(memory)
    with pytest.raises(FactWriteError, match="not durable yet"):
        queue.submit(said("morning", 1), wait=True, timeout=0.05)
    gate.set()
    queue.close()
    assert active_values(memory) == {("delivery_window", "morning")}


@pytest.mark.parametrize("user", ["u1\x00", "u\ud83d"])
def test_reading_an_id_no_database_can_store_finds_nothing_on_every_backend(memory, user):
    memory.write(said("morning", 1))
    assert memory.active_facts(user) == [] and memory.history(user) == [] and memory.audit(user) == []


def test_submit_with_wait_on_the_writers_own_thread_is_refused_not_a_deadlock(memory):
    queue, errors = BackgroundWriter(memory), []

    def from_callback(_future):
        try:
            queue.submit(said("evening", 2), wait=True)
        except FactWriteError as err:
            errors.append(str(err))

    queue.submit(said("morning", 1)).add_done_callback(from_callback)
    queue.close()
    assert len(errors) == 1 and "writer thread" in errors[0]
    assert active_values(memory) == {("delivery_window", "morning")}


@pytest.mark.parametrize("field", ["user_id", "reviewer", "note"])
def test_resolve_refuses_text_no_database_can_store(memory, field):
    memory.write(said("12 Elm Street", 3, source="crm", kind="tool", attribute="shipping_address"))
    memory.write(said("48 Harbor Road", 8, source="orders", kind="tool", attribute="shipping_address"))
    args = {"user_id": "u1", "reviewer": "agent:sam", "note": "", field: "x\x00"}
    with pytest.raises(FactResolutionError, match="NUL characters"):
        memory.resolve(args["user_id"], "user", "shipping_address", "12 Elm Street",
                       reviewer=args["reviewer"], note=args["note"])
    assert len(memory.conflicts("u1")) == 2

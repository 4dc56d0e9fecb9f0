"""One id rule for every store (helpers/core/ids.py): a user id (or session id) names the same user in the session
stores and the fact stores, on SQLite and on PostgreSQL. A variant (surrounding spaces, NFD instead of NFC,
full-width letters) is either that very user everywhere or refused everywhere; case is kept, so "Ada" is another
user; ids holding a lone surrogate get a SessionStoreError.

The PostgreSQL rows need ``bash tests/setup_postgres.sh`` (they fail, not skip, with
``WORKSHOP_REQUIRE_POSTGRES=1``).
"""
import unicodedata

import pytest

from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionStoreError, SQLiteSessionStore

from support import a_session, said


ZOE_NFC, ZOE_NFD = unicodedata.normalize("NFC", "Zoë"), unicodedata.normalize("NFD", "Zoë")
SAME_USER = {  # variant -> the id it names in every store
    "ada ": "ada", " ada": "ada", "ada\t": "ada", "\nada\n": "ada", "\u00a0ada\u3000": "ada",
    "\uff41\uff44\uff41": "ada",  # full-width letters
    ZOE_NFD: ZOE_NFC, ZOE_NFC: ZOE_NFC,
}
OTHER_USER = ["Ada", "ADA", "a da"]  # case is kept: another user in every store
REFUSED = ["", "   ", "\u3000", "ada\x00", "ada\ud800", "\udcff", "a" * 201,
           "\ufb00" * 101]  # 101 ligatures are 202 characters once normalised


def test_length_is_counted_once_normalised_by_both_stores(sessions, facts):
    padded = "a" * 200 + "   "  # 203 characters as typed, 200 once normalised: one valid user everywhere
    sessions.save(padded, "s1", a_session())
    assert session_ids(sessions, "a" * 200) == ["s1"]
    assert facts.write(said(padded)).outcome == "insert"
    assert [f.value for f in facts.active_facts("a" * 200)] == ["morning"]
    expands = "\ufb00" * 101  # 101 characters as typed, 202 once normalised: refused everywhere
    assert session_ids(sessions, expands) == "refused"
    assert facts.write(said(expands)).outcome == "rejected"


def session_ids(store, user):
    """The session ids ``user`` lists, or "refused"."""
    try:
        return sorted(info.session_id for info in store.list_sessions(user))
    except SessionStoreError:
        return "refused"


def test_id_variants_name_the_same_user_in_the_session_store_and_the_fact_store(sessions, facts):
    for user in ("ada", ZOE_NFC):
        sessions.save(user, "s1", a_session())
        assert facts.write(said(user)).outcome == "insert"
    ada_sessions, ada_facts = session_ids(sessions, "ada"), facts.active_facts("ada")
    for variant, user in SAME_USER.items():
        assert session_ids(sessions, variant) == session_ids(sessions, user) == ["s1"], variant
        assert sessions.load_state(variant, "s1").info.user_id == user
        assert facts.active_facts(variant) == facts.active_facts(user) != [], variant
    for variant in OTHER_USER:
        assert session_ids(sessions, variant) == [] and facts.active_facts(variant) == [], variant
    for variant in REFUSED:
        assert session_ids(sessions, variant) == "refused", variant
        assert facts.write(said(variant)).outcome == "rejected", variant
        assert facts.active_facts(variant) == [], variant  # the fact reads name no user either
    assert session_ids(sessions, "ada") == ada_sessions and facts.active_facts("ada") == ada_facts


def test_writing_under_a_variant_lands_on_the_same_user_in_both_stores(sessions, facts):
    """Whatever a variant writes, the canonical id reads back, in both stores (or both refuse it)."""
    for n, (variant, user) in enumerate(SAME_USER.items()):
        session_id = f"written as variant {n}"
        sessions.save(variant, session_id, a_session())
        decision = facts.write(said(variant, "evening" if n % 2 else "morning", version=n + 1))
        assert decision.outcome != "rejected" and decision.user_id == user, variant
        assert session_id in session_ids(sessions, user)
        assert [f.value for f in facts.active_facts(user)] == [decision.value]
    for variant in ["Ada", "ADA"]:  # another user: nothing reaches ada
        sessions.save(variant, "other", a_session())
        facts.write(said(variant, "afternoon"))
    assert "other" not in session_ids(sessions, "ada")
    assert all(f.value != "afternoon" for f in facts.active_facts("ada"))
    for variant in REFUSED:
        with pytest.raises(SessionStoreError):
            sessions.save(variant, "s1", a_session())
        assert facts.write(said(variant)).outcome == "rejected", variant


def test_session_ids_follow_the_same_rule(sessions):
    sessions.save("ada", "plan ", a_session())
    assert session_ids(sessions, "ada") == ["plan"]
    assert sessions.load_state("ada", "\uff50lan").info.session_id == "plan"  # full-width p
    assert sessions.load_state(" ada", "plan\n").info.session_id == "plan"
    for bad in REFUSED:
        with pytest.raises(SessionStoreError, match="session_id"):
            sessions.save("ada", bad, a_session())
    assert sessions.delete("ada ", " plan") is True
    assert session_ids(sessions, "ada") == []


def test_persistent_sessions_key_by_the_canonical_ids(sessions):
    first = PersistentSession.open(sessions, "ada ", "s1")
    first.chat("When does the AI club meet?")
    assert (first.user_id, first.session_id) == ("ada", "s1")
    again = PersistentSession.open(sessions, "\uff41da", " s1 ")
    assert again.resumed and again.session.turn_ids == [0] and again.name == "ada/s1"


def test_the_rule_is_implemented_once(tmp_path):
    """Sessions and facts call the same function (helpers.core.ids), so they cannot drift apart again."""
    from helpers.core import ids
    from helpers.facts.schema import normalise_id

    for variant, user in SAME_USER.items():
        assert ids.canonical_id(variant) == normalise_id(variant) == user
        assert ids.check_id(variant) == user
    for bad in REFUSED + [None, 7, b"ada"]:
        with pytest.raises(ids.InvalidIdError):
            ids.check_id(bad)
    with pytest.raises(SessionStoreError, match=r"user_id .*lone surrogate"):
        SQLiteSessionStore(tmp_path / "s.db").list_sessions("ada\ud800")


def test_ids_with_lone_surrogates_get_a_session_store_error(sessions):
    sessions.save("ada", "s1", a_session())
    for user, session_id in [("ada\ud800", "s1"), ("ada", "s\udfff")]:
        with pytest.raises(SessionStoreError, match="lone surrogate"):
            PersistentSession.open(sessions, user, session_id)
        with pytest.raises(SessionStoreError, match="lone surrogate"):
            sessions.save(user, session_id, a_session())
        with pytest.raises(SessionStoreError, match="lone surrogate"):
            sessions.load_state(user, session_id)
        with pytest.raises(SessionStoreError, match="lone surrogate"):
            sessions.delete(user, session_id)
    with pytest.raises(SessionStoreError, match="lone surrogate"):
        sessions.list_sessions("ada\ud800")
    with pytest.raises(SessionStoreError, match="lone surrogate"):
        sessions.fork("ada", "s1", 1, "branch\ud800")

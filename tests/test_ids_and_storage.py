"""One id rule for every store, and text every backend can store (security issue items 4, 6, 7, 13).

* Item 4: a user id (or session id) names the same user in the session stores and the fact stores,
  on SQLite and on PostgreSQL: a variant (surrounding spaces, NFD instead of NFC, full-width letters)
  is either that very user everywhere or refused everywhere; case is kept, so "Ada" is another user.
* Item 6: a reply holding a lone surrogate is stored (as U+FFFD), never a raw UnicodeEncodeError,
  and later turns work; ids holding one get a SessionStoreError.
* Item 7: a turn with NUL in its question, title and reply round-trips on both backends.
* Item 13: ``PersistentSession.open(..., system_prompt=X)`` resumes, and so does ``fork()``; wrong
  arguments are reported as wrong arguments, never as damaged data.

The PostgreSQL rows need ``bash tests/setup_postgres.sh`` (they fail, not skip, with
``WORKSHOP_REQUIRE_POSTGRES=1``).
"""
import json
import sqlite3
import unicodedata

import httpx2
import openai
import pytest

from helpers.core import tokens
from helpers.llm.config import load_settings
from helpers.core.errors import ConfigError
from helpers.facts.fact_store import SQLiteFactStore
from helpers.facts.writer import Candidate, FactMemory
from helpers.chat.chat_session import ChatSession
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionNotFoundError, SessionStoreError, SQLiteSessionStore
from helpers.standin.server import _check_chat_request, _error_response, _RequestError

from test_postgres import pg_dsn, scratch_schema  # noqa: E402  (PostgreSQL rows skip without a server)

BACKENDS = ["sqlite", "postgres"]


# --- fixtures: a session store and a fact store on the same backend ------------------------------------------

def session_store(backend, tmp_path):
    if backend == "sqlite":
        return SQLiteSessionStore(tmp_path / "sessions.db")
    from helpers.sessions.session_store_pg import PostgresSessionStore

    return PostgresSessionStore(pg_dsn(), schema=scratch_schema(tmp_path, "ids_s_"))


def fact_store(backend, tmp_path):
    if backend == "sqlite":
        return SQLiteFactStore(str(tmp_path / "facts.db"))
    from helpers.facts.fact_store_pg import PostgresFactStore

    return PostgresFactStore(pg_dsn(), schema=scratch_schema(tmp_path, "ids_f_"))


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def sessions(backend, tmp_path):
    store = session_store(backend, tmp_path)
    yield store
    store.close()


@pytest.fixture
def facts(backend, tmp_path):
    memory = FactMemory(fact_store(backend, tmp_path))
    yield memory
    memory.close()


class RawServer:
    """Replies with scripted assistant texts, JSON-escaped, so a reply may hold what UTF-8 cannot (a lone surrogate)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def handle(self, request):
        body = json.loads(request.content)
        self.requests.append(body)
        try:
            _check_chat_request(body)
        except _RequestError as err:
            return _error_response(err)
        prompt = tokens.count_request(body["messages"], body.get("tools"))
        reply = {"id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": self.replies.pop(0)},
                              "logprobs": None, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}}
        return httpx2.Response(200, content=json.dumps(reply, ensure_ascii=True).encode("ascii"),
                               headers={"content-type": "application/json"})

    def kwargs(self):
        client = openai.OpenAI(api_key="x", base_url="http://raw/v1", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)))
        return {"client": client, "settings": load_settings("offline")}


def a_session(**kwargs):
    session = ChatSession(**kwargs)
    session.chat("When does the AI club meet?")
    return session


def said(user, value="morning", version=1):
    return Candidate(user, "user", "delivery_window", value, "chat:u", "user", version)


# --- item 4: one id rule across sessions and facts, SQLite and PostgreSQL ------------------------------------

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


# --- item 6: lone surrogates ----------------------------------------------------------------------------------

def test_a_reply_with_a_lone_surrogate_is_saved_and_later_turns_work(sessions):
    server = RawServer(["Fridays\ud800 at 6pm.", "Room 12."])
    session = PersistentSession.open(sessions, "ada", "s1", **server.kwargs())
    answer = session.chat("When does the AI club meet?")
    assert answer == "Fridays\ufffd at 6pm."
    assert session.revision == 1 and session.session.turns[0].answer == answer
    assert session.chat("Where?") == "Room 12."  # the next request carries storable text
    assert "\ud800" not in json.dumps(server.requests[-1], ensure_ascii=False)
    stored = sessions.load_state("ada", "s1")
    assert stored.info.revision == 2 and stored.state == session.snapshot()  # memory and store agree
    assert stored.state["messages"][1]["content"] == "Fridays\ufffd at 6pm."


def test_a_snapshot_with_lone_surrogates_is_stored_with_replacement_characters(sessions):
    state = a_session().snapshot()
    state["messages"][0]["content"] = "When\udce9 does it meet?"
    state["turns"][0]["question"] = "When\udce9 does it meet?"
    state["messages"][-1]["content"] += "\ud83d"
    assert sessions.save("ada", "s1", state) == 1
    stored = sessions.load_state("ada", "s1")
    assert stored.state["messages"][0]["content"] == "When\ufffd does it meet?"
    assert stored.state["messages"][-1]["content"].endswith("\ufffd")
    assert stored.info.title == "When\ufffd does it meet?"


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


# --- item 7: NUL round-trips on both backends -----------------------------------------------------------------

def test_a_turn_with_nul_round_trips(sessions):
    question, reply = "When does the\x00 AI club meet?", "Fridays\x00 at 6pm."
    server = RawServer([reply])
    session = PersistentSession.open(sessions, "ada", "s1", **server.kwargs())
    assert session.chat(question) == reply and session.revision == 1
    stored = sessions.load_state("ada", "s1")
    assert stored.state == session.snapshot()
    assert stored.info.title == question
    assert [i.title for i in sessions.list_sessions("ada")] == [question]
    assert stored.state["turns"][0]["question"] == question and stored.state["turns"][0]["answer"] == reply
    resumed = PersistentSession.open(sessions, "ada", "s1", **RawServer(["ok"]).kwargs())
    assert resumed.session.messages[-1]["content"] == reply and resumed.chat("More?") == "ok"


def test_escaping_on_postgresql_is_reversible(tmp_path):
    """The PostgreSQL columns hold NUL through an escape that also escapes itself."""
    from helpers.sessions.session_store_pg import from_pg_text, to_pg_text

    escape = "\ufdd0"
    for text in ["", "plain", "\x00", "a\x00b", escape, escape + "0", escape + escape, "\x00" + escape + "0\x00",
                 escape + "x"]:
        stored = to_pg_text(text)
        assert "\x00" not in stored and from_pg_text(stored) == text
    assert to_pg_text("plain") == "plain" and from_pg_text("legacy " + escape) == "legacy " + escape
    pg = session_store("postgres", tmp_path)
    try:
        for title in ["a\x00b", escape + "0", "\x00" + escape]:
            session_id = f"t{len(pg.list_sessions('ada'))}"
            state = a_session().snapshot()
            state["messages"][0]["content"] = state["turns"][0]["question"] = title
            pg.save("ada", session_id, state)
            assert pg.load_state("ada", session_id).info.title == title
    finally:
        pg.close()


# --- item 13: system_prompt on reopen and fork ----------------------------------------------------------------

PROMPT = "You are the Larkspur campus assistant. Answer in one sentence."


def test_reopening_with_the_same_system_prompt_resumes(sessions):
    first = PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT)
    first.chat("When does the AI club meet?")
    first.chat("How many days until that?")
    again = PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT)
    assert again.resumed and again.session.turn_ids == [0, 1] and again.session.system_prompt == PROMPT
    assert again.session.messages[0] == {"role": "system", "content": PROMPT}
    branch = again.fork(1, "branch")
    assert branch.session.turn_ids == [0] and branch.session.system_prompt == PROMPT
    assert sessions.load("ada", "s1", system_prompt=PROMPT).turn_ids == [0, 1]
    assert PersistentSession.open(sessions, "ada", "s1").session.system_prompt == PROMPT  # omitted: the stored one


def test_a_different_system_prompt_on_reopen_is_a_clear_argument_error(sessions):
    PersistentSession.open(sessions, "ada", "s1", system_prompt=PROMPT).chat("When does the AI club meet?")
    with pytest.raises(ConfigError, match=r"system_prompt.*differs from the one ada/s1 was started with") as caught:
        PersistentSession.open(sessions, "ada", "s1", system_prompt="Be terse.")
    assert "damaged" not in str(caught.value) and not isinstance(caught.value, SessionStoreError)
    with pytest.raises(ConfigError, match="system_prompt"):
        ChatSession.from_snapshot(sessions.load_state("ada", "s1").state, system_prompt="Be terse.")


def test_wrong_arguments_are_not_blamed_on_the_stored_data(sessions):
    PersistentSession.open(sessions, "ada", "s1").chat("When does the AI club meet?")
    with pytest.raises(TypeError, match="colour") as caught:
        PersistentSession.open(sessions, "ada", "s1", colour="red")
    assert not isinstance(caught.value, SessionStoreError)
    with pytest.raises(TypeError, match="colour"):
        sessions.fork("ada", "s1", 1, "branch", colour="red")
    with pytest.raises(SessionNotFoundError):  # nothing was half-written by the failed fork
        sessions.load_state("ada", "branch")


def test_damaged_stored_data_is_still_reported_as_damaged(tmp_path):
    store = SQLiteSessionStore(tmp_path / "s.db")
    for session_id in ("s1", "s2"):
        PersistentSession.open(store, "ada", session_id, system_prompt=PROMPT).chat("When does the AI club meet?")
    header = json.loads(store._connection().execute("SELECT header FROM sessions WHERE session_id = 's1'"
                                                    ).fetchone()[0])
    store._connection().execute("UPDATE sessions SET header = ? WHERE session_id = 's1'",
                                (json.dumps({**header, "system_prompt": 7}),))
    with pytest.raises(SessionStoreError, match="damaged"):
        PersistentSession.open(store, "ada", "s1", system_prompt=PROMPT)
    store._connection().execute("UPDATE session_turns SET body = ? WHERE session_id = 's2'",
                                (json.dumps({"kept": [{"role": "user"}]}),))
    with pytest.raises(SessionStoreError, match="damaged"):
        PersistentSession.open(store, "ada", "s2", system_prompt=PROMPT)
    store.close()
    assert sqlite3.connect(tmp_path / "s.db").execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 2

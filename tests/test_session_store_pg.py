"""The PostgreSQL session store (helpers/sessions/session_store_pg.py): its text columns hold NUL through an escape
that also escapes itself (needs ``bash tests/setup_postgres.sh``)."""
from support import a_session, session_store


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

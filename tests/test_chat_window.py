"""The chat window (helpers/app/chat_window.py) beyond tests/test_ui.py: its panes show a forged value on one line,
and its input box is driven by updates as the browser sends them.

A browser sends a widget's value updates one at a time, merged while the kernel is busy, so they arrive
late; Enter (a line break in the ``ChatBox``) and Send (``disabled``, set by a link in the browser)
travel in the same stream. tests/test_browser.py types in a real Chromium; these drive ``set_state``,
the method every update from the browser goes through, to pin down each case.
"""
import pytest

from helpers.chat.chat_session import ChatSession
from helpers.app.chat_window import ChatUI
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore
from helpers.app.chat_window import ChatBox, SendButton

from support import BREAKS, assert_lines, dana_store, forged


@pytest.mark.parametrize("brk", BREAKS)
def test_the_chat_windows_panes_show_a_forged_value_on_one_line(brk):
    memory = dana_store(forged("12 Elm St", brk))
    session = ChatSession()
    ui = ChatUI(session, facts=memory, user_id="dana")
    assert_lines(ui.memory_text()["Facts"], expected=2)
    assert "12 Elm St\\" in ui.panes["Facts"].value
    ui.send(forged("When does the AI club meet?", brk))
    assert_lines(ui.memory_text()["Turns kept"], expected=1)


CLUB, UNTIL, POSTER = "When does the AI club meet?", "How many days until that?", "Where can I print a poster?"


def browser(ui, **state):
    """An update from the browser, as ipywidgets delivers it."""
    ui.entry.set_state(state)


def asked(ui):
    return [t.question for t in ui.session.turns]


@pytest.fixture
def ui():
    return ChatUI(ChatSession())


def test_the_box_and_send_button_are_the_ordered_kind(ui):
    assert isinstance(ui.entry, ChatBox) and isinstance(ui.send_button, SendButton)
    assert ui.entry.continuous_update and ui.entry.rows == 1


def test_enter_sends_every_key_typed_before_it_and_empties_the_box(ui):
    browser(ui, value="When")  # the first keystrokes ...
    browser(ui, value=CLUB + "\n")  # ... and the rest, merged with Enter
    assert asked(ui) == [CLUB] and ui.entry.value == ""


def test_late_updates_after_enter_neither_resend_nor_leave_a_character_behind(ui):
    browser(ui, value=CLUB + "\n")
    browser(ui, value=CLUB + "\nHo")  # typed on before the browser saw the box emptied
    assert asked(ui) == [CLUB] and ui.entry.value == "Ho"
    browser(ui, value=CLUB + "\n" + UNTIL + "\n")  # the browser never applied the emptied box
    assert asked(ui) == [CLUB, UNTIL] and ui.entry.value == ""
    browser(ui, value="W")  # the box was emptied in the browser: a new question
    browser(ui, value=POSTER + "\n")
    assert asked(ui) == [CLUB, UNTIL, POSTER]


def test_several_questions_in_one_update_are_sent_in_order(ui):
    browser(ui, value=f"{CLUB}\n{UNTIL}\nWhere can")
    assert asked(ui) == [CLUB, UNTIL] and ui.entry.value == "Where can"


def test_enter_inside_the_text_sends_all_of_it(ui):
    browser(ui, value=CLUB)
    browser(ui, value="When does the AI\n club meet?")
    assert asked(ui) == [CLUB] and ui.entry.value == ""


def test_enter_in_an_empty_box_sends_nothing(ui):
    browser(ui, value="\n")
    assert asked(ui) == [] and ui.entry.value == ""


def test_send_arrives_with_the_last_keystrokes_and_empties_the_box(ui):
    browser(ui, value="Where can")
    browser(ui, value=POSTER, disabled=True)  # merged: the last keys, then the click
    assert asked(ui) == [POSTER] and ui.entry.value == ""
    ui.send_button.set_state({"value": True})  # the toggle's own report of the click comes later
    assert ui.send_button.value is False
    browser(ui, disabled=False)  # the link copies the reset back
    browser(ui, value=POSTER + "!")  # a late update that repeats what was sent
    assert asked(ui) == [POSTER] and ui.entry.value == "!"


def test_the_toggle_is_reset_only_once_the_box_has_reported_the_click(ui):
    ui.send_button.set_state({"value": True})  # the toggle's report first (the box's updates were held up)
    assert ui.send_button.value is True  # resetting it now would enable the box before its click is read
    browser(ui, value=POSTER, disabled=True)
    assert asked(ui) == [POSTER] and ui.send_button.value is False and ui.entry.disabled is False


def test_enter_and_send_in_one_update_keep_their_order(ui):
    browser(ui, value=f"{CLUB}\n{UNTIL}", disabled=True)
    assert asked(ui) == [CLUB, UNTIL] and ui.entry.value == ""


def test_send_with_nothing_typed_sends_nothing(ui):
    browser(ui, value="", disabled=True)
    assert asked(ui) == [] and ui.status.value == ""


def test_a_value_set_by_code_is_read_like_typing(ui):
    ui.entry.value = CLUB
    assert asked(ui) == [] and ui.entry.value == CLUB
    ui.entry.value = CLUB + "\n"
    assert asked(ui) == [CLUB] and ui.entry.value == ""
    ui.entry.value = CLUB + " And the robotics club?"  # code never repeats a late update: nothing skipped
    assert ui.entry.value == CLUB + " And the robotics club?"


def test_a_closed_store_sends_nothing_and_keeps_what_was_typed(tmp_path):
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    ui = ChatUI(PersistentSession.open(store, "ada", "s1"))
    store.close()
    browser(ui, value=CLUB + "\n")
    assert ui.entry.value == CLUB and "store is closed" in ui.status.value
    browser(ui, value=CLUB, disabled=True)
    assert ui.entry.value == CLUB and "store is closed" in ui.status.value
    assert ui.session.turn_ids == []

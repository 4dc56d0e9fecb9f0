"""The chat window (helpers/app/chat_window.py) beyond tests/test_ui.py: its panes show a forged value on one line."""
import pytest

from helpers.chat.chat_session import ChatSession
from helpers.app.chat_window import ChatUI

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

"""The notebook chat window (lesson 11), driven through send()/undo()/reset() as its buttons do."""
import pytest

from helpers.facts.writer import Candidate, FactMemory
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SessionConflictError, SQLiteSessionStore
from helpers.chat.chat_session import ChatSession
from helpers.app.chat_window import ChatUI

CLUB, UNTIL = "When does the AI club meet?", "How many days until that?"


@pytest.fixture
def store(tmp_path):
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    yield store
    store.close()


def test_send_answers_and_shows_both_messages_in_the_transcript():
    ui = ChatUI(ChatSession())
    answer = ui.send(CLUB)
    assert "Thursday" in answer
    assert ui.transcript_text().splitlines() == [f"you: {CLUB}", f"assistant: {answer}"]
    assert "Thursday" in ui.transcript.value and ui.entry.value == ""


def test_follow_up_uses_the_earlier_turn():
    ui = ChatUI(ChatSession())
    ui.send(CLUB)
    assert "3 days" in ui.send(UNTIL)


def press_enter(ui):
    """What the browser sends when Enter is pressed in the input box."""
    ui.entry._handle_custom_msg({"event": "submit"}, [])


def test_send_without_text_reads_the_input_box_and_blank_sends_nothing():
    ui = ChatUI(ChatSession())
    assert ui.send("   ") is None and ui.session.turn_ids == []
    ui.entry.value = CLUB
    press_enter(ui)
    assert ui.session.turn_ids == [0] and ui.entry.value == ""


def test_typing_or_leaving_the_box_sends_nothing_only_enter_does():
    ui = ChatUI(ChatSession())
    assert ui.entry.continuous_update  # the value is current when Enter's message arrives
    for partial in ["When does", "When does the AI club"]:  # keystrokes, or the box losing focus
        ui.entry.value = partial
    assert ui.session.turn_ids == [] and ui.entry.value == "When does the AI club"
    ui.entry.value = CLUB
    ui.entry._handle_custom_msg({"event": "something else"}, [])
    assert ui.session.turn_ids == []
    press_enter(ui)
    assert [t.question for t in ui.session.turns] == [CLUB]


def test_send_button_sends_the_typed_text():
    ui = ChatUI(ChatSession())
    ui.entry.value = CLUB
    ui.send_button.click()
    assert [t.question for t in ui.session.turns] == [CLUB]


def test_message_text_is_escaped_in_the_transcript():
    ui = ChatUI(ChatSession())
    ui.send("<script>alert('hi')</script> when does the AI club meet?")
    assert "<script>" not in ui.transcript.value and "&lt;script&gt;" in ui.transcript.value


def test_undo_and_reset_buttons_change_memory_and_say_so():
    ui = ChatUI(ChatSession())
    ui.send(CLUB)
    ui.send("Where can I print a poster?")
    ui.undo_button.click()
    assert ui.session.turn_ids == [0] and "Undid turn 1" in ui.status.value
    assert "3 days" in ui.send(UNTIL)
    ui.reset_button.click()
    assert ui.session.turn_ids == [] and ui.transcript_text() == ""
    ui.undo()
    assert ui.status.value == "Nothing to undo."


def test_memory_view_lists_kept_and_dropped_turns():
    ui = ChatUI(ChatSession(max_turns=1))
    for question in [CLUB, "Where can I print a poster?", "And when are the faculty office hours?"]:
        ui.send(question)
    panes = ui.memory_text()
    assert panes["Turns kept"].splitlines() == ["turn 1: Where can I print a poster?",
                                                "turn 2: And when are the faculty office hours?"]
    assert panes["Dropped by trimming"].startswith(f"turn 0: {CLUB} (")
    assert ui.memory.titles[:2] == ("Turns kept (2)", "Dropped by trimming (1)")
    assert "(trimmed from memory)" in ui.transcript_text().splitlines()[0]


def test_memory_view_shows_summary_state_and_attached_facts(tmp_path):
    class Summarising(ChatSession):
        def memory_state(self):
            return {"summary": f"{len(self.turns)} questions so far"}

    facts = FactMemory.open(str(tmp_path / "facts.db"))
    facts.write(Candidate("ada", "user", "delivery_window", "evenings", "chat:ada", "user", 1))
    ui = ChatUI(Summarising(), facts=facts, user_id="ada")
    ui.send(CLUB)
    panes = ui.memory_text()
    assert '"summary": "1 questions so far"' in panes["Summary / profile"]
    assert "delivery window: evenings" in panes["Facts"] and ui.memory.titles[3] == "Facts (1)"
    assert "evenings" in ui.panes["Facts"].value
    facts.close()


def test_a_failing_turn_is_reported_in_the_window_and_nothing_is_kept(monkeypatch):
    ui = ChatUI(ChatSession())
    ui.send(CLUB)

    def broken(*args, **kwargs):
        raise ConnectionError("the endpoint went away (simulated)")

    monkeypatch.setattr("helpers.agent.turn.chat", broken)
    assert ui.send(UNTIL) is None
    assert "ConnectionError" in ui.status.value and "went away" in ui.last_error
    assert ui.session.turn_ids == [0] and UNTIL not in ui.transcript_text()


def test_with_a_persistent_session_every_action_is_saved(store):
    ui = ChatUI(PersistentSession.open(store, "ada", "s1"))
    ui.send(CLUB)
    ui.send("Where can I print a poster?")
    ui.undo()
    assert store.load("ada", "s1").turn_ids == [0]
    resumed = ChatUI(PersistentSession.open(store, "ada", "s1"))
    assert resumed.transcript_text().startswith(f"you: {CLUB}")
    assert "3 days" in resumed.send(UNTIL)
    assert resumed.user_id == "ada" and "ada/s1" in resumed._repr_mimebundle_()["text/plain"]


def test_streaming_sessions_show_pieces_as_they_arrive():
    ui = ChatUI(ChatSession())
    seen = []
    ui.transcript.observe(lambda change: seen.append(change["new"]), names="value")
    assert ui.stream and "Thursday" in ui.send(CLUB)
    assert len(seen) > 3  # the transcript was redrawn while the answer arrived
    assert ui.session.turns[0].answer in ui.transcript_text()


def test_streaming_can_be_switched_off():
    ui = ChatUI(ChatSession(), stream=False)
    seen = []
    ui.transcript.observe(lambda change: seen.append(change["new"]), names="value")
    assert "Thursday" in ui.send(CLUB) and len(seen) == 2  # "…" while waiting, then the answer


def test_memory_view_shows_the_profile_of_a_memory_assembler():
    from helpers.memory.assembler import MemoryAssembler

    ui = ChatUI(ChatSession(memory=MemoryAssembler(recall=False)))
    ui.send("My name is Ada. When does the AI club meet?")
    pane = ui.memory_text()["Summary / profile"]
    assert "Summary: nothing yet." in pane and "- name: Ada (turn 0" in pane


def test_display_bundle_has_the_widget_and_a_short_text():
    bundle = ChatUI(ChatSession())._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "ChatUI: 0 turns in memory"


def test_on_turn_can_feed_the_fact_store_shown_in_the_memory_view(tmp_path):
    from helpers.facts.extract import ingest_turn

    facts = FactMemory.open(str(tmp_path / "facts.db"))
    seq = iter(range(1, 100))
    ui = ChatUI(ChatSession(), facts=facts, user_id="ada",
                on_turn=lambda text, _: ingest_turn(facts, {"role": "user", "content": text}, user_id="ada",
                                                    seq=next(seq)))
    ui.send("Please contact me by email. When does the AI club meet?")
    assert "preferred contact: email" in ui.memory_text()["Facts"]
    facts.close()


def test_a_failing_on_turn_keeps_the_answer_and_says_what_failed():
    def broken(text, answer):
        raise ValueError("fact store offline (simulated)")

    ui = ChatUI(ChatSession(), on_turn=broken)
    assert "Thursday" in ui.send(CLUB)
    assert "on_turn failed" in ui.status.value and ui.session.turn_ids == [0]


def test_newest_message_is_last_inside_a_box_that_opens_at_its_end():
    ui = ChatUI(ChatSession())
    ui.send(CLUB)
    ui.send(UNTIL)
    value = ui.transcript.value
    assert "flex-direction:column-reverse" in value and "overflow-y:auto" in value
    assert value.index(CLUB) < value.index(UNTIL) < value.index("3 days")  # reading order inside the box


def test_a_closed_store_is_reported_and_nothing_changes(store):
    ui = ChatUI(PersistentSession.open(store, "ada", "s1"))
    ui.send(CLUB)
    store.close()
    shown = ui.transcript.value
    assert ui.send(UNTIL) is None
    assert "store is closed" in ui.status.value and ui.entry.value == ""
    assert ui.session.turn_ids == [0] and ui.transcript.value == shown
    ui.entry.value = "typed, not lost"
    ui.send_button.click()
    assert ui.entry.value == "typed, not lost" and "store is closed" in ui.status.value
    assert ui.undo() is False and ui.reset() is False and ui.session.turn_ids == [0]


def _failing_saves(monkeypatch, store):
    def conflict(*args, **kwargs):
        raise SessionConflictError("another writer saved ada/s1 first (simulated)")

    monkeypatch.setattr(store, "save", conflict)


def _assert_screen_memory_and_store_agree(ui, store):
    stored = [t.question for t in store.load("ada", "s1").turns]
    assert [t.question for t in ui.session.turns] == stored
    assert ui.transcript_text() == "\n".join(line for t in ui.session.turns
                                             for line in (f"you: {t.question}", f"assistant: {t.answer}"))
    return stored


@pytest.mark.parametrize("stream", [True, False])
def test_a_failed_save_of_a_turn_is_shown_and_the_screen_matches_memory(monkeypatch, store, stream):
    ui = ChatUI(PersistentSession.open(store, "ada", "s1"), stream=stream)
    ui.send(CLUB)
    _failing_saves(monkeypatch, store)
    assert ui.send(UNTIL) is None
    assert "Not saved:" in ui.status.value and ui.last_error.startswith("Not saved:")
    assert _assert_screen_memory_and_store_agree(ui, store) == [CLUB]
    assert UNTIL not in ui.transcript.value


@pytest.mark.parametrize("button", ["undo_button", "reset_button"])
def test_a_failed_save_of_undo_or_reset_is_shown_and_the_screen_matches_memory(monkeypatch, store, button):
    ui = ChatUI(PersistentSession.open(store, "ada", "s1"))
    ui.send(CLUB)
    ui.send(UNTIL)
    _failing_saves(monkeypatch, store)
    getattr(ui, button).click()
    assert "Not saved:" in ui.status.value
    assert _assert_screen_memory_and_store_agree(ui, store) == [CLUB, UNTIL]
    assert UNTIL in ui.transcript.value


def test_any_error_in_a_button_action_is_shown_in_the_window(monkeypatch):
    ui = ChatUI(ChatSession())
    ui.send(CLUB)

    def broken():
        raise RuntimeError("the undo log is unreadable (simulated)")

    monkeypatch.setattr(ui.session, "undo", broken)
    ui.undo_button.click()
    assert "Not undone - RuntimeError: the undo log is unreadable" in ui.status.value
    monkeypatch.setattr(ui, "refresh", lambda **kwargs: 1 / 0)  # a failing redraw reaches the status line too
    ui.reset_button.click()
    assert "ZeroDivisionError" in ui.status.value

"""A chat window for notebooks (lesson 11): transcript, input box, Send / Undo / Reset / Reload, and a memory view.

All the logic is in plain methods - ``send(text)``, ``undo()``, ``reset()``, ``reload()`` - that the buttons
call (``/reload`` typed in the box does what Reload does), so tests and notebook cells can drive the chat
without a browser. Reload continues from the stored conversation after another window or writer saved it
(a save this window then made was refused and says so). Everything shown is written into widget values (an ``HTML`` widget's ``value``), never printed inside ``with out:``,
which keeps the display correct under nbval and in Colab alike.

Works with any ``Conversation`` (``helpers.sessions.conversation``): an ``Assistant`` (notebook 12: guardrails,
facts), a ``PersistentSession`` (every turn, undo and reset is saved as it happens), or a plain ``ChatSession``
(``as_conversation``: saved nowhere). The window calls only the protocol's members and probes nothing. Answers
appear piece by piece (``stream(text)``) unless ``stream=False``; the memory pane shows the conversation's own
``memory_report``.

What a person sees stays true:
- only Enter or the Send button sends (leaving the box with a half-typed question sends nothing), and
  either sends exactly the text the box shows, however fast it was typed, and leaves the box empty;
- every error in a button's action is shown in the window's status line, not only in the kernel log;
- after any action, and after a failed one, the transcript is redrawn from the session, so the screen shows
  what memory holds (a failed save is rolled back in memory by ``PersistentSession``);
- a window whose session store was closed says so and changes nothing;
- the transcript box opens scrolled to the newest message.

Why the box is a one-row ``Textarea`` (``ChatBox``) and Send a toggle (``SendButton``): a browser sends a
widget's value updates one at a time (each waits until the kernel has handled the one before, and the
keystrokes typed meanwhile are merged into the next), but a message such as a ``Text`` box's "submit" on
Enter, or a ``Button``'s click, at once. Typed quickly, Enter or Send overtook the last keystrokes: "When
does the AI club meet" was sent without its "?", which then began the next question. Here both travel
with the value, in order: Enter is part of the value (a line break: the text before it is the question),
and a click on Send disables the box through a link that runs in the browser, so the click reaches the
kernel in the box's own updates, with exactly the text the box showed (nothing can be typed into a
disabled box before the kernel has read it and enabled the box again).
"""
from __future__ import annotations

import html
import re
from typing import Any, Callable

import ipywidgets as widgets
from ipywidgets.widgets import widget as widget_module

from helpers.chat.chat_session import ChatSession
from helpers.facts.writer import FactMemory, format_facts
from helpers.core.context_format import one_line
from helpers.sessions.conversation import Conversation, as_conversation
from helpers.sessions.protocol import SessionConflictError

_BUBBLE = ("<div style='margin:4px 0;padding:6px 10px;border-radius:8px;max-width:90%;white-space:pre-wrap;"
           "background:{bg};{align}'><b>{who}</b> {text}</div>")
# The transcript: a flex column in reverse, whose one child holds the messages in reading order.
# A browser opens such a box scrolled to its end, so every redraw shows the newest message
# (JupyterLab, Notebook 7 and Colab alike).
_SCROLL_BOX = ("<div class='chat-transcript' style='display:flex;flex-direction:column-reverse;"
               "overflow-y:auto;max-height:360px;border:1px solid #ddd;padding:4px'>"
               "<div>{messages}</div></div>")
RELOAD_COMMAND = "/reload"  # typed in the box: continue from the stored conversation (the Reload button)
PANES = ("Turns kept", "Dropped by trimming", "Summary / profile", "Facts")
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # Enter in the box, or a pasted one


class ChatBox(widgets.Textarea):
    """The input box: one row, and every keystroke (Enter too) reaches the kernel in the order it was typed.

    Enter adds a line break to the value. A click on Send disables the box in the browser (a ``jsdlink``
    from the toggle), so the click arrives as ``disabled`` in this box's own updates, with the text the
    box showed (it cannot change until the box is enabled again). ``reader(state)`` (set by ``ChatUI``)
    sees each update from the browser first and returns the state to keep -- the box emptied once its
    question is taken, and enabled again -- and what to do then (send it). The kept state goes back to
    the browser as the update's echo, which the browser applies only when no newer keystroke is on its
    way: emptying the box never overwrites what is being typed.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.reader: Callable[[dict], tuple[dict, Callable[[], Any]]] | None = None
        self.reading = False  # True while an update from the browser is being applied

    def set_state(self, sync_data: dict) -> None:
        """An update from the browser: ``reader`` decides what the box keeps, then acts."""
        if self.reader is None:
            return super().set_state(sync_data)
        state, then = self.reader(dict(sync_data))
        self.reading = True
        try:
            super().set_state(state)
        finally:
            self.reading = False
        if state.get("value") != sync_data.get("value") and not getattr(widget_module, "JUPYTER_WIDGETS_ECHO",
                                                                         False):
            self.send_state("value")  # no echo to carry it: tell the browser plainly
        then()


class SendButton(widgets.ToggleButton):
    """The Send button: a toggle, so a click changes state that a link in the browser copies onto the box.

    ``on_click(callback)`` and ``click()`` work as on a ``Button`` (for code and tests).
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._click_handlers = widgets.CallbackDispatcher()

    def on_click(self, callback: Callable[[Any], Any], remove: bool = False) -> None:
        """Call ``callback(button)`` on every click (``remove=True`` to stop)."""
        self._click_handlers.register_callback(callback, remove=remove)

    def click(self) -> None:
        """Act as if the button were clicked."""
        self._click_handlers(self)


def _one_question(text: str) -> str:
    """The box's text as one question: a line break (Enter, or a pasted one) joins the lines with a space."""
    return " ".join(line.strip() for line in _LINE_BREAK.split(text) if line.strip())


def _describe(err: BaseException) -> str:
    """An error as one line: a failed save's own message ("Not saved: ..."), else its type and message.

    A save refused because another writer saved first says how to continue from its turns in this window."""
    text = str(err)
    if text.startswith("Not saved:") and isinstance(err.__cause__, SessionConflictError) \
            and "reload()" in text:
        return text.split(" - call reload()")[0] + (f" - press Reload (or type {RELOAD_COMMAND} and Enter) "
                                                    "to continue from them, then try again")
    return text if text.startswith("Not saved:") else f"{type(err).__name__}: {text}"


class ChatUI:
    """An ipywidgets chat over a ``Conversation``; ``send(text)`` runs one turn and refreshes every view.

    ``facts`` and ``user_id`` default to the conversation's own (an Assistant's fact memory and user)."""

    def __init__(self, session: Conversation | ChatSession, *, facts: FactMemory | None = None,
                 user_id: str | None = None, stream: bool | None = None,
                 on_turn: Callable[[str, str], Any] | None = None,
                 placeholder: str = "Ask about Larkspur University…"):
        self.session: Conversation = as_conversation(session)
        self.facts = facts if facts is not None else self.session.facts
        self.user_id = user_id or self.session.user_id
        self.stream = True if stream is None else stream
        self.on_turn = on_turn  # called with (question, answer) after each completed turn, e.g. to add facts
        self.last_error: str | None = None
        self.transcript = widgets.HTML()
        # The box's value follows every keystroke; only Enter (a line break in it) or Send sends it.
        self.entry = ChatBox(placeholder=placeholder, continuous_update=True, rows=1,
                             layout=widgets.Layout(width="70%"))
        self.send_button = SendButton(description="Send", button_style="primary", tooltip="send the question")
        self._send_link = widgets.jsdlink((self.send_button, "value"), (self.entry, "disabled"))
        self._taken = ""  # the start of the box's value, as the browser sent it, that was sent already
        self._reading_box = False  # True while this window itself changes the box (or the toggle)
        self._clicks_read = self._toggle_reports = 0  # clicks on Send read from the box, and the toggle's own
        self.undo_button = widgets.Button(description="Undo", tooltip="forget the newest turn")
        self.reset_button = widgets.Button(description="Reset", tooltip="forget the whole conversation")
        self.reload_button = widgets.Button(description="Reload", tooltip="continue from the stored conversation "
                                            "(after another window or writer saved it)")
        self.status = widgets.HTML()
        self.panes = {name: widgets.HTML() for name in PANES}
        self.memory = widgets.Accordion(children=list(self.panes.values()), titles=PANES)
        self.send_button.on_click(lambda _: self._guarded(self.send))
        self.undo_button.on_click(lambda _: self._guarded(self.undo))
        self.reset_button.on_click(lambda _: self._guarded(self.reset))
        self.reload_button.on_click(lambda _: self._guarded(self.reload))
        self.entry.reader = self._on_browser_update  # Enter (a line break) and Send, in typing order
        self.entry.observe(self._on_entry_value, "value")  # the same for a value set by code
        self.send_button.observe(self._on_send_toggled, "value")
        self.entry.on_msg(self._on_entry_message)  # a "submit" message (what a Text box sends on Enter)
        self.widget = widgets.VBox([
            self.transcript,
            widgets.HBox([self.entry, self.send_button, self.undo_button, self.reset_button, self.reload_button]),
            self.status, self.memory])
        self.refresh()

    # ------------------------------------------------------------ actions
    def send(self, text: str | None = None) -> str | None:
        """Ask ``text``, or else what the input box shows (then emptied); returns the answer, or None if
        nothing was sent."""
        from_box = text is None
        text = (_one_question(self._unsent()) if from_box else text).strip()
        if not text:
            return None
        if self._refuse_if_closed():
            return None
        if from_box:
            self._taken = self.entry.value  # all of it is sent now (a late update may still repeat it)
            self._set_box("")
        if text.lower() == RELOAD_COMMAND:  # typed in the box: the same as the Reload button
            self.reload()
            return None
        try:
            if self.stream:
                pieces: list[str] = []
                for piece in self.session.stream(text):
                    pieces.append(piece)
                    self._render_transcript(pending=(text, "".join(pieces)))
                turns = self.session.turns
                answer = turns[-1].answer if turns and turns[-1].question == text else "".join(pieces)
            else:
                self._render_transcript(pending=(text, "…"))
                answer = self.session.ask(text)
        except Exception as err:  # a widget callback has nowhere to show a traceback: say it in the window
            self._show_error("Not answered - ", err)
            return None
        self.last_error = None
        try:
            if self.on_turn is not None:
                self.on_turn(text, answer)
        except Exception as err:  # the turn itself is done (and saved); say what went wrong afterwards
            self._show_error("Answered, but on_turn failed - ", err)
            return answer
        self.refresh()
        turns = self.session.turns
        if not turns or turns[-1].answer != answer:  # an assistant's refusal or fallback: shown, never stored
            self.status.value = html.escape(f"Not kept in the conversation: {answer}")
        return answer

    def undo(self) -> bool:
        """Forget the newest turn (saved too, for a PersistentSession); False when it failed."""
        if self._refuse_if_closed():
            return False
        try:
            removed = self.session.undo()
        except Exception as err:  # a button's callback has nowhere to show a traceback: say it in the window
            self._show_error("Not undone - ", err)
            return False
        self.last_error = None
        self.refresh()
        self.status.value = html.escape(f"Undid turn {removed.turn_id}: {removed.question!r}" if removed
                                        else "Nothing to undo.")
        return True

    def reset(self) -> bool:
        """Forget the whole conversation (saved too, for a PersistentSession); False when it failed."""
        if self._refuse_if_closed():
            return False
        try:
            self.session.reset()
        except Exception as err:  # a button's callback has nowhere to show a traceback: say it in the window
            self._show_error("Not reset - ", err)
            return False
        self.last_error = None
        self.refresh()
        self.status.value = "Conversation reset."
        return True

    def reload(self) -> bool:
        """Continue from the stored conversation (another window or writer saved it); False when it failed.

        What this window had not saved is dropped: it is what a save refused. A session that cannot
        reload (a plain ChatSession, not saved anywhere: its ``store`` is None) says so."""
        if self._refuse_if_closed():
            return False
        if self.session.store is None:
            self.last_error = "This window's session is not saved anywhere, so there is nothing to reload."
            self.status.value = html.escape(self.last_error)
            return False
        try:
            self.session.reload()
        except Exception as err:  # a button's callback has nowhere to show a traceback: say it in the window
            self._show_error("Not reloaded - ", err)
            return False
        self.last_error = None
        self.refresh()
        self.status.value = html.escape(f"Reloaded: {len(self.session.turns)} turns, as stored.")
        return True

    def _on_entry_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        if content.get("event") == "submit":  # what a Text box sends on Enter (the ChatBox sends a line break)
            self._guarded(self.send)

    def _on_browser_update(self, state: dict) -> tuple[dict, Callable[[], None]]:
        """``ChatBox.reader``: the questions an update from the browser carries, and what the box keeps."""
        questions: list[str] = []
        shown = str(state["value"]) if "value" in state else self._taken + self.entry.value  # in the browser
        if "value" in state:
            state["value"], questions = self._read(shown, self.entry.value)
        if state.get("disabled") is True and not self.entry.disabled:  # a click on Send (the link)
            state["disabled"] = False  # the echo enables the box again in the browser
            self._clicks_read += 1
            if self.session.closed:  # refused below, and what was typed stays in the box
                questions.append("")
            else:
                questions.append(_one_question(state.get("value", self.entry.value)))
                self._taken, state["value"] = shown, ""  # all of it is sent (a late update may repeat it)
        def then() -> None:
            self._reset_send_button()
            self._send_each(questions)

        return state, then

    def _on_entry_value(self, change: dict) -> None:
        """A value set by code (a browser's update goes through ``_on_browser_update``)."""
        if self._reading_box or self.entry.reading:
            return
        self._taken = ""  # code sets what it means: never a late update that repeats what was sent
        kept, questions = self._read(change["new"], change["old"])
        if kept != self.entry.value:
            self._set_box(kept)
        self._send_each(questions)

    def _send_each(self, questions: list[str]) -> None:
        for question in questions:
            if question == "":  # Send with nothing typed, or a closed store (then say so)
                self._refuse_if_closed()
            else:
                self._guarded(lambda question=question: self.send(question))

    def _set_box(self, value: str) -> None:
        """Change the box from here (not a change to read as typing)."""
        self._reading_box = True
        try:
            self.entry.value = value
        finally:
            self._reading_box = False

    def _unsent(self) -> str:
        """What the box holds that was not sent yet."""
        value = self.entry.value
        return value[len(self._taken):] if value.startswith(self._taken) else value

    def _read(self, received: str, before: str) -> tuple[str, list[str]]:
        """Enter: (what the box keeps, the questions sent): each line break ends a question.

        ``received`` is the box's value as the browser sent it, with every key typed before Enter. Keys
        typed after Enter may come in the same update, or in updates sent before the browser applied the
        emptied box: the start already sent (``_taken``) is skipped and what follows the last line break
        stays. ``before`` is the value before this update: when the only change is one line break inside
        it (Enter with the caret inside the text), all of the text is the question.
        """
        if not received.startswith(self._taken):
            self._taken = ""  # the box was emptied (or edited) since: none of what it holds was sent
        prior = before[len(self._taken):] if before.startswith(self._taken) else before  # unsent, before
        rest, questions = received[len(self._taken):], []
        while (found := _LINE_BREAK.search(rest)) is not None:
            head, rest = rest[:found.start()], rest[found.end():]
            if not questions and head + rest == prior:
                head, rest = prior, ""  # Enter inside the text: the whole text is the question
            questions.append(head.strip())
        if questions and self.session.closed:  # nothing is sent, and nothing typed is lost
            kept, self._taken = _one_question(received[len(self._taken):]), ""
            return kept, [""]
        if questions:
            self._taken = received[:len(received) - len(rest)]
        return rest, [q for q in questions if q]

    def _on_send_toggled(self, change: dict) -> None:
        """The toggle's own report of a click: it becomes a button again once the click has been read.

        The click is read from the box's updates (``_on_browser_update``), and the two reports may come in
        either order. Reset before the box's, the toggle would enable the box early (the link copies its
        value to the box's ``disabled``); reset before its own report, it would stay pressed.
        """
        if change["new"] and not self._reading_box:
            self._toggle_reports += 1
            self._reset_send_button()

    def _reset_send_button(self) -> None:
        while self._toggle_reports and self._clicks_read:
            self._toggle_reports, self._clicks_read = self._toggle_reports - 1, self._clicks_read - 1
            self._reading_box = True  # (not a report: this window's own change)
            try:
                self.send_button.value = False
            finally:
                self._reading_box = False

    def _guarded(self, action: Callable[[], Any]) -> None:
        """Run a button's action; any error it lets through is shown in the status line."""
        try:
            action()
        except Exception as err:  # noqa: BLE001 - a click has nowhere else to report it
            self.last_error = _describe(err)
            self.status.value = f"<span style='color:#b00'>{html.escape(self.last_error)}</span>"

    def _show_error(self, prefix: str, err: BaseException) -> None:
        """Say what failed in the status line, then redraw everything from the session (what memory holds)."""
        self.last_error = _describe(err)
        shown = self.last_error if self.last_error.startswith("Not saved:") else prefix + self.last_error
        self.status.value = f"<span style='color:#b00'>{html.escape(shown)}</span>"
        try:
            self.refresh(keep_status=True)
        except Exception as again:  # noqa: BLE001 - keep the first error visible; add the second
            self.status.value += f"<br><span style='color:#b00'>{html.escape(_describe(again))}</span>"

    def _refuse_if_closed(self) -> bool:
        """When the store is closed, say so in the window and return True (the caller changes nothing)."""
        if not self.session.closed:
            return False
        self.last_error = ("This window's session store is closed, so nothing can be saved. Open the store "
                           "again and make a new ChatUI (for example, run the cells above once more).")
        self.status.value = f"<span style='color:#b00'>{html.escape(self.last_error)}</span>"
        return True

    # ------------------------------------------------------------ views
    def refresh(self, keep_status: bool = False) -> None:
        """Redraw the transcript and the memory view from the session."""
        if not keep_status:
            self.status.value = ""
        self._render_transcript()
        for name, text in self.memory_text().items():
            self.panes[name].value = f"<pre style='white-space:pre-wrap;margin:0'>{html.escape(text)}</pre>"
        kept, dropped = len(self.session.turn_ids), len(self.session.dropped)
        facts = len(self._facts()) if self.facts is not None else None
        titles = [f"Turns kept ({kept})", f"Dropped by trimming ({dropped})", "Summary / profile",
                  "Facts" if facts is None else f"Facts ({facts})"]
        self.memory.titles = tuple(titles)

    def _render_transcript(self, pending: tuple[str, str] | None = None) -> None:
        parts = []
        for who, text, faded in self._lines(pending):
            style = dict(bg="#e8f0fe" if who == "you" else "#f1f3f4",
                         align="margin-left:auto;" if who == "you" else "")
            bubble = _BUBBLE.format(who=who, text=html.escape(text), **style)
            parts.append(bubble.replace("<div style='", "<div style='opacity:0.5;") if faded else bubble)
        self.transcript.value = _SCROLL_BOX.format(messages="".join(parts) or "<i>No messages yet.</i>")

    def _lines(self, pending: tuple[str, str] | None = None) -> list[tuple[str, str, bool]]:
        dropped = {d.turn_id for d in self.session.dropped}
        lines = []
        for turn in self.session.turns:
            faded = turn.turn_id in dropped
            lines += [("you", turn.question, faded), ("assistant", turn.answer, faded)]
        if pending is not None:
            lines += [("you", pending[0], False), ("assistant", pending[1], False)]
        return lines

    def transcript_text(self) -> str:
        """The transcript as plain text, one line per message (turns trimmed from memory marked)."""
        return "\n".join(f"{who}: {text}" + ("  (trimmed from memory)" if faded else "")
                         for who, text, faded in self._lines())

    def _facts(self) -> list:
        return self.facts.active_facts(self.user_id) if self.facts is not None and self.user_id else []

    def memory_text(self) -> dict[str, str]:
        """What each memory pane shows, as plain text."""
        records = {t.turn_id: t.question for t in self.session.turns}
        kept = "\n".join(f"turn {i}: {one_line(records.get(i, '(no record)'))}"
                         for i in self.session.turn_ids) or "nothing yet"
        dropped = "\n".join(f"turn {d.turn_id}: {one_line(records.get(d.turn_id, ''))} ({d.tokens} tokens)"
                            for d in self.session.dropped) or "nothing dropped"
        extra = self.session.memory_report(facts=False)  # the facts have a pane of their own
        if self.facts is None:
            facts = "no fact memory attached (pass facts=FactMemory(...))"
        elif not self.user_id:
            facts = "pass user_id=... to show this user's facts"
        else:
            facts = format_facts(self._facts(), title=f"Active facts for {self.user_id}")
        return dict(zip(PANES, (kept, dropped, extra, facts), strict=True))

    # ------------------------------------------------------------ display
    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        where = f" {self.user_id}/{self.session.session_id or ''}" if self.user_id else ""
        bundle["text/plain"] = f"ChatUI{where}: {len(self.session.turn_ids)} turns in memory"
        return bundle

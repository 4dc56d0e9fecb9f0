"""A chat window for notebooks (lesson 11): transcript, input box, Send / Undo / Reset, and a memory view.

All the logic is in plain methods - ``send(text)``, ``undo()``, ``reset()`` - that the buttons
call, so tests and notebook cells can drive the chat without a browser. Everything shown is
written into widget values (an ``HTML`` widget's ``value``), never printed inside ``with out:``,
which keeps the display correct under nbval and in Colab alike.

Works with a plain ``ChatSession`` or a ``PersistentSession`` (then every turn, undo and reset is
saved as it happens). When the session offers ``stream(text)``, answers appear piece by piece.

What a person sees stays true:
- only Enter or the Send button sends (leaving the box with a half-typed question sends nothing);
- every error in a button's action is shown in the window's status line, not only in the kernel log;
- after any action, and after a failed one, the transcript is redrawn from the session, so the screen shows
  what memory holds (a failed save is rolled back in memory by ``PersistentSession``);
- a window whose session store was closed says so and changes nothing;
- the transcript box opens scrolled to the newest message.
"""
from __future__ import annotations

import html
import json
from typing import Any, Callable

import ipywidgets as widgets

from helpers.facts.writer import FactMemory, format_facts

_BUBBLE = ("<div style='margin:4px 0;padding:6px 10px;border-radius:8px;max-width:90%;white-space:pre-wrap;"
           "background:{bg};{align}'><b>{who}</b> {text}</div>")
# The transcript: a flex column in reverse, whose one child holds the messages in reading order.
# A browser opens such a box scrolled to its end, so every redraw shows the newest message
# (JupyterLab, Notebook 7 and Colab alike).
_SCROLL_BOX = ("<div class='chat-transcript' style='display:flex;flex-direction:column-reverse;"
               "overflow-y:auto;max-height:360px;border:1px solid #ddd;padding:4px'>"
               "<div>{messages}</div></div>")
PANES = ("Turns kept", "Dropped by trimming", "Summary / profile", "Facts")


def _inner(session: Any) -> Any:
    """The ChatSession behind a PersistentSession (or the session itself)."""
    return getattr(session, "session", session)


def _store_closed(session: Any) -> bool:
    """True when the session, or the store it saves to, has been closed."""
    store = getattr(session, "store", None)
    return bool(getattr(session, "closed", False) or getattr(store, "closed", False))


def _describe(err: BaseException) -> str:
    """An error as one line: a failed save's own message ("Not saved: ..."), else its type and message."""
    text = str(err)
    return text if text.startswith("Not saved:") else f"{type(err).__name__}: {text}"


def _describe_memory(inner: Any) -> str:
    """The summary, profile and recall index of a MemoryAssembler; other memory state as JSON."""
    memory = getattr(inner, "memory", None)
    if memory is not None and hasattr(memory, "summary"):
        summary = memory.summary
        parts = [f"{summary.header()}\n{summary.text}" if summary.text else "summary: nothing summarised yet"]
        profile = getattr(memory, "profile", None)
        if profile is not None:
            lines = profile.lines()
            parts.append("profile:\n" + "\n".join(lines) if lines else "profile: nothing recorded yet")
        recall = getattr(memory, "recall", None)
        if recall is not None:
            parts.append(f"recall index: {len(recall.quotes)} turns")
        return "\n\n".join(parts)
    state = inner.memory_state()
    if state:
        return json.dumps(state, indent=2, ensure_ascii=False)
    return "none: this session keeps no summary or profile (the message list is its whole memory)"


class ChatUI:
    """An ipywidgets chat over a session; ``send(text)`` runs one turn and refreshes every view."""

    def __init__(self, session: Any, *, facts: FactMemory | None = None, user_id: str | None = None,
                 stream: bool | None = None, on_turn: Callable[[str, str], Any] | None = None,
                 placeholder: str = "Ask about Larkspur University…"):
        self.session = session
        self.facts = facts
        self.user_id = user_id or getattr(session, "user_id", None)
        self.stream = hasattr(_inner(session), "stream") if stream is None else stream
        self.on_turn = on_turn  # called with (question, answer) after each completed turn, e.g. to add facts
        self.last_error: str | None = None
        self.transcript = widgets.HTML()
        # The box's value follows every keystroke; only Enter (a "submit" message) or Send sends it.
        self.entry = widgets.Text(placeholder=placeholder, continuous_update=True,
                                  layout=widgets.Layout(width="70%"))
        self.send_button = widgets.Button(description="Send", button_style="primary")
        self.undo_button = widgets.Button(description="Undo", tooltip="forget the newest turn")
        self.reset_button = widgets.Button(description="Reset", tooltip="forget the whole conversation")
        self.status = widgets.HTML()
        self.panes = {name: widgets.HTML() for name in PANES}
        self.memory = widgets.Accordion(children=list(self.panes.values()), titles=PANES)
        self.send_button.on_click(lambda _: self._guarded(self.send))
        self.undo_button.on_click(lambda _: self._guarded(self.undo))
        self.reset_button.on_click(lambda _: self._guarded(self.reset))
        self.entry.on_msg(self._on_entry_message)  # Enter in the box
        self.widget = widgets.VBox([
            self.transcript,
            widgets.HBox([self.entry, self.send_button, self.undo_button, self.reset_button]),
            self.status, self.memory])
        self.refresh()

    # ------------------------------------------------------------ actions
    def send(self, text: str | None = None) -> str | None:
        """Ask ``text`` (default: the input box); returns the answer, or None if nothing was sent."""
        text = (self.entry.value if text is None else text).strip()
        if not text:
            return None
        if self._refuse_if_closed():
            return None
        self.entry.value = ""
        try:
            if self.stream:
                pieces: list[str] = []
                for piece in self.session.stream(text):
                    pieces.append(piece)
                    self._render_transcript(pending=(text, "".join(pieces)))
                turns = _inner(self.session).turns
                answer = turns[-1].answer if turns and turns[-1].question == text else "".join(pieces)
            else:
                self._render_transcript(pending=(text, "…"))
                answer = self.session.chat(text)
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
        return answer

    def undo(self) -> bool:
        """Forget the newest turn (saved too, for a PersistentSession); False when it failed."""
        if self._refuse_if_closed():
            return False
        try:
            removed = self.session.undo()
        except Exception as err:
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
        except Exception as err:
            self._show_error("Not reset - ", err)
            return False
        self.last_error = None
        self.refresh()
        self.status.value = "Conversation reset."
        return True

    def _on_entry_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        if content.get("event") == "submit":  # what the browser sends when Enter is pressed in the box
            self._guarded(self.send)

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
        if not _store_closed(self.session):
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
        kept, dropped = len(_inner(self.session).turn_ids), len(_inner(self.session).dropped)
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
        inner = _inner(self.session)
        dropped = {d.turn_id for d in inner.dropped}
        lines = []
        for turn in inner.turns:
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
        inner = _inner(self.session)
        records = {t.turn_id: t.question for t in inner.turns}
        kept = "\n".join(f"turn {i}: {records.get(i, '(no record)')}"
                         for i in inner.turn_ids) or "nothing yet"
        dropped = "\n".join(f"turn {d.turn_id}: {records.get(d.turn_id, '')} ({d.tokens} tokens)"
                            for d in inner.dropped) or "nothing dropped"
        extra = _describe_memory(inner)
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
        inner = _inner(self.session)
        where = f" {self.user_id}/{getattr(self.session, 'session_id', '')}" if self.user_id else ""
        bundle["text/plain"] = f"ChatUI{where}: {len(inner.turn_ids)} turns in memory"
        return bundle

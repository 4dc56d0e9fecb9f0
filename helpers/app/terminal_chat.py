"""``python -m helpers chat``: the campus assistant in a terminal, with conversations saved between runs.

Offline by default (the stand-in, no key needed); ``--backend nim`` or ``openai-compatible`` uses
the same settings as the notebooks. It is notebook 12's assistant (``helpers.app.assistant``): guardrails,
memory under a budget, durable facts. Every completed turn and every fact is saved to ``--db`` (a SQLite
file, or a PostgreSQL DSN: a ``postgresql://`` URL or libpq's ``key=value`` pairs, with ``--schema`` for its
tables' schema), so ``--user`` and ``--session`` resume a conversation in a later run,
and what the user said about themselves is known in any later session of theirs.

Commands inside the chat: /history, /memory, /facts, /instructions, /forget, /undo, /reset, /reload, /sessions,
/help, /quit (or Ctrl-D).

Everything it prints passes through ``terminal_text``: a reply, a stored question or title, an error
cannot move the cursor, clear the screen, set the clipboard or retitle the window (control characters
are shown escaped, ``\\x1b``). "Saved." is printed only when the store holds what this copy holds.
"""
from __future__ import annotations

import argparse
import errno
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import openai

from helpers.llm.api_key import hide_secret, url_secrets
from helpers.app.assistant import Assistant, open_assistant
from helpers.llm.client import make_client
from helpers.llm.config import BACKENDS, load_settings
from helpers.llm.dotenv_file import apply_dotenv
from helpers.core.dsn import Database, parse_database, redact_dsn
from helpers.core.errors import ConfigError, WorkshopError
from helpers.core.text import escape_controls
from helpers.facts.fact_store import FactStoreError
from helpers.sessions.conversation import Conversation
from helpers.sessions.session_store import SessionSaveError, SessionStoreError

COMMANDS = {
    "/history": "the conversation so far (turns trimmed from memory are marked)",
    "/memory": "what the assistant remembers: turns kept and dropped, summary, profile, facts",
    "/facts": "the fact store's audit: every decision about your facts, and why",
    "/instructions": "how you asked to be answered; '/instructions undo' takes back the newest, "
                     "'/instructions forget N' deletes the N-th",
    "/forget": "'/forget <topic>' removes it from every layer (turns, summary, recall, profile, facts); "
               "'/forget me' deletes everything stored about you",
    "/undo": "forget the newest turn (saved)",
    "/reset": "forget the whole conversation (saved; the session id stays)",
    "/reload": "continue from the stored session (after another program saved it)",
    "/sessions": "this user's saved sessions",
    "/help": "this list",
    "/quit": "leave (the conversation is already saved)",
}


# What a terminal acts on instead of showing: C0 controls except \n and \t (ESC starts CSI/OSC sequences:
# cursor moves, screen clears, OSC 52 clipboard writes, window titles; \r overwrites the line), DEL, the C1
# controls (8-bit CSI and OSC), bidirectional overrides and isolates (they reorder the text after them, so
# what is shown is not what was said), and lone surrogates (they cannot be encoded, so printing them fails).
_CHANGES = ("/undo", "/reset", "/forget")  # commands that change the conversation (and save it)


def terminal_text(text: object, *, one_line: bool = False) -> str:
    """``text`` safe to print to a terminal: every character a terminal would act on shown escaped.

    Control characters become their Python escapes (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\ud800``), so
    the reader sees that they were there and the terminal does nothing with them. Line breaks and tabs
    stay (``\\r\\n`` becomes ``\\n``), unless ``one_line``: then every run of white space is one space.
    """
    text = str(text)
    text = " ".join(text.split()) if one_line else text.replace("\r\n", "\n")
    return escape_controls(text)  # the one rule, shared with every prompt line; newline and tab kept


def _system_refusal(err: OSError) -> str:
    """Why the operating system refused a path, in a few words."""
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if err.errno == errno.ENAMETOOLONG:
        return "a name in the path is longer than the file system allows"
    return err.strerror or str(err)


def default_db_path() -> str:
    """$WORKSHOP_SESSION_DB, else sessions.db in the user's data folder."""
    if os.environ.get("WORKSHOP_SESSION_DB"):
        return os.environ["WORKSHOP_SESSION_DB"]
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "agent-memory-workshop" / "sessions.db")


def prepare_db(db: str) -> Database:
    """What ``--db`` names (``helpers.core.dsn.parse_database``); a SQLite file's folder is created if missing.

    A DSN that cannot be read is a ConfigError here, before anything is opened or created.
    """
    where = parse_database(db)
    if where.is_postgres:
        return where
    path = Path(where.target)
    try:
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    except OSError as err:  # e.g. File name too long: exists() only answers False for a missing path
        raise SessionStoreError(f"cannot use --db {db} ({_system_refusal(err)}); pass a shorter path, in a "
                                "folder you may write to") from None
    if blocker is not None:
        raise SessionStoreError(f"cannot use --db {db}: {blocker} is a file, not a folder; pass a path "
                                "inside a folder")
    try:  # a folder made here holds conversations: only this user may enter it
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        why = _system_refusal(err)
        raise SessionStoreError(f"cannot create the folder {path.parent} for --db {db} ({why}); create it "
                                "yourself, or pass a --db path in a folder you may write to") from None
    return where


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m helpers", description="Agent-memory workshop tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chat = commands.add_parser("chat", help="chat with the campus assistant; "
                                            "conversations are saved and resumable")
    chat.add_argument("--user", default=os.environ.get("WORKSHOP_USER", "learner"),
                      help="user id (default: learner)")
    chat.add_argument("--session", default="main", help="session id to start or resume (default: main)")
    chat.add_argument("--db", default=None,
                      help="SQLite file, or PostgreSQL DSN: postgresql://... or 'host=... dbname=...' "
                           "(default: $WORKSHOP_SESSION_DB or ~/.local/share/agent-memory-workshop/sessions.db)")
    chat.add_argument("--schema", default=None,
                      help="PostgreSQL schema for the tables (default: the database's search path)")
    chat.add_argument("--backend", choices=BACKENDS, default=None,
                      help="where requests go (default: $WORKSHOP_BACKEND, else offline)")
    chat.add_argument("--max-turns", type=int, default=None,
                      help="newest turns sent whole (default: 6; older ones reach the model through the "
                           "summary, recall and profile)")
    chat.add_argument("--verbose", action="store_true", help="show tool calls as they happen")
    chat.add_argument("--no-stream", action="store_true",
                      help="print each answer whole instead of as it arrives")
    return parser


def _shown(db: str) -> str:
    """A --db value fit to print, in its own form: a DSN keeps its settings, each password shown as ***."""
    try:
        return parse_database(db).shown()
    except ConfigError:
        return redact_dsn(str(db))


def _described(db: str, schema: str | None = None) -> str:
    """Where the conversation is stored, in words (``SQLite file ...``, ``PostgreSQL database ... on ...``)."""
    try:
        where = parse_database(db).describe()
    except ConfigError:
        where = redact_dsn(str(db))
    return where + (f" (schema {schema})" if schema else "")


def resume_command(user: str, session: str, db: str | None, schema: str | None = None) -> str:
    """The shell command that resumes this conversation, each argument quoted for the shell.

    A DSN's password is shown as *** (give it again, or keep it in PGPASSWORD or ~/.pgpass)."""
    argv = ["python", "-m", "helpers", "chat", "--user", user, "--session", session]
    return shlex.join(argv + (["--db", _shown(db)] if db else []) + (["--schema", schema] if schema else []))


class TerminalChat:
    """The read-eval-print loop over a ``Conversation`` (an ``Assistant``, or a ``PersistentSession``), with
    input and output injectable for tests. It calls only the protocol's members (it probes nothing).

    Everything shown goes through ``write`` (or, while an answer streams, ``show_piece``), and both pass
    it through ``terminal_text``.
    """

    def __init__(self, session: Conversation, *, db: str, resume: str = "",
                 read: Callable[[str], str] | None = None, write: Callable[[str], None] | None = None,
                 stream: bool = True, schema: str | None = None):
        self.session, self.db, self.resume, self.schema = session, db, resume, schema
        self.stream = stream  # False (--no-stream): each answer is printed whole
        self.read, self._write = read or input, write or print
        self.unsaved = False  # True while the newest change could not be saved (or may not have been)

    def write(self, text: str) -> None:
        """Show one message (a reply, stored text, an error...) with its control characters escaped."""
        self._write(terminal_text(text))

    def show_piece(self, piece: str) -> None:
        """Show a piece of a streamed answer, escaped the same way."""
        sys.stdout.write(terminal_text(piece))
        sys.stdout.flush()

    def _secrets(self) -> list[str]:
        settings = self.session.settings
        return [getattr(settings, "api_key", None) or ""] + url_secrets(getattr(settings, "base_url", ""))

    def report(self, err: BaseException) -> None:
        """Show an error in one line, with any database password and the API key removed.

        An error the workshop raises on purpose says what happened; any other is named by its type.
        """
        text = hide_secret(redact_dsn(str(err), self.db), self._secrets())
        if not isinstance(err, WorkshopError):
            text = f"{type(err).__name__}: {text}"
        self.write(terminal_text(text if isinstance(err, SessionSaveError) else f"error: {text}", one_line=True))
        if isinstance(err, SessionSaveError):
            self.unsaved = True

    def run(self) -> int:
        """Chat until /quit or end of input; returns the exit status."""
        while True:
            try:
                line = self.read("you> ").strip()
            except EOFError:
                self.write("")
                return self.quit()
            except KeyboardInterrupt:
                self.write("")
                return self.quit()
            except UnicodeDecodeError as err:  # bytes the terminal's encoding cannot read (a bad paste)
                self.write(f"error: that line could not be read as text ({err.reason} at byte {err.start + 1}); "
                           "nothing was sent - type it again")
                continue
            if not line:
                continue
            if line.startswith("/"):
                if line.split()[0] in ("/quit", "/exit"):
                    return self.quit()
                self.command(line.split()[0], line[len(line.split()[0]):].strip())
                continue
            self.ask(line)

    def ask(self, text: str) -> None:
        """One turn; any error is shown in one line and the loop goes on.

        A turn that raised is rolled back by the session (its stream is closed here at once). An error
        the workshop raises on purpose leaves the saved state as it was; after any other error the
        conversation is no longer claimed saved, since it cannot be known what was stored.
        """
        streaming, stream = False, None
        try:
            if self.stream:
                stream = self.session.stream(text)
                sys.stdout.write("assistant> ")
                streaming = True
                for piece in stream:
                    self.show_piece(piece)
                self.write("")
            else:
                self.write(f"assistant> {self.session.ask(text)}")
            self.unsaved = False
        except KeyboardInterrupt:
            self.write("\n(interrupted: that turn was not saved)")
        except openai.BadRequestError as err:  # e.g. the conversation outgrew the model's context
            self._end_line(streaming)
            message = hide_secret(str(err.message), self._secrets())
            self.write(terminal_text(f"error: the server refused the request ({err.status_code}): {message}. "
                                     "Try /undo or /reset, or start with --max-turns.", one_line=True))
        except WorkshopError as err:  # raised on purpose; a SessionSaveError means the turn was rolled back
            self._end_line(streaming)
            self.report(err)
        except Exception as err:  # anything else (a bug, a raw error from the store): show it, claim no save
            self._end_line(streaming)
            self.report(err)
            self.unsaved = True
        finally:
            if stream is not None:
                self._close(stream)

    def _end_line(self, streaming: bool) -> None:
        if streaming:
            self.write("")  # end the partly written answer line

    def _close(self, stream) -> None:
        """Close a turn's stream: a turn left unfinished is rolled back now, not whenever it is collected."""
        try:
            stream.close()
        except Exception as err:  # closing rolls the turn back; whatever fails there is shown, not raised
            self.report(err)
            self.unsaved = True

    def command(self, name: str, argument: str = "") -> None:
        """Run one slash command (``argument``: the rest of its line)."""
        try:
            self._command(name, argument)
        except WorkshopError as err:
            self.report(err)
        except Exception as err:  # not raised on purpose: shown in one line; a change may not be saved
            self.report(err)
            if name in _CHANGES:
                self.unsaved = True

    def _command(self, name: str, argument: str = "") -> None:
        session = self.session
        if name in ("/instructions", "/forget") and not isinstance(session, Assistant):
            self.write(f"{name} needs the assistant (procedural memory and forgetting, notebook 13).")
        elif name == "/instructions":
            words = argument.split()
            if words[:1] == ["undo"]:
                self.write(session.undo_instruction())
            elif words[:1] == ["forget"] and len(words) == 2 and words[1].isdigit():
                self.write(session.forget_instruction(int(words[1])))
            elif words:
                self.write("Use /instructions, /instructions undo or /instructions forget N.")
            else:
                self.write(session.instructions_report())
        elif name == "/forget":
            if argument.lower() == "me":
                gone = session.forget_me()
                self.write(f"Deleted everything stored about {session.user_id}: {gone['sessions']} "
                           f"conversation(s) and {gone['fact rows']} fact-store rows.")
            elif argument:
                self.write(str(session.forget(argument)))
            else:
                self.write("Say what to forget: /forget <topic>, or /forget me.")
            self.unsaved = False
        elif name == "/undo":
            removed = self.session.undo()
            self.unsaved = False
            self.write(f"Undid turn {removed.turn_id}: {removed.question}" if removed else "Nothing to undo.")
        elif name == "/reset":
            self.session.reset()
            self.unsaved = False
            self.write("Forgot the conversation (the session id stays; saved).")
        elif name == "/reload":
            self.session.reload()
            self.unsaved = False
            count = len(session.turns)
            self.write(f"Reloaded {self.session.name}: {count} turn{'' if count == 1 else 's'}, revision "
                       f"{self.session.revision}.")
        elif name == "/history":
            dropped = {d.turn_id for d in session.dropped}
            if not session.turns:
                self.write("No turns yet.")
            for turn in session.turns:
                mark = "  (trimmed from memory)" if turn.turn_id in dropped else ""
                self.write(f"[{turn.turn_id}] you: {turn.question}{mark}\n    assistant: {turn.answer}")
        elif name == "/memory":
            self.write(f"turns kept: {session.turn_ids or 'none'}; dropped by trimming: "
                       f"{[d.turn_id for d in session.dropped] or 'none'}; {len(session.messages)} messages")
            self.write(session.memory_report())  # summary, profile and (an Assistant's) facts
            self.write(f"stored: {self.session.user_id}/{self.session.session_id} "
                       f"revision {self.session.revision} in {_described(self.db, self.schema)}")
        elif name == "/facts":
            self.write(session.audit_report())
        elif name == "/sessions":
            for info in self.session.store.list_sessions(self.session.user_id):
                here = " (this one)" if info.session_id == self.session.session_id else ""
                plural = "" if info.turns == 1 else "s"
                self.write(f"{info.session_id}{here}: {info.turns} turn{plural}, {info.title!r}")
        elif name == "/help":
            for command, what in COMMANDS.items():
                self.write(f"{command:<13} {what}")
        else:
            self.write(f"Unknown command {name}; try /help.")

    def quit(self) -> int:
        """Say truthfully what is stored, and how to come back.

        "Saved." only when no change failed since the last save and the store, read back now, holds
        exactly what this copy holds; "Saved:" with a note when it holds every turn of this copy and
        another writer has continued the session since.
        """
        resume = f" Resume with: {self.resume}" if self.resume else ""
        if self.unsaved:
            self.write("Not saved: the last change could not be saved (see the error above); the stored "
                       f"conversation is as of its last saved turn.{resume if self.session.revision else ''}")
            return 0
        if self.session.revision == 0 and not self.session.turns:
            self.write("Nothing to save yet (no turns).")
            return 0
        found, stored = self.what_is_stored()
        if found == "same":
            self.write(f"Saved.{resume}")
        elif found == "continued":
            mine, theirs = len(self.session.turns), len(stored.state.get("turns", []))
            self.write(f"Saved: all {mine} turn{'' if mine == 1 else 's'} of this chat are stored. Another writer "
                       f"has continued the session since (revision {stored.info.revision}, {theirs} "
                       f"turn{'' if theirs == 1 else 's'}); resume to see its turns.{resume}")
        else:
            changed = " (another writer changed it since)" if found == "changed" else ""
            self.write(f"Not saved: the store does not hold this conversation as shown here{changed}; the stored "
                       f"conversation is as of its last saved turn.{resume if self.session.revision else ''}")
        return 0

    def what_is_stored(self) -> tuple[str, Any]:
        """How the stored session compares with this copy, and the stored session (None if unreadable).

        ``same``: exactly this copy's conversation. ``continued``: another writer saved after this copy and
        the store still holds every turn of it. ``changed``: another writer saved after it and a turn of
        this copy is gone or different. ``different``: the store holds something else at this copy's revision
        (a change made here was not saved). ``unreadable``: not stored, or the store cannot be read.
        """
        try:
            stored = self.session.store.load_state(self.session.user_id, self.session.session_id)
            mine = self.session.snapshot()
        except Exception:  # not stored, or the store cannot be read: no save to claim
            return "unreadable", None
        if stored.state == mine:
            return "same", stored
        if stored.info.revision <= self.session.revision:
            return "different", stored
        kept = stored.state.get("turns", [])
        everything_kept = isinstance(kept, list) and all(turn in kept for turn in mine.get("turns", []))
        return ("continued" if everything_kept else "changed"), stored

    def stored_as_shown(self) -> bool:
        """True when the store, read back, holds exactly this copy's conversation."""
        return self.what_is_stored()[0] == "same"


def run_chat(args: argparse.Namespace) -> int:
    """Open the assistant on ``--db`` (``helpers.app.assistant.open_assistant``: both stores), then chat.

    The fact store is opened only once the session has loaded, so a database whose session is refused
    is left as it was."""
    db = args.db or default_db_path()
    try:
        settings = load_settings(args.backend or os.environ.get("WORKSHOP_BACKEND") or "offline")
        where = prepare_db(db)
        window = {} if args.max_turns is None else {"window": args.max_turns}
        assistant = open_assistant(settings, args.user, args.session,
                                   db=where.target if where.is_postgres else Path(where.target),
                                   schema=args.schema, client=make_client(settings), verbose=args.verbose,
                                   **window)
    except (SessionStoreError, FactStoreError, ValueError) as err:  # ConfigError is a ValueError
        print(terminal_text(f"error: {redact_dsn(str(err), db)}", one_line=True), file=sys.stderr)
        return 2
    try:
        count = len(assistant.turns)
        state = f"resumed, {count} turn{'' if count == 1 else 's'}" if assistant.resumed else "new"
        print(terminal_text(settings.describe()))
        print(terminal_text(f"Larkspur campus assistant - user {args.user}, session {args.session} ({state}). "
                            "Type a question, or /help."))
        resume = resume_command(args.user, args.session, args.db, args.schema)
        return TerminalChat(assistant, db=db, resume=resume, stream=not args.no_stream, schema=args.schema).run()
    except (SessionStoreError, FactStoreError, ValueError) as err:
        print(terminal_text(f"error: {redact_dsn(str(err), db)}", one_line=True), file=sys.stderr)
        return 2
    finally:
        assistant.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m helpers``."""
    try:
        apply_dotenv()  # settings in .env (user, backend, session db) count as if exported
    except ConfigError as err:
        print(terminal_text(f"error: {err}", one_line=True), file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    if args.command == "chat":
        return run_chat(args)
    return 2  # pragma: no cover - argparse rejects unknown commands

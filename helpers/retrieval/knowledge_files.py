"""The knowledge base's files: one JSON object a line, each read and checked before it is used.

``load_knowledge_base()`` reads ``data/campus_kb.jsonl`` (or any file of the same shape) into ``Entry``
objects: a lowercase slug id, a title and a text, and for recurring events a weekday, a time, a location and
a date, each checked. A bad line is a ``KnowledgeBaseError`` naming the file, the line and the field.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.clock import WEEKDAYS
from helpers.retrieval.embeddings import data_file
from helpers.core.errors import WorkshopError

KB_FILE = "campus_kb.jsonl"
_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TIME_RE = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class KnowledgeBaseError(WorkshopError, ValueError):
    """The knowledge base, its cache or a question could not be used; the message says why and what to do."""


@dataclass(frozen=True)
class Entry:
    """One fact sheet about the campus."""

    id: str
    title: str
    text: str
    tags: tuple[str, ...] = ()
    weekday: str | None = None
    time: str | None = None
    location: str | None = None
    date: str | None = None

    def passage(self) -> str:
        """The text that gets embedded: title and body."""
        return f"{self.title}: {self.text}"


def read_jsonl(path: str | Path | None, default_name: str) -> tuple[Path, list[tuple[int, dict]]]:
    """The file's path and its (line number, object) rows; ``path=None`` reads the shipped file."""
    if path is None:
        try:
            path = data_file(default_name)
        except FileNotFoundError as exc:
            raise KnowledgeBaseError(str(exc)) from None
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise KnowledgeBaseError(f"{path} does not exist; pass the path of a .jsonl file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeBaseError(f"cannot read {path}: {exc}") from None
    rows = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KnowledgeBaseError(f"{path}, line {lineno}: not valid JSON ({exc.msg}); "
                                     "each line must be one JSON object") from None
        if not isinstance(row, dict):
            raise KnowledgeBaseError(f"{path}, line {lineno}: expected a JSON object, "
                                     f"got {type(row).__name__}")
        rows.append((lineno, row))
    if not rows:
        raise KnowledgeBaseError(f"{path} has no entries; add one JSON object per line")
    return path, rows


def _entry_from(row: dict, where: str) -> Entry:
    def text_field(name: str, required: bool) -> str | None:
        value = row.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise KnowledgeBaseError(f"{where}: field {name!r} must be a non-empty string")
        return " ".join(value.split())  # one line: a passage is one line of the context ("[id] title: text")

    entry_id = text_field("id", True)
    if not _ID_RE.match(entry_id):
        raise KnowledgeBaseError(f"{where}: id {entry_id!r} must be a lowercase slug like 'club-ai'")
    tags = row.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise KnowledgeBaseError(f"{where}: 'tags' must be a list of strings")
    weekday, when, date = text_field("weekday", False), text_field("time", False), text_field("date", False)
    if weekday is not None and weekday not in WEEKDAYS:
        raise KnowledgeBaseError(f"{where}: weekday {weekday!r} must be a full English name like 'Thursday'")
    if when is not None and not _TIME_RE.match(when):
        raise KnowledgeBaseError(f"{where}: time {when!r} must be 24-hour HH:MM like '18:00'")
    if date is not None and not _DATE_RE.match(date):
        raise KnowledgeBaseError(f"{where}: date {date!r} must be YYYY-MM-DD")
    return Entry(id=entry_id, title=text_field("title", True), text=text_field("text", True),
                 tags=tuple(tags), weekday=weekday, time=when, location=text_field("location", False),
                 date=date)


def load_knowledge_base(path: str | Path | None = None) -> list[Entry]:
    """Read and check a knowledge-base .jsonl file (default: the shipped campus data)."""
    path, rows = read_jsonl(path, KB_FILE)
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for lineno, row in rows:
        entry = _entry_from(row, f"{path}, line {lineno}")
        if entry.id in seen:
            raise KnowledgeBaseError(f"{path}, line {lineno}: duplicate id {entry.id!r} "
                                     f"(first used on line {seen[entry.id]}); ids must be unique")
        seen[entry.id] = lineno
        entries.append(entry)
    return entries

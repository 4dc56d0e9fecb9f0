"""A stored turn's recall entry as rows the database can search (lesson 11): one per piece, one per side.

``recall_vectors`` keeps each embedded turn's vectors as one float32 blob (what a restore hands back to
the recall index). For a search that runs in the database the store also keeps:

* ``recall_pieces``: one row per embedded piece - the turn, the piece's number, its side (``USER`` or
  ``ASSISTANT``, as ``RecallIndex`` ranks them), whether it is a tool's answer, the model, ``dim`` and
  the vector (float32 bytes; on PostgreSQL with pgvector also a ``vector`` column under an HNSW index);
* ``recall_lines``: one row per side of a turn - the quote lines of that side (what a search hands back)
  and its words (what the full-text index reads: FTS5 on SQLite, a ``tsvector`` on PostgreSQL), with the
  stems they fold to (``helpers.core.words.indexed_words``), so a search finds another form of a word.

Both are derived from the turn row's memory part (``body["memory"]["recall"]``: quote, pieces, how many
of them are the assistant's words or a tool's answer) and the turn's vector row, by ``recall_rows``;
the session stores write them in the transaction that writes the vectors, and their migration derives
them for vectors stored before (nothing is embedded again).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, NamedTuple

from helpers.core.words import indexed_words
from helpers.memory.recall_index import ASSISTANT, USER, side_lines


class PieceRow(NamedTuple):
    """One embedded piece: (turn_id, piece, side, answer, model, dim, vector bytes)."""

    turn_id: int
    piece: int
    side: int
    answer: int
    model: str
    dim: int
    vector: bytes


class LineRow(NamedTuple):
    """One side of a turn: (turn_id, side, quote lines, words for the full-text index)."""

    turn_id: int
    side: int
    quote: str
    words: str


PIECE_COLUMNS = "user_id, session_id, turn_id, piece, side, answer, model, dim, vector"
LINE_COLUMNS = "user_id, session_id, turn_id, side, quote, words"


def recall_part(body: str) -> dict | None:
    """The recall entry of a stored turn body (its quote and pieces), or None when the turn has none."""
    try:
        part = (json.loads(body).get("memory") or {}).get("recall")
    except (ValueError, AttributeError):
        return None
    if not isinstance(part, dict) or not isinstance(part.get("texts"), list) or not isinstance(
            part.get("quote"), str):
        return None
    return part


def side_quotes(part: dict) -> dict[int, str]:
    """The quote lines of each side: the user's line; the assistant's lines (a tool's answer: the whole turn)."""
    lines = part["quote"].split("\n")
    out = {USER: lines[0]}
    if len(lines) > 1:
        out[ASSISTANT] = part["quote"] if part.get("answers") else "\n".join(lines[1:])
    return out


def recall_rows(turn_id: int, part: dict, model: str, dim: int, blob: bytes) -> tuple[list[PieceRow], list[LineRow]]:
    """The piece rows and line rows of one turn, from its recall entry and its vector row's blob.

    A blob that does not hold one vector of ``dim`` numbers per piece gives no rows (the restore path
    reports such a row; a search simply does not find the turn until it is embedded again)."""
    texts = part["texts"]
    size = 4 * dim
    if dim < 1 or len(blob) != size * len(texts):
        return [], []
    answers, assistant = int(part.get("answers") or 0), int(part.get("assistant") or 0)
    said = len(texts) - answers - assistant  # pieces before this are the user's
    pieces = [PieceRow(turn_id, n, USER if n < said else ASSISTANT, int(n >= len(texts) - answers), model, dim,
                       bytes(blob[n * size:(n + 1) * size])) for n in range(len(texts))]
    words = side_lines(part["quote"])
    quotes = side_quotes(part)
    sides = sorted({p.side for p in pieces})
    lines = [LineRow(turn_id, side, _text(quotes.get(side, quotes[USER])), _text(indexed_words(words.get(side, ""))))
             for side in sides]
    return pieces, lines


def _text(text: str) -> str:
    """Text both databases hold: NUL (which PostgreSQL text cannot) becomes U+FFFD in these derived rows."""
    return text.replace("\x00", "\ufffd")


def rows_for_turns(bodies: Iterable[tuple[int, str]], vectors: dict[int, tuple[str, int, bytes]]
                   ) -> tuple[list[PieceRow], list[LineRow]]:
    """Piece and line rows of every turn in ``bodies`` ((turn_id, body) pairs) that has a vector row."""
    pieces: list[PieceRow] = []
    lines: list[LineRow] = []
    for turn_id, body in bodies:
        part = recall_part(body) if turn_id in vectors else None
        if part is None:
            continue
        model, dim, blob = vectors[turn_id]
        p, l = recall_rows(turn_id, part, model, dim, bytes(blob))
        pieces += p
        lines += l
    return pieces, lines


def write_recall_rows(execute: Any, executemany: Any, user_id: str, session_id: str,
                      vectors: dict[int, tuple[str, int, bytes]], insert_pieces: Any = None) -> int:
    """Replace the piece and line rows of these turns (``vectors``: turn id -> (model, dim, blob)) in the
    caller's transaction; the turn bodies are read from ``session_turns``. Returns the pieces written.

    ``insert_pieces(executemany, rows)`` writes the piece rows (a backend adds its own columns)."""
    ids = sorted(vectors)
    bodies: list[tuple[int, str]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        bodies += execute(f"SELECT turn_id, body FROM session_turns WHERE user_id = ? AND session_id = ? AND "
                          f"turn_id IN ({marks})", (user_id, session_id, *chunk)).fetchall()
        for table in ("recall_pieces", "recall_lines"):  # fixed names from this module
            execute(f"DELETE FROM {table} WHERE user_id = ? AND session_id = ? AND turn_id IN ({marks})",
                    (user_id, session_id, *chunk))
    pieces, lines = rows_for_turns(bodies, vectors)
    if pieces:
        rows = [(user_id, session_id, *p) for p in pieces]
        if insert_pieces is None:
            executemany(f"INSERT INTO recall_pieces ({PIECE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        else:
            insert_pieces(executemany, rows)
    if lines:
        executemany(f"INSERT INTO recall_lines ({LINE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                    [(user_id, session_id, *l) for l in lines])
    return len(pieces)


def backfill(execute: Any, executemany: Any, insert_pieces: Any = None) -> int:
    """Derive the piece and line rows of every stored vector row (a migration's data step); returns pieces.

    Reads one session at a time, so the memory it needs is one session's vectors."""
    sessions = execute("SELECT DISTINCT user_id, session_id FROM recall_vectors ORDER BY user_id, session_id"
                       ).fetchall()
    written = 0
    for user_id, session_id in sessions:
        vectors = {turn_id: (model, dim, bytes(blob)) for turn_id, model, dim, blob in execute(
            "SELECT turn_id, model, dim, vector FROM recall_vectors WHERE user_id = ? AND session_id = ?",
            (user_id, session_id)).fetchall()}
        written += write_recall_rows(execute, executemany, user_id, session_id, vectors, insert_pieces)
    return written

"""A session snapshot as database rows, and back (lesson 11): the one encoding both backends store.

A session is stored under ``(user_id, session_id)`` as:

* a **header** (JSON): the snapshot's small fields - system prompt, limits, the window's turn ids,
  ``next_id``, the ``memory`` field with any summary or profile - and ``lead``, the messages before
  the first turn (none in a ChatSession). It never lists all turns, so it does not grow with the
  history. (Headers written before schema version 3 also list ``dropped_ids`` and ``record_ids``;
  a header still does when a snapshot keeps those turns out of ascending order.)
* one **row per turn**: ``(turn_id, state, question, body, digest)``. ``body`` is the turn's JSON -
  ``{"kept": messages}`` while it is in the window or ``{"dropped": {"messages", "tokens"}}`` once
  trimming dropped it, plus ``"record"`` (its TurnRecord) and ``"memory"`` (what the memory keeps of
  that turn: its recall entry, its profile statements; the snapshot's ``memory["turns"][id]``) -
  ``state`` says which, ``question`` is shown in listings and ``digest`` is a SHA-256 of the body.
  A memory whose state has per-turn parts (``"turns"``) keeps only its shared part in the header
  (``"turns"`` left empty there), so the header stays small however long the conversation.
* one **recall-vector row** per embedded turn (``VECTOR_COLUMNS``): the embedding model, the vector
  size, a digest of the embedded pieces and the vectors as float32 bytes.

``encode_state`` encodes a whole snapshot (a first save, a fork, a store-to-store copy);
``encode_changes`` encodes what changed since the stored revision (``ChatSession.changes_since``:
the new turn's row, the row of a turn trimming just dropped, the rows of undone turns to delete,
and the header), which is what a save after a turn writes. Both build rows with the same
functions, so a turn is stored the same way whichever path wrote it. ``decode_state`` is the
inverse: rows that are not what the encoder wrote raise SessionStoreError naming what is wrong.

Text is stored as it is (NUL included) except lone surrogates, which become U+FFFD (``storable_text``).
"""
from __future__ import annotations

import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from helpers.chat.history import split_turns
from helpers.memory.recall_index import RecallWarning
from helpers.chat.chat_session import ChatSession
from helpers.chat.snapshot import SnapshotChanges
from helpers.sessions.protocol import SessionDamagedError, SessionStoreError

Row = tuple[int, str, str, str, str]  # (turn_id, state, question, body, digest)
VectorRow = tuple[int, str, int, str, bytes]  # (turn_id, model, dim, source digest, float32 bytes)
VECTOR_COLUMNS = "turn_id, model, dim, source, vector"  # the order StoredSession.vectors rows use


@dataclass(frozen=True)
class EncodedSession:
    """A whole snapshot as a header and one row per turn (``Row``), plus the recall vectors (``VectorRow``)."""

    header: str
    rows: list[Row]
    title: str
    turns: int
    dropped: int
    vectors: list[VectorRow] | None = None


@dataclass(frozen=True)
class EncodedChanges:
    """What changed since the stored revision: the new header, rows to insert or replace, turn ids whose
    rows go (with their recall vectors), the new counts, and the recall vectors (None: no recall index)."""

    header: str
    rows: list[Row]
    gone: list[int]
    turns: int
    dropped: int
    vectors: list[VectorRow] | None = None


# ---------------------------------------------------------------- text any database can hold

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` with each lone surrogate (half of a broken UTF-16 pair, not valid Unicode) replaced by U+FFFD.

    No database, and no UTF-8 request body, can hold a lone surrogate; a reply that holds one
    (a server's broken escape) is stored - and continued - with the replacement character.
    """
    return _LONE_SURROGATE.sub("\ufffd", text)


def has_lone_surrogates(value: Any) -> bool:
    """True when a string anywhere in ``value`` (JSON-ready data such as a snapshot) holds a lone surrogate."""
    return _LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False, default=str)) is not None


def dumps(value: Any) -> str:
    """Compact JSON that any database can store: lone surrogates (only ever inside strings) become U+FFFD."""
    return storable_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


# ---------------------------------------------------------------- snapshot -> rows

def _state_of(session: ChatSession | dict) -> dict:
    state = session.snapshot() if hasattr(session, "snapshot") else session
    if not isinstance(state, dict) or not isinstance(state.get("messages"), list) \
            or not isinstance(state.get("turn_ids"), list):
        raise SessionStoreError("save() needs a ChatSession or its snapshot() dict "
                                "(with 'messages' and 'turn_ids')")
    return state


def _ascending(ids: list) -> bool:
    return all(a < b for a, b in zip(ids, ids[1:]))


def _header(fields: dict, lead: list, dropped_ids: list | None = None, record_ids: list | None = None) -> str:
    """The header row: the snapshot's small fields and ``lead``; the id lists only when given (see the module)."""
    header = {k: v for k, v in fields.items() if k not in ("messages", "turns", "dropped")}
    header["lead"] = lead
    if dropped_ids is not None or record_ids is not None:
        header.update(dropped_ids=dropped_ids or [], record_ids=record_ids or [])
    return dumps(header)


def turn_row(turn_id: int, body: dict) -> Row:
    """One turn's row from its parts (``kept`` or ``dropped``, and ``record``), as every save writes it."""
    text = dumps(body)
    kind = "kept" if "kept" in body else "dropped" if "dropped" in body else "record" if "record" in body \
        else "memory"
    first = (body.get("kept") or (body.get("dropped") or {}).get("messages") or [{}])[0]
    question = body["record"]["question"] if "record" in body else str(first.get("content") or "")
    return turn_id, kind, storable_text(str(question)[:500]), text, hashlib.sha256(text.encode()).hexdigest()


def title_of(rows: Sequence[Row]) -> str:
    """A session's title: the first non-empty question of its rows (in turn order), up to 80 characters."""
    return next((r[2] for r in rows if r[2]), "")[:80]


def encode_state(session: ChatSession | dict) -> EncodedSession:
    """Split a snapshot into a header and per-turn rows (raises SessionStoreError if it is inconsistent)."""
    state = _state_of(session)
    lead, chunks = split_turns(state["messages"])
    ids = list(state["turn_ids"])
    if len(chunks) != len(ids):
        raise SessionStoreError(f"snapshot is inconsistent: {len(chunks)} turns in 'messages' but "
                                f"{len(ids)} turn ids; take a fresh session.snapshot()")
    bodies: dict[int, dict] = {}

    def put(turn_id: Any, slot: str, value: Any) -> None:
        if type(turn_id) is not int:
            raise SessionStoreError(f"snapshot turn id {turn_id!r} is not an integer")
        body = bodies.setdefault(turn_id, {})
        if slot in body:
            raise SessionStoreError(f"snapshot is inconsistent: turn {turn_id} appears twice as {slot!r}")
        body[slot] = value

    for turn_id, chunk in zip(ids, chunks, strict=True):
        put(turn_id, "kept", chunk)
    dropped = state.get("dropped") or []
    for item in dropped:
        put(item["turn_id"], "dropped", {"messages": item["messages"], "tokens": item["tokens"]})
        if "kept" in bodies[item["turn_id"]]:
            raise SessionStoreError(f"snapshot is inconsistent: turn {item['turn_id']} "
                                    "is both kept and dropped")
    records = state.get("turns") or []
    for record in records:
        put(record["turn_id"], "record", record)
    memory = state.get("memory")
    parts = memory.get("turns") if isinstance(memory, dict) else None
    if isinstance(parts, dict) and parts:  # each turn's part goes with its row; the header keeps the rest
        for key, part in parts.items():
            try:
                turn_id = int(key)
            except (TypeError, ValueError):
                raise SessionStoreError(f"snapshot memory names turn {key!r}, not a whole number") from None
            put(turn_id, "memory", part)
        state = {**state, "memory": {**memory, "turns": {}}}
    dropped_ids, record_ids = [d["turn_id"] for d in dropped], [r["turn_id"] for r in records]
    listed = not (_ascending(dropped_ids) and _ascending(record_ids))  # else the rows say it (decode_state)
    header = _header(state, lead, *((dropped_ids, record_ids) if listed else ()))
    rows = [turn_row(turn_id, bodies[turn_id]) for turn_id in sorted(bodies)]
    vectors = encode_vectors(session) if not isinstance(session, dict) else None
    return EncodedSession(header, rows, title_of(rows), len(ids), len(dropped), vectors)


def encode_changes(changes: SnapshotChanges, session: Any = None) -> EncodedChanges:
    """The rows of a save that writes only what changed (``ChatSession.changes_since``); ``session``
    supplies the recall vectors."""
    rows, gone = [], []
    for turn_id in sorted(changes.turns):
        body = changes.turns[turn_id]
        if body:
            rows.append(turn_row(turn_id, body))
        else:
            gone.append(turn_id)
    vectors = encode_vectors(session, unsaved=True) if session is not None else None
    return EncodedChanges(_header(changes.fields, changes.lead), rows, gone, changes.kept, changes.dropped,
                          vectors)


# ---------------------------------------------------------------- rows -> snapshot

def damaged(name: str, what: str) -> SessionDamagedError:
    """The error for stored data that is not what the encoder wrote."""
    return SessionDamagedError(f"{name} is damaged in the database: {what}; it was not loaded "
                               "- restore the database from a backup, or delete that session")


def body_digest(body: str) -> str:
    """The digest a turn row's ``digest`` column holds: SHA-256 of its body, as ``turn_row`` wrote it."""
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def altered_turns(bodies: dict[int, Any], digests: dict[int, Any]) -> tuple[int, ...]:
    """Ids of the turn rows whose body no longer matches the digest saved with it (changed outside the store)."""
    return tuple(sorted(turn_id for turn_id, body in bodies.items()
                        if not isinstance(body, str) or digests.get(turn_id) != body_digest(body)))


def check_unaltered(altered: Sequence[int], name: str) -> None:
    """Raise SessionDamagedError naming the session when a turn row was changed after it was saved.

    A memory part removed from a row, or changed, is caught here: the row's digest covers all of it.
    (A turn written by a writer without that memory has no part, and a digest that says so.)"""
    if altered:
        shown = ", ".join(map(str, altered[:8])) + (", ..." if len(altered) > 8 else "")
        rows = "the row of turn" if len(altered) == 1 else "the rows of turns"
        raise damaged(name, f"{rows} {shown} changed after it was saved (its digest no longer matches: "
                            "a memory part or a message removed or edited outside the store)")


def _parse(name: str, where: str, text: Any, kind: type) -> Any:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as err:
        raise damaged(name, f"its {where} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise damaged(name, f"its {where} is a JSON {type(value).__name__}, not a {kind.__name__}")
    return value


def _check_list(name: str, state: dict, key: str, item: type) -> list:
    value = state.get(key)
    if not isinstance(value, list) or not all(type(v) is item for v in value):
        raise damaged(name, f"{key!r} in its header is {value!r:.80}, not a list of {item.__name__}")
    return value


def decode_state(header: str, bodies: dict[int, str], name: str = "the stored session") -> dict:
    """Rebuild the exact snapshot from a header and ``{turn_id: body}`` (inverse of ``encode_state``).

    Rows that are not what ``encode_state`` wrote (bad JSON, wrong types, missing keys) raise a
    SessionStoreError naming ``name`` and what is wrong.
    """
    state = _parse(name, "header", header, dict)
    parsed = {turn_id: _parse(name, f"turn {turn_id}", body, dict) for turn_id, body in bodies.items()}
    for key in ("lead", "turn_ids", "dropped_ids", "record_ids"):
        if key in state or key in ("lead", "turn_ids"):  # headers since schema 3 leave the id lists out
            _check_list(name, state, key, dict if key == "lead" else int)

    def part(turn_id: int, slot: str, kind: type) -> Any:
        value = parsed.get(turn_id, {}).get(slot)
        if not isinstance(value, kind):
            problem = "is missing" if value is None else f"is a {type(value).__name__}, not a {kind.__name__}"
            raise damaged(name, f"the {slot!r} data of turn {turn_id} {problem}")
        return value

    def listed(key: str, slot: str) -> list[int]:
        ids = state.pop(key, None)
        return ids if ids is not None else sorted(t for t, body in parsed.items() if slot in body)

    for turn_id, body in parsed.items():
        if "memory" in body and not isinstance(body["memory"], dict):
            raise damaged(name, f"the 'memory' data of turn {turn_id} is a {type(body['memory']).__name__}, "
                                "not a dict")
    messages = list(state.pop("lead"))
    for turn_id in state["turn_ids"]:
        messages += part(turn_id, "kept", list)
    dropped = [{"turn_id": i, **part(i, "dropped", dict)} for i in listed("dropped_ids", "dropped")]
    records = [part(i, "record", dict) for i in listed("record_ids", "record")]
    state.update(messages=messages, turns=records, dropped=dropped)
    memory = state.get("memory")
    parts = {str(i): parsed[i]["memory"] for i in sorted(parsed) if "memory" in parsed[i]}
    if isinstance(memory, dict) and isinstance(memory.get("turns"), dict):  # each turn's part, from its row
        memory["turns"] = parts
    elif parts and (memory is None or memory == {}):
        # A writer without that memory saved the header before writers carried the memory through: the
        # turn parts are intact (the summary is gone); the turns it added, which have none, are listed as
        # unread, so a memory that reads the parts reads those turns again.
        added = sorted(i for i, body in parsed.items() if str(i) not in parts and ("kept" in body or "dropped" in body))
        state["memory"] = {"turns": parts, **({"unread": added} if added else {})}
    elif parts and isinstance(memory, dict):  # a whole memory state in the header, and parts in the rows
        state["memory"] = {**memory, "turns": parts}
    elif parts:
        raise damaged(name, f"its header's memory state is a {type(memory).__name__}, not a dict, "
                            "while its turn rows hold memory parts")
    return state


# ---------------------------------------------------------------- recall vectors <-> rows

def recall_index(session: Any) -> Any:
    """The session's recall index (``session.memory.recall``), or None when it has none."""
    return getattr(getattr(session, "memory", None), "recall", None)


def pieces_digest(pieces: Sequence[str]) -> str:
    """A digest of the texts a turn's vectors were embedded from (a stored vector fits only these)."""
    return hashlib.sha256(dumps(list(pieces)).encode()).hexdigest()


def encode_vectors(session: Any, *, unsaved: bool = False) -> list[VectorRow] | None:
    """Recall vectors as (turn_id, model, dim, source digest, float32 bytes) rows; None without an index.

    ``unsaved=True``: only those the index has not been told are stored (``RecallIndex.vectors_saved``)."""
    index = recall_index(session)
    if index is None:
        return None
    if not index.rows:
        return []  # nothing embedded yet
    model, vectors = index.export_vectors(unsaved=unsaved)
    return [(turn_id, model, int(matrix.shape[1]), pieces_digest(index.texts[turn_id]),
             np.ascontiguousarray(matrix, dtype="<f4").tobytes())
            for turn_id, matrix in sorted(vectors.items()) if turn_id in index.texts]


def import_stored_vectors(session: Any, rows: Sequence[tuple]) -> int:
    """Hand stored vector rows to the session's recall index; returns how many turns it took.

    Rows of another embedding model, or whose pieces changed since they were embedded, are left
    out (those turns are embedded again at the next search); a damaged row is reported with a
    RecallWarning and left out too.
    """
    index = recall_index(session)
    if index is None or not rows:
        return 0
    by_model: dict[str, dict[int, np.ndarray]] = {}
    for row in rows:
        turn_id, model, dim, source, blob = row
        pieces = index.texts.get(turn_id) if type(turn_id) is int else None
        if pieces is None or not isinstance(source, str) or source != pieces_digest(pieces):
            continue
        problem = _vector_problem(model, dim, blob, len(pieces))
        if problem:
            warnings.warn(f"the stored recall vectors of turn {turn_id} are damaged ({problem}); they were "
                          "ignored and the turn will be embedded again", RecallWarning, stacklevel=2)
            continue
        by_model.setdefault(model, {})[turn_id] = np.frombuffer(bytes(blob), dtype="<f4").reshape(-1, dim)
    return sum(index.import_vectors(model, vectors) for model, vectors in by_model.items())


def _vector_problem(model: Any, dim: Any, blob: Any, pieces: int) -> str | None:
    """What is wrong with one stored vector row (None: float32 vectors of ``dim`` numbers, one per piece)."""
    if not isinstance(model, str) or not model:
        return f"its model name is {model!r:.40}"
    if type(dim) is not int or dim < 1:
        return f"its vector size is {dim!r:.40}, not a whole number from 1"
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        return f"its vectors are stored as {type(blob).__name__}, not bytes"
    size = len(bytes(blob))
    if not size or size % (4 * dim) or size // (4 * dim) != pieces:
        return f"{size} bytes for {pieces} vectors of {dim} numbers"
    if not np.isfinite(np.frombuffer(bytes(blob), dtype="<f4")).all():
        return "its vectors hold numbers that are not finite"
    return None

"""LoCoMo for the memory benchmark: loading, turning dialog into turns, scoring, and the baselines' parts.

The reusable half of ``benchmarks/locomo_eval.py`` (kept apart so a test or a notebook can use it):

- ``load_folder(path)`` finds the release's conversations (``<id>.json`` files, as in
  ``data/multimodal_dialog/locomo10_v2/``, or the one-file ``locomo10.json`` list) and returns
  ``Conversation`` objects; ``parse_conversation`` reads one conversation's JSON;
- ``conversation_turns`` makes the turns the memory is fed: each pair of dialog lines of a session is one
  turn (the pair's first line as the user's message, the second as the assistant's), every line as
  ``"Name: text"`` with an image's caption as text, the session's date on a line of its own before the
  session's first line; a session with an odd number of lines ends with a turn of one user message;
- ``evidence_found`` / ``date_in_context``: the scoring (a line counts as found when its whole text is in
  the context, compared lower-cased with runs of white space as one space; a date counts in any of its
  usual spellings, so a memory that writes dates its own way is scored fairly);
- ``BM25`` and ``fill_lines``: the lexical baseline and the "best first until full" context the
  baselines send;
- ``token_f1``: answer F1 as in the LoCoMo paper (SQuAD normalisation, no stemming).

Nothing here depends on which questions a conversation asks: the held-out half is read with the same code.
"""
from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

TUNING = (26, 30, 41, 42, 43)
HELD_OUT = (44, 47, 48, 49, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")
TURN_SPACING = timedelta(seconds=30)  # a turn's time: its session's date plus this much per earlier turn


def half_of(conversation_id: int) -> str:
    """"tuning", "held-out" or "other" (an id outside the release's ten, e.g. a test's)."""
    if conversation_id in TUNING:
        return "tuning"
    if conversation_id in HELD_OUT:
        return "held-out"
    return "other"


@dataclass
class Line:
    """One dialog line."""

    dia_id: str
    speaker: str
    text: str
    session: int
    date: str  # the session's date as the data writes it
    caption: str = ""  # the shared image's caption (``blip_caption``), if any

    def rendered(self) -> str:
        """The line as the memory and the baselines see it: ``Name: text`` and the image as text."""
        out = f"{self.speaker}: {self.text}".rstrip()
        if self.caption:
            out += f" [shares an image: {self.caption}]"
        return out


@dataclass
class Question:
    """One LoCoMo question with the dialog lines that hold its answer."""

    text: str
    answer: str
    category: int
    evidence: list[str]  # dia_ids that exist in the conversation
    raw_evidence: list[str] = field(default_factory=list)  # as the data writes them


@dataclass
class Conversation:
    """One two-person conversation: its sessions' lines in order and its questions."""

    id: int
    speakers: tuple[str, str]
    lines: list[Line]
    questions: list[Question]

    @property
    def by_id(self) -> dict[str, Line]:
        """Each line by its ``dia_id``."""
        return {line.dia_id: line for line in self.lines}

    @property
    def half(self) -> str:
        return half_of(self.id)


@dataclass
class Turn:
    """One turn fed to the memory: its messages, the lines it holds and when it was said."""

    turn_id: int
    messages: list[dict]
    line_ids: list[str]
    session: int
    date: str
    created_at: datetime | None


def parse_date(text: str) -> datetime | None:
    """A session date such as ``1:56 pm on 8 May, 2023`` as a UTC datetime (None if it is not one)."""
    cleaned = " ".join(str(text or "").split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(items: Iterable) -> list[str]:
    """Evidence ids as ``D<session>:<line>``, from entries such as ``"D8:6; D9:17"`` or ``"D:11:26"``."""
    out: list[str] = []
    for item in items or []:
        for session, line in _EVIDENCE.findall(str(item)):
            dia_id = f"D{int(session)}:{int(line)}"
            if dia_id not in out:
                out.append(dia_id)
    return out


def _caption(turn: dict) -> str:
    caption = turn.get("blip_caption") or ""
    if not caption and turn.get("img_file"):  # some versions name the file only
        files = turn["img_file"] if isinstance(turn["img_file"], list) else [turn["img_file"]]
        caption = "image " + ", ".join(map(str, files))
    if isinstance(caption, list):
        caption = "; ".join(map(str, caption))
    return " ".join(str(caption).split())


def parse_conversation(data: dict, conversation_id: int) -> Conversation:
    """One conversation from its JSON (the ``<id>.json`` layout, or a ``locomo10.json`` sample)."""
    body = data.get("conversation", data)
    numbers = sorted(int(m.group(1)) for key in body if (m := re.fullmatch(r"session_(\d+)", key)))
    lines: list[Line] = []
    for n in numbers:
        date = " ".join(str(body.get(f"session_{n}_date_time", "")).split())
        for turn in body[f"session_{n}"] or []:
            lines.append(Line(str(turn["dia_id"]), str(turn.get("speaker", "")), " ".join(
                str(turn.get("text", "")).split()), n, date, _caption(turn)))
    known = {line.dia_id for line in lines}
    questions = []
    for qa in data.get("qa", []):
        raw = [str(e) for e in qa.get("evidence", []) or []]
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(Question(str(qa["question"]), str(answer), int(qa["category"]),
                                  [e for e in parse_evidence(raw) if e in known], raw))
    speakers = (str(body.get("speaker_a", "")), str(body.get("speaker_b", "")))
    return Conversation(conversation_id, speakers, lines, questions)


def load_folder(folder: str | Path, ids: Sequence[int] | None = None) -> list[Conversation]:
    """The conversations under ``folder`` (searched recursively), in id order; ``ids`` picks some."""
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"no LoCoMo data at {root}: clone snap-research/locomo and unzip data/locomo10.zip")
    found: dict[int, Conversation] = {}
    for path in sorted(root.rglob("*.json")):
        if re.fullmatch(r"\d+", path.stem):
            cid = int(path.stem)
            if ids is None or cid in ids:
                found.setdefault(cid, parse_conversation(json.loads(path.read_text(encoding="utf-8")), cid))
        elif path.name == "locomo10.json":
            for sample in json.loads(path.read_text(encoding="utf-8")):
                cid = int(re.sub(r"\D", "", str(sample.get("sample_id", ""))) or -1)
                if ids is None or cid in ids:
                    found.setdefault(cid, parse_conversation(sample, cid))
    if not found:
        raise FileNotFoundError(f"no LoCoMo conversations (<id>.json or locomo10.json) under {root}")
    missing = [i for i in (ids or []) if i not in found]
    if missing:
        raise FileNotFoundError(f"conversations {missing} are not under {root}")
    return [found[i] for i in sorted(found)]


def date_line(date: str) -> str:
    """The line put before a session's first line."""
    return f"[Session date: {date}]"


def conversation_turns(conversation: Conversation) -> list[Turn]:
    """The turns the memory is fed: pairs of lines per session (see the module)."""
    turns: list[Turn] = []
    sessions: dict[int, list[Line]] = {}
    for line in conversation.lines:
        sessions.setdefault(line.session, []).append(line)
    for n, lines in sessions.items():
        start = parse_date(lines[0].date)
        for k in range(0, len(lines), 2):
            pair = lines[k:k + 2]
            first = pair[0].rendered()
            if k == 0 and pair[0].date:
                first = date_line(pair[0].date) + "\n" + first
            messages = [{"role": "user", "content": first}]
            if len(pair) > 1:
                messages.append({"role": "assistant", "content": pair[1].rendered()})
            when = start + TURN_SPACING * (k // 2) if start is not None else None
            turns.append(Turn(len(turns), messages, [line.dia_id for line in pair], n, pair[0].date, when))
    return turns


# ---------------------------------------------------------------------------------------------- scoring
def normal(text: str) -> str:
    """Lower-cased, every run of white space one space (how texts are compared)."""
    return " ".join(str(text).lower().split())


def evidence_found(question: Question, lines: dict[str, Line], context: str) -> list[bool]:
    """For each evidence line: is its whole text in ``context`` (already ``normal``)?"""
    return [normal(lines[e].text or lines[e].caption) in context for e in question.evidence]


def date_spellings(date: str) -> list[str]:
    """Ways a context may write a session's day: as the data does, and in common formats."""
    out = [normal(date)]
    when = parse_date(date)
    if when is not None:
        day, month, year = when.day, when.strftime("%B").lower(), when.year
        out += [f"{day} {month}, {year}", f"{day} {month} {year}", f"{month} {day}, {year}",
                f"{month} {day} {year}", when.strftime("%Y-%m-%d"), f"{day} {month[:3]} {year}",
                f"{day} {month[:3]}, {year}", f"{month[:3]} {day}, {year}"]
    return list(dict.fromkeys(out))


def date_in_context(date: str, context: str) -> bool:
    """Is this session date in ``context`` (already ``normal``), in any of ``date_spellings``?"""
    return any(s and re.search(r"(?<![0-9a-z])" + re.escape(s) + r"(?![0-9a-z])", context)
               for s in date_spellings(date))  # whole words: 8 May is not inside 18 May


# ------------------------------------------------------------------------------------------- baselines
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits)."""
    return _WORD.findall(str(text).lower())


class BM25:
    """Okapi BM25 over a fixed list of documents (k1 = 1.5, b = 0.75, the usual smoothed idf)."""

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = [Counter(words(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.average = sum(self.lengths) / max(len(self.docs), 1) or 1.0
        df = Counter(w for c in self.docs for w in c)
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """The score of every document for ``query`` (repeated query words count once)."""
        terms = [w for w in dict.fromkeys(words(query)) if w in self.idf]
        out = []
        for counts, length in zip(self.docs, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self.average)
            out.append(sum(self.idf[w] * counts[w] * (self.k1 + 1) / (counts[w] + norm)
                           for w in terms if w in counts))
        return out

    def ranking(self, query: str) -> list[int]:
        """Document indices, best first (ties: earlier first)."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


BASELINE_HEADER = "Lines of the earlier conversation, each with its session date:"


def baseline_line(line: Line) -> str:
    """A line as a baseline quotes it: its session date, then ``Name: text``."""
    return f"[{line.date}] {line.rendered()}" if line.date else line.rendered()


def fill_lines(system: list[dict], lines: Sequence[Line], ranking: Sequence[int], question: dict,
               budget: int | None, count_message: Callable[[dict], int], count_text: Callable[[str], int],
               priming: int) -> list[dict]:
    """The system messages and one block of lines, taken best first until the next does not fit ``budget``.

    The chosen lines are sent in conversation order. The block's cost is checked with ``count_message``
    (a line that would push the request over is dropped), so the result never exceeds the budget."""
    fixed = sum(map(count_message, system)) + count_message(question) + priming
    header = {"role": "system", "content": BASELINE_HEADER}
    room = None if budget is None else budget - fixed - count_message(header)
    chosen: list[int] = []
    used = 0
    for i in ranking:
        cost = count_text(baseline_line(lines[i])) + 1
        if room is not None and used + cost > room:
            break
        chosen.append(i)
        used += cost
    while chosen:
        block = {"role": "system", "content": "\n".join(
            [BASELINE_HEADER] + [baseline_line(lines[i]) for i in sorted(chosen)])}
        if budget is None or fixed + count_message(block) <= budget:
            return list(system) + [block]
        chosen.pop()  # the estimate was off: drop the weakest line
    return list(system)


# ----------------------------------------------------------------------------------------- answer F1
def _normal_answer(text: str) -> str:
    text = str(text).lower().replace(",", " ")
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def _f1(prediction: str, truth: str) -> float:
    p, t = _normal_answer(prediction).split(), _normal_answer(truth).split()
    common = sum((Counter(p) & Counter(t)).values())
    if not p or not t or not common:
        return float(p == t)
    precision, recall = common / len(p), common / len(t)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, truth: str, category: int) -> float:
    """Answer F1 as the LoCoMo paper scores it: multi-hop answers part by part (comma-separated, each part
    scored by its best match among the prediction's parts), open-domain against the first ``;`` part."""
    truth = str(truth)
    if category == 3:
        truth = truth.split(";")[0]
    if category == 1:
        parts = [p for p in truth.split(",") if p.strip()] or [truth]
        predicted = [p for p in str(prediction).split(",") if p.strip()] or [str(prediction)]
        return sum(max(_f1(p, t) for p in predicted) for t in parts) / len(parts)
    return _f1(prediction, truth)

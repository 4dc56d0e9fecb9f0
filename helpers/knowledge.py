"""The campus knowledge base: load entries, embed them once, and search them by meaning.

``load_knowledge_base()`` reads ``data/campus_kb.jsonl``; ``KnowledgeBase`` embeds
every entry (title + text, as "passage") through the same client the notebooks
chat with, caches the vectors on disk, and answers ``search`` / ``retrieve_context``
with cosine similarity and a score threshold, so a question the campus data
cannot answer gets no hits instead of noise. ``evaluate`` measures recall@k and
MRR on ``data/retrieval_eval.jsonl``.

The module opens with the two ideas notebook 02 builds in its cells: ``cosine_top_k`` (score every
passage with one dot product, keep the best ``k`` that reach a threshold) and ``answer_with_context``
(the answering prompt). ``KnowledgeBase`` adds loading and checking the entries, a cache on disk, and
batched questions around them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from helpers.client import chat
from helpers.clock import WEEKDAYS
from helpers.embeddings import LOCAL_MODEL_NAME, EmbeddingError, data_file, embed_texts, local_embed
from helpers.errors import WorkshopError, WorkshopWarning

KB_FILE = "campus_kb.jsonl"
EVAL_FILE = "retrieval_eval.jsonl"
CACHE_ENV = "WORKSHOP_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/agent-memory-workshop")
CACHE_FORMAT = 1
# Cosine scores below these are treated as "the knowledge base does not know".
# local: picked from data/retrieval_eval.jsonl (benchmarks/retrieval_eval.py prints the sweep):
#   0.24-0.34 all give 39/44 questions right (top-3 has a relevant entry, or nothing for the
#   7 unanswerable ones); 0.30 sits in the middle of that plateau.
# NIM nv-embedqa-e5-v5: provisional, not yet measured here; rerun the benchmark with a key.
DEFAULT_THRESHOLDS = {LOCAL_MODEL_NAME: 0.30, "nvidia/nv-embedqa-e5-v5": 0.30}
FALLBACK_THRESHOLD = 0.30
_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TIME_RE = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class KnowledgeBaseError(WorkshopError, ValueError):
    """The knowledge base, its cache or a question could not be used; the message says why and what to do."""


class CacheWarning(WorkshopWarning):
    """A cached embedding file was unusable and the passages are being embedded again."""


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


@dataclass(frozen=True)
class Hit:
    """One search result with its cosine similarity to the question."""

    id: str
    title: str
    text: str
    score: float


# ------------------------------------------------------------------ the core: rank by meaning, then answer

def cosine_top_k(query_vector: np.ndarray, matrix: np.ndarray, k: int,
                 threshold: float) -> list[tuple[int, float]]:
    """Indexes and scores of the ``k`` rows of ``matrix`` most similar to ``query_vector``, best first.

    All vectors have length 1, so a dot product is the cosine similarity. Rows scoring below
    ``threshold`` are left out: a question nothing answers gets an empty list, not the least bad rows.
    """
    scores = matrix @ query_vector                   # one dot product per passage
    best = np.argsort(-scores, kind="stable")[:k]    # positions of the k highest scores, highest first
    return [(int(i), float(scores[i])) for i in best if scores[i] >= threshold]


NO_CONTEXT = "(no matching entries in the campus knowledge base)"
CONTEXT_PROMPT = (
    "You are the Larkspur University campus assistant. Answer the question using only the context entries "
    "below, and cite the id of each entry you use in square brackets, like [club-ai]. Ignore entries marked "
    "archived or outdated. If the context does not answer the question, say you don't know.\n\nContext:\n"
)


def format_context(hits: Iterable[Hit]) -> str:
    """Render hits as ``[id] title: text`` lines, or a note saying nothing matched."""
    lines = [f"[{hit.id}] {hit.title}: {hit.text}" for hit in hits]
    return "\n".join(lines) if lines else NO_CONTEXT


def answer_with_context(question: str, hits: Sequence[Hit], *, client: Any = None,
                        settings: Any = None) -> str:
    """Ask the chat model to answer ``question`` from ``hits`` only, citing entry ids."""
    messages = [{"role": "system", "content": CONTEXT_PROMPT + format_context(hits)},
                {"role": "user", "content": question}]
    return chat(messages, client=client, settings=settings).choices[0].message.content or ""


# ------------------------------------------------------------------ loading

def default_kb_path() -> Path:
    """Where the campus knowledge base ships (package data when installed, else the repo's data/)."""
    return data_file(KB_FILE)


def _read_jsonl(path: str | Path | None, default_name: str) -> tuple[Path, list[tuple[int, dict]]]:
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
        return value.strip()

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
    path, rows = _read_jsonl(path, KB_FILE)
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


def load_eval_questions(path: str | Path | None = None) -> list[dict]:
    """Read the retrieval test questions: rows of {"question": str, "relevant": [ids]}."""
    path, rows = _read_jsonl(path, EVAL_FILE)
    out = []
    for lineno, row in rows:
        question, relevant = row.get("question"), row.get("relevant")
        if not isinstance(question, str) or not question.strip():
            raise KnowledgeBaseError(f"{path}, line {lineno}: 'question' must be a non-empty string")
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise KnowledgeBaseError(f"{path}, line {lineno}: "
                                     "'relevant' must be a list of ids ([] if unanswerable)")
        out.append({"question": question, "relevant": relevant})
    return out


# ------------------------------------------------------------------ cache

def cache_dir(path: str | Path | None = None) -> Path:
    """The cache folder, created (argument, else $WORKSHOP_CACHE_DIR, else ~/.cache/agent-memory-workshop)."""
    folder = Path(path or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KnowledgeBaseError(f"cannot create the embedding cache folder {folder} "
                                 f"({exc.strerror or exc}); "
                                 f"set {CACHE_ENV} to a writable folder or pass use_cache=False") from None
    return folder


def threshold_for(model: str) -> float:
    """The default score threshold for an embedding model (scores are not comparable across models)."""
    return DEFAULT_THRESHOLDS.get(model, FALLBACK_THRESHOLD)


# ------------------------------------------------------------------ the knowledge base

@dataclass(repr=False)
class KnowledgeBase:
    """Entries plus their embedding matrix, searchable by cosine similarity.

    ``client`` is an OpenAI-compatible client (NIM or the offline stand-in); with
    ``client=None`` the local MiniLM model is called directly (``model`` must then
    be ``LOCAL_MODEL_NAME``). Vectors are cached under ``cache_dir()``.
    """

    entries: Sequence[Entry]
    client: Any = None
    model: str = LOCAL_MODEL_NAME
    threshold: float | None = None
    use_cache: bool = True
    cache_path: str | Path | None = None
    progress: bool | None = None
    matrix: np.ndarray = field(init=False, repr=False)
    from_cache: bool = field(init=False, default=False)
    embed_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.entries = list(self.entries)
        if not self.entries:
            raise KnowledgeBaseError("the knowledge base has no entries; "
                                     "load some with load_knowledge_base()")
        ids = [e.id for e in self.entries]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise KnowledgeBaseError(f"duplicate entry id {dup!r}; ids must be unique")
        if self.client is None and self.model != LOCAL_MODEL_NAME:
            raise KnowledgeBaseError(f"model {self.model!r} needs a client; pass client=get_client(), "
                                     f"or use model={LOCAL_MODEL_NAME!r} without one")
        if self.threshold is None:
            self.threshold = threshold_for(self.model)
        self._by_id = {e.id: e for e in self.entries}
        start = time.perf_counter()
        self.matrix = self._load_or_embed()
        self.embed_seconds = time.perf_counter() - start

    @classmethod
    def load(cls, client: Any = None, *, model: str = LOCAL_MODEL_NAME, path: str | Path | None = None,
             **options: Any) -> "KnowledgeBase":
        """Load the campus entries (or ``path``) and embed them in one step."""
        return cls(load_knowledge_base(path), client, model, **options)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        source = "cache" if self.from_cache else "freshly embedded"
        return (f"KnowledgeBase({len(self.entries)} entries, model={self.model!r}, "
                f"threshold={self.threshold}, {source})")

    def get(self, entry_id: str) -> Entry:
        """The entry with this id (for its weekday, time and location fields)."""
        try:
            return self._by_id[entry_id]
        except KeyError:
            raise KnowledgeBaseError(f"no entry with id {entry_id!r}") from None

    # -- embedding
    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        if self.client is None:
            return local_embed(texts)
        return embed_texts(self.client, texts, model=self.model, input_type=input_type,
                           progress=self.progress)

    def content_hash(self) -> str:
        """A digest of the model name and every passage: the cache key."""
        digest = hashlib.sha256(f"format {CACHE_FORMAT}\nmodel {self.model}\n".encode())
        for entry in self.entries:
            digest.update(json.dumps([entry.id, entry.passage()]).encode() + b"\n")
        return digest.hexdigest()

    def cache_file(self) -> Path:
        """The file these passages' vectors are cached in."""
        safe_model = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model)
        return cache_dir(self.cache_path) / f"kb-{safe_model}-{self.content_hash()[:24]}.npy"

    def _load_or_embed(self) -> np.ndarray:
        target = self.cache_file() if self.use_cache else None
        if target is not None and target.exists():
            cached = self._read_cache(target)
            if cached is not None:
                self.from_cache = True
                return cached
        matrix = self._embed([e.passage() for e in self.entries], "passage")
        if target is not None:
            self._write_cache(target, matrix)
        return matrix

    def _read_cache(self, target: Path) -> np.ndarray | None:
        try:
            matrix = np.load(target, allow_pickle=False)
            if matrix.ndim != 2 or matrix.shape[0] != len(self.entries) or not np.all(np.isfinite(matrix)):
                raise ValueError(f"shape {matrix.shape} does not match {len(self.entries)} entries")
            return matrix.astype(np.float32, copy=False)
        except (OSError, ValueError, EOFError) as exc:
            warnings.warn(f"embedding cache {target.name} is unreadable ({exc}); embedding "
                          f"{len(self.entries)} passages again", CacheWarning, stacklevel=5)
            return None

    def _write_cache(self, target: Path, matrix: np.ndarray) -> None:
        try:
            with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".tmp", delete=False) as handle:
                np.save(handle, matrix.astype(np.float32), allow_pickle=False)
            os.replace(handle.name, target)
        except OSError as exc:
            raise KnowledgeBaseError(f"cannot write the embedding cache {target} ({exc.strerror or exc}); "
                                     f"set {CACHE_ENV} to a writable folder "
                                     "or pass use_cache=False") from None

    # -- search
    def search_many(self, queries: Sequence[str], k: int = 3,
                    threshold: float | None = None) -> list[list[Hit]]:
        """Top-``k`` hits scoring at least ``threshold`` for each query, embedded in one request."""
        queries = list(queries)
        if not isinstance(k, int) or k < 1:
            raise KnowledgeBaseError(f"k must be a positive integer, not {k!r}")
        for i, query in enumerate(queries):
            if not isinstance(query, str) or not query.strip():
                raise KnowledgeBaseError(f"question {i} is empty; ask something in words")
        if not queries:
            return []
        limit = self.threshold if threshold is None else threshold
        results = []
        for vector in self._embed(queries, "query"):
            results.append([Hit(self.entries[i].id, self.entries[i].title, self.entries[i].text,
                                round(score, 4))
                            for i, score in cosine_top_k(vector, self.matrix, k, limit)])
        return results

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> list[Hit]:
        """The best ``k`` entries for ``query`` with cosine score >= threshold (default: the model's)."""
        return self.search_many([query], k=k, threshold=threshold)[0]

    def retrieve_context(self, question: str, k: int = 3) -> list[Hit]:
        """Hits to put in a prompt for ``question`` (empty when the knowledge base has nothing relevant)."""
        return self.search(question, k=k)


# ------------------------------------------------------------------ metrics

def evaluate(kb: KnowledgeBase, eval_rows: Sequence[dict], k: int = 3,
             threshold: float | None = None) -> dict:
    """Retrieval quality on labelled questions, with the threshold applied as in real use.

    For questions with relevant ids: ``recall_at_k`` = share of a question's relevant
    ids among its returned hits, averaged; ``hit_rate_at_k`` = share of questions with
    at least one relevant hit; ``mrr`` = mean of 1/rank of the first relevant hit (0 if
    none). Questions with ``relevant == []`` are scored apart: ``unanswerable_correct``
    counts those that correctly returned nothing.
    """
    rows = list(eval_rows)
    if not rows:
        raise KnowledgeBaseError("no evaluation questions given")
    for row in rows:
        unknown = [r for r in row["relevant"] if r not in kb._by_id]
        if unknown:
            raise KnowledgeBaseError(f"question {row['question']!r} names unknown ids {unknown}")
    results = kb.search_many([row["question"] for row in rows], k=k, threshold=threshold)
    recalls, ranks, misses = [], [], []
    answerable_empty = unanswerable_correct = 0
    for row, hits in zip(rows, results, strict=True):
        got = [hit.id for hit in hits]
        relevant = set(row["relevant"])
        if not relevant:
            unanswerable_correct += not got
            if got:
                misses.append({"question": row["question"], "relevant": [], "got": got})
            continue
        answerable_empty += not got
        recalls.append(len(relevant.intersection(got)) / len(relevant))
        ranks.append(next((1.0 / (i + 1) for i, g in enumerate(got) if g in relevant), 0.0))
        if not relevant.intersection(got):
            misses.append({"question": row["question"], "relevant": sorted(relevant), "got": got})
    answerable, unanswerable = len(recalls), len(rows) - len(recalls)
    return {
        "model": kb.model, "k": k, "threshold": kb.threshold if threshold is None else threshold,
        "answerable": answerable,
        "recall_at_k": float(np.mean(recalls)) if recalls else float("nan"),
        "hit_rate_at_k": float(np.mean([r > 0 for r in ranks])) if ranks else float("nan"),
        "mrr": float(np.mean(ranks)) if ranks else float("nan"),
        "answerable_empty": answerable_empty,
        "unanswerable": unanswerable,
        "unanswerable_correct": unanswerable_correct,
        "misses": misses,
    }


__all__ = [
    "CacheWarning", "EmbeddingError", "Entry", "Hit", "KnowledgeBase", "KnowledgeBaseError", "NO_CONTEXT",
    "CONTEXT_PROMPT", "answer_with_context", "cache_dir", "cosine_top_k", "default_kb_path", "evaluate",
    "format_context", "load_eval_questions", "load_knowledge_base", "threshold_for",
]


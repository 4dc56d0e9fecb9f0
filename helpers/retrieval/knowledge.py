"""The campus knowledge base: embed its entries once, and search them by meaning.

The module opens with the two ideas notebook 02 builds in its cells: ``cosine_top_k`` (score every
passage with one dot product, keep the best ``k`` that reach a threshold) and ``answer_with_context``
(the answering prompt). ``KnowledgeBase`` adds the rest a retriever needs around them: it embeds every
entry (title + text, as "passage") through the same client the notebooks chat with, caches the vectors on
disk, and answers ``search`` / ``retrieve_context`` for many questions at once, with a score threshold so
that a question the campus data cannot answer gets no hits instead of noise.

Reading and checking the entries is ``helpers.retrieval.knowledge_files``; measuring recall@k and MRR on labelled
questions is ``helpers.retrieval.knowledge_eval``.
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

from helpers.llm.client import chat, get_settings
from helpers.retrieval.embedding_backend import embedding_client
from helpers.retrieval.embeddings import LOCAL_MODEL_NAME, embed_texts, local_embed
from helpers.core.errors import WorkshopWarning
from helpers.retrieval.knowledge_files import Entry, KnowledgeBaseError, load_knowledge_base

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


class CacheWarning(WorkshopWarning):
    """A cached embedding file was unusable and the passages are being embedded again."""


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
ANSWER_MAX_TOKENS = 300  # a cited campus answer is a few sentences; a cap keeps a small local model under a minute
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
    reply = chat(messages, client=client, settings=settings, max_tokens=ANSWER_MAX_TOKENS)  # a small model may ramble
    return reply.choices[0].message.content or ""


# ------------------------------------------------------------------ cache

def cache_dir(path: str | Path | None = None) -> Path:
    """The cache folder, created (argument, else $WORKSHOP_CACHE_DIR, else ~/.cache/agent-memory-workshop)."""
    # Not through Settings: a local knowledge base (client=None) is built with no settings at all, and
    # load_settings copies WORKSHOP_CACHE_DIR from .env into the environment like every other setting.
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

    @classmethod
    def from_settings(cls, settings: Any = None, *, client: Any = None, path: str | Path | None = None,
                      **options: Any) -> "KnowledgeBase":
        """Load and embed where the ``embeddings`` setting says (WORKSHOP_EMBEDDINGS: local, nim or server).

        ``client`` is the chat client, reused when the embeddings come from the chat server.
        """
        settings = settings or get_settings()
        target = embedding_client(settings, client)
        model = LOCAL_MODEL_NAME if target is None else settings.embedding_model
        return cls.load(target, model=model, path=path, **options)

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
        except (OSError, ValueError, EOFError) as exc:  # not a .npy file, cut short, or unreadable
            return self._unreadable_cache(target, exc)
        if matrix.ndim != 2 or matrix.shape[0] != len(self.entries) or not np.all(np.isfinite(matrix)):
            return self._unreadable_cache(target, f"shape {matrix.shape} does not match {len(self.entries)} entries")
        return matrix.astype(np.float32, copy=False)

    def _unreadable_cache(self, target: Path, problem: object) -> None:
        warnings.warn(f"embedding cache {target.name} is unreadable ({problem}); embedding "
                      f"{len(self.entries)} passages again", CacheWarning, stacklevel=6)
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

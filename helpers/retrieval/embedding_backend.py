"""Where texts are embedded: the ``embeddings`` setting (``WORKSHOP_EMBEDDINGS``), apart from the chat backend.

- ``local``: all-MiniLM-L6-v2 on this machine (``helpers.retrieval.embeddings.local_embed``); no server is asked;
- ``nim``: hosted NIM (``https://integrate.api.nvidia.com/v1`` with NVIDIA_API_KEY), whatever serves chat;
- ``server``: the chat server's own ``/v1/embeddings`` (the offline stand-in answers with MiniLM).

A local chat server (llama.cpp, Ollama) rarely serves an embedding model, so ``local`` is the default for
an openai-compatible backend (``helpers.llm.config.default_embeddings``). ``embedding_client`` is the client to
hand to ``KnowledgeBase`` or ``embed_texts`` (None means "embed locally"); ``embed`` embeds in one call.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from helpers.retrieval import embeddings  # the module: tests may replace embed_texts / local_embed
from helpers.llm.api_key import find_api_key
from helpers.llm.client import get_settings, make_client
from helpers.llm.config import NIM_BASE_URL, Settings

_clients: dict[Settings, Any] = {}


def embedding_client(settings: Settings | None = None, chat_client: Any = None) -> Any:
    """The client embeddings go through for these settings: None for ``local``, else an OpenAI client.

    ``chat_client`` (the client the chat requests use) is reused for ``server``, and for ``nim`` when
    the chat backend is NIM itself; ``nim`` with another chat backend gets its own client for hosted NIM.
    """
    settings = settings or get_settings()
    chosen = getattr(settings, "embeddings", "server")
    if chosen == "local":
        return None
    if chosen == "nim" and settings.backend != "nim":
        return _nim_client(settings)
    if chat_client is not None:
        return chat_client
    if settings not in _clients:
        _clients[settings] = make_client(settings)
    return _clients[settings]


def _nim_client(settings: Settings) -> Any:
    """A client for hosted NIM's embeddings, with NVIDIA_API_KEY (only ever sent to NVIDIA's https hosts)."""
    key, source = find_api_key()
    if not key:
        raise embeddings.EmbeddingError("WORKSHOP_EMBEDDINGS=nim needs NVIDIA_API_KEY (environment, Colab "
                                        "secret or .env); or set WORKSHOP_EMBEDDINGS=local")
    nim = Settings(backend="nim", base_url=NIM_BASE_URL, chat_model=settings.chat_model,
                   embedding_model=settings.embedding_model, timeout=settings.timeout,
                   max_retries=settings.max_retries, key_source=source, api_key=key, embeddings="nim")
    if nim not in _clients:
        _clients[nim] = make_client(nim)  # make_client checks where the key may go
    return _clients[nim]


def embed(texts: Sequence[str], input_type: str | None, *, settings: Settings | None = None,
          client: Any = None, model: str | None = None, progress: bool | None = False) -> np.ndarray:
    """Unit vectors for ``texts`` from the embedding backend the settings name (``client``: the chat client)."""
    settings = settings or get_settings()
    target = embedding_client(settings, client)
    if target is None:
        return embeddings.local_embed(list(texts))
    return embeddings.embed_texts(target, list(texts), model=model or settings.embedding_model,
                                  input_type=input_type, progress=progress)


def reset() -> None:
    """Forget the clients made here (after the settings changed; used by tests)."""
    _clients.clear()

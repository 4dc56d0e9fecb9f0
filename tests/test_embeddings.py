"""Local MiniLM embeddings and the OpenAI-compatible embedding call."""
import json
import subprocess
import sys
from pathlib import Path

import httpx2
import numpy as np
import openai
import pytest

from helpers.retrieval import embeddings
from helpers.retrieval.embeddings import (EMBEDDING_DIM, LOCAL_MODEL_NAME, MAX_SEQ_LENGTH, EmbeddingError,
                                EmbeddingTruncationWarning, embed_texts, local_embed, local_token_count)

from support import assert_no_secret, echoing_client

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


def make_client(fail_on_call: int | None = None, drop_one: bool = False):
    """An openai client whose server answers /embeddings with local_embed vectors; records requests."""
    calls: list[dict] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        calls.append(body)
        if fail_on_call is not None and len(calls) == fail_on_call:
            return httpx2.Response(500, json={"error": {"message": "model overloaded", "type": "server_error"}})
        vectors = local_embed(body["input"])
        if drop_one:
            vectors = vectors[:-1]
        return httpx2.Response(200, json={
            "object": "list", "model": body["model"],
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        })

    client = openai.OpenAI(api_key="test", base_url="http://test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    return client, calls


def test_local_embed_returns_float32_unit_rows():
    vectors = local_embed(["The AI Club meets on Thursdays.", "Where is the library?"])
    assert vectors.shape == (2, EMBEDDING_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_embed_matches_pytorch_reference_vectors():
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    with pytest.warns(EmbeddingTruncationWarning):  # the last reference sentence is over 256 tokens
        ours = local_embed(reference["sentences"])
    cosines = (ours * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    assert cosines.min() >= 0.99, dict(zip(reference["sentences"], cosines.round(4)))


def test_local_embed_keeps_input_order_across_batches():
    texts = [f"note number {i} " + "word " * (i % 7) for i in range(40)]
    forward = local_embed(texts)
    backward = local_embed(texts[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-6)


def test_local_embed_ranks_related_sentence_higher():
    query, related, unrelated = local_embed(
        ["When does the robotics club meet?", "Robot building sessions are on Wednesdays.", "The cafe sells coffee."])
    assert query @ related > query @ unrelated


def test_local_embed_of_empty_list_is_empty_matrix():
    assert local_embed([]).shape == (0, EMBEDDING_DIM)


def test_local_embed_rejects_a_bare_string():
    with pytest.raises(EmbeddingError, match="single string"):
        local_embed("hello")


def test_local_embed_rejects_empty_text_naming_its_index():
    with pytest.raises(EmbeddingError, match="text 1 is empty"):
        local_embed(["fine", "   "])


def test_long_text_is_truncated_with_a_warning_not_an_error():
    long_text = "The shuttle stops at the library and the gym. " * 80
    assert local_token_count(long_text) > MAX_SEQ_LENGTH
    with pytest.warns(EmbeddingTruncationWarning, match="truncated"):
        long_vector = local_embed([long_text])
    with pytest.warns(EmbeddingTruncationWarning):
        longer_vector = local_embed([long_text * 2])
    # only the first 256 tokens count, so doubling the text changes nothing
    np.testing.assert_allclose(long_vector, longer_vector, atol=1e-6)


def test_model_file_is_found_through_the_import_system():
    path = embeddings._model_path()
    assert path.name == "model.onnx" and path.is_file()


def test_embed_texts_matches_local_vectors_and_sends_nim_fields():
    client, calls = make_client()
    texts = ["AI Club on Thursdays", "Office hours on Tuesdays", "Library hours"]
    vectors = embed_texts(client, texts, model=LOCAL_MODEL_NAME, input_type="query")
    np.testing.assert_allclose(vectors, local_embed(texts), atol=1e-6)
    assert calls[0]["input_type"] == "query" and calls[0]["truncate"] == "END"
    assert calls[0]["model"] == LOCAL_MODEL_NAME


def test_embed_texts_splits_into_batches():
    client, calls = make_client()
    vectors = embed_texts(client, [f"text {i}" for i in range(5)], model="m", input_type="passage", batch_size=2)
    assert [len(c["input"]) for c in calls] == [2, 2, 1]
    assert vectors.shape == (5, EMBEDDING_DIM)


def test_embed_texts_without_input_type_sends_no_extra_fields():
    client, calls = make_client()
    embed_texts(client, ["plain server"], model="m", input_type=None)
    assert "input_type" not in calls[0] and "truncate" not in calls[0]


def test_embed_texts_rejects_unknown_input_type():
    client, _ = make_client()
    with pytest.raises(EmbeddingError, match="input_type"):
        embed_texts(client, ["x"], model="m", input_type="document")


def test_failed_request_raises_embedding_error_naming_the_batch():
    client, _ = make_client(fail_on_call=2)
    texts = ["first", "second", "third passage here", "fourth"]
    with pytest.raises(EmbeddingError, match=r"batch 2/2 \(texts 2-3, first: 'third passage here'\)") as info:
        embed_texts(client, texts, model="m", input_type="passage", batch_size=2)
    assert "model overloaded" in str(info.value)


def test_wrong_number_of_vectors_is_an_embedding_error():
    client, _ = make_client(drop_one=True)
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        embed_texts(client, ["a", "b"], model="m", input_type="passage")


def test_progress_bar_appears_only_for_many_texts(capsys, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # the test suite turns bars off globally
    client, _ = make_client()
    embed_texts(client, ["short"] * 3, model="m", input_type="passage")
    assert "Embedding" not in capsys.readouterr().err
    embed_texts(client, ["short"] * 40, model="m", input_type="passage")
    assert "Embedding" in capsys.readouterr().err


def test_runtime_never_imports_torch():
    code = ("import sys, helpers.retrieval.embeddings as e, helpers.retrieval.knowledge; e.local_embed(['hello']); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


def test_embeddings_that_echo_the_key_leave_it_nowhere_in_the_chain(keyed):
    settings, secret = keyed
    with pytest.raises(EmbeddingError) as info:
        embed_texts(echoing_client(settings), ["a text"], model="m", input_type="query")
    assert "401" in str(info.value) and "Bearer ***" in str(info.value)
    assert_no_secret(info.value, secret)

"""The embedding router: the bundled model through onnxruntime matches sentence-transformers."""

from __future__ import annotations

import numpy as np
import pytest

from spatial_memory.embeddings import EmbeddingRouter, canonical_model_id
from spatial_memory.errors import ConfigurationError, EmbeddingError

SENTENCES = [
    "We decided to use PostgreSQL for the main database.",
    "The fix for the flaky test was to pin the random seed.",
    "short",
    "Ünïcödé, emoji 🚀 and 中文 text all embed.",
    "A much longer sentence " * 60,
]


def test_aliases_collapse_to_one_model_id():
    assert canonical_model_id("sentence-transformers/all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    assert canonical_model_id("all-minilm-l6-v2") == "all-MiniLM-L6-v2"


@pytest.mark.model
def test_onnx_vectors_equal_sentence_transformers(real_embedder, tmp_path):
    assert real_embedder.backend_name == "onnxruntime"
    ours = real_embedder.embed_documents(SENTENCES)
    assert ours.dtype == np.float32 and ours.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    reference = EmbeddingRouter(backend="sentence-transformers", cache_dir=tmp_path)
    theirs = reference.embed_documents(SENTENCES)
    assert reference.backend_name == "sentence-transformers"
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.99999, cosines
    assert np.allclose(real_embedder.embed_query(SENTENCES[0]), ours[0], atol=1e-6)
    # Batching and order do not change vectors.
    again = real_embedder.embed_documents(list(reversed(SENTENCES)))[::-1]
    assert np.allclose(again, ours, atol=1e-5)


def test_openai_needs_a_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    router = EmbeddingRouter("openai:text-embedding-3-small", cache_dir=tmp_path)
    assert router.dimension == 1536
    with pytest.raises(ConfigurationError) as err:
        router.load()
    assert "OPENAI_API_KEY" in str(err.value) or "openai" in str(err.value).lower()


def test_unknown_model_fails_clearly_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    router = EmbeddingRouter("no-such-org/no-such-model-xyz", cache_dir=tmp_path)
    with pytest.raises((EmbeddingError, ConfigurationError)) as err:
        router.embed_query("hello")
    assert "no-such-model-xyz" in str(err.value)


def test_onnx_backend_only_serves_the_bundled_model(tmp_path):
    router = EmbeddingRouter("some/other-model", backend="onnx", cache_dir=tmp_path)
    with pytest.raises(ConfigurationError):
        router.load()

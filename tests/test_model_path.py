"""The bundled model's two paths (fp32, int8): a store records which one wrote its vectors,
queries use the same one, and a server set to the other one refuses the store, typed."""

from __future__ import annotations

import numpy as np
import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.embeddings import EmbeddingRouter
from spatial_memory.server import create_server

from .conftest import data

pytestmark = [pytest.mark.anyio, pytest.mark.model]

FP32, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2#int8"
TEXTS = [
    "We decided to use PostgreSQL for the main database.",
    "The fix for the flaky test was to pin the random seed.",
    "Biscuit the cat hides under the bed during thunderstorms.",
    "Carol moved the nightly job to 2am because backups overlapped.",
]


def _router(models, precision: str = "auto") -> EmbeddingRouter:
    return EmbeddingRouter(precision=precision, cache_dir=models)


async def _remember_all(settings: Settings, embedder) -> dict:
    async with Client(create_server(settings, embedder=embedder)) as client:
        for text in TEXTS:
            data(await client.call_tool("remember", {"content": text}))
        return data(await client.call_tool("stats", {}))


async def test_a_new_store_records_the_fp32_path_and_an_int8_store_keeps_int8(tmp_path, bundled_models):
    fp32_settings = Settings(path=tmp_path / "new", preload=False)
    stats = await _remember_all(fp32_settings, _router(bundled_models))
    assert stats["embedding_model"] == FP32 and stats["total_memories"] == len(TEXTS)

    int8_settings = Settings(path=tmp_path / "opted-in", preload=False)
    assert (await _remember_all(int8_settings, _router(bundled_models, "int8")))["embedding_model"] == INT8

    # A server on auto follows each store, whichever path it embedded with before.
    auto = _router(bundled_models)
    # One text per call: int8's activations are quantised per call, so a batch's texts shift each other.
    fp32, int8 = _router(bundled_models, "fp32"), _router(bundled_models, "int8")
    fp32_vectors = np.stack([fp32.embed_query(text) for text in TEXTS])
    int8_vectors = np.stack([int8.embed_query(text) for text in TEXTS])
    for settings, expected, vectors in ((fp32_settings, FP32, fp32_vectors), (int8_settings, INT8, int8_vectors)):
        async with Client(create_server(settings, embedder=auto)) as client:
            hits = data(await client.call_tool("recall", {"query": TEXTS[2], "limit": 4, "hybrid_alpha": 1.0}))
            assert auto.model_id == expected
            # The query was embedded on the store's path: the stored text's own vector, similarity 1.
            assert hits["memories"][0]["content"] == TEXTS[2]
            assert hits["memories"][0]["similarity"] == pytest.approx(1.0, abs=1e-4)
            assert np.allclose(auto.embed_query(TEXTS[0]), vectors[0], atol=1e-5)
    # The two paths really differ (else the checks above could not fail), and not by much.
    cosines = (fp32_vectors * int8_vectors).sum(axis=1)
    assert cosines.max() < 0.99999 and cosines.min() > 0.97, cosines


@pytest.mark.parametrize(("written", "asked"), [("int8", "fp32"), ("fp32", "int8")])
async def test_a_server_set_to_the_other_path_refuses_the_store_and_writes_nothing(
    tmp_path, bundled_models, written, asked
):
    settings = Settings(path=tmp_path / "store", preload=False)
    await _remember_all(settings, _router(bundled_models, written))
    other = _router(bundled_models, asked)
    async with Client(create_server(settings, embedder=other)) as client:
        for tool, args in (("remember", {"content": "one more"}), ("recall", {"query": "database"}), ("stats", {})):
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, result)
            body = data(result)
            assert body["error"] == "ConfigurationError", body
            assert f"written by the bundled model's {written} path" in body["message"]
            assert (
                "SPATIAL_MEMORY_EMBEDDING_PRECISION" in body["message"] and "regenerate_embeddings" in body["message"]
            )
    assert other.model_id == (FP32 if asked == "fp32" else INT8)  # not switched behind the setting's back
    # Nothing was written by the refused server: the store opens on its own path with its memories.
    async with Client(create_server(settings, embedder=_router(bundled_models))) as client:
        stats = data(await client.call_tool("stats", {}))
        assert stats["total_memories"] == len(TEXTS)
        assert stats["embedding_model"] == (INT8 if written == "int8" else FP32)


async def test_the_setting_reaches_a_server_process(tmp_path, bundled_models):
    from .reliability import new_store, stdio_transport

    store = new_store(tmp_path, "store", bundled_models)
    with open(tmp_path / "server.log", "w") as log:
        opted_in = stdio_transport(store, log, fake=False, SPATIAL_MEMORY_EMBEDDING_PRECISION="int8")
        async with Client(opted_in) as client:
            data(await client.call_tool("remember", {"content": TEXTS[0]}))
            assert data(await client.call_tool("stats", {}))["embedding_model"] == INT8
        transport = stdio_transport(store, log, fake=False, SPATIAL_MEMORY_EMBEDDING_PRECISION="fp32")
        async with Client(transport) as client:
            body = data(await client.call_tool("recall", {"query": "database"}))
            assert body["error"] == "ConfigurationError" and "int8 path" in body["message"], body
        async with Client(stdio_transport(store, log, fake=False)) as client:  # auto follows the store
            assert data(await client.call_tool("stats", {}))["embedding_model"] == INT8


def test_int8_vectors_depend_a_little_on_their_batch(bundled_models):
    """Dynamic quantisation scales each call's activations by the call's own range: a text embedded
    in a batch is not bit-identical to it alone (fp32 is: test_embeddings), but stays this close.
    (Why int8 is not the default path: near-copy decisions at a threshold can flip with the batch.)"""
    int8 = _router(bundled_models, "int8")
    together = int8.embed_documents(TEXTS * 4)
    alone = np.stack([int8.embed_query(text) for text in TEXTS * 4])
    cosines = (together * alone).sum(axis=1)
    assert cosines.min() > 0.97 and cosines.min() < 0.99999, cosines
    assert np.allclose(int8.embed_documents(TEXTS * 4), together, atol=1e-6)  # the same call, the same vectors


def test_int8_runs_only_on_onnxruntime(tmp_path):
    from spatial_memory.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="SPATIAL_MEMORY_EMBEDDING_BACKEND"):
        EmbeddingRouter(backend="sentence-transformers", precision="int8", cache_dir=tmp_path).load()
    # auto with sentence-transformers computes in fp32, and records it so.
    assert EmbeddingRouter(backend="sentence-transformers", cache_dir=tmp_path).model_id == FP32
    assert EmbeddingRouter("some/other-model", cache_dir=tmp_path).model_id == "some/other-model"


def test_the_graph_is_built_in_a_child_process(tmp_path, monkeypatch):
    """The server process never runs the build (its copies of the weights would stay in its heap)."""
    from spatial_memory.embeddings import graph_build
    from spatial_memory.embeddings.onnx_encoder import bundled_model_dir, graph_path

    monkeypatch.setattr(graph_build, "build_graph_here", lambda *a: pytest.fail("built in the server process"))
    output = graph_path(bundled_model_dir(), tmp_path / "models", "int8")
    graph_build.build_graph(bundled_model_dir(), output, "int8")
    assert sorted(p.name for p in output.parent.iterdir()) == [output.name, output.name + ".data"]

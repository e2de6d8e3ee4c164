"""The bundled model's paths (fp32, int8-row, int8): a store records which one wrote its vectors,
queries use the same one, a server set to another one refuses the store, typed, and
`spatial-memory reembed` moves a store to another path, all or nothing."""

from __future__ import annotations

import numpy as np
import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.embeddings import EmbeddingRouter
from spatial_memory.server import create_server

from .conftest import data

pytestmark = [pytest.mark.anyio, pytest.mark.model]

FP32, INT8, INT8_ROW = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2#int8", "all-MiniLM-L6-v2#int8-row"
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


async def test_a_new_store_records_the_int8_row_path_and_other_stores_keep_theirs(tmp_path, bundled_models):
    new_settings = Settings(path=tmp_path / "new", preload=False)
    stats = await _remember_all(new_settings, _router(bundled_models))
    assert stats["embedding_model"] == INT8_ROW and stats["total_memories"] == len(TEXTS)
    written = {"int8-row": new_settings}
    for path in ("fp32", "int8"):
        written[path] = Settings(path=tmp_path / path, preload=False)
        assert (await _remember_all(written[path], _router(bundled_models, path)))["embedding_model"] == (
            FP32 if path == "fp32" else INT8
        )

    # A server on auto follows each store, whichever path it embedded with before.
    auto = _router(bundled_models)
    # One text per call: int8's activations are quantised per call, so a batch's texts shift each other.
    vectors = {path: np.stack([_router(bundled_models, path).embed_query(t) for t in TEXTS]) for path in written}
    for path, settings in written.items():
        async with Client(create_server(settings, embedder=auto)) as client:
            hits = data(await client.call_tool("recall", {"query": TEXTS[2], "limit": 4, "hybrid_alpha": 1.0}))
            assert auto.model_id == {"fp32": FP32, "int8": INT8, "int8-row": INT8_ROW}[path]
            # The query was embedded on the store's path: the stored text's own vector, similarity 1.
            assert hits["memories"][0]["content"] == TEXTS[2]
            assert hits["memories"][0]["similarity"] == pytest.approx(1.0, abs=1e-5)
            assert np.allclose(auto.embed_query(TEXTS[0]), vectors[path][0], atol=1e-6)
    # The paths really differ (else the checks above could not fail), and not by much.
    for path in ("int8", "int8-row"):
        cosines = (vectors["fp32"] * vectors[path]).sum(axis=1)
        assert cosines.max() < 0.99999 and cosines.min() > 0.97, (path, cosines)


def _mixed_lengths(n: int) -> list[str]:
    """n texts of 1 to 160 words (up to ~200 tokens), in no order of length."""
    rng = np.random.default_rng(45)
    words = " ".join(TEXTS).split()
    return [" ".join(rng.choice(words, size=int(size))) for size in rng.integers(1, 160, size=n)]


def test_int8_row_vectors_do_not_depend_on_their_batch(bundled_models):
    """Each token's activations are scaled by their own row: a text's vector is the same alone,
    in a batch of 100 of mixed lengths, and in any order (to float rounding in fp32's own ops)."""
    router = _router(bundled_models, "int8-row")
    texts = _mixed_lengths(100)
    together = router.embed_documents(texts)
    alone = np.stack([router.embed_query(text) for text in texts])
    order = np.random.default_rng(7).permutation(len(texts))
    shuffled = np.empty_like(together)
    shuffled[order] = router.embed_documents([texts[i] for i in order])
    assert np.abs(together - alone).max() <= 1e-6
    assert np.abs(together - shuffled).max() <= 1e-6


@pytest.mark.parametrize(("written", "asked"), [("int8", "fp32"), ("fp32", "int8-row")])
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
                "SPATIAL_MEMORY_EMBEDDING_PRECISION" in body["message"]
                and "regenerate_embeddings" in body["message"]
                and f"spatial-memory reembed --precision {asked}" in body["message"]
            )
    assert other.model_id == (FP32 if asked == "fp32" else INT8_ROW)  # not switched behind the setting's back
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


async def _fp32_store_with_history(tmp_path, bundled_models) -> Settings:
    settings = Settings(path=tmp_path / "store", preload=False)
    settings.path.mkdir()
    (settings.path / "models").symlink_to(bundled_models)  # the once-built graphs, for reembed's process
    async with Client(create_server(settings, embedder=_router(bundled_models, "fp32"))) as client:
        ids = [data(await client.call_tool("remember", {"content": text}))["id"] for text in TEXTS]
        data(await client.call_tool("update_memory", {"memory_id": ids[3], "content": TEXTS[3] + " (moved to 3am)"}))
    return settings


async def _recall_own_text(settings: Settings, models) -> tuple[dict, dict]:
    """stats, and the best hit for TEXTS[2] by meaning only, through a server on auto."""
    async with Client(create_server(settings, embedder=_router(models))) as client:
        hits = data(await client.call_tool("recall", {"query": TEXTS[2], "limit": 3, "hybrid_alpha": 1.0}))
        keyword = data(await client.call_tool("recall", {"query": "PostgreSQL database", "limit": 1}))
        assert keyword["memories"][0]["content"] == TEXTS[0]
        return data(await client.call_tool("stats", {})), hits["memories"][0]


async def test_reembed_moves_a_store_to_another_path(tmp_path, bundled_models):
    """The real command, in its own process: progress on stderr, every memory and past version
    re-embedded, the new path recorded; a server on auto then embeds its queries that way."""
    import os
    import subprocess
    import sys

    settings = await _fp32_store_with_history(tmp_path, bundled_models)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    command = [
        sys.executable,
        "-m",
        "spatial_memory",
        "reembed",
        "--path",
        str(settings.path),
        "--precision",
        "int8-row",
    ]
    done = subprocess.run(command, env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "re-embedded 5 of 5" in done.stderr  # 4 memories and the updated one's past version
    assert "4 memories and 1 past versions" in done.stderr and f"{FP32} -> {INT8_ROW}" in done.stderr
    assert done.stdout == ""
    stats, best = await _recall_own_text(settings, bundled_models)
    assert stats["embedding_model"] == INT8_ROW and stats["total_memories"] == len(TEXTS)
    assert best["content"] == TEXTS[2] and best["similarity"] == pytest.approx(1.0, abs=1e-5)
    async with Client(create_server(settings, embedder=_router(bundled_models))) as client:
        memory = data(await client.call_tool("recall", {"query": "nightly job", "limit": 1}))["memories"][0]
        history = data(await client.call_tool("memory_history", {"memory_id": memory["id"]}))
        assert len(history["versions"]) == 2, history
    again = subprocess.run(command, env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing to do" in again.stderr, again.stderr
    assert [p.name for p in settings.path.iterdir() if "reembed" in p.name] == []


async def test_a_reembed_that_stops_leaves_the_store_as_it_was(tmp_path, bundled_models, monkeypatch):
    from spatial_memory.storage.repair import reembed
    from spatial_memory.storage.table.model_record import recorded_model_id

    settings = await _fp32_store_with_history(tmp_path, bundled_models)
    db = settings.db_path
    int8_row = _router(bundled_models, "int8-row")
    calls = []

    def dies_midway(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise RuntimeError("killed")
        return int8_row.embed_documents(texts)

    monkeypatch.setattr(reembed, "CHUNK", 2)
    with pytest.raises(RuntimeError, match="killed"):
        reembed.reembed(db, INT8_ROW, 384, dies_midway)
    assert recorded_model_id(db) == FP32 and not [p for p in db.parent.iterdir() if "reembed" in p.name]
    stats, best = await _recall_own_text(settings, bundled_models)
    assert stats["embedding_model"] == FP32 and stats["total_memories"] == len(TEXTS)
    assert best["similarity"] == pytest.approx(1.0, abs=1e-5)

    # Stopped between its two renames: the old store sits under its backup name; the next run puts it back.
    backup = db.with_name(db.name + reembed.BACKUP_SUFFIX)
    db.rename(backup)
    assert "put the store back" in reembed.recover(db)
    assert recorded_model_id(db) == FP32 and not backup.exists()

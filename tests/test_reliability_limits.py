"""Limits: content, batch, result and import sizes are enforced with clear errors (and refuse
everything: nothing half stored); a request whose client cancels it or goes away writes nothing."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from spatial_memory.config import Settings
from spatial_memory.server.app import create_server

from .conftest import data
from .hash_embedder import HashEmbedder
from .reliability import RawServer, new_store, open_store

pytestmark = pytest.mark.anyio


async def _client(settings: Settings, embedder=None):
    from mcp import Client

    return Client(create_server(settings, embedder=embedder or HashEmbedder()))


async def _total(client) -> int:
    return data(await client.call_tool("namespaces", {}))["total_memories"]


def _error(result) -> dict:
    assert result.is_error, result
    return data(result)


async def test_content_and_batch_limits(tmp_path):
    """The limits a client reads in the tool schemas are the settings the server enforces (one source)."""
    settings = Settings(path=tmp_path / "store", preload=False, max_content_length=1000, max_batch_size=10)
    async with await _client(settings) as client:
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        assert schemas["remember"]["properties"]["content"]["maxLength"] == 1000
        assert schemas["remember_batch"]["properties"]["memories"]["maxItems"] == 10
        assert (
            schemas["remember_batch"]["properties"]["memories"]["items"]["properties"]["content"]["maxLength"] == 1000
        )
        assert not (await client.call_tool("remember", {"content": "x" * 1000})).is_error
        too_long = _error(await client.call_tool("remember", {"content": "x" * 1001}))
        assert too_long["error"] == "ValidationError" and "1000" in too_long["message"], too_long

        items = [{"content": f"item {i}"} for i in range(10)]
        bad_item = items[:9] + [{"content": "y" * 1001}]
        err = _error(await client.call_tool("remember_batch", {"memories": bad_item}))
        assert err["error"] == "ValidationError" and "memories.9.content" in err["message"], err
        err = _error(await client.call_tool("remember_batch", {"memories": items + [{"content": "one too many"}]}))
        assert err["error"] == "ValidationError" and "at most 10" in err["message"], err
        assert await _total(client) == 1  # neither batch stored anything
        assert data(await client.call_tool("remember_batch", {"memories": items}))["count"] == 10

        ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(11)]
        err = _error(await client.call_tool("forget_batch", {"memory_ids": ids}))
        assert err["error"] == "ValidationError" and "10" in err["message"]
        assert await _total(client) == 11


async def test_metadata_and_tag_limits(tmp_path):
    settings = Settings(path=tmp_path / "store", preload=False, max_metadata_bytes=1000, max_tags=3)
    async with await _client(settings) as client:
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        # The setting reaches every schema that lists tags: a tool's own, a batch item's, recall's shared filter.
        assert schemas["remember"]["properties"]["tags"]["maxItems"] == 3
        assert schemas["remember_batch"]["properties"]["memories"]["items"]["properties"]["tags"]["maxItems"] == 3
        assert schemas["recall"]["properties"]["tags"]["maxItems"] == 3
        err = _error(await client.call_tool("remember", {"content": "m", "metadata": {"blob": "z" * 1000}}))
        assert "1,000 bytes" in err["message"]
        nested: dict = {}
        for _ in range(40):
            nested = {"k": nested}
        err = _error(await client.call_tool("remember", {"content": "m", "metadata": nested}))
        assert err["error"] == "ValidationError" and "32 levels" in err["message"]
        err = _error(await client.call_tool("remember", {"content": "m", "tags": ["a", "b", "c", "d"]}))
        assert err["error"] == "ValidationError" and "tags: List should have at most 3 items" in err["message"], err
        deeper: list = []
        for _ in range(100):
            deeper = [deeper]
        err = _error(await client.call_tool("recall", {"query": "q", "filters": {"metadata.k": deeper}}))
        assert err["error"] == "ValidationError" and "64 levels" in err["message"]
        assert await _total(client) == 0


async def test_result_size_limit(tmp_path):
    settings = Settings(path=tmp_path / "store", preload=False, max_result_bytes=20_000)
    async with await _client(settings) as client:
        await client.call_tool(
            "remember_batch", {"memories": [{"content": f"long note {i} " + "w" * 5000} for i in range(8)]}
        )
        err = _error(await client.call_tool("recall", {"query": "long note", "limit": 8}))
        assert err["error"] == "ResultTooLargeError"
        assert "20,000" in err["message"] and "SPATIAL_MEMORY_MAX_RESULT_BYTES" in err["message"]
        assert data(await client.call_tool("recall", {"query": "long note", "limit": 2}))["total"] == 2


async def test_import_size_limits(tmp_path):
    settings = Settings(path=tmp_path / "store", preload=False, max_import_records=5, max_import_file_mb=0.02)
    async with await _client(settings) as client:
        await client.call_tool("remember_batch", {"memories": [{"content": f"row {i}"} for i in range(6)]})
        six = await client.call_tool("export_memories", {"output_path": "six.json", "include_vectors": False})
        assert not six.is_error and data(six)["memories_exported"] == 6, data(six)
        err = _error(
            await client.call_tool(
                "import_memories", {"source_path": "six.json", "dry_run": False, "regenerate_embeddings": True}
            )
        )
        assert err["error"] == "ImportRecordLimitError" and "5" in err["message"]
        pads = [{"content": f"pad {i} " + "p" * 9000} for i in range(3)]  # distinct: copies are not stored twice
        await client.call_tool("remember_batch", {"memories": pads})
        big = await client.call_tool("export_memories", {"output_path": "big.json", "include_vectors": False})
        assert not big.is_error and data(big)["memories_exported"] == 9, data(big)
        err = _error(
            await client.call_tool(
                "import_memories", {"source_path": "big.json", "dry_run": False, "regenerate_embeddings": True}
            )
        )
        assert err["error"] == "FileSizeLimitError"
        assert await _total(client) == 9


class BlockingEmbedder(HashEmbedder):
    """A batch embedding that ignores cancellation and keeps going until the server has marked its
    request cancelled, then returns its vectors as if it had just finished: a slow model whose
    client gave up mid-call, with no time window for the test to guess."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = threading.Event()  # a batch is being embedded now
        self.finished_after_cancel = threading.Event()

    def embed_documents(self, texts):
        if len(texts) > 1:
            self.embedding.set()
            give_up = time.monotonic() + 60
            while not _request_cancelled():
                assert time.monotonic() < give_up, "the server never marked the request cancelled"
                time.sleep(0.005)
            self.finished_after_cancel.set()
        return super().embed_documents(texts)


def _request_cancelled() -> bool:
    from spatial_memory.errors import RequestCancelledError
    from spatial_memory.transport.cancellation import check_cancelled

    try:
        check_cancelled()  # what the worker thread's request says about itself
    except RequestCancelledError:
        return True
    return False


async def test_cancelled_request_writes_nothing(tmp_path, monkeypatch):
    from contextlib import contextmanager

    from spatial_memory.storage.store import MemoryStore

    # Each write (remember takes the store's write lock to check for look-alikes, then writes under
    # it), and how it ended, so the test waits for the cancelled batch's write attempt.
    adds: list[str] = []
    added = threading.Event()
    original_exclusive = MemoryStore.exclusive

    @contextmanager
    def exclusive(self):
        try:
            with original_exclusive(self):
                yield
            adds.append("written")
        except Exception as exc:
            adds.append(type(exc).__name__)
            raise
        finally:
            added.set()

    monkeypatch.setattr(MemoryStore, "exclusive", exclusive)
    embedder = BlockingEmbedder()
    settings = Settings(path=tmp_path / "store", preload=False)
    async with await _client(settings, embedder) as client:
        assert await _total(client) == 0  # the store is open: the batch's refusal is its own write's
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    client.call_tool,
                    "remember_batch",
                    {"memories": [{"content": f"late {i}"} for i in range(50)]},
                )
                # Cancelled only once the batch is provably being embedded (not before it started).
                assert await anyio.to_thread.run_sync(embedder.embedding.wait, 60)
                scope.cancel()  # the client gives up: notifications/cancelled
        assert scope.cancelled_caught
        # The embedding ends after the cancellation reached the server; then its write is refused.
        assert await anyio.to_thread.run_sync(embedder.finished_after_cancel.wait, 60)
        assert await anyio.to_thread.run_sync(added.wait, 60), "the batch never reached the store"
        assert adds == ["RequestCancelledError"], adds
        assert await _total(client) == 0
        assert not (await client.call_tool("remember", {"content": "still fine"})).is_error
        assert await _total(client) == 1
        assert adds == ["RequestCancelledError", "written"]


def test_client_that_disconnects_mid_batch_leaves_no_writer(tmp_path, bundled_models):
    """Over stdio with the bundled model: a large remember_batch is in flight when the client closes
    the pipe. The server stops at once (no task goes on embedding and writing for nobody) and the
    batch is fully absent - or, had it already committed, fully present."""
    store = new_store(tmp_path, "store", bundled_models)
    long_text = " ".join(f"word{i}" for i in range(220))  # ~256 tokens: each embedding costs the most
    with RawServer(store, fake=False, SPATIAL_MEMORY_LOG_LEVEL="WARNING") as server:
        server.initialize()
        server.ok("remember", {"content": "warm up the model and the store"})
        started = time.monotonic()
        server.ok("remember_batch", {"memories": [{"content": f"timed {i} {long_text}"} for i in range(16)]})
        per_item = (time.monotonic() - started) / 16
        count = 1000
        server.call_id("remember_batch", {"memories": [{"content": f"orphan {i} {long_text}"} for i in range(count)]})
        time.sleep(0.5)
        closed = time.monotonic()
        returncode = server.close(timeout=120)
        exit_seconds = time.monotonic() - closed
    rows = [r for r in open_store(store, fake=False).scan() if r.content.startswith("orphan ")]
    assert returncode == 0
    assert len(rows) in (0, count)
    # Embedding the whole batch would take ~count * per_item; the server left long before that.
    assert len(rows) == 0 and exit_seconds < max(10.0, 0.25 * count * per_item), (exit_seconds, per_item)
    print(
        f"\nclient closed the pipe mid-batch: server exited in {exit_seconds:.1f} s "
        f"(the batch needed ~{count * per_item:.0f} s), nothing written"
    )

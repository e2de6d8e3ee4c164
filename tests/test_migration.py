"""A store written by release 0.1.0 (tests/fixtures/store_0_1_0, before conversation fields) opens,
gains the new columns with nothing lost, and works through the MCP tools."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.server import create_server

from .conftest import data

pytestmark = [pytest.mark.anyio, pytest.mark.model]

FIXTURE = Path(__file__).parent / "fixtures" / "store_0_1_0" / "lancedb"


@pytest.fixture
def old_store(tmp_path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(FIXTURE, store / "lancedb")
    return store


def _rows(db_path: Path) -> list[dict]:
    import lancedb

    table = lancedb.connect(str(db_path)).open_table("memories")
    return sorted(table.to_arrow().drop_columns(["vector"]).to_pylist(), key=lambda r: r["id"])


async def test_a_release_0_1_0_store_migrates_with_nothing_lost(old_store, auto_embedder):
    before = _rows(old_store / "lancedb")
    assert before and "session_id" not in before[0]
    settings = Settings(path=old_store, preload=False)
    async with Client(create_server(settings, embedder=auto_embedder)) as client:
        stats = data(await client.call_tool("stats", {}))
        assert stats["total_memories"] == len(before)
        # Its vectors came from the fp32 path (the only one then): its queries and new memories use it too.
        assert auto_embedder.model_id == stats["embedding_model"] == "all-MiniLM-L6-v2"
        after = _rows(old_store / "lancedb")
        added = ("session_id", "sequence", "speaker", "occurred_at")
        added += ("memory_type", "expires_at", "pinned", "version", "provenance")  # memories that change
        assert [{k: v for k, v in r.items() if k not in added} for r in after] == before
        assert all(r[name] is None for r in after for name in added)
        # The old memories are found as before, and new ones with conversation fields sit beside them.
        hits = data(await client.call_tool("recall", {"query": "which database", "limit": 3}))["memories"]
        assert hits and all("session_id" not in h for h in hits)  # none: left out
        stored = data(
            await client.call_tool(
                "remember",
                {
                    "content": "Biscuit the cat hides under the bed during thunderstorms.",
                    "session_id": "chat-1",
                    "speaker": "Ann",
                },
            )
        )
        found = data(await client.call_tool("recall", {"query": "cat afraid of thunderstorms", "limit": 1}))[
            "memories"
        ][0]
        assert found["id"] == stored["id"] and found["session_id"] == "chat-1" and found["sequence"] == 0
    # Opening it again changes nothing more.
    async with Client(create_server(settings, embedder=auto_embedder)) as client:
        assert data(await client.call_tool("stats", {}))["total_memories"] == len(before) + 1

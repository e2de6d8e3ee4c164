"""Core and namespace tools through a real (in-memory) MCP client session."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from .conftest import data

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"
INJECTIONS = ["x' OR '1'='1", "default' OR namespace != '", "'; DROP TABLE memories; --", "a\\' OR 1=1 --"]


async def remember(client, content, **kw):
    result = await client.call_tool("remember", {"content": content, **kw})
    assert not result.is_error, result
    return data(result)


def assert_error(result, error_type: str, fragment: str = "") -> dict:
    assert result.is_error
    body = data(result)
    assert body["error"] == error_type, body
    assert body["isError"] is True
    assert fragment.lower() in body["message"].lower(), body
    assert json.loads(result.content[0].text) == body
    return body


async def test_tools_list_snapshot(client):
    tools = (await client.list_tools()).tools
    listing = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    listing.sort(key=lambda t: t["name"])
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(listing, indent=2, sort_keys=True) + "\n")
    assert SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT}: write it with UPDATE_SNAPSHOTS=1 and review it"
    assert listing == json.loads(SNAPSHOT.read_text()), "tools/list changed: rerun with UPDATE_SNAPSHOTS=1 if intended"
    for tool in listing:
        assert tool["description"]
        assert "annotations" in tool and "readOnlyHint" in tool["annotations"]
        assert "outputSchema" in tool


async def test_remember_and_recall_round_trip(client):
    stored = await remember(
        client, "PostgreSQL is our main database", namespace="proj", tags=["db"], importance=0.8, metadata={"k": 1}
    )
    assert uuid.UUID(stored["id"]) and stored["namespace"] == "proj"
    await remember(client, "The office cat is called Miso", namespace="home")
    result = data(await client.call_tool("recall", {"query": "postgresql database", "limit": 5}))
    assert result["total"] == len(result["memories"]) == 2
    top = result["memories"][0]
    assert top["id"] == stored["id"]
    assert top["tags"] == ["db"] and top["importance"] == pytest.approx(0.8) and top["metadata"] == {"k": 1}
    assert 0.0 <= top["similarity"] <= 1.0 and top["created_at"].endswith("Z")
    only = data(await client.call_tool("recall", {"query": "postgresql", "namespace": "home"}))
    assert [m["namespace"] for m in only["memories"]] == ["home"]
    high = data(await client.call_tool("recall", {"query": "postgresql database", "min_similarity": 0.99}))
    assert high["total"] == 0


async def test_recall_tags_and_filters(client):
    a = await remember(client, "alpha note", tags=["red"], importance=0.9, metadata={"team": "core", "n": 3})
    b = await remember(client, "alpha memo", tags=["blue"], importance=0.2, metadata={"team": "web", "n": 7})
    ids = lambda r: {m["id"] for m in data(r)["memories"]}  # noqa: E731
    assert ids(await client.call_tool("recall", {"query": "alpha", "tags": ["red"]})) == {a["id"]}
    r = await client.call_tool("recall", {"query": "alpha", "filters": {"importance": {"gte": 0.5}}})
    assert ids(r) == {a["id"]}
    r = await client.call_tool("recall", {"query": "alpha", "filters": {"metadata.team": "web"}})
    assert ids(r) == {b["id"]}
    r = await client.call_tool("recall", {"query": "alpha", "filters": {"metadata.n": {"gt": 5}}})
    assert ids(r) == {b["id"]}
    r = await client.call_tool("recall", {"query": "alpha", "filters": {"tags": {"nin": ["red"]}}})
    assert ids(r) == {b["id"]}
    r = await client.call_tool("recall", {"query": "alpha", "filters": {"source": {"in": ["manual"]}}})
    assert ids(r) == {a["id"], b["id"]}
    assert_error(
        await client.call_tool("recall", {"query": "a", "filters": {"vector": 1}}), "ValidationError", "vector"
    )
    assert_error(
        await client.call_tool("recall", {"query": "a", "filters": {"importance": {"like": 1}}}), "ValidationError"
    )


@pytest.mark.parametrize("evil", INJECTIONS)
async def test_injection_strings_match_nothing(client, evil):
    await remember(client, "secret plans", namespace="private", tags=["t"])
    for args in (
        {"namespace": evil},
        {"tags": [evil]},
        {"filters": {"namespace": evil}},
        {"filters": {"tags": {"contains": evil}}},
        {"filters": {"source": {"in": [evil]}}},
        {"filters": {"metadata.x": evil}},
    ):
        result = await client.call_tool("recall", {"query": "secret plans", **args})
        assert not result.is_error, (args, data(result))
        assert data(result)["total"] == 0, args
    assert data(await client.call_tool("forget", {"namespace": evil}))["deleted"] == 0
    assert data(await client.call_tool("forget", {"memory_id": evil}))["deleted"] == 0
    assert_error(await client.call_tool("delete_namespace", {"namespace": evil}), "NamespaceNotFoundError")
    assert data(await client.call_tool("stats", {}))["total_memories"] == 1


async def test_remember_validation_errors(client):
    assert_error(await client.call_tool("remember", {"content": ""}), "ValidationError", "content")
    assert_error(await client.call_tool("remember", {"content": "   "}), "ValidationError", "empty")
    # Only invisible characters (zero-width space and joiner, BOM, a control, a line separator): nothing to remember.
    invisible = "\u200b\u200d\ufeff\x07\u2028 "
    assert_error(await client.call_tool("remember", {"content": invisible}), "ValidationError", "empty")
    assert_error(await client.call_tool("remember", {"content": "x" * 100_001}), "ValidationError", "content")
    assert_error(
        await client.call_tool("remember", {"content": "ok", "importance": 1.5}), "ValidationError", "importance"
    )
    assert_error(await client.call_tool("remember", {"content": "ok", "importance": -0.1}), "ValidationError")
    assert_error(await client.call_tool("remember", {"content": "ok", "namespace": "bad name!"}), "ValidationError")
    assert_error(await client.call_tool("remember", {"content": "ok", "tags": [""]}), "ValidationError", "tags")
    assert_error(await client.call_tool("remember", {"content": 42}), "ValidationError")
    assert_error(await client.call_tool("remember", {}), "ValidationError", "content")
    stored = await remember(client, "x" * 100_000)
    assert len(stored["content"]) == 100_000
    assert data(await client.call_tool("stats", {}))["total_memories"] == 1


async def test_recall_limits(client):
    await remember(client, "something")
    assert_error(await client.call_tool("recall", {"query": "x", "limit": 0}), "ValidationError", "limit")
    assert_error(await client.call_tool("recall", {"query": "x", "limit": 101}), "ValidationError", "limit")
    assert_error(await client.call_tool("recall", {"query": ""}), "ValidationError")
    assert_error(await client.call_tool("recall", {"query": "   "}), "ValidationError", "empty")
    assert_error(await client.call_tool("recall", {"query": "\u200b\ufeff"}), "ValidationError", "empty")
    assert_error(await client.call_tool("wander", {"seed": "\u200b"}), "ValidationError", "seed")
    # A visible character among invisible ones is a query.
    assert not (await client.call_tool("recall", {"query": "\u200bsomething\u200b"})).is_error
    assert_error(await client.call_tool("nearby", {"memory_id": str(uuid.uuid4()), "limit": 101}), "ValidationError")
    ok = await client.call_tool("recall", {"query": "x", "limit": 100})
    assert not ok.is_error


async def test_remember_batch_all_or_nothing(client):
    good = [{"content": f"memory {i}", "namespace": "batch"} for i in range(5)]
    result = data(await client.call_tool("remember_batch", {"memories": good}))
    assert result["count"] == 5 and len(set(result["ids"])) == 5
    bad = [*good, {"content": "fine"}, {"content": "  "}]
    body = assert_error(await client.call_tool("remember_batch", {"memories": bad}), "ValidationError", "memories[6]")
    assert "empty" in body["message"].lower()
    bad = [*good, {"content": "fine", "importance": 2}]
    assert_error(
        await client.call_tool("remember_batch", {"memories": bad}), "ValidationError", "memories.5.importance"
    )
    assert_error(await client.call_tool("remember_batch", {"memories": []}), "ValidationError")
    assert data(await client.call_tool("stats", {}))["total_memories"] == 5


async def test_nearby(client):
    a = await remember(client, "apples and pears in the orchard")
    b = await remember(client, "pears and apples from the orchard trees", namespace="other")
    await remember(client, "quantum chromodynamics lecture")
    result = data(await client.call_tool("nearby", {"memory_id": a["id"], "limit": 1}))
    assert result["reference"] == {"id": a["id"], "content": a["content"], "namespace": "default"}
    assert [n["id"] for n in result["neighbors"]] == [b["id"]]
    scoped = data(await client.call_tool("nearby", {"memory_id": a["id"], "namespace": "default"}))
    assert all(n["namespace"] == "default" and n["id"] != a["id"] for n in scoped["neighbors"])
    assert_error(await client.call_tool("nearby", {"memory_id": str(uuid.uuid4())}), "MemoryNotFoundError")
    assert_error(await client.call_tool("nearby", {"memory_id": "not-a-uuid"}), "MemoryNotFoundError")


async def test_forget_and_forget_batch(client):
    a = await remember(client, "one")
    b = await remember(client, "two", namespace="tmp", importance=0.1)
    c = await remember(client, "three", namespace="tmp", importance=0.9)
    forgotten = {"deleted": 1, "ids": [a["id"]], "not_found": []}
    assert data(await client.call_tool("forget", {"memory_id": a["id"]})) == forgotten
    # An unknown id is named, as update_memory names it (here an error would make forget not idempotent).
    again = {"deleted": 0, "ids": [], "not_found": [a["id"]]}
    assert data(await client.call_tool("forget", {"memory_id": a["id"]})) == again
    result = data(await client.call_tool("forget", {"namespace": "tmp", "filters": {"importance": {"lt": 0.5}}}))
    assert result == {"deleted": 1, "ids": [b["id"]], "not_found": []}
    assert_error(await client.call_tool("forget", {}), "ValidationError")
    unknown = str(uuid.uuid4())
    result = data(await client.call_tool("forget_batch", {"memory_ids": [c["id"], unknown, "junk", unknown]}))
    assert result == {"deleted": 1, "ids": [c["id"]], "not_found": [unknown, "junk"]}
    assert_error(await client.call_tool("forget_batch", {"memory_ids": []}), "ValidationError")
    assert data(await client.call_tool("stats", {}))["total_memories"] == 0


async def test_stats_and_namespaces(client):
    await client.call_tool("remember_batch", {"memories": [{"content": f"a{i}", "namespace": "a"} for i in range(3)]})
    await remember(client, "b0", namespace="b")
    stats = data(await client.call_tool("stats", {}))
    assert stats["total_memories"] == 4 and stats["memories_by_namespace"] == {"a": 3, "b": 1}
    assert stats["estimated_vector_bytes"] == 4 * 64 * 4 and stats["storage_bytes"] > 0
    assert stats["oldest_memory_date"] <= stats["newest_memory_date"]
    assert stats["avg_content_length"] == pytest.approx(2.0)
    assert stats["embedding_model"] == "test-hash-embedder"
    scoped = data(await client.call_tool("stats", {"namespace": "b"}))
    assert scoped["total_memories"] == 1 and scoped["memories_by_namespace"] == {"b": 1}
    listing = data(await client.call_tool("namespaces", {}))
    assert listing["total_namespaces"] == 2 and listing["total_memories"] == 4
    assert [(n["name"], n["memory_count"]) for n in listing["namespaces"]] == [("a", 3), ("b", 1)]
    bare = data(await client.call_tool("namespaces", {"include_stats": False}))
    assert bare["namespaces"][0].get("memory_count") is None


async def test_delete_namespace(client):
    await client.call_tool("remember_batch", {"memories": [{"content": f"n{i}", "namespace": "old"} for i in range(3)]})
    await remember(client, "keep me")
    preview = data(await client.call_tool("delete_namespace", {"namespace": "old"}))
    assert preview["dry_run"] is True and preview["memories_deleted"] == 3 and "Would delete" in preview["message"]
    assert data(await client.call_tool("stats", {}))["total_memories"] == 4
    assert_error(
        await client.call_tool("delete_namespace", {"namespace": "old", "dry_run": False}), "ValidationError", "confirm"
    )
    done = data(await client.call_tool("delete_namespace", {"namespace": "old", "dry_run": False, "confirm": True}))
    assert done["memories_deleted"] == 3 and done["success"] and not done["dry_run"]
    assert data(await client.call_tool("stats", {}))["memories_by_namespace"] == {"default": 1}
    assert_error(await client.call_tool("delete_namespace", {"namespace": "old"}), "NamespaceNotFoundError")


async def test_rename_namespace(client):
    await client.call_tool("remember_batch", {"memories": [{"content": f"r{i}", "namespace": "tmp"} for i in range(4)]})
    await remember(client, "other", namespace="taken")
    result = data(await client.call_tool("rename_namespace", {"old_namespace": "tmp", "new_namespace": "archive"}))
    assert result["memories_renamed"] == 4 and result["success"]
    counts = data(await client.call_tool("stats", {}))["memories_by_namespace"]
    assert counts == {"archive": 4, "taken": 1}
    assert_error(
        await client.call_tool("rename_namespace", {"old_namespace": "nope", "new_namespace": "x"}),
        "NamespaceNotFoundError",
    )
    assert_error(
        await client.call_tool("rename_namespace", {"old_namespace": "archive", "new_namespace": "taken"}),
        "NamespaceOperationError",
    )
    assert_error(
        await client.call_tool("rename_namespace", {"old_namespace": "archive", "new_namespace": "bad name"}),
        "ValidationError",
    )
    assert data(await client.call_tool("stats", {}))["memories_by_namespace"] == counts


async def test_recall_records_access(client, settings):
    stored = await remember(client, "frequently used fact")
    for _ in range(3):
        await client.call_tool("recall", {"query": "frequently used fact"})
    import anyio

    from spatial_memory.storage.store import MemoryStore

    store = MemoryStore(settings.db_path, "test-hash-embedder", 64)
    give_up = time.monotonic() + 60  # the counts are written after a short pause; 60 s only on a stuck machine
    while (record := store.get(stored["id"])).access_count < 3 and time.monotonic() < give_up:
        await anyio.sleep(0.05)
    assert record.access_count == 3
    assert record.last_accessed > record.created_at


async def test_unknown_tool_is_an_error(client):
    result = await client.call_tool("no_such_tool", {})
    assert result.is_error

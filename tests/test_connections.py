"""Connections (issue 20), through an MCP client: health, discover_connections, corpus_bridges, relations
(relate / unrelate, shown by get_memories, removed with their memories, carried by export/import),
recall's spreading activation, co-recall links and the fsrs decay."""

from __future__ import annotations

import time
import uuid

import anyio
import numpy as np
import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.server import create_server

from .conftest import call, data
from .hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


async def fails(client, name: str, **arguments) -> dict:
    result = data(await client.call_tool(name, arguments))
    assert result.get("isError"), result
    return result


async def seed(client, texts: list[str], namespace: str = "default", **extra) -> list[str]:
    items = [{"content": t, "namespace": namespace, **extra} for t in texts]
    return (await call(client, "remember_batch", memories=items))["ids"]


# ---- 1. health --------------------------------------------------------------------------------


async def test_health_reports_status_ready_alive_and_each_check_with_verbose(client):
    brief = await call(client, "health")
    assert brief["status"] == "healthy" and brief["alive"] is True and brief["checks"] is None
    assert brief["version"] and brief["timestamp"].endswith("Z")
    assert brief["ready"] is True  # the test embedder is always loaded; the store opened for the check
    full = await call(client, "health", verbose=True)
    names = [c["name"] for c in full["checks"]]
    assert names == ["store", "model", "disk", "write_lock", "upkeep", "index", "version"]
    assert all(c["status"] == "ok" and c["latency_ms"] >= 0 for c in full["checks"]), full["checks"]
    by_name = {c["name"]: c for c in full["checks"]}
    assert by_name["write_lock"]["message"] == "free"
    assert "0 memories" in by_name["store"]["message"]


async def test_health_is_cheap_when_warm(client):
    await seed(client, [f"note number {i} about topic {i % 7}" for i in range(200)])
    await call(client, "health", verbose=True)
    samples = []
    for _ in range(20):
        started = time.perf_counter()
        await call(client, "health", verbose=True)
        samples.append(time.perf_counter() - started)
    assert sorted(samples)[len(samples) // 2] < 0.05, samples


async def test_health_reports_a_held_write_lock_and_a_broken_store(settings, tmp_path):
    embedder = HashEmbedder()
    async with Client(create_server(settings, embedder=embedder)) as c:
        await call(c, "remember", content="something to open the store")
        app = c  # noqa: F841 - the server runs in this process: hold its lock from here
        from spatial_memory.storage.writing.locking import LOCK_FILE, StoreLock

        outside = StoreLock(settings.db_path / LOCK_FILE, 1.0)
        with outside:
            checks = {x["name"]: x for x in (await call(c, "health", verbose=True))["checks"]}
        assert checks["write_lock"]["message"].startswith("held")
    # A store written with another model: the store check fails, status unhealthy, not ready.
    other = Settings(path=settings.path, preload=False)
    async with Client(create_server(other, embedder=HashEmbedder(dimension=32))) as c:
        report = await call(c, "health", verbose=True)
    assert report["status"] == "unhealthy" and report["ready"] is False
    store_check = report["checks"][0]
    assert store_check["name"] == "store" and store_check["status"] == "error"
    assert "embedding model" in store_check["message"]


# ---- 2. discover_connections ----------------------------------------------------------------------


async def test_discover_connections_finds_related_memories_in_any_namespace(client):
    [anchor, *_] = await seed(client, ["The payments service retries failed card charges three times."], "billing")
    near = await seed(client, ["Failed card charges are retried by the payments worker."], "ops")
    same_ns = await seed(client, ["The payments service charges cards nightly."], "billing")
    await seed(client, ["The office plants need water on Mondays.", "Lunch is pizza on Fridays."], "office")
    found = await call(client, "discover_connections", memory_id=anchor, min_similarity=0.1)
    ids = [c["id"] for c in found["connections"]]
    assert found["memory_id"] == anchor and found["namespace"] == "billing"
    assert anchor not in ids and near[0] in ids and same_ns[0] in ids
    first = found["connections"][0]
    assert first["shared_terms"] and first["score"] >= first["similarity"]
    scores = [c["score"] for c in found["connections"]]
    assert scores == sorted(scores, reverse=True)
    others = await call(
        client, "discover_connections", memory_id=anchor, min_similarity=0.1, exclude_same_namespace=True
    )
    assert {c["namespace"] for c in others["connections"]} <= {"ops", "office"} and others["connections"]
    strict = await call(client, "discover_connections", memory_id=anchor, min_similarity=0.99)
    assert strict["connections"] == [] and strict["total"] == 0
    limited = await call(client, "discover_connections", memory_id=anchor, min_similarity=0.0, limit=1)
    assert len(limited["connections"]) == 1 and limited["total"] >= 2
    missing = await fails(client, "discover_connections", memory_id=str(uuid.uuid4()))
    assert missing["error"] == "MemoryNotFoundError" and "recall" in missing["message"]


# ---- 3. corpus_bridges -----------------------------------------------------------------------------


async def test_corpus_bridges_is_exact_over_every_pair_across_namespaces(client, settings):
    """Every pair of memories in two namespaces at or above the threshold, none inside a namespace:
    the same set a brute-force comparison of the stored vectors gives."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    texts = {ns: [" ".join(rng.choice(words, 4, replace=False)) for _ in range(30)] for ns in ("a", "b", "c")}
    texts["a"].append("alpha bravo charlie delta")
    texts["b"].append("alpha bravo charlie delta")  # an exact twin across namespaces
    texts["a"].append("alpha bravo charlie echo")  # and a near one inside its namespace
    for ns, items in texts.items():
        await seed(client, items, ns)
    found = await call(client, "corpus_bridges", min_similarity=0.6, max_bridges=500)
    assert found["memories_compared"] == 93 and found["namespaces"] == ["a", "b", "c"]
    assert found["bridges"][0]["similarity"] == pytest.approx(1.0, abs=1e-5)
    top = found["bridges"][0]
    assert {top["a"]["content_preview"], top["b"]["content_preview"]} == {"alpha bravo charlie delta"}
    assert all(b["a"]["namespace"] != b["b"]["namespace"] for b in found["bridges"])
    sims = [b["similarity"] for b in found["bridges"]]
    assert sims == sorted(sims, reverse=True)
    # Brute force over the same texts.
    embedder = HashEmbedder()
    rows = [(ns, t) for ns, items in texts.items() for t in items]
    vectors = embedder.embed_documents([t for _, t in rows])
    cross = [
        float(vectors[i] @ vectors[j])
        for i in range(len(rows))
        for j in range(i + 1, len(rows))
        if rows[i][0] != rows[j][0]
    ]
    expected = found["total_bridges"]
    # Equal up to float32 rounding of a product sitting exactly on the threshold.
    assert sum(x >= 0.6 + 1e-5 for x in cross) <= expected <= sum(x >= 0.6 - 1e-5 for x in cross)
    assert expected == len(found["bridges"])
    capped = await call(client, "corpus_bridges", min_similarity=0.6, max_bridges=3)
    assert [b["similarity"] for b in capped["bridges"]] == sims[:3] and capped["total_bridges"] == expected
    two = await call(client, "corpus_bridges", namespaces=["a", "c"], min_similarity=0.6, max_bridges=500)
    assert two["namespaces"] == ["a", "c"] and two["memories_compared"] == 62
    assert all({b["a"]["namespace"], b["b"]["namespace"]} == {"a", "c"} for b in two["bridges"])
    one = await fails(client, "corpus_bridges", namespaces=["a"])
    assert one["error"] == "ValidationError"


# ---- 4. relations ------------------------------------------------------------------------------------


async def test_relate_unrelate_and_get_memories_shows_them(client):
    outage, cert, postmortem = await seed(
        client, ["The outage on May 3rd", "An expired TLS certificate", "The May postmortem"]
    )
    made = await call(client, "relate", source_id=cert, target_id=outage, relation="Caused", weight=0.9)
    assert made["created"] is True and made["relation"]["relation"] == "caused"
    assert made["relation"]["weight"] == pytest.approx(0.9)
    again = await call(client, "relate", source_id=cert, target_id=outage, relation="caused")
    assert again["created"] is False and again["relation"]["weight"] == 1.0
    await call(client, "relate", source_id=postmortem, target_id=outage, relation="describes")
    await call(client, "relate", source_id=postmortem, target_id=outage, relation="part of")
    got = {m["id"]: m for m in (await call(client, "get_memories", memory_ids=[outage, cert]))["memories"]}
    assert {(r["source_id"], r["relation"]) for r in got[outage]["relations"]} == {
        (cert, "caused"),
        (postmortem, "describes"),
        (postmortem, "part of"),
    }
    assert [(r["target_id"], r["weight"]) for r in got[cert]["relations"]] == [(outage, 1.0)]
    one = await call(client, "unrelate", source_id=postmortem, target_id=outage, relation="part of")
    assert one["removed"] == 1 and one["relations"][0]["relation"] == "part of"
    wrong_way = await call(client, "unrelate", source_id=outage, target_id=postmortem)
    assert wrong_way["removed"] == 0  # relations are directed
    every = await call(client, "unrelate", source_id=postmortem, target_id=outage)
    assert every["removed"] == 1
    # Typed errors that say what to do.
    missing = await fails(client, "relate", source_id=cert, target_id=str(uuid.uuid4()), relation="caused")
    assert missing["error"] == "MemoryNotFoundError" and "get_memories" in missing["message"]
    itself = await fails(client, "relate", source_id=cert, target_id=cert, relation="caused")
    assert itself["error"] == "ValidationError" and "two different" in itself["message"]
    blank = await fails(client, "relate", source_id=cert, target_id=outage, relation="   ")
    assert blank["error"] == "ValidationError"
    heavy = await client.call_tool("relate", {"source_id": cert, "target_id": outage, "relation": "x", "weight": 2})
    assert heavy.is_error


async def test_relations_go_with_their_memories(client):
    a, b, c = await seed(client, ["first memory here", "second memory here", "third memory here"])
    await call(client, "relate", source_id=a, target_id=b, relation="supports")
    await call(client, "relate", source_id=c, target_id=a, relation="contradicts")
    await call(client, "forget", memory_id=a)
    got = (await call(client, "get_memories", memory_ids=[b, c]))["memories"]
    assert all(m["relations"] == [] for m in got)
    # Nothing is left behind in the table either.
    assert (await call(client, "unrelate", source_id=c, target_id=a))["removed"] == 0
    # A namespace deleted takes its relations along.
    x, y = await seed(client, ["in a doomed namespace", "also doomed"], "doomed")
    await call(client, "relate", source_id=b, target_id=x, relation="mentions")
    await call(client, "delete_namespace", namespace="doomed", confirm=True, dry_run=False)
    assert (await call(client, "get_memories", memory_ids=[b]))["memories"][0]["relations"] == []


@pytest.mark.parametrize("fmt", ["json", "parquet", "csv"])
async def test_relations_travel_through_export_and_import(tmp_path, fmt):
    first = Settings(path=tmp_path / "one", preload=False, access_flush_seconds=0.05)
    exports = first.allowed_export_dirs[0]
    async with Client(create_server(first, embedder=HashEmbedder())) as c:
        a, b, c_ = await seed(c, ["a decision was made", "because of this evidence", "and this follow-up"])
        await call(c, "relate", source_id=b, target_id=a, relation="supports", weight=0.5)
        await call(c, "relate", source_id=c_, target_id=a, relation="part_of")
        exported = await call(c, "export_memories", output_path=f"all.{fmt}", include_vectors=True)
        assert exported["relations_exported"] == 2
    second = Settings(path=tmp_path / "two", preload=False, import_dirs=[exports])
    async with Client(create_server(second, embedder=HashEmbedder())) as c:
        dry = await call(c, "import_memories", source_path=str(exports / f"all.{fmt}"))
        assert dry["relations_imported"] == 0 and dry["would_import"] == 3
        done = await call(c, "import_memories", source_path=str(exports / f"all.{fmt}"), dry_run=False)
        assert done["memories_imported"] == 3 and done["relations_imported"] == 2
        got = (await call(c, "get_memories", memory_ids=[a]))["memories"][0]["relations"]
        assert sorted((r["source_id"], r["relation"], r["weight"]) for r in got) == sorted(
            [(b, "supports", 0.5), (c_, "part_of", 1.0)]
        )
        # Imported again: the ids are taken, so the copies get new ids and their own relations.
        again = await call(c, "import_memories", source_path=str(exports / f"all.{fmt}"), dry_run=False)
        assert again["new_ids_assigned"] == 3 and again["relations_imported"] == 2
        copies = {m["content"]: m for m in (await call(c, "recall", query="a decision was made", limit=10))["memories"]}
        assert len(copies) == 3


async def test_an_invalid_relation_fails_the_whole_import(tmp_path):
    import json

    settings = Settings(path=tmp_path / "s", preload=False)
    exports = settings.allowed_export_dirs[0]
    exports.mkdir(parents=True)
    good = str(uuid.uuid4())
    rows = [
        {"id": good, "content": "kept only if every row is valid"},
        {"content": "points nowhere sensible", "relations": [{"target_id": "not-an-id", "relation": "x"}]},
    ]
    (exports / "bad.json").write_text(json.dumps(rows))
    async with Client(create_server(settings, embedder=HashEmbedder())) as c:
        failed = await fails(c, "import_memories", source_path="bad.json", dry_run=False, regenerate_embeddings=True)
        assert failed["error"] == "MemoryImportError" and "relations" in failed["message"]
        assert (await call(c, "stats"))["total_memories"] == 0


async def test_two_writers_relating_at_once_lose_nothing(client):
    ids = await seed(client, [f"memory number {i}" for i in range(12)])

    async def link(i: int) -> None:
        await call(client, "relate", source_id=ids[i], target_id=ids[(i + 1) % 12], relation="next")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for i in range(12):
                group.start_soon(link, i)
    got = (await call(client, "get_memories", memory_ids=ids))["memories"]
    assert all(len(m["relations"]) == 2 for m in got)


# ---- 5. spreading activation ----------------------------------------------------------------------


async def test_recall_expand_follows_relations_and_conversation_neighbours(client):
    [hit] = await seed(client, ["The deploy failed on Friday evening."])
    [cause] = await seed(client, ["Certificates rotate quarterly by cron."])
    [other_ns] = await seed(client, ["Marketing budget review notes."], "elsewhere")
    await seed(client, [f"unrelated filler note {i}" for i in range(10)])
    await call(client, "relate", source_id=cause, target_id=hit, relation="caused")
    await call(client, "relate", source_id=hit, target_id=other_ns, relation="mentions")
    plain = await call(client, "recall", query="deploy failed Friday", limit=1)
    assert plain["memories"][0]["id"] == hit and plain["expanded"] is None
    grown = await call(client, "recall", query="deploy failed Friday", limit=1, expand=3)
    reached = {m["id"]: m for m in grown["expanded"]}
    assert cause in reached and other_ns in reached  # no namespace given: every namespace
    assert reached[cause]["path"] == [{"from_id": hit, "via": "relation:caused (reverse)"}]
    assert reached[other_ns]["path"] == [{"from_id": hit, "via": "relation:mentions"}]
    assert 0 < reached[cause]["activation"] <= 1
    scoped = await call(client, "recall", query="deploy failed Friday", limit=1, expand=3, namespace="default")
    assert {m["id"] for m in scoped["expanded"]} == {cause}
    # Conversation neighbours: the turns around a hit in its session.
    turns = await seed(
        client,
        ["Alice: did you see the lighthouse", "Bob: yes, we sailed past it", "Alice: great"],
        "chat",
        session_id="s1",
    )
    talk = await call(client, "recall", query="lighthouse", limit=1, namespace="chat", expand=2)
    assert talk["memories"][0]["id"] == turns[0]
    assert [m["id"] for m in talk["expanded"]][:1] == [turns[1]]
    assert talk["expanded"][0]["path"][0]["via"] == "conversation"
    refused = await fails(client, "recall", query="deploy", expand=2, as_of="2100-01-01T00:00:00Z")
    assert refused["error"] == "ValidationError" and "as_of" in refused["message"]


async def test_wander_may_step_over_a_relation(client):
    start, far = await seed(client, ["alpha beta gamma", "zulu yankee xray"])
    await seed(client, [f"alpha beta filler {i}" for i in range(5)])
    await call(client, "relate", source_id=start, target_id=far, relation="leads to")
    walk = await call(client, "wander", start_id=start, steps=1, temperature=0.0)
    assert walk["steps"][1]["memory"]["id"] == far and walk["steps"][1]["via"] == "relation:leads to"


# ---- 6. co-recall links and the fsrs decay ------------------------------------------------------------


async def test_memories_recalled_together_repeatedly_gain_a_link(client):
    a, b, c = await seed(client, ["kettle boils water", "kettle descaling vinegar", "kettle whistle noise"])
    lone = (await seed(client, ["an unrelated note about gardening"]))[0]

    async def linked() -> set[str]:
        found = await call(client, "recall", query="boils water", limit=1, expand=3, namespace="default")
        assert found["memories"][0]["id"] == a
        return {m["id"] for m in found["expanded"] if m["path"][0]["via"] == "co_recall"}

    await call(client, "recall", query="kettle", limit=3)  # once: not yet a link
    await anyio.sleep(0.6)
    assert await linked() == set()
    await call(client, "recall", query="kettle", limit=3)  # twice: linked
    with anyio.fail_after(20):
        while await linked() != {b, c}:
            await anyio.sleep(0.5)  # upkeep writes the links in a pause between calls
    assert lone not in await linked()
    # Forgetting a memory drops its links.
    await call(client, "forget", memory_id=b)
    assert await linked() == {c}


def test_co_recall_strength_is_bounded_and_decays():
    from datetime import datetime, timedelta, timezone

    from spatial_memory.storage.side_tables import co_recall

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert co_recall.decayed(1.0, t0, t0 + timedelta(days=co_recall.HALF_LIFE_DAYS)) == pytest.approx(0.5)
    strength = 0.0
    for _ in range(50):
        strength = min(co_recall.MAX_STRENGTH, strength + co_recall.INCREMENT)
    assert strength == co_recall.MAX_STRENGTH
    assert co_recall.decayed(co_recall.MIN_STRENGTH / 10, t0, t0) < co_recall.MIN_STRENGTH


def test_fsrs_retrievability_halves_at_the_half_life_and_grows_with_recalls():
    from spatial_memory.algorithms.decay import decay_factor

    days = np.array([0.0, 30.0, 60.0, 30.0])
    counts = np.array([0, 0, 0, 3])
    factor = decay_factor(days, function="fsrs", half_life_days=30, access_count=counts, access_weight=0.3)
    assert factor[0] == 1.0 and factor[1] == pytest.approx(0.5)
    exponential = decay_factor(days[:3], function="exponential", half_life_days=30)
    assert factor[2] > exponential[2]  # a power law: a longer tail than the exponential
    assert factor[3] > factor[1]  # recalled three times: more stable


async def test_decay_offers_fsrs(settings):
    from datetime import datetime, timedelta, timezone

    now = [datetime(2026, 3, 1, tzinfo=timezone.utc)]
    async with Client(create_server(settings, embedder=HashEmbedder(), clock=lambda: now[0])) as c:
        await call(c, "remember", content="a memory that will fade", importance=0.8)
        now[0] += timedelta(days=30)
        result = await call(c, "decay", decay_function="fsrs", half_life_days=30, dry_run=True)
    [faded] = result["decayed_memories"]
    assert faded["decay_factor"] == pytest.approx(0.5, abs=1e-3) and faded["new_importance"] == pytest.approx(0.4)


async def test_health_of_a_read_only_store_is_degraded_and_relate_is_refused(settings):
    async with Client(create_server(settings, embedder=HashEmbedder())) as c:
        a, b = await seed(c, ["one memory", "another memory"])
    read_only = Settings(path=settings.path, preload=False, read_only=True)
    async with Client(create_server(read_only, embedder=HashEmbedder())) as c:
        report = await call(c, "health", verbose=True)
        refused = await fails(c, "relate", source_id=a, target_id=b, relation="supports")
    assert report["status"] == "degraded" and report["ready"] is True
    checks = {x["name"]: x for x in report["checks"]}
    assert checks["store"]["status"] == "warning" and "read-only" in checks["store"]["message"]
    assert refused["error"] == "ReadOnlyStoreError"

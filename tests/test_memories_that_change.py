"""Memories that change (issue 17), through an MCP client: update and history, supersede and as_of,
expiry by type (a test clock), pinned memories first, duplicates and contradictions flagged on write,
provenance, export/import of versions, an old store migrating, two processes updating one memory."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio
import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.server import create_server

from .conftest import call, data

pytestmark = pytest.mark.anyio


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def mc(settings: Settings, real_embedder, clock):
    async with Client(create_server(settings, embedder=real_embedder, clock=clock)) as client:
        yield client


async def ids_found(client, query: str, **options) -> list[str]:
    return [m["id"] for m in (await call(client, "recall", query=query, **options))["memories"]]


@pytest.mark.model
async def test_update_then_recall_finds_the_new_content_and_history_keeps_the_old(mc, clock):
    first = await call(mc, "remember", content="The billing service stores invoices in PostgreSQL 13.")
    await call(mc, "remember", content="Lunch on Fridays is pizza at the office.")
    clock.advance(days=2)
    updated = await call(mc, "update_memory", memory_id=first["id"], content="The billing service moved to MongoDB.")
    assert updated["changed"] == ["content"] and updated["re_embedded"] and updated["memory"]["version"] == 2
    assert updated["memory"]["provenance"]["via"] == "update"

    hits = (await call(mc, "recall", query="which database does billing use now", limit=1))["memories"]
    assert hits[0]["id"] == first["id"] and "MongoDB" in hits[0]["content"]
    history = await call(mc, "memory_history", memory_id=first["id"])
    assert [v["version"] for v in history["versions"]] == [2, 1]
    old = history["versions"][1]
    assert "PostgreSQL 13" in old["content"] and old["retired_by"] == "update" and not old["current"]
    assert old["valid_until"] == history["versions"][0]["valid_from"]
    # Unchanged fields stay, an update that changes nothing writes no version.
    same = await call(mc, "update_memory", memory_id=first["id"], content="The billing service moved to MongoDB.")
    assert same["changed"] == [] and same["memory"]["version"] == 2
    # The old version is what recall found before the update (as_of), not now.
    before = await call(
        mc, "recall", query="billing database", limit=1, as_of=(clock.now - timedelta(days=1)).isoformat()
    )
    assert "PostgreSQL 13" in before["memories"][0]["content"]


@pytest.mark.model
async def test_versions_are_bounded_by_the_setting(tmp_path, real_embedder, clock):
    settings = Settings(path=tmp_path / "s", preload=False, max_versions=3)
    async with Client(create_server(settings, embedder=real_embedder, clock=clock)) as client:
        memory = await call(client, "remember", content="Counter is 0")
        for i in range(1, 6):
            clock.advance(minutes=1)
            await call(client, "update_memory", memory_id=memory["id"], importance=i / 10)
        history = await call(client, "memory_history", memory_id=memory["id"])
        assert [v["version"] for v in history["versions"]] == [6, 5, 4]
        got = await call(client, "get_memories", memory_ids=[memory["id"]])
        assert got["memories"][0]["versions"] == 3


@pytest.mark.model
async def test_supersede_then_recall_returns_the_successor_and_as_of_the_predecessor(mc, clock):
    old = await call(mc, "remember", content="Ann lives in Lisbon, in an apartment near the river.", namespace="p")
    moment = clock.now + timedelta(hours=1)
    clock.advance(days=30)
    new = await call(mc, "remember", content="Ann moved to Berlin in March.", namespace="p", supersedes=[old["id"]])
    assert new["superseded"] == [old["id"]]

    assert await ids_found(mc, "where does Ann live", namespace="p") == [new["id"]]
    then = await ids_found(mc, "where does Ann live", namespace="p", as_of=moment.isoformat())
    assert then == [old["id"]]
    hybrid = await call(mc, "hybrid_recall", query="where does Ann live", namespace="p", as_of=moment.isoformat())
    assert [m["id"] for m in hybrid["memories"]] == [old["id"]]

    got = await call(mc, "get_memories", memory_ids=[old["id"], new["id"]])
    closed, successor = got["memories"]
    assert closed["current"] is False and closed["superseded_by"] == new["id"] and closed["valid_until"]
    assert successor["provenance"]["via"] == "supersede" and successor["provenance"]["derived_from"] == [old["id"]]
    # Every read leaves the closed memory out; it cannot be superseded twice.
    stats = await call(mc, "stats")
    assert stats["total_memories"] == 1
    again = data(await mc.call_tool("remember", {"content": "Ann moved again", "supersedes": [old["id"]]}))
    assert again["error"] == "MemoryNotFoundError" and "superseded" in again["message"]
    # forget removes the memory and every version of it.
    await call(mc, "forget", memory_id=new["id"])
    assert (await call(mc, "get_memories", memory_ids=[new["id"]]))["not_found"] == [new["id"]]


@pytest.mark.model
async def test_a_conversation_memory_expires_and_never_shows_again(mc, clock, settings):
    chat = await call(
        mc, "remember", content="We are debugging the flaky checkout test today.", memory_type="conversation"
    )
    fact = await call(mc, "remember", content="The checkout service is written in Go.")
    context = await call(mc, "remember", content="Currently editing checkout_test.go line 40.", memory_type="context")
    pinned = await call(
        mc, "remember", content="Checkout questions go to Dana.", memory_type="conversation", pinned=True
    )
    got = {m["id"]: m for m in (await call(mc, "get_memories", memory_ids=[chat["id"], fact["id"]]))["memories"]}
    assert got[chat["id"]]["expires_at"] == "2026-04-01T09:00:00Z" and got[fact["id"]]["expires_at"] is None

    everything = {chat["id"], fact["id"], context["id"], pinned["id"]}
    assert set(await ids_found(mc, "checkout test", limit=10)) == everything
    clock.advance(days=1)  # past the end of the day: the context memory is gone
    assert set(await ids_found(mc, "checkout test", limit=10)) == everything - {context["id"]}
    clock.advance(days=30)  # past 30 days: the conversation memory too, but not the pinned one
    remaining = {fact["id"], pinned["id"]}
    assert set(await ids_found(mc, "checkout test", limit=10)) == remaining
    assert set(await ids_found(mc, "checkout test", limit=10, hybrid_alpha=1.0)) == remaining
    assert (await call(mc, "stats"))["total_memories"] == 2
    assert (await call(mc, "get_memories", memory_ids=[chat["id"]]))["not_found"] == [chat["id"]]
    assert not data(await mc.call_tool("nearby", {"memory_id": chat["id"]})).get("memories")
    exported = await call(mc, "export_memories", output_path="all.json")
    assert exported["memories_exported"] == 2
    # Upkeep purges them from the store.
    store_rows = _table_ids(settings.db_path)
    with anyio.fail_after(30):
        while chat["id"] in store_rows or context["id"] in store_rows:
            await anyio.sleep(0.1)
            store_rows = _table_ids(settings.db_path)
    assert pinned["id"] in store_rows


def _table_ids(db_path: Path) -> set[str]:
    import lancedb

    return set(lancedb.connect(str(db_path)).open_table("memories").to_arrow().column("id").to_pylist())


@pytest.mark.model
async def test_pinned_memories_come_first(mc, clock):
    profile = await call(mc, "remember", content="The user prefers answers in British English.", pinned=True)
    for text in ("Deploys run on Tuesdays.", "The staging database is small.", "Logs are kept for 30 days."):
        await call(mc, "remember", content=text)
    other = await call(mc, "remember", content="Team B prefers tabs.", namespace="team-b", pinned=True)
    found = (await call(mc, "recall", query="when do deploys run", limit=1))["memories"]
    # No namespace: every namespace's pinned memories first, then the `limit` best.
    assert {m["id"] for m in found[:2]} == {profile["id"], other["id"]} and all(m["pinned"] for m in found[:2])
    assert [m["content"] for m in found[2:]] == ["Deploys run on Tuesdays."] and "pinned" not in found[
        2
    ]  # left out: not pinned
    scoped = (await call(mc, "recall", query="when do deploys run", limit=1, namespace="default"))["memories"]
    assert [m["id"] for m in scoped][:1] == [profile["id"]] and other["id"] not in {m["id"] for m in scoped}
    # Unpinned, it competes like any memory; decay leaves pinned ones alone.
    await call(mc, "update_memory", memory_id=profile["id"], pinned=False)
    found = (await call(mc, "recall", query="when do deploys run", limit=1, namespace="default"))["memories"]
    assert found[0]["content"] == "Deploys run on Tuesdays."
    await call(mc, "update_memory", memory_id=profile["id"], pinned=True)
    clock.advance(days=400)
    decayed = await call(mc, "decay", dry_run=True, half_life_days=1)
    assert decayed["memories_decayed"] >= 3 and profile["id"] not in {m["id"] for m in decayed["decayed_memories"]}


@pytest.mark.model
async def test_near_duplicates_and_contradictions_are_flagged_on_write(mc):
    limit = await call(mc, "remember", content="The API rate limit is 100 requests per minute.")
    await call(mc, "remember", content="Our office plants need watering on Mondays.")
    dup = await call(mc, "remember", content="The API rate limit is 100 requests per minute!")
    assert [(s["id"], s["relation"]) for s in dup["similar_existing"]] == [(limit["id"], "duplicate")]
    assert dup["stored"] and dup["id"] != limit["id"]
    clash = await call(mc, "remember", content="The API rate limit is 1000 requests per minute.")
    assert (limit["id"], "contradiction") in {(s["id"], s["relation"]) for s in clash["similar_existing"]}
    skipped = await call(mc, "remember", content="The API rate limit is 100 requests per minute.", on_duplicate="skip")
    assert skipped["stored"] is False and skipped["id"] in {limit["id"], dup["id"]}
    batch = await call(
        mc,
        "remember_batch",
        memories=[
            {"content": "Plants in the office need watering on Mondays."},
            {"content": "Rate limit is 10 per second."},
        ],
    )
    assert batch["count"] == 2 and any(s["index"] == 0 for s in batch["similar_existing"])
    # A batch names each item's closest look-alike only; remember names every one (up to five).
    item = "The API rate limit is 100 requests per minute."
    alone = await call(mc, "remember", content=item, allow_duplicate=True)
    assert len(alone["similar_existing"]) >= 2
    batch = await call(mc, "remember_batch", memories=[{"content": item}], allow_duplicate=True)
    (closest,) = batch["similar_existing"]
    assert closest["index"] == 0 and closest["similarity"] == max(s["similarity"] for s in alone["similar_existing"])
    replaced = await call(
        mc, "remember", content="The API rate limit is 500 requests per minute.", on_duplicate="supersede"
    )
    assert limit["id"] in replaced["superseded"]
    assert limit["id"] not in await ids_found(mc, "API rate limit", limit=10)


@pytest.mark.model
async def test_provenance_records_the_writer_and_the_client(mc):
    one = await call(mc, "remember", content="Provenance test memory", session_id="chat-9")
    extracted = await call(mc, "extract", text="We decided to use Redis for caching the sessions.", min_confidence=0.1)
    ids = [one["id"]] + [e["memory_id"] for e in extracted["extractions"] if e["memory_id"]]
    got = {m["id"]: m for m in (await call(mc, "get_memories", memory_ids=ids))["memories"]}
    first = got[one["id"]]["provenance"]
    assert first["via"] == "remember" and first["session_id"] == "chat-9" and first["client"] == "mcp"
    assert any(m["provenance"]["via"] == "extract" for k, m in got.items() if k != one["id"])


@pytest.mark.model
async def test_versions_travel_through_export_and_import(tmp_path, real_embedder, clock):
    settings = Settings(path=tmp_path / "a", preload=False)
    async with Client(create_server(settings, embedder=real_embedder, clock=clock)) as client:
        kept = await call(client, "remember", content="Project codename is Falcon.", pinned=True)
        clock.advance(hours=1)
        await call(client, "update_memory", memory_id=kept["id"], content="Project codename is Osprey.")
        gone = await call(client, "remember", content="The team meets on Mondays.")
        clock.advance(hours=1)
        await call(client, "remember", content="The team meets on Wednesdays.", supersedes=[gone["id"]])
        exported = await call(client, "export_memories", output_path="all.json")
        assert exported["memories_exported"] == 2 and exported["versions_exported"] == 2
        file = Path(exported["output_path"])
    other = Settings(path=tmp_path / "b", preload=False)
    (other.path / "exports").mkdir(parents=True)
    shutil.copy(file, other.path / "exports" / "all.json")
    async with Client(create_server(other, embedder=real_embedder, clock=clock)) as client:
        imported = await call(client, "import_memories", source_path="all.json", dry_run=False)
        assert imported["memories_imported"] == 2 and imported["versions_imported"] == 2
        history = await call(client, "memory_history", memory_id=kept["id"])
        assert [v["content"] for v in history["versions"]] == [
            "Project codename is Osprey.",
            "Project codename is Falcon.",
        ]
        got = (await call(client, "get_memories", memory_ids=[kept["id"], gone["id"]]))["memories"]
        assert got[0]["pinned"] and got[0]["provenance"]["via"] == "import"
        assert got[1]["current"] is False and got[1]["superseded_by"]


FIXTURE = Path(__file__).parent / "fixtures" / "store_0_2_0" / "lancedb"


@pytest.mark.model
async def test_a_store_of_the_previous_release_gains_the_new_columns_with_nothing_lost(tmp_path, auto_embedder):
    import lancedb

    shutil.copytree(FIXTURE, tmp_path / "store" / "lancedb")
    db = tmp_path / "store" / "lancedb"
    before = sorted(
        lancedb.connect(str(db)).open_table("memories").to_arrow().drop_columns(["vector"]).to_pylist(),
        key=lambda r: r["id"],
    )
    assert before and "pinned" not in before[0]
    settings = Settings(path=tmp_path / "store", preload=False)
    async with Client(create_server(settings, embedder=auto_embedder)) as client:
        assert (await call(client, "stats"))["total_memories"] == len(before)
        added = ("memory_type", "expires_at", "pinned", "version", "provenance")
        after = sorted(
            lancedb.connect(str(db)).open_table("memories").to_arrow().drop_columns(["vector"]).to_pylist(),
            key=lambda r: r["id"],
        )
        assert [{k: v for k, v in r.items() if k not in added} for r in after] == before
        old = next(r for r in before if r["content"].startswith("The project uses PostgreSQL"))
        got = (await call(client, "get_memories", memory_ids=[old["id"]]))["memories"][0]
        assert got["memory_type"] == "fact" and got["version"] == 1 and got["provenance"] is None and not got["pinned"]
        updated = await call(client, "update_memory", memory_id=old["id"], content="The project uses SQLite now.")
        assert updated["memory"]["version"] == 2
        history = await call(client, "memory_history", memory_id=old["id"])
        assert [v["version"] for v in history["versions"]] == [2, 1]
        assert (await ids_found(client, "which database does the project use", limit=1)) == [old["id"]]


async def test_two_processes_updating_one_memory_keep_both_versions(tmp_path):
    from .reliability import new_store, stdio_transport

    store = new_store(tmp_path, "store")
    logs = [open(tmp_path / f"server-{k}.log", "w") for k in range(2)]  # noqa: SIM115
    try:
        async with Client(stdio_transport(store, logs[0])) as a, Client(stdio_transport(store, logs[1])) as b:
            memory = await call(a, "remember", content="version one")
            results: dict[str, dict] = {}

            async def update(client, name: str, text: str) -> None:
                results[name] = await call(client, "update_memory", memory_id=memory["id"], content=text)

            for i in range(3):  # a few rounds, so the updates really do overlap
                async with anyio.create_task_group() as tg:
                    tg.start_soon(update, a, "a", f"round {i}, written by a")
                    tg.start_soon(update, b, "b", f"round {i}, written by b")
            history = await call(a, "memory_history", memory_id=memory["id"], limit=100)
    finally:
        for log in logs:
            log.close()
    versions = [v["version"] for v in history["versions"]]
    assert versions == list(range(7, 0, -1)), versions  # 1 + 6 updates, none lost
    contents = {v["content"] for v in history["versions"]}
    assert {f"round {i}, written by {k}" for i in range(3) for k in "ab"} <= contents

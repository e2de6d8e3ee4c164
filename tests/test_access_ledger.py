"""Access counts on an indexed table live in the access ledger, never in rewritten memory rows.

The ledger is this file's subject. What a caller sees - counts on every read, no new table
version - goes through the store's public methods; whether an entry sits in the ledger (or was
folded out of it, or retired) is not visible there, since reads merge the ledger into the rows,
so those checks look at the store's ledger itself (`store.ledger`)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import lancedb
import numpy as np
import pytest

from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.search.indexing import IndexPolicy
from spatial_memory.storage.side_tables import access_counts
from spatial_memory.storage.side_tables.access_ledger import LEDGER_TABLE
from spatial_memory.storage.store import MemoryStore

from .conftest import indexed_vector_rows

DIM = 32
ROWS = 1_200
POLICY = IndexPolicy(vector_index_threshold=1_000, scalar_index_threshold=1_000)
WHEN = datetime(2030, 5, 4, 3, 2, 1, tzinfo=timezone.utc)  # later than every row's creation


def vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def indexed_template(tmp_path_factory) -> tuple[Path, list[MemoryRecord]]:
    """An indexed table, built once per module; each test gets a copy (`indexed`)."""
    path = tmp_path_factory.mktemp("indexed") / "db"
    store = MemoryStore(path, "unit", DIM, index_policy=POLICY)
    rows = [
        MemoryRecord(id=new_id(), content=f"memory number {i} about topic{i % 7}", namespace=f"ns{i % 3}", vector=v)
        for i, v in enumerate(vectors(ROWS))
    ]
    store.add(rows)
    store.compact()
    assert indexed_vector_rows(store) == ROWS
    return path, rows


@pytest.fixture
def indexed(indexed_template, tmp_path) -> tuple[MemoryStore, list[MemoryRecord]]:
    template, rows = indexed_template
    shutil.copytree(template, tmp_path / "db")
    store = MemoryStore(tmp_path / "db", "unit", DIM, index_policy=POLICY)
    assert indexed_vector_rows(store) == ROWS
    return store, rows


def test_accesses_leave_the_indexed_table_untouched_and_show_on_every_read(indexed):
    store, rows = indexed
    version = store.version
    store.record_access({rows[0].id: 2, rows[1].id: 1}, when=WHEN)
    store.record_access({rows[0].id: 1}, when=WHEN + timedelta(seconds=5))
    assert store.version == version  # no memory row was rewritten
    assert len(store.ledger) == 2

    first = store.get(rows[0].id)
    assert (first.access_count, first.last_accessed) == (3, WHEN + timedelta(seconds=5))
    assert [r.access_count for r in store.get_many([rows[1].id, rows[2].id])] == [1, 0]
    hit = store.search(rows[0].vector, 1)[0]
    assert hit.record.id == rows[0].id and hit.record.access_count == 3
    in_ns = store.search(rows[0].vector, 1, build_filter(namespace=rows[0].namespace))[0]
    assert in_ns.record.access_count == 3
    scanned = {r.id: r.access_count for r in store.scan(build_filter(ids=[rows[0].id, rows[1].id]))}
    assert scanned == {rows[0].id: 3, rows[1].id: 1}
    keyword = {r.id: r.access_count for r, _ in store.fts_search("memory number 0", 50)}
    assert keyword[rows[0].id] == 3
    arrow = store.scan_arrow(["id", "access_count", "last_accessed"]).to_pylist()
    by_id = {r["id"]: r for r in arrow}
    assert by_id[rows[0].id]["access_count"] == 3 and by_id[rows[1].id]["access_count"] == 1
    assert by_id[rows[0].id]["last_accessed"] == WHEN + timedelta(seconds=5)
    assert by_id[rows[2].id]["access_count"] == 0


def test_a_filter_on_access_columns_sees_the_ledger(indexed):
    store, rows = indexed
    store.record_access({rows[0].id: 4, rows[1].id: 1}, when=WHEN)
    busy = build_filter(filters={"access_count": {"gte": 2}})
    assert store.count(busy) == 1
    assert [r.id for r in store.scan(busy)] == [rows[0].id]
    # Folded: the rows now carry the counts themselves and the ledger is empty.
    assert len(store.ledger) == 0
    assert store.get(rows[0].id).access_count == 4
    recent = build_filter(filters={"last_accessed": {"gte": WHEN.isoformat()}})
    assert {r.id for r in store.scan(recent)} == {rows[0].id, rows[1].id}


def test_rewriting_or_deleting_a_row_retires_its_ledger_entry(indexed):
    store, rows = indexed
    store.record_access({rows[0].id: 2, rows[1].id: 3, rows[2].id: 1}, when=WHEN)
    read = store.get(rows[0].id, with_vector=True)
    store.upsert([replace(read, importance=0.9)])  # read with its ledger values, written whole
    assert rows[0].id not in store.ledger.entries()
    assert store.get(rows[0].id).access_count == 2
    store.delete_ids([rows[1].id])
    assert set(store.ledger.entries()) == {rows[2].id}
    # A record written from outside (an import) keeps its own count.
    outside = replace(rows[2], access_count=10)
    store.upsert([outside])
    assert store.get(rows[2].id).access_count == 10
    store.record_access({rows[2].id: 1})
    assert store.get(rows[2].id).access_count == 11


def test_another_process_sees_and_adds_to_the_ledger(indexed, tmp_path):
    store, rows = indexed
    store.record_access({rows[0].id: 2}, when=WHEN)
    other = MemoryStore(tmp_path / "db", "unit", DIM, index_policy=POLICY)
    assert other.get(rows[0].id).access_count == 2
    other.record_access({rows[0].id: 5, rows[3].id: 1}, when=WHEN)
    assert store.get(rows[0].id).access_count == 7
    assert store.get(rows[3].id).access_count == 1
    store.upsert([replace(store.get(rows[3].id, with_vector=True), importance=0.1)])
    assert rows[3].id not in other.ledger.entries()


def test_ledger_is_folded_into_the_rows_past_its_share_of_the_table(indexed, monkeypatch):
    store, rows = indexed
    monkeypatch.setattr(access_counts, "FOLD_FRACTION", 0.01)  # 12 of 1,200 rows
    store.record_access({r.id: 1 for r in rows[:10]}, when=WHEN)
    assert len(store.ledger) == 10
    version = store.version
    store.record_access({r.id: 2 for r in rows[5:15]}, when=WHEN)
    assert len(store.ledger) == 0 and store.version == version + 1  # one commit for the fold
    assert store.needs_compaction()  # which rewrites the fragments the fold punched holes in
    counts = {r.id: r.access_count for r in store.get_many([r.id for r in rows[:16]])}
    assert [counts[r.id] for r in rows[:16]] == [1] * 5 + [3] * 5 + [2] * 5 + [0]


def test_fold_is_idempotent_when_clearing_the_ledger_fails(indexed, monkeypatch):
    store, rows = indexed
    store.record_access({rows[0].id: 2}, when=WHEN)

    def broken(ids):
        raise OSError("disk full")

    monkeypatch.setattr(store.ledger, "drop", broken)
    store.accesses.fold()  # the row got the count; the ledger entry stayed behind
    monkeypatch.undo()
    assert store.get(rows[0].id).access_count == 2
    store.accesses.fold()
    assert store.get(rows[0].id).access_count == 2  # absolute values: folding twice adds nothing
    assert len(store.ledger) == 0


def test_small_tables_write_counts_into_rows_and_fold_a_leftover_ledger(tmp_path):
    store = MemoryStore(tmp_path / "db", "unit", DIM, index_policy=POLICY)
    rows = [MemoryRecord(id=new_id(), content=f"m{i}", vector=v) for i, v in enumerate(vectors(20))]
    store.add(rows)
    store.record_access({rows[0].id: 1}, when=WHEN)
    assert LEDGER_TABLE not in lancedb.connect(str(tmp_path / "db")).list_tables().tables  # no index, no ledger
    assert store.get(rows[0].id).access_count == 1
    # A ledger left from when the table was large is folded before the next direct write.
    with store.exclusive():
        from spatial_memory.storage.side_tables.access_ledger import Access

        store.ledger.write({rows[1].id: Access(6, WHEN)})
    assert store.get(rows[1].id).access_count == 6
    store.record_access({rows[1].id: 1, rows[0].id: 1}, when=WHEN)
    assert len(store.ledger) == 0
    assert [r.access_count for r in store.get_many([rows[0].id, rows[1].id])] == [2, 7]


def test_ledger_stays_small_on_disk(indexed):
    store, rows = indexed
    for i in range(30):
        store.record_access({rows[i].id: 1}, when=WHEN)
    assert store.ledger.writes_since_optimize < 30  # optimized along the way (its count of writes since the last tidy)
    assert len(store.ledger) == 30
    assert sum(r.access_count for r in store.get_many([r.id for r in rows[:30]])) == 30


@pytest.mark.anyio
async def test_recall_bookkeeping_on_an_indexed_store_through_mcp(tmp_path, fake_embedder):
    """Recalls through the server count accesses without rewriting a row of the indexed table;
    export sees the counts."""
    import asyncio
    import json

    from mcp import Client

    from spatial_memory.config import Settings
    from spatial_memory.server.app import create_server
    from tests.conftest import data

    settings = Settings(
        path=tmp_path / "store",
        preload=False,
        access_flush_seconds=0.05,
        vector_index_threshold=1_000,
        compact_fragment_threshold=4,
    )
    async with Client(create_server(settings, embedder=fake_embedder)) as client:
        for start in range(0, ROWS, 100):
            batch = [{"content": f"note {i} about subject{i % 11} and item{i}"} for i in range(start, start + 100)]
            assert not (await client.call_tool("remember_batch", {"memories": batch})).is_error
        # Upkeep compacts after the bulk writes and builds the index; the rows of writes that land
        # during the build are folded in once the store has been quiet a while (IDLE_COMPACT_SECONDS).
        # Upkeep waits for pauses between calls, so poll slowly.
        for _ in range(300):
            stats = data(await client.call_tool("stats", {}))
            vector = [i for i in stats["indices"] if i["column"] == "vector"]
            if vector and vector[0]["num_indexed_rows"] == ROWS and not stats["needs_compaction"]:
                break
            await asyncio.sleep(0.5)
        else:
            pytest.fail(f"the server never finished its vector index: {stats}")
        await asyncio.sleep(1.0)  # the server marks its index ready just after the build seen here
        observer = MemoryStore(settings.path / "lancedb", fake_embedder.model_id, 64)  # another process's view
        assert indexed_vector_rows(observer) == ROWS
        version = observer.version
        target = None
        for _ in range(5):
            found = data(await client.call_tool("recall", {"query": "note 7 about subject7 and item7", "limit": 1}))
            target = found["memories"][0]["id"]
        exported = data(await client.call_tool("export_memories", {"output_path": "all.json"}))
    counts = {m["id"]: m["access_count"] for m in json.loads(open(exported["output_path"]).read())["memories"]}
    assert counts[target] == 5 and sum(counts.values()) == 5
    assert observer.version == version  # every count went to the ledger
    assert observer.get(target).access_count == 5

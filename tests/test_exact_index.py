"""The in-memory exact index must answer exactly what LanceDB's own search answers, through
every kind of write, compaction, and writes by another process on the same store.

The exact copy is this file's subject, so besides the store's public searches it looks at the
copy itself (`store.exact`: its `index`, `snapshot()`, `fetch_rows`): whether there is one, which row
addresses it still has to resolve, whether it was reloaded. Nothing public reports those. The
reference answers come from LanceDB on a connection of their own, not through the store."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import lancedb
import numpy as np
import pytest

from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.search.exact_index import ExactIndex
from spatial_memory.storage.search.indexing import IndexPolicy
from spatial_memory.storage.store import MemoryStore
from spatial_memory.storage.table.schema import TABLE_NAME

DIM = 8


def record(rng: np.random.Generator, namespace: str = "default", content: str = "") -> MemoryRecord:
    vec = rng.normal(size=DIM).astype(np.float32)
    return MemoryRecord(
        id=new_id(),
        content=content or f"memory {rng.integers(1 << 30)}",
        namespace=namespace,
        vector=vec / np.linalg.norm(vec),
    )


def lance_answer(path: Path, query: np.ndarray, limit: int, namespace: str | None):
    """The same search, answered by LanceDB's flat search over the store at `path`, opened
    afresh (the store and its exact copy bypassed)."""
    table = lancedb.connect(str(path)).open_table(TABLE_NAME)
    q = table.search(query, vector_column_name="vector").distance_type("dot").select(["id", "_distance"])
    if namespace is not None:
        q = q.where(build_filter(namespace=namespace).sql, prefilter=True)
    table = q.limit(limit).to_arrow()
    return [(i, 1 - d) for i, d in zip(table.column("id").to_pylist(), table.column("_distance").to_pylist())]


def assert_same(store: MemoryStore, path: Path, rng: np.random.Generator, namespaces: list[str]) -> None:
    for _ in range(5):
        query = record(rng).vector
        namespace = rng.choice([None, *namespaces])
        hits = store.search(query, 7, build_filter(namespace=namespace) if namespace else None)
        expected = lance_answer(path, query, 7, namespace)
        assert [h.record.id for h in hits] == [i for i, _ in expected]
        assert [h.similarity for h in hits] == pytest.approx([max(0.0, s) for _, s in expected], abs=1e-5)
    # Several queries at once (the write checks' batch search) answer what each answers alone.
    queries = np.stack([record(rng).vector for _ in range(6)])
    for namespace in [None, *namespaces]:
        flt = build_filter(namespace=namespace) if namespace else None
        together = store.closest_contents(queries, 4, flt, exact_only=True)
        assert together is not None
        alone = [store.search(query, 4, flt) for query in queries]
        assert [[(m.id, m.content, m.namespace) for m in hits] for hits in together] == [
            [(h.record.id, h.record.content, h.record.namespace) for h in hits] for hits in alone
        ]
        for hits, expected_hits in zip(together, alone, strict=True):  # float32 sums in another order
            assert [m.similarity for m in hits] == pytest.approx([h.similarity for h in expected_hits], abs=1e-6)
    assert store.exact.index.has_copy()


def test_top_matches_numpy_and_breaks_ties_by_row():
    index = ExactIndex(DIM, max_rows=100)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(50, DIM)).astype(np.float32)
    vectors[7] = vectors[3]  # a tie
    import pyarrow as pa

    table = pa.table(
        {
            "id": [f"id{i}" for i in range(50)],
            "namespace": ["a" if i % 2 else "b" for i in range(50)],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
            "_rowid": pa.array(range(50), pa.uint64()),
        }
    )
    snap = index.load(table, version=3)
    query = vectors[3]
    expected = sorted(range(50), key=lambda i: (-float(vectors[i] @ query), i))[:10]
    assert [row for row, _ in index.top(snap, query, 10, None, 0.0)] == expected
    in_a = [row for row, _ in index.top(snap, query, 50, "a", 0.0)]
    assert in_a and all(row % 2 for row in in_a) and len(in_a) == 25
    assert index.top(snap, query, 5, "missing", 0.0) == []
    assert index.current(4) is None and index.current(3) is snap


def test_commits_by_this_process_keep_the_copy_exact(tmp_path):
    rng = np.random.default_rng(7)
    store = MemoryStore(tmp_path / "db", "m", DIM, compact_fragment_threshold=1000)
    namespaces = ["a", "b", "x' OR '1'='1"]
    live: list[MemoryRecord] = []
    store.add([record(rng, str(rng.choice(namespaces))) for _ in range(60)])
    live = store.scan()
    assert_same(store, tmp_path / "db", rng, namespaces)
    version = store.version
    for step in range(40):
        op = random.Random(step).choice(["add", "delete", "upsert", "access", "replace", "where"])
        if op == "add":
            store.add([record(rng, str(rng.choice(namespaces))) for _ in range(int(rng.integers(1, 5)))])
        elif op == "delete" and live:
            store.delete_ids([live[int(rng.integers(len(live)))].id])
        elif op == "upsert" and live:
            old = live[int(rng.integers(len(live)))]
            new = record(rng, str(rng.choice(namespaces)), content="rewritten")
            new.id = old.id
            store.upsert([new])
        elif op == "access" and live:
            store.record_access({live[int(rng.integers(len(live)))].id: 2})
        elif op == "replace" and len(live) > 2:
            store.replace([record(rng, "a")], [live[0].id, live[1].id])
        elif op == "where":
            store.delete_where(build_filter(namespace="b", filters={"content": "nothing matches this"}))
        live = store.scan()
        assert_same(store, tmp_path / "db", rng, namespaces)
    assert store.version > version
    # Every kept record is what LanceDB holds now (access counts, rewritten content).
    snap = store.exact.snapshot()
    rows = [snap.positions[r.id] for r in live]
    from_copy = {r.id: r for r in store.exact.fetch_rows(snap, rows, with_vectors=False)}
    for r in live:
        got = from_copy[r.id]
        assert (got.content, got.namespace, got.access_count, got.last_accessed) == (
            r.content,
            r.namespace,
            r.access_count,
            r.last_accessed,
        )


def test_own_commits_move_the_copy_without_a_reload(tmp_path, monkeypatch):
    """Each write of this process moves the copy to the new version in place: none drops it (a
    reload is a scan of every row, per write)."""
    rng = np.random.default_rng(3)
    store = MemoryStore(tmp_path / "db", "m", DIM, compact_fragment_threshold=1000)
    store.add([record(rng, "a") for _ in range(20)])
    store.search(record(rng).vector, 3)
    assert store.exact.index.current(store.version) is not None
    live = store.scan()
    rewritten = record(rng, "b", content="rewritten")
    rewritten.id = live[0].id
    added = [record(rng, "a") for _ in range(3)]
    for write in (
        lambda: store.add(added),
        lambda: store.add([record(rng, "b")]),
        lambda: store.upsert([rewritten]),
        lambda: store.delete_ids([live[1].id]),
    ):
        write()
        assert store.exact.index.current(store.version) is not None
    # The rows it wrote are held as committed: no LanceDB read to return them.
    snap = store.exact.snapshot()
    rows = [snap.positions[i] for i in (*(r.id for r in added), rewritten.id)]
    assert snap.current_summary[rows].all()
    monkeypatch.setattr(store.table, "scan", lambda *a, **k: pytest.fail("read from LanceDB"))
    monkeypatch.setattr(store.table.handle, "take_row_ids", lambda *a, **k: pytest.fail("read from LanceDB"))
    fetched = store.exact.fetch_rows(snap, rows, with_vectors=True)
    assert [(r.id, r.content, r.namespace) for r in fetched] == [
        *((r.id, r.content, r.namespace) for r in added),
        (rewritten.id, "rewritten", "b"),
    ]
    assert all(np.array_equal(r.vector, w.vector) for r, w in zip(fetched, [*added, rewritten]))
    monkeypatch.undo()
    assert_same(store, tmp_path / "db", rng, ["a", "b"])


def test_compaction_rename_and_another_process(tmp_path):
    rng = np.random.default_rng(11)
    path = tmp_path / "db"
    mine = MemoryStore(path, "m", DIM, compact_fragment_threshold=2, version_retention_seconds=0)
    other = MemoryStore(path, "m", DIM)  # a second server on the same store
    mine.add([record(rng, "a") for _ in range(30)])
    assert_same(mine, path, rng, ["a", "b"])
    other.add([record(rng, "b") for _ in range(5)])  # a commit this copy never heard of
    assert_same(mine, path, rng, ["a", "b"])
    other.add([record(rng, "b") for _ in range(5)])
    mine.add([record(rng, "a")])  # this process's commit lands on top of the other's
    assert mine.count(build_filter(namespace="b")) == 10
    assert len(mine.search(record(rng).vector, 50, build_filter(namespace="b"))) == 10
    assert_same(mine, path, rng, ["a", "b"])
    victim = mine.scan(build_filter(namespace="a"), with_vectors=True)[0]
    other.delete_ids([victim.id])
    assert victim.id not in {h.record.id for h in mine.search(victim.vector, 5)}
    mine.compact()  # rewrites every row address
    assert_same(mine, path, rng, ["a", "b"])
    mine.update_where(build_filter(namespace="b"), {"namespace": "c"})
    assert_same(mine, path, rng, ["a", "b", "c"])
    other.compact()
    assert_same(mine, path, rng, ["a", "c"])


def test_gets_and_vectors_come_back_current(tmp_path):
    rng = np.random.default_rng(3)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    records = [record(rng) for _ in range(20)]
    store.add(records)
    store.search(records[0].vector, 3)  # loads the copy
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    store.record_access({records[0].id: 3}, when=when)
    got = store.get(records[0].id, with_vector=True)
    assert got.access_count == 3 and got.last_accessed == when
    assert np.allclose(got.vector, records[0].vector)
    hit = store.search(records[0].vector, 1, with_vectors=True)[0]
    assert hit.record.id == records[0].id and hit.record.access_count == 3
    assert np.allclose(hit.record.vector, records[0].vector)
    hit.record.content = "changed by a caller"  # callers get copies
    assert store.get(records[0].id).content == records[0].content
    store.refresh_exact()  # upkeep looks up the new row address
    assert store.exact.index.unresolved(store.exact.snapshot()) == []
    assert store.get(records[0].id).access_count == 3


def test_recalls_access_counts_leave_the_copy_whole(tmp_path, monkeypatch):
    """Recall's access counts rewrite rows in LanceDB (a new address, new access columns) after
    every pause of a session: the copy lays the counts it is told over its summary and keeps every
    other column, so searches and the records they return need no LanceDB read, and those records
    hold what LanceDB holds."""
    rng = np.random.default_rng(21)
    store = MemoryStore(tmp_path / "db", "m", DIM, compact_fragment_threshold=1000)
    records = [record(rng, str(rng.choice(["a", "b"])), content=f"note {i} about the deploy") for i in range(30)]
    store.add(records)
    store.search(records[0].vector, 3)  # loads the copy
    first = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    later = datetime(2026, 1, 3, 4, 5, 6, 789012, tzinfo=timezone.utc)
    store.record_access({records[0].id: 1, records[1].id: 2, records[2].id: 2}, when=first)
    store.record_access({records[0].id: 3}, when=later)  # counts add up over the summary's
    snap = store.exact.snapshot()
    assert snap.current_summary.all() and store.exact.index.unresolved(snap) == []
    monkeypatch.setattr(store.table, "scan", lambda *a, **k: pytest.fail("read from LanceDB"))
    monkeypatch.setattr(store.table.handle, "take_row_ids", lambda *a, **k: pytest.fail("read from LanceDB"))
    rows = [snap.positions[r.id] for r in records[:4]]
    got = [(r.access_count, r.last_accessed) for r in store.exact.fetch_rows(snap, rows, with_vectors=False)]
    assert got[:3] == [(4, later), (2, first), (2, first)] and got[3][0] == 0
    found, _ = store.fts_candidates("deploy", 10, None)
    assert len(found) == 10 and all(r is None for r in found.records)  # from the copy's columns
    monkeypatch.undo()
    fresh = MemoryStore(tmp_path / "db", "m", DIM)  # LanceDB's rows, read by a store of its own
    for r in records[:4]:
        mine, theirs = store.get(r.id), fresh.get(r.id)
        assert (mine.access_count, mine.last_accessed) == (theirs.access_count, theirs.last_accessed)
    assert_same(store, tmp_path / "db", rng, ["a", "b"])


def test_rows_this_process_writes_need_no_address_lookup(tmp_path):
    """The copy holds the columns of the rows this process writes: the upkeep thread looks up
    no address after a write, and searches read those rows without LanceDB."""
    rng = np.random.default_rng(4)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    store.add([record(rng) for _ in range(10)])
    store.search(record(rng).vector, 3)  # loads the copy
    written = [record(rng, content=f"written later {i}") for i in range(5)]
    store.add(written)
    assert store.exact.index.unresolved(store.exact.snapshot()) == []
    hit = store.search(written[2].vector, 1)[0]
    assert (hit.record.id, hit.record.content) == (written[2].id, "written later 2")


def test_big_tables_skip_the_copy(tmp_path):
    rng = np.random.default_rng(5)
    # The copy holds up to twice the vector index threshold: 10 rows here.
    store = MemoryStore(tmp_path / "db", "m", DIM, index_policy=IndexPolicy(vector_index_threshold=5))
    store.add([record(rng) for _ in range(11)])
    query = record(rng).vector
    expected = lance_answer(tmp_path / "db", query, 5, None)
    assert [h.record.id for h in store.search(query, 5)] == [i for i, _ in expected]
    assert store.closest_contents(np.stack([query]), 5, exact_only=True) is None  # no copy to answer
    assert [m.id for m in store.closest_contents(np.stack([query]), 5)[0]] == [i for i, _ in expected]
    assert not store.exact.index.has_copy()


def test_compaction_keeps_the_copy_and_upkeep_finds_rewritten_rows(tmp_path, monkeypatch):
    rng = np.random.default_rng(13)
    store = MemoryStore(tmp_path / "db", "m", DIM, compact_fragment_threshold=1000, version_retention_seconds=0)
    for _ in range(6):
        store.add([record(rng, str(rng.choice(["a", "b"]))) for _ in range(10)])
    live = store.scan()
    store.record_access({live[0].id: 4})
    assert_same(store, tmp_path / "db", rng, ["a", "b"])
    loads = []
    original_load = store.exact.index.load
    monkeypatch.setattr(store.exact.index, "load", lambda *a, **k: loads.append(1) or original_load(*a, **k))
    before = store.version
    store.compact()
    assert store.version != before
    assert_same(store, tmp_path / "db", rng, ["a", "b"])  # answered from the copy, rebased to the new version
    assert loads == []  # no reload of every row on the request path
    snap = store.exact.snapshot()
    # Every row's columns are in the copy: no read needs the addresses the compaction moved.
    assert store.exact.index.unresolved(snap) == []
    store.record_access({live[1].id: 2})  # a rewrite after the compaction: the copy is told its new counts
    assert store.exact.index.unresolved(store.exact.snapshot()) == []
    assert store.get(live[1].id).access_count == 2
    assert store.get(live[0].id).access_count == 4
    assert_same(store, tmp_path / "db", rng, ["a", "b"])
    assert loads == []


def test_searches_during_a_compaction_keep_the_copy(tmp_path, monkeypatch):
    """A search while this process compacts (its optimize has committed a version, the compaction
    has not ended) answers from the copy, exactly, and the copy is not reloaded then or after."""
    from spatial_memory.storage.table.maintenance import Maintenance

    rng = np.random.default_rng(17)
    store = MemoryStore(tmp_path / "db", "m", DIM, compact_fragment_threshold=1000, version_retention_seconds=0)
    for _ in range(6):
        store.add([record(rng, str(rng.choice(["a", "b"]))) for _ in range(10)])
    store.search(record(rng).vector, 3)  # loads the copy
    loads, midway = [], []
    original_load, original_optimize = store.exact.index.load, Maintenance.optimize
    monkeypatch.setattr(store.exact.index, "load", lambda *a, **k: loads.append(1) or original_load(*a, **k))

    def optimize(self, *args, **kwargs):
        original_optimize(self, *args, **kwargs)
        query = record(rng).vector
        midway.append(([h.record.id for h in store.search(query, 5)], lance_answer(tmp_path / "db", query, 5, None)))

    monkeypatch.setattr(Maintenance, "optimize", optimize)
    before = store.version
    store.compact()
    assert store.version != before and midway
    for found, expected in midway:
        assert found == [i for i, _ in expected]
    assert_same(store, tmp_path / "db", rng, ["a", "b"])
    assert loads == []


def test_rows_rewritten_in_bulk_are_read_at_their_looked_up_addresses(tmp_path, monkeypatch):
    """Past RESOLVE_BY_ID_MAX rows LanceDB rewrote without the copy being told their columns, upkeep
    looks up their addresses with one scan of the id column (keeping no record), and reads then take
    the rows at those addresses."""
    import spatial_memory.storage.search.exact_search as exact_search
    import spatial_memory.storage.side_tables.access_counts as access_counts
    from spatial_memory.storage.search.exact_index import Change

    rng = np.random.default_rng(11)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    records = [record(rng, content=f"note {i}") for i in range(exact_search.RESOLVE_BY_ID_MAX + 76)]
    store.add(records)
    store.search(records[0].vector, 3)  # loads the copy
    # Access counts say what they wrote; a rewrite whose values the copy is not told is read again.
    monkeypatch.setattr(access_counts, "Change", lambda moved, **_: Change(moved=moved))
    store.record_access({r.id: 1 + i % 3 for i, r in enumerate(records)})  # LanceDB rewrites every row
    monkeypatch.undo()
    store.refresh_exact()
    assert store.exact.index.unresolved(store.exact.snapshot()) == []
    taken = []
    real_take = exact_search.take_in_order
    monkeypatch.setattr(
        exact_search,
        "take_in_order",
        lambda table, rows, columns: taken.append(len(rows)) or real_take(table, rows, columns),
    )
    wanted = records[5:25]
    got = store.get_many([r.id for r in wanted])
    assert taken == [len(wanted)]
    assert [(g.id, g.content, g.access_count) for g in got] == [
        (r.id, r.content, 1 + (i + 5) % 3) for i, r in enumerate(wanted)
    ]


def lance_keywords(path: Path, text: str, limit: int, namespace: str | None) -> list[tuple[str, float]]:
    """LanceDB's own full-text search over the store at `path`, opened afresh."""
    from lancedb.query import MatchQuery

    table = lancedb.connect(str(path)).open_table(TABLE_NAME)
    q = table.search(MatchQuery(text, "content"), query_type="fts").select(["id"])
    if namespace is not None:
        q = q.where(build_filter(namespace=namespace).sql, prefilter=True)
    found = q.limit(limit).to_arrow()
    return list(zip(found.column("id").to_pylist(), found.column("_score").to_pylist()))


def test_keyword_hits_of_the_in_memory_index_are_lancedbs(tmp_path):
    """The in-memory keyword index finds what LanceDB's own full-text search finds, for rows loaded
    with the copy, rows this process wrote since and rows rewritten since, with deleted ones left
    out; its BM25 scores are LanceDB's over the live rows (LanceDB's own equal them once a
    compaction has folded every row into its index and dropped the deleted ones: before that its
    statistics still count them)."""
    rng = np.random.default_rng(11)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    store = MemoryStore(tmp_path / "db", "m", DIM)

    def text(i: int) -> str:
        return " ".join(words[(i * k) % len(words)] for k in (1, 3, 7)) + f" item{i} " + "kilo " * (i % 4)

    loaded = [record(rng, namespace=f"ns{i % 2}", content=text(i)) for i in range(60)]
    store.add(loaded)
    store.compact()  # the full-text index
    store.search(record(rng).vector, 3)  # loads the copy
    store.add([record(rng, namespace="ns1", content=text(i)) for i in range(60, 75)])
    store.record_access({r.id: 1 for r in loaded[:20]})  # rewrites their rows
    store.delete_ids([loaded[25].id])
    assert store.exact.snapshot() is not None
    queries = ("alpha kilo", "bravo golf item3", "juliet echo", "kilo", "Kilos, and ALPHA!")
    before = {}
    for query in queries:
        for namespace in (None, "ns1"):
            flt = build_filter(namespace=namespace) if namespace else None
            found, scores = store.fts_candidates(query, 100, flt)  # every match: no ties cut at the limit
            assert set(found.ids) == {i for i, _ in lance_keywords(tmp_path / "db", query, 100, namespace)}
            assert loaded[25].id not in found.ids and scores == sorted(scores, reverse=True)
            before[query, namespace] = dict(zip(found.ids, scores))
    store.compact()
    for (query, namespace), hits in before.items():
        assert hits == pytest.approx(dict(lance_keywords(tmp_path / "db", query, 100, namespace)), rel=1e-5)
        found, scores = store.fts_candidates(query, 100, build_filter(namespace=namespace) if namespace else None)
        assert dict(zip(found.ids, scores)) == hits


def test_keyword_hits_by_row_address_are_lancedbs(tmp_path):
    """A query in a script only LanceDB's dictionary splits into words (Chinese here) is answered by
    LanceDB, its hits coming back as row addresses the copy maps to its rows: the same memories
    and scores as LanceDB's own search, for rows loaded with the copy, rows this process wrote
    since (known by id only) and rows rewritten since (addresses moved), deleted ones left out."""
    rng = np.random.default_rng(12)
    words = ["猫", "狗", "咖啡", "音乐", "朋友", "学校", "电影", "天气"]
    store = MemoryStore(tmp_path / "db", "m", DIM)

    def text(i: int) -> str:
        return "我喜欢" + "和".join(words[(i * k) % len(words)] for k in (1, 3)) + f" item{i}"

    loaded = [record(rng, namespace=f"ns{i % 2}", content=text(i)) for i in range(40)]
    store.add(loaded)
    store.compact()
    store.search(record(rng).vector, 3)  # loads the copy
    store.add([record(rng, namespace="ns1", content=text(i)) for i in range(40, 50)])
    store.record_access({r.id: 1 for r in loaded[:10]})
    store.delete_ids([loaded[17].id])
    for query in ("咖啡", "音乐 电影"):
        for namespace in (None, "ns1"):
            flt = build_filter(namespace=namespace) if namespace else None
            found, scores = store.fts_candidates(query, 100, flt)
            assert found.ids, query
            expected = dict(lance_keywords(tmp_path / "db", query, 100, namespace))
            assert dict(zip(found.ids, scores)) == pytest.approx(expected)
            assert loaded[17].id not in found.ids and scores == sorted(scores, reverse=True)


def test_records_shown_again_are_kept_and_follow_changes(tmp_path, monkeypatch):
    """Records built from the copy's rows are kept for the next search that shows them; what a
    caller does to one never reaches the kept one, and a change to the memory shows at once."""
    from spatial_memory.storage.search import row_records

    built: list[int] = []
    real = row_records.rows_to_records
    monkeypatch.setattr(row_records, "rows_to_records", lambda table: built.append(table.num_rows) or real(table))
    monkeypatch.setattr(row_records, "WHOLE_COPY_ROWS", 0)  # kept as shown, none built ahead
    rng = np.random.default_rng(5)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    records = [record(rng, content=f"kept {i}") for i in range(30)]
    for r in records:
        r.tags, r.metadata = ["t"], {"k": "v"}
    store.add(records)
    first = store.search(records[4].vector, 5)
    assert built == [5]
    first[0].record.tags.append("changed by a caller")
    first[0].record.metadata["k"] = "changed"
    first[0].record.content = "changed too"
    again = store.search(records[4].vector, 5)
    assert built == [5]  # nothing built again
    assert [h.record.id for h in again] == [h.record.id for h in first]
    assert (again[0].record.tags, again[0].record.metadata, again[0].record.content) == (["t"], {"k": "v"}, "kept 4")
    store.upsert([MemoryRecord(**{**records[4].__dict__, "content": "kept 4, changed"})])
    assert store.search(records[4].vector, 1)[0].record.content == "kept 4, changed"


def test_a_small_copy_has_every_record_built_once_in_the_background(tmp_path, monkeypatch):
    """Once a copy of up to WHOLE_COPY_ROWS rows loads, every row's record is built beside the
    searches, so that a search builds none; a memory changed since shows as it is now."""
    import threading
    import time

    from spatial_memory.storage.search import row_records

    built: list[int] = []
    real = row_records.rows_to_records
    monkeypatch.setattr(row_records, "rows_to_records", lambda table: built.append(table.num_rows) or real(table))
    monkeypatch.setattr(row_records, "FILL_CHUNK", 7)
    rng = np.random.default_rng(8)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    records = [record(rng, content=f"whole {i}") for i in range(30)]
    store.add(records)
    store.search(records[0].vector, 3)  # loads the copy
    deadline = time.monotonic() + 20
    while any(t.name == "row-records" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert max(built) <= 7 and sum(built) >= 30  # in chunks
    built.clear()
    for r in records[::3]:
        hit = store.search(r.vector, 4)[0].record
        assert (hit.id, hit.content) == (r.id, r.content)
    assert built == []
    store.upsert([MemoryRecord(**{**records[3].__dict__, "content": "whole 3, changed"})])
    assert store.search(records[3].vector, 1)[0].record.content == "whole 3, changed"
    # Rows written after the load: upkeep builds theirs (refresh_exact), not the next search.
    later = [record(rng, content=f"later {i}") for i in range(9)]
    store.add(later)
    store.refresh_exact()
    built.clear()
    for r in later:
        assert store.search(r.vector, 1)[0].record.content == r.content
    assert built == []


def test_row_records_of_an_older_load_are_not_kept(tmp_path):
    """Records are kept for the newest load only: a search or a fill of a copy loaded before it
    neither reads nor keeps another load's rows (the same row of two loads may be two memories)."""
    from types import SimpleNamespace

    from spatial_memory.storage.search.row_records import RowRecords
    from spatial_memory.storage.table.schema import records_to_arrow

    rng = np.random.default_rng(9)

    def load(number: int, contents: list[str]):
        rows = [record(rng, content=c) for c in contents]
        summary = records_to_arrow(rows, "m", DIM).drop_columns(["vector"])
        n = len(rows)
        return SimpleNamespace(load=number, n=n, summary=summary, current_summary=np.ones(n, dtype=bool))

    older, newer = load(1, ["a0", "a1", "a2"]), load(2, ["b0", "b1", "b2"])
    kept = RowRecords(size=8, whole=8)
    kept.fill(older)
    assert [r.content for r in kept.of_rows(newer, [2, 0])] == ["b2", "b0"]
    assert [r.content for r in kept.of_rows(older, [1])] == ["a1"]  # read, not kept
    kept.fill(older)  # ends at once: a newer load is kept
    assert [r.content for r in kept.of_rows(newer, [0, 1, 2])] == ["b0", "b1", "b2"]


def test_candidates_from_the_copy_are_the_rows_as_written(tmp_path):
    """Recall's candidates read the ranking's columns from the copy, converted once per row; rows
    written after the load are converted at the next search."""
    rng = np.random.default_rng(6)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    when = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)

    def conversational(i: int) -> MemoryRecord:
        r = record(rng, content=f"turn {i}")
        r.conversation.session_id, r.conversation.sequence = f"s{i % 3}", i
        r.conversation.speaker, r.conversation.occurred_at = ("Ann" if i % 2 else None), (when if i % 4 else None)
        return r

    def check(records: list[MemoryRecord]) -> None:
        for r in records:
            found = store.search_candidates(r.vector, 50, None)
            i = found.ids.index(r.id)
            c = r.conversation
            assert (found.content[i], found.session_id[i], found.sequence[i], found.speaker[i]) == (
                r.content,
                c.session_id,
                c.sequence,
                c.speaker,
            )
            expected = float("nan") if c.occurred_at is None else c.occurred_at.timestamp()
            assert np.isnan(found.occurred_at[i]) if c.occurred_at is None else found.occurred_at[i] == expected
            assert np.allclose(found.vectors[i], r.vector)

    first = [conversational(i) for i in range(12)]
    store.add(first)
    check(first)  # loads the copy
    later = [conversational(i) for i in range(12, 20)]
    store.add(later)
    check(first + later)


def test_a_batch_search_breaks_ties_by_row_as_one_search_does(tmp_path):
    """Several stored copies of one vector: the batch search (the write checks') gives the same
    memories in the same order as a search for each vector alone, the earliest row first."""
    rng = np.random.default_rng(7)
    store = MemoryStore(tmp_path / "db", "m", DIM)
    base = [record(rng) for _ in range(5)]
    copies = []
    for i in range(40):
        twin = record(rng, content=f"twin {i}")
        twin.vector = base[i % 5].vector.copy()
        copies.append(twin)
    store.add(base + copies + [record(rng) for _ in range(200)])
    queries = np.stack([r.vector for r in base])
    together = store.closest_contents(queries, 6, None, exact_only=True)
    assert together is not None
    for query, hits in zip(queries, together, strict=True):
        alone = store.search(query, 6)
        assert [m.id for m in hits] == [h.record.id for h in alone]
        assert len({round(m.similarity, 5) for m in hits}) == 1  # all ties

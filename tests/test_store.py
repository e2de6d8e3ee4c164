"""MemoryStore on a real LanceDB in a temp dir."""

from __future__ import annotations

import numpy as np
import pytest

from spatial_memory.errors import ConfigurationError
from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.store import MemoryStore

DIM = 8


def record(i: int, namespace: str = "default", **kw) -> MemoryRecord:
    rng = np.random.default_rng(i)
    vec = rng.normal(size=DIM).astype(np.float32)
    return MemoryRecord(id=new_id(), content=f"memory {i}", namespace=namespace, vector=vec / np.linalg.norm(vec), **kw)


@pytest.fixture
def store(tmp_path):
    return MemoryStore(tmp_path / "db", "unit-model", DIM, compact_fragment_threshold=5)


def test_add_get_search_delete(store):
    records = [record(i, tags=["t"], metadata={"i": i}) for i in range(10)]
    store.add(records)
    assert store.count() == 10
    got = store.get(records[3].id, with_vector=True)
    assert got.content == "memory 3" and got.metadata == {"i": 3} and got.tags == ["t"]
    assert np.allclose(got.vector, records[3].vector)
    hits = store.search(records[3].vector, 3)
    assert hits[0].record.id == records[3].id and hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
    assert store.delete_ids([records[3].id, new_id(), "not-a-uuid"]) == [records[3].id]
    assert store.get(records[3].id) is None and store.count() == 9


def test_search_is_exact_brute_force(store):
    records = [record(i) for i in range(200)]
    store.add(records)
    matrix = np.stack([r.vector for r in records])
    query = record(999).vector
    expected = [records[i].id for i in np.argsort(-(matrix @ query))[:10]]
    assert [h.record.id for h in store.search(query, 10)] == expected


def test_namespace_filter_and_injection(store):
    store.add([record(1, "a"), record(2, "b"), record(3, "x' OR '1'='1")])
    query = record(1).vector
    assert {h.record.namespace for h in store.search(query, 10, build_filter(namespace="a"))} == {"a"}
    assert store.search(query, 10, build_filter(namespace="a' OR '1'='1")) == []
    assert [h.record.namespace for h in store.search(query, 10, build_filter(namespace="x' OR '1'='1"))] == [
        "x' OR '1'='1"
    ]


def test_model_mismatch_is_refused(tmp_path):
    MemoryStore(tmp_path / "db", "model-a", DIM).add([record(1)])
    with pytest.raises(ConfigurationError) as err:
        MemoryStore(tmp_path / "db", "model-b", DIM)
    assert "model-a" in str(err.value) and "model-b" in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        MemoryStore(tmp_path / "db", "model-a", DIM * 2)
    assert "8 dimensions" in str(err.value) and "16 dimensions" in str(err.value)
    assert MemoryStore(tmp_path / "db", "model-a", DIM).count() == 1


def test_compaction_keeps_table_healthy(store):
    for i in range(12):
        store.add([record(i)])
    assert store.stats()["num_fragments"] == 12 and store.needs_compaction()
    store.compact()
    assert store.stats()["num_fragments"] == 1 and not store.needs_compaction()
    assert store.count() == 12


def test_a_compaction_waits_for_the_pause_in_a_burst_of_writes_nobody_searches(store, monkeypatch):
    """A compaction due may wait while writes land back to back, unless a keyword search LanceDB
    answered has run since the last compaction (it scans the rows outside the full-text index) or
    the writes pass BURST_COMPACT_FACTOR times the threshold. One the in-memory keyword index
    answers reads no LanceDB index, so it does not hurry the compaction."""
    from spatial_memory.storage.filters import build_filter
    from spatial_memory.storage.table import maintenance

    store.compact()
    for i in range(6):  # past the fixture's threshold of 5, back to back
        store.add([record(i)])
    assert store.needs_compaction() and store.compaction_can_wait()
    with monkeypatch.context() as patched:
        patched.setattr(maintenance, "BURST_GAP_SECONDS", 0.0)  # as if the writes had paused
        assert not store.compaction_can_wait()
    assert store.fts_search("memory", 5)  # the in-memory index
    assert store.compaction_can_wait()
    store.fts_search("memory", 5, build_filter(tags=["none"]))  # a filter only LanceDB applies
    assert not store.compaction_can_wait()
    store.compact()
    for i in range(5 * maintenance.BURST_COMPACT_FACTOR + 1):
        store.add([record(100 + i)])
    assert store.needs_compaction() and not store.compaction_can_wait()


def test_replace_writes_and_deletes_in_one_commit(store):
    originals = [record(i) for i in range(3)]
    store.add(originals)
    merged = record(100)
    version = store.version
    store.replace([merged], [r.id for r in originals[:2]])
    assert store.version == version + 1
    assert {r.id for r in store.scan()} == {originals[2].id, merged.id}


def test_update_where_and_record_access(store):
    records = [record(i, "old") for i in range(3)]
    store.add(records)
    assert store.update_where(build_filter(namespace="old"), {"namespace": "new"}) == 3
    assert store.count(build_filter(namespace="new")) == 3
    store.record_access({records[0].id: 2, records[1].id: 1})
    counts = {r.id: r.access_count for r in store.scan()}
    assert counts == {records[0].id: 2, records[1].id: 1, records[2].id: 0}


def test_namespaces_summary(store):
    store.add([record(1, "a"), record(2, "a"), record(3, "b")])
    assert [(n.name, n.memory_count) for n in store.namespaces()] == [("a", 2), ("b", 1)]


def test_new_tables_use_the_random_access_file_format(tmp_path):
    """Search results are read at random positions; Lance format 2.1 does that 2-3x faster
    than LanceDB's default here, so new stores are created with it (also after compaction)."""
    import struct

    from spatial_memory.storage.table.table import DATA_STORAGE_VERSION

    store = MemoryStore(tmp_path / "db", "fake-model", 8)
    store.add([record(i) for i in range(5)])
    store.compact()
    files = list((tmp_path / "db" / "memories.lance" / "data").glob("*.lance"))
    assert files
    for path in files:
        major, minor, magic = struct.unpack("<HH4s", path.read_bytes()[-8:])
        assert magic == b"LANC"
        assert f"{major}.{minor}" == DATA_STORAGE_VERSION == "2.1"


def test_sequences_default_to_arrival_order_per_session_even_for_many_sessions(tmp_path):
    """Records of a session given without a sequence follow its last one, in the order given; a batch
    may name more sessions than one filter's IN list holds."""
    import numpy as np

    from spatial_memory.records import Conversation, MemoryRecord, new_id
    from spatial_memory.storage.filters import MAX_LIST_VALUES
    from spatial_memory.storage.store import MemoryStore

    store = MemoryStore(tmp_path / "db", "test-model", 4)
    vector = np.array([1, 0, 0, 0], dtype=np.float32)

    def record(session: str, sequence: int | None = None) -> MemoryRecord:
        return MemoryRecord(new_id(), "text", conversation=Conversation(session, sequence), vector=vector)

    store.add([record("a", 5), record("a"), record("b")])
    store.add([record(f"s{i}") for i in range(MAX_LIST_VALUES + 5)] + [record("a"), record("b")])
    rows = store.scan()
    by_session: dict[str, list[int]] = {}
    for r in rows:
        by_session.setdefault(r.conversation.session_id, []).append(r.conversation.sequence)
    assert sorted(by_session["a"]) == [5, 6, 7] and sorted(by_session["b"]) == [0, 1]
    assert all(by_session[f"s{i}"] == [0] for i in range(MAX_LIST_VALUES + 5))


def test_the_last_writes_are_compacted_once_the_store_is_quiet(store, monkeypatch):
    """Fewer writes than the threshold still reach the indexes: once writes stop for a while."""
    from spatial_memory.storage.table import maintenance

    store.compact()
    store.add([record(1)])
    assert not store.needs_compaction()  # below the threshold, and just written
    monkeypatch.setattr(maintenance, "IDLE_COMPACT_SECONDS", 0.0)
    assert store.needs_compaction()
    store.compact()
    assert not store.needs_compaction()


def test_a_compaction_keeps_the_data_version_that_caches_key_on(store):
    """Maps, regions and vocabularies are cached per data_version: a compaction by this process
    rewrites files, not memories, so it keeps them; any write moves it on."""
    store.add([record(i) for i in range(5)])
    store.add([record(i) for i in range(5, 10)])
    shown = store.data_version
    store.compact()
    assert store.version != shown and store.data_version == shown
    store.compact()
    assert store.data_version == shown
    store.add([record(10)])
    assert store.data_version == store.version and store.data_version != shown


def test_candidates_read_from_lancedb_become_records_by_row_address_or_else_by_id(store, monkeypatch):
    # a tag filter sends the searches to LanceDB (the in-memory copy answers none or one namespace only)
    records = []
    for start in range(0, 30, 10):  # three fragments, which compaction later merges and moves
        batch = [record(i, tags=["t"], metadata={"i": i}) for i in range(start, start + 10)]
        store.add(batch)
        records += batch
    tagged = build_filter(tags=["t"])
    query = records[7].vector
    candidates = store.search_candidates(query, 10, tagged)
    assert all(a is not None for a in candidates.addresses) and candidates.ids[0] == records[7].id
    expected = {r.id: r for r in records}

    def materialized():
        got = store.materialize(candidates, range(len(candidates)))
        assert [r.id for r in got] == candidates.ids
        for r in got:
            assert (r.content, r.metadata, r.tags) == (expected[r.id].content, expected[r.id].metadata, ["t"])
        return got

    by_id = []
    real_get_many = store.reads.get_many
    monkeypatch.setattr(store.reads, "get_many", lambda ids, **kw: by_id.append(list(ids)) or real_get_many(ids, **kw))
    materialized()
    assert by_id == []  # every record came from its address

    # a memory deleted since the search is None; moved rows are found by id
    store.delete_ids([candidates.ids[1]])
    store.compact()
    got = store.materialize(candidates, range(len(candidates)))
    assert got[1] is None and all(r is not None for i, r in enumerate(got) if i != 1)
    assert [r.id for i, r in enumerate(got) if i != 1] == [m for i, m in enumerate(candidates.ids) if i != 1]
    assert by_id  # some addresses no longer held their memory


def test_reading_rows_by_addresses_none_of_which_exist_any_more_gives_no_rows(store):
    # e.g. every row a namespace search found was moved by a compaction before it was read
    from spatial_memory.storage.table.connection import take_in_order

    store.add([record(i) for i in range(3)])
    gone = take_in_order(store.table.handle, [123 << 32, (123 << 32) + 1], ["id", "content"])
    assert gone.num_rows == 0 and gone.column_names == ["id", "content"]

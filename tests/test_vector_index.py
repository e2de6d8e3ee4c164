"""The approximate vector index: built by upkeep past a size threshold, accurate, kept current."""

from __future__ import annotations

import numpy as np

from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.search.indexing import IndexPolicy
from spatial_memory.storage.store import MemoryStore

from .conftest import indexed_vector_rows

DIM = 64


def clustered(n: int, rng: np.random.Generator) -> np.ndarray:
    centers = rng.normal(size=(40, DIM))
    vectors = centers[rng.integers(0, 40, n)] + rng.normal(scale=0.6, size=(n, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def records(vectors: np.ndarray, offset: int = 0) -> list[MemoryRecord]:
    return [
        MemoryRecord(id=new_id(), content=f"memory {offset + i}", namespace=f"ns{(offset + i) % 4}", vector=v)
        for i, v in enumerate(vectors)
    ]


def test_index_is_built_past_threshold_and_stays_accurate(tmp_path):
    rng = np.random.default_rng(0)
    policy = IndexPolicy(vector_index_threshold=2_000, scalar_index_threshold=2_000, ef=400, refine_factor=5)
    store = MemoryStore(tmp_path / "db", "unit", DIM, index_policy=policy)
    vectors = clustered(1_500, rng)
    rows = records(vectors)
    store.add(rows)
    store.compact()
    assert indexed_vector_rows(store) is None  # below the threshold: exact search only

    more = clustered(1_500, rng)
    rows += records(more, offset=1_500)
    store.add(rows[1_500:])
    store.compact()
    assert indexed_vector_rows(store) == 3_000

    matrix = np.vstack([vectors, more])
    queries = clustered(40, rng)
    hits = []
    for q in queries:
        exact = {rows[i].id for i in np.argsort(-(matrix @ q))[:10]}
        got = {h.record.id for h in store.search(q, 10)}
        hits.append(len(exact & got) / 10)
    assert np.mean(hits) >= 0.95, np.mean(hits)

    # Namespace prefilter on the indexed table returns only that namespace, still accurate.
    in_ns = np.array([r.namespace == "ns2" for r in rows])
    q = queries[0]
    sims = np.where(in_ns, matrix @ q, -9)
    exact = {rows[i].id for i in np.argsort(-sims)[:10]}
    got = store.search(q, 10, build_filter(namespace="ns2"))
    assert {h.record.namespace for h in got} == {"ns2"}
    assert len(exact & {h.record.id for h in got}) >= 9
    # recall's candidates there (the best rows of the table filtered afterwards, their columns read last)
    candidates = store.search_candidates(q, 50, build_filter(namespace="ns2"))
    assert len(candidates) == 50 and {r.namespace for r in store.get_many(candidates.ids)} == {"ns2"}
    assert len(exact & set(candidates.ids)) >= 9
    found = store.fts_search("memory", 20, build_filter(namespace="ns1"))
    assert len(found) == 20 and {r.namespace for r, _ in found} == {"ns1"}
    # A namespace whose rows the table's best rows do not hold: the filter goes first.
    rare = [
        MemoryRecord(id=new_id(), content=f"rare {i}", namespace="rare", vector=v)
        for i, v in enumerate(clustered(40, rng))
    ]
    store.add(rare)
    assert {h.record.id for h in store.search(q, 5, build_filter(namespace="rare"))} <= {r.id for r in rare}
    assert len(store.search(q, 5, build_filter(namespace="rare"))) == 5

    # Rows written after the build are found before the next upkeep pass.
    fresh = records(clustered(5, rng), offset=10_000)
    store.add(fresh)
    assert store.search(fresh[0].vector, 1)[0].record.id == fresh[0].id


def test_index_segments_are_merged_by_a_rebuild(tmp_path):
    """Each compaction indexes new rows as one more index segment; past max_segments the
    upkeep rebuilds the index as a single segment."""
    from spatial_memory.storage.search.indexing import vector_index_segments

    def segments(store: MemoryStore) -> int:
        # Index segments are this test's subject and no public surface reports them (stats()
        # gives the index's rows, not its segments): read them off the store's LanceDB table.
        return vector_index_segments(store.table.handle)

    rng = np.random.default_rng(1)
    policy = IndexPolicy(vector_index_threshold=1_000, scalar_index_threshold=1_000, max_segments=2, retrain_growth=100)
    store = MemoryStore(tmp_path / "db", "unit", DIM, index_policy=policy)
    store.add(records(clustered(1_200, rng)))
    store.compact()
    assert segments(store) == 1
    seen = []
    for k in range(3):
        store.add(records(clustered(50, rng), offset=2_000 + 100 * k))
        store.compact()
        seen.append(segments(store))
    assert max(seen) <= 2 and store.count() == 1_350
    assert indexed_vector_rows(store) == 1_350 or seen[-1] > 1

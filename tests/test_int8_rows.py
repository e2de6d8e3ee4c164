"""The exact search read through int8 codes first (storage/search/int8_rows.py) must answer what the
whole float32 product answers, bit for bit: same rows, same order, same similarities."""

from __future__ import annotations

import numpy as np
import onnx
import pyarrow as pa
import pytest

from spatial_memory.algorithms.int8_bounds import (
    CODE_MAX,
    QUERY_ZERO,
    approximations,
    bounds,
    code_query,
    code_rows,
    rows_reaching,
)
from spatial_memory.storage.search.blas import OneBlasThread
from spatial_memory.storage.search.exact_index import ExactIndex, Written
from spatial_memory.storage.search.int8_rows import Int8Rows, _product_graph, _session

DIM = 384


def unit_rows(rng: np.random.Generator, n: int, clusters: int = 0) -> np.ndarray:
    """Random unit rows; with clusters, most rows near one of a few centres (near-copies, as a
    store of restatements has), so many similarities lie close together."""
    rows = rng.normal(size=(n, DIM))
    if clusters:
        centres = rng.normal(size=(clusters, DIM))
        rows = centres[rng.integers(clusters, size=n)] * 4 + rows
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def loaded(index: ExactIndex, vectors: np.ndarray, namespaces: list[str]):
    n = len(vectors)
    table = pa.table(
        {
            "id": [f"id{i}" for i in range(n)],
            "namespace": namespaces,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
            "_rowid": pa.array(range(n), pa.uint64()),
        }
    )
    return index.load(table, version=1)


def whole_product_answer(snap, query: np.ndarray, limit: int, namespace: str | None, index: ExactIndex):
    """top's answer from the whole float32 product (no codes)."""
    bare = ExactIndex(DIM, max_rows=index.max_rows)
    bare._namespace_codes = index._namespace_codes
    bare._int8_rows = Int8Rows(min_rows=1 << 40)
    return bare.top(snap, query, limit, namespace, 0.0)


def test_the_graph_is_valid_onnx_and_multiplies_exactly():
    rng = np.random.default_rng(0)
    codes = rng.integers(-CODE_MAX, CODE_MAX + 1, size=(300, DIM)).astype(np.int8)
    graph = _product_graph(codes)
    model = onnx.load_from_string(graph)
    onnx.checker.check_model(model)
    levels = rng.integers(0, 256, size=(2, DIM)).astype(np.uint8)
    products = _session(graph).run(None, {"levels": levels})[0]
    expected = (levels.astype(np.int64) - QUERY_ZERO) @ codes.T.astype(np.int64)
    assert products.dtype == np.int32 and np.array_equal(products, expected)
    # The largest magnitudes: a pair of products stays within int16 (CPUs without VNNI saturate there).
    extreme = np.full((1, DIM), CODE_MAX, dtype=np.int8)
    top = np.full((2, DIM), 255, dtype=np.uint8)
    assert _session(_product_graph(extreme)).run(None, {"levels": top})[0][0, 0] == DIM * 127 * CODE_MAX
    assert 2 * 255 * CODE_MAX <= 32767


@pytest.mark.parametrize("clusters", [0, 3])
def test_every_float32_similarity_lies_within_the_bound(clusters):
    rng = np.random.default_rng(clusters)
    rows = unit_rows(rng, 3000, clusters)
    rows[5] = 0.0  # a zero row codes to zeros
    rows[6] *= 7.5  # a row that is not unit length
    codes, terms = code_rows(rows, chunk=700)
    assert np.abs(codes).max() <= CODE_MAX and not codes[5].any()
    graph = _session(_product_graph(codes))
    for query in unit_rows(rng, 40, clusters):
        coded = code_query(query)
        assert coded is not None
        approx = approximations(terms, coded, graph.run(None, {"levels": coded.levels})[0])
        with OneBlasThread()():
            exact = (rows @ query).astype(np.float64)
        margins = bounds(terms, coded)
        assert np.all(np.abs(exact - approx) <= margins)
        assert np.median(margins) < 0.02  # tight enough to leave few rows in reach
    assert code_query(np.zeros(DIM, dtype=np.float32)) is None


def test_rows_reaching_keeps_every_row_that_can_be_among_the_best():
    rng = np.random.default_rng(3)
    exact = rng.normal(size=500)
    margins = rng.uniform(0.0, 0.05, size=500)
    approximate = exact + rng.uniform(-1, 1, size=500) * margins
    after = rng.normal(size=20)
    reach = rows_reaching(approximate, margins, after, 10)
    best = np.argsort(-np.concatenate([exact, after]), kind="stable")[:10]
    assert set(best[best < 500]) <= set(reach.tolist())
    assert reach.size < 100
    assert rows_reaching(approximate[:5], margins[:5], after[:3], 10).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("n", "clusters"), [(5000, 0), (4099, 4), (2100, 1)])
def test_top_through_the_codes_is_the_whole_products_answer_bit_for_bit(n, clusters):
    rng = np.random.default_rng(n)
    vectors = unit_rows(rng, n, clusters)
    vectors[11] = vectors[10]  # exact ties are broken by row, both ways
    namespaces = [["a", "b", "c"][i % 3] for i in range(n)]
    index = ExactIndex(DIM, max_rows=4 * n)
    snap = loaded(index, vectors, namespaces)
    assert index._int8_rows.usable(snap.load, snap.n, snap.vectors) is None  # the first search codes
    index._int8_rows.wait()
    coded = index._int8_rows.usable(snap.load, snap.n, snap.vectors)
    assert coded is not None and coded.rows == n // 64 * 64
    queries = [*unit_rows(rng, 25, clusters), vectors[10], vectors[n - 1]]
    for query in queries:
        for limit, namespace in ((10, None), (50, None), (7, "b"), (300, "c")):
            assert index.top(snap, query, limit, namespace, 0.0) == whole_product_answer(
                snap, query, limit, namespace, index
            )
    # Rows a commit appends after the codes were made are read in float32, and still answer exactly.
    more = unit_rows(rng, 70, clusters)
    written = [Written(id=f"new{i}", namespace="a", vector=v) for i, v in enumerate(more)]
    index.committed(1, 2, _change(written))
    grown = index.current(2)
    assert grown is not None and grown.n == n + 70 and grown.load == snap.load
    assert index._int8_rows.usable(grown.load, grown.n, grown.vectors) is coded  # not stale yet
    for query in [*unit_rows(rng, 10, clusters), more[3]]:
        got = index.top(grown, query, 20, None, 0.0)
        assert got == whole_product_answer(grown, query, 20, None, index)
    assert index.top(grown, more[3], 1, None, 0.0)[0][0] == n + 3
    index.invalidate()  # the copy is gone: so are its codes
    assert index._int8_rows.usable(grown.load, grown.n, grown.vectors) is None
    index._int8_rows.wait()


def test_codes_that_narrow_nothing_down_leave_the_search_to_the_whole_product():
    rng = np.random.default_rng(9)
    vectors = np.repeat(unit_rows(rng, 1), 3000, axis=0)  # every row the same: all within the bound
    index = ExactIndex(DIM, max_rows=10_000)
    snap = loaded(index, vectors, ["a"] * 3000)
    index._int8_rows.usable(snap.load, snap.n, snap.vectors)
    index._int8_rows.wait()
    query = unit_rows(rng, 1)[0]
    assert index.top(snap, query, 5, None, 0.0) == whole_product_answer(snap, query, 5, None, index)
    assert [row for row, _ in index.top(snap, query, 5, None, 0.0)] == [0, 1, 2, 3, 4]


def _change(written):
    from spatial_memory.storage.search.exact_index import Change

    return Change(written=written)


def test_the_threshold_from_block_maxima_is_never_above_the_kth_best():
    from spatial_memory.algorithms._linalg import below_kth_largest

    rng = np.random.default_rng(4)
    for trial in range(200):
        values = rng.normal(size=int(rng.integers(50, 12_000)))
        if trial % 3 == 0:  # the best values side by side (near-copies written together)
            values[: 4 * 16] += 5
        k = int(rng.integers(1, 60))
        kth = np.sort(values)[-k]
        got = below_kth_largest(values, k)
        assert got <= kth
        if trial % 3:  # spread out: a few values more than k at most
            assert np.count_nonzero(values >= got) <= 2 * k + 4

"""algorithms/sparse_graph.py gives what scipy's csgraph gives (the regions' clustering runs
without importing scipy: issue 45), ties included."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse
from scipy.sparse import csgraph

from spatial_memory.algorithms._linalg import unit_rows
from spatial_memory.algorithms.clustering import knn_distance_graph
from spatial_memory.algorithms.sparse_graph import DistanceGraph, connected_components, minimum_spanning_tree


def _symmetric(n: int, edges: int, seed: int, levels: int | None) -> DistanceGraph:
    """A random symmetric graph; with `levels`, weights drawn from that few values (many ties)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, edges), rng.integers(0, n, edges)
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pairs = np.unique(lo * n + hi)
    lo, hi = pairs // n, pairs % n
    weights = rng.integers(1, levels + 1, lo.size).astype(float) if levels else rng.random(lo.size) + 0.01
    diag = np.arange(n)
    return DistanceGraph.from_entries(
        np.concatenate([lo, hi, diag]),
        np.concatenate([hi, lo, diag]),
        np.concatenate([weights, weights, np.zeros(n)]),
        n,
    )


def _scipy(graph: DistanceGraph) -> sparse.csr_matrix:
    return sparse.csr_matrix((graph.data, graph.indices, graph.indptr), shape=(graph.n, graph.n))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("levels", [None, 3])
def test_spanning_tree_and_components_match_scipy(seed, levels):
    graph = _symmetric(300, 500 if seed % 2 else 2000, seed, levels)  # sparse ones fall apart
    theirs = csgraph.minimum_spanning_tree(_scipy(graph))
    heads, tails = theirs.nonzero()
    ours = minimum_spanning_tree(graph)
    np.testing.assert_array_equal(ours[0], heads)
    np.testing.assert_array_equal(ours[1], tails)
    np.testing.assert_array_equal(ours[2], np.asarray(theirs[heads, tails]).reshape(-1))
    count, labels = csgraph.connected_components(_scipy(graph), directed=False)
    ours_count, ours_labels = connected_components(graph.rows(), graph.indices, graph.n)
    assert ours_count == count
    np.testing.assert_array_equal(ours_labels, labels)


def test_the_knn_graph_is_scipys_and_joins_its_components():
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(40, 384))
    points = unit_rows(centers[rng.integers(0, 40, 600)] + rng.normal(scale=0.1, size=(600, 384)))
    graph = knn_distance_graph(points, 5)  # 40 tight topics, 5 neighbours: many k-NN components
    rows, cols = np.repeat(np.arange(600), 5), np.argsort(-(points @ points.T), axis=1)[:, 1:6].ravel()
    assert connected_components(rows, cols, 600)[0] > 1
    assert connected_components(graph.rows(), graph.indices, 600)[0] == 1
    matrix = _scipy(graph)
    assert (matrix != matrix.T).nnz == 0 and matrix.has_canonical_format


def test_an_entry_given_twice_is_refused():
    with pytest.raises(ValueError):
        DistanceGraph.from_entries(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 2.0]), 2)


def test_regions_of_a_large_map_do_not_import_scipy():
    code = (
        "import sys, numpy as np; from spatial_memory.algorithms import find_regions, silhouette; "
        "x = np.random.default_rng(0).normal(size=(700, 384)); labels, _ = find_regions(x, 5); silhouette(x, labels); "
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

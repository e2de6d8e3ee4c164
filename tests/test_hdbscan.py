"""algorithms/hdbscan.py gives scikit-learn's HDBSCAN labels and membership strengths."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse
from sklearn.cluster import HDBSCAN

from spatial_memory.algorithms._linalg import unit_rows
from spatial_memory.algorithms.clustering import knn_distance_graph
from spatial_memory.algorithms.hdbscan import hdbscan_graph, hdbscan_points


def _blobs(n: int, k: int, *, noise: float, seed: int, d: int = 384) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d))
    return unit_rows(centers[rng.integers(0, k, n)] + rng.normal(scale=noise, size=(n, d)))


def _assert_same(ours, theirs) -> None:
    np.testing.assert_array_equal(ours.labels, theirs.labels_)
    np.testing.assert_allclose(ours.probabilities, theirs.probabilities_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("n", "k", "min_cluster_size", "noise"),
    [(40, 3, 3, 0.3), (150, 4, 5, 0.6), (300, 6, 8, 1.0), (500, 5, 5, 0.6), (200, 2, 2, 1.0), (90, 1, 4, 0.8)],
)
def test_points_match_scikit_learn(seed, n, k, min_cluster_size, noise):
    points = _blobs(n, k, noise=noise, seed=seed)
    min_samples = min(min_cluster_size, 2)
    theirs = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples, copy=True).fit(points)
    _assert_same(hdbscan_points(points, min_cluster_size, min_samples), theirs)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("n", "k", "min_cluster_size", "noise"), [(800, 5, 8, 0.6), (1500, 8, 15, 1.0)])
def test_graph_matches_scikit_learn(seed, n, k, min_cluster_size, noise):
    graph = knn_distance_graph(_blobs(n, k, noise=noise, seed=seed), 30)
    matrix = sparse.csr_matrix((graph.data, graph.indices, graph.indptr), shape=(graph.n, graph.n))
    theirs = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=2, metric="precomputed", copy=True).fit(matrix)
    _assert_same(hdbscan_graph(graph, min_cluster_size, 2), theirs)


def test_duplicates_ties_and_scattered_points_match():
    rng = np.random.default_rng(7)
    base = _blobs(60, 3, noise=0.4, seed=7)
    points = np.vstack([base, base[:20], unit_rows(rng.normal(size=(30, 384)))])  # exact copies: ties
    for min_cluster_size in (2, 3, 6):
        theirs = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=2, copy=True).fit(points)
        _assert_same(hdbscan_points(points, min_cluster_size, 2), theirs)


def test_no_structure_is_all_noise_and_bad_arguments_raise():
    points = unit_rows(np.random.default_rng(3).normal(size=(25, 384)))
    found = hdbscan_points(points, 20, 2)
    assert found.labels.tolist() == [-1] * 25 and not found.probabilities.any()
    with pytest.raises(ValueError):
        hdbscan_points(points[:1], 2, 1)
    with pytest.raises(ValueError):
        hdbscan_points(points, 1, 1)
    with pytest.raises(ValueError):
        hdbscan_points(points, 5, 26)


def test_a_map_and_regions_do_not_import_scikit_learn():
    code = (
        "import sys, numpy as np; from spatial_memory.algorithms import cluster_vectors, project; "
        "x = np.random.default_rng(0).normal(size=(700, 384)); "
        "cluster_vectors(x[:300], 5); cluster_vectors(x, 5); project(x[:300], 2); "
        "print('sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

"""Density clustering of embedding vectors and cluster quality measures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._linalg import as_matrix, pair_distances, unit_rows
from .hdbscan import hdbscan_graph, hdbscan_points
from .neighbors import cosine_knn
from .sparse_graph import DistanceGraph, connected_components, minimum_spanning_tree

# Measured on a 2-core box with 384-d unit vectors (scikit-learn's HDBSCAN, whose
# results hdbscan.py reproduces): HDBSCAN on the raw vectors grows ~n^2 (1,000: 0.6 s,
# 3,000: 6.5 s) because its trees do not prune in high dimensions, and PCA to 32 dims
# (1 s at 5,000, 13 s at 20,000) merges topics and glues unrelated points into a junk
# cluster. HDBSCAN on an exact k-NN graph (BLAS matrix products) keeps the full-space
# density: 1,000: 0.15 s, 5,000: 0.6-1.1 s, 20,000: 5-9 s, labels identical to the raw
# run at 800 points.
DIRECT_MAX_POINTS = 500
_GRAPH_NEIGHBORS = 30
# Real sentence embeddings are diffuse (MiniLM: mean within-topic cosine ~0.25 on our
# topic fixture); min_samples 2 keeps HDBSCAN from calling a third of them noise
# (75 memories, 5 topics: ARI 0.68 / 6 noise at 2 vs 0.42 / 24 noise at 4).
_MAX_MIN_SAMPLES = 2
_COMPONENT_NEIGHBORS = 3
_MIN_DISTANCE = 1e-9  # a zero weight is no edge (sparse_graph.py, as in scipy's csgraph)
_SILHOUETTE_SAMPLE = 2000
# A new store is too sparse for density: HDBSCAN called all 15 memories noise where 6 were about
# deploys among 9 about anything else (issue 43). Up to this many memories, a store where it finds
# no cluster is grouped by average linkage instead: groups whose memories are, on average, at least
# SMALL_GROUP_SIMILARITY similar (MiniLM: within a topic ~0.15-0.40, across topics ~0.05-0.07;
# 0.18 chosen on 5 memories of each fixture topic among 4 unrelated ones, and 9 unrelated alone:
# 0.15 pulled an unrelated memory into a topic, 0.25 lost two topics).
SMALL_STORE_POINTS = 200
SMALL_GROUP_SIMILARITY = 0.18


@dataclass(frozen=True, eq=False)
class ClusterResult:
    """labels (-1 = noise, 0 = largest cluster), membership strengths, clustering space."""

    labels: np.ndarray
    probabilities: np.ndarray
    embedding: np.ndarray

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0


def cluster_vectors(vectors: np.ndarray, min_cluster_size: int, *, random_state: int = 42) -> ClusterResult:
    """HDBSCAN over unit-normalized vectors (euclidean on unit vectors ~ cosine).

    Up to ``DIRECT_MAX_POINTS`` points HDBSCAN sees the vectors themselves;
    above, it runs on a sparse exact k-NN distance graph of the same vectors.
    Deterministic; ``random_state`` is accepted for API stability.
    """
    del random_state
    if min_cluster_size < 2:
        raise ValueError("min_cluster_size must be >= 2")
    unit = unit_rows(vectors)
    n = unit.shape[0]
    if n < min_cluster_size:
        return ClusterResult(
            labels=np.full(n, -1, dtype=np.int64),
            probabilities=np.zeros(n, dtype=np.float64),
            embedding=unit,
        )

    min_samples = min(int(min_cluster_size), _MAX_MIN_SAMPLES)
    if n <= DIRECT_MAX_POINTS:
        found = hdbscan_points(unit, int(min_cluster_size), min_samples)
    else:
        graph = knn_distance_graph(unit, max(_GRAPH_NEIGHBORS, min_samples))
        found = hdbscan_graph(graph, int(min_cluster_size), min_samples)
    return ClusterResult(
        labels=limit_clusters(found.labels, None),
        probabilities=found.probabilities,
        embedding=unit,
    )


def find_regions(vectors: np.ndarray, min_cluster_size: int) -> tuple[np.ndarray, bool]:
    """Topic regions: HDBSCAN's clusters or, in a small store where it finds none, groups of
    similar memories (`similarity_groups`). (labels, -1 = none; True when grouped so)."""
    labels = cluster_vectors(vectors, min_cluster_size).labels
    n = labels.shape[0]
    if n < min_cluster_size or n > SMALL_STORE_POINTS or (labels >= 0).any():
        return labels, False
    return similarity_groups(vectors, min_cluster_size), True


def similarity_groups(vectors: np.ndarray, min_size: int, min_similarity: float = SMALL_GROUP_SIMILARITY) -> np.ndarray:
    """Average-linkage agglomeration on cosine similarity, merging while the two closest groups'
    mean pairwise similarity is at least `min_similarity`; groups of `min_size` or more get labels
    (0 = largest), the rest -1. Deterministic; O(n^3), for small n."""
    unit = unit_rows(vectors).astype(np.float64)
    n = unit.shape[0]
    link = unit @ unit.T
    np.fill_diagonal(link, -np.inf)
    sizes = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    active = np.ones(n, dtype=bool)
    while active.sum() > 1:
        masked = np.where(active[:, None] & active[None, :], link, -np.inf)
        i, j = np.unravel_index(int(np.argmax(masked)), masked.shape)
        if masked[i, j] < min_similarity:
            break
        merged = (link[i] * sizes[i] + link[j] * sizes[j]) / (sizes[i] + sizes[j])
        link[i], link[:, i] = merged, merged
        link[i, i] = -np.inf
        sizes[i] += sizes[j]
        active[j] = False
        members[i] += members[j]
    groups = sorted((sorted(members[k]) for k in np.flatnonzero(active)), key=lambda g: (-len(g), g[0]))
    labels = np.full(n, -1, dtype=np.int64)
    for label, group in enumerate(g for g in groups if len(g) >= min_size):
        labels[group] = label
    return labels


def knn_distance_graph(unit: np.ndarray, k: int) -> DistanceGraph:
    """Symmetric sparse matrix of euclidean distances on a connected k-NN graph.

    Includes explicit zero self-distances so HDBSCAN's core distance (which
    counts the point itself) matches the dense computation. Components of the
    k-NN graph are joined through their nearest components by centroid.
    """
    n = unit.shape[0]
    indices, _ = cosine_knn(unit, k)
    rows = np.repeat(np.arange(n), indices.shape[1])
    cols = indices.ravel()
    dists = pair_distances(unit, rows, cols)
    n_comp, component = connected_components(rows, cols, n)
    if n_comp > 1:
        extra_rows, extra_cols, extra_dists = _component_links(unit, component, n_comp)
        rows = np.concatenate([rows, extra_rows])
        cols = np.concatenate([cols, extra_cols])
        dists = np.concatenate([dists, extra_dists])
    # One entry per unordered pair, mirrored, plus the diagonal.
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    pairs, first = np.unique(lo * n + hi, return_index=True)
    lo, hi, dists = pairs // n, pairs % n, np.maximum(dists[first], _MIN_DISTANCE)
    diag = np.arange(n)
    return DistanceGraph.from_entries(
        np.concatenate([lo, hi, diag]), np.concatenate([hi, lo, diag]), np.concatenate([dists, dists, np.zeros(n)]), n
    )


def _unit_distance(sims: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(2.0 - 2.0 * np.asarray(sims, dtype=np.float64), 0.0))


def _component_links(unit: np.ndarray, component: np.ndarray, n_comp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges joining k-NN components: a spanning tree over component centroids
    plus each component's nearest few, each realised between the two members
    closest to the other component's centroid."""
    centroids = np.zeros((n_comp, unit.shape[1]))
    np.add.at(centroids, component, unit)
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    centroids = np.divide(centroids, norms, out=np.zeros_like(centroids), where=norms > 0)
    centroid_sims = centroids @ centroids.T
    centroid_dist = _unit_distance(centroid_sims) + _MIN_DISTANCE
    np.fill_diagonal(centroid_dist, 0.0)
    everyone = np.arange(n_comp)
    dense = DistanceGraph.from_entries(
        np.repeat(everyone, n_comp), np.tile(everyone, n_comp), centroid_dist.ravel(), n_comp
    )
    heads, tails, _ = minimum_spanning_tree(dense)
    pairs = {(min(a, b), max(a, b)) for a, b in zip(heads.tolist(), tails.tolist(), strict=True)}
    np.fill_diagonal(centroid_sims, -np.inf)
    nearest = np.argsort(-centroid_sims, axis=1, kind="stable")[:, :_COMPONENT_NEIGHBORS]
    for a in range(n_comp):
        for b in nearest[a].tolist():
            if a != b:
                pairs.add((min(a, b), max(a, b)))
    members = [np.flatnonzero(component == c) for c in range(n_comp)]
    src, dst = [], []
    for a, b in sorted(pairs):
        src.append(members[a][np.argmax(unit[members[a]] @ centroids[b])])
        dst.append(members[b][np.argmax(unit[members[b]] @ centroids[a])])
    src_arr, dst_arr = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    return src_arr, dst_arr, pair_distances(unit, src_arr, dst_arr)


def _centroid_similarities(vectors: np.ndarray) -> np.ndarray:
    unit = unit_rows(vectors)
    centroid = unit.mean(axis=0)
    norm = np.linalg.norm(centroid)
    if norm == 0:
        return np.zeros(unit.shape[0])
    return unit @ (centroid / norm)


def limit_clusters(labels: np.ndarray, max_clusters: int | None) -> np.ndarray:
    """Keep the ``max_clusters`` largest clusters, relabelled 0..k-1 by size desc.

    Other clusters become noise (-1). Equal sizes are ordered by first occurrence.
    ``None`` keeps every cluster (relabelling only).
    """
    arr = np.asarray(labels).astype(np.int64).reshape(-1)
    if max_clusters is not None and max_clusters < 0:
        raise ValueError("max_clusters must be >= 0")
    out = np.full(arr.shape, -1, dtype=np.int64)
    valid = arr >= 0
    if not valid.any():
        return out
    ids, first, counts = np.unique(arr[valid], return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    if max_clusters is not None:
        order = order[:max_clusters]
    for new, old in enumerate(ids[order]):
        out[arr == old] = new
    return out


def silhouette(vectors: np.ndarray, labels: np.ndarray) -> float:
    """Mean cosine silhouette over non-noise points (at most 2,000 sampled, fixed seed).

    0.0 when fewer than 2 clusters. Singleton clusters score 0 (sklearn convention).
    """
    unit = unit_rows(vectors)
    lab = np.asarray(labels).astype(np.int64).reshape(-1)
    if lab.shape[0] != unit.shape[0]:
        raise ValueError("vectors and labels differ in length")
    idx = np.flatnonzero(lab >= 0)
    if idx.size > _SILHOUETTE_SAMPLE:
        rng = np.random.default_rng(0)
        idx = np.sort(rng.choice(idx, size=_SILHOUETTE_SAMPLE, replace=False))
    lab = lab[idx]
    ids, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    if ids.size < 2 or ids.size >= idx.size:
        return 0.0
    x = unit[idx]
    # In place: one n x n matrix instead of three (2,000 sampled points: 32 MB each).
    dist = x @ x.T
    np.subtract(1.0, dist, out=dist)
    np.clip(dist, 0.0, 2.0, out=dist)
    np.fill_diagonal(dist, 0.0)
    onehot = np.zeros((idx.size, ids.size))
    onehot[np.arange(idx.size), inverse] = 1.0
    sums = dist @ onehot  # distance of each point to every cluster, summed
    own = counts[inverse]
    a = sums[np.arange(idx.size), inverse] / np.maximum(own - 1, 1)
    means = sums / counts
    means[np.arange(idx.size), inverse] = np.inf
    b = means.min(axis=1)
    denom = np.maximum(a, b)
    s = np.divide(b - a, denom, out=np.zeros_like(a), where=denom > 0)
    s[own == 1] = 0.0
    return float(s.mean())


def coherence(vectors_of_cluster: np.ndarray) -> float:
    """Mean cosine similarity of members to their normalized centroid, in [0, 1]."""
    x = as_matrix(vectors_of_cluster, name="vectors_of_cluster")
    if x.shape[0] == 0:
        raise ValueError("empty cluster")
    return float(np.clip(_centroid_similarities(x).mean(), 0.0, 1.0))


def representative_index(vectors_of_cluster: np.ndarray) -> int:
    """Index of the member most similar to the cluster centroid."""
    x = as_matrix(vectors_of_cluster, name="vectors_of_cluster")
    if x.shape[0] == 0:
        raise ValueError("empty cluster")
    return int(np.argmax(_centroid_similarities(x)))

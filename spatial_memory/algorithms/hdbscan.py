"""HDBSCAN with excess-of-mass cluster selection, in numpy.

Importing scikit-learn's HDBSCAN costs more time and memory in a fresh process than
clustering a 500-memory map takes (docs/BENCHMARKS.md). This module computes the same clustering as
``sklearn.cluster.HDBSCAN(min_cluster_size, min_samples)`` with its defaults otherwise
(``cluster_selection_method="eom"``, no single cluster, no epsilon), following its steps:
core distances, the mutual reachability graph, its minimum spanning tree, the single linkage
tree, the condensed tree, cluster stabilities, excess-of-mass selection, labels and
membership strengths (Campello, Moulavi & Sander 2013; McInnes, Healy & Astels 2017).
``tests/test_hdbscan.py`` checks labels and strengths against scikit-learn's.

Two entry points: ``hdbscan_points`` for points in euclidean space (the dense path, O(n^2)
memory: meant for small maps) and ``hdbscan_graph`` for a sparse distance graph whose explicit
entries are the only known distances (each row holding its zero self-distance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._linalg import pair_distances
from .sparse_graph import DistanceGraph, connected_components, minimum_spanning_tree

_GRAM_EXACT_ABOVE = 1e-3


@dataclass(frozen=True, eq=False)
class HdbscanResult:
    """labels (-1 = noise; clusters numbered by their node in the condensed tree) and
    membership strengths in [0, 1] (0 for noise)."""

    labels: np.ndarray
    probabilities: np.ndarray


def hdbscan_points(points: np.ndarray, min_cluster_size: int, min_samples: int) -> HdbscanResult:
    """HDBSCAN of the rows of ``points`` under euclidean distance."""
    x = np.asarray(points, dtype=np.float64)
    n = x.shape[0]
    _check(n, min_cluster_size, min_samples)
    squared = np.einsum("ij,ij->i", x, x)
    distances = squared[:, None] + squared[None, :] - 2.0 * (x @ x.T)
    np.sqrt(np.maximum(distances, 0.0, out=distances), out=distances)
    # The Gram matrix loses the small distances (an exact duplicate comes out ~1e-8 away, not
    # 0): those few are taken from the differences, as scikit-learn computes every distance.
    near_i, near_j = np.nonzero(np.triu(distances < _GRAM_EXACT_ABOVE, k=1))
    if near_i.size:
        distances[near_i, near_j] = distances[near_j, near_i] = pair_distances(x, near_i, near_j)
    np.fill_diagonal(distances, 0.0)
    # The core distance counts the point itself, as scikit-learn's does.
    core = np.partition(distances, min_samples - 1, axis=1)[:, min_samples - 1]
    reachability = np.maximum(distances, np.maximum(core[:, None], core[None, :]), out=distances)
    heads, tails, weights = _dense_spanning_tree(reachability)
    return _labels_from_tree(heads, tails, weights, n, min_cluster_size)


def hdbscan_graph(graph: DistanceGraph, min_cluster_size: int, min_samples: int) -> HdbscanResult:
    """HDBSCAN on a connected sparse distance graph (symmetric, zero diagonal stored)."""
    n = graph.n
    _check(n, min_cluster_size, min_samples)
    row_of_entry = graph.rows()
    order = np.lexsort((graph.data, row_of_entry))
    counts = np.diff(graph.indptr)
    core = np.full(n, np.inf)
    known = counts > min_samples - 1
    core[known] = graph.data[order][graph.indptr[:-1][known] + min_samples - 1]
    reachable = DistanceGraph(
        graph.indptr, graph.indices, np.maximum(graph.data, np.maximum(core[row_of_entry], core[graph.indices]))
    )
    off_diagonal = row_of_entry != graph.indices
    if connected_components(row_of_entry[off_diagonal], graph.indices[off_diagonal], n)[0] > 1:
        raise ValueError("the distance graph is not connected")
    heads, tails, weights = minimum_spanning_tree(reachable)
    return _labels_from_tree(heads, tails, weights, n, min_cluster_size)


def _check(n: int, min_cluster_size: int, min_samples: int) -> None:
    if n < 2:
        raise ValueError("HDBSCAN needs at least two points")
    if min_cluster_size < 2:
        raise ValueError("min_cluster_size must be >= 2")
    if not 1 <= min_samples <= n:
        raise ValueError("min_samples must be between 1 and the number of points")


def _dense_spanning_tree(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's algorithm on a dense symmetric weight matrix: n - 1 vectorised steps."""
    n = weights.shape[0]
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = weights[0].copy()
    best[0] = np.inf
    source = np.zeros(n, dtype=np.int64)
    heads = np.empty(n - 1, dtype=np.int64)
    tails = np.empty(n - 1, dtype=np.int64)
    lengths = np.empty(n - 1)
    for step in range(n - 1):
        node = int(np.argmin(best))
        heads[step], tails[step], lengths[step] = source[node], node, best[node]
        in_tree[node] = True
        best[node] = np.inf
        row = weights[node]
        closer = (row < best) & ~in_tree
        best[closer] = row[closer]
        source[closer] = node
    return heads, tails, lengths


def _labels_from_tree(
    heads: np.ndarray, tails: np.ndarray, weights: np.ndarray, n: int, min_cluster_size: int
) -> HdbscanResult:
    order = np.argsort(weights)  # scikit-learn's own (unstable) sort: the same order on ties
    tree = _condense(*_single_linkage(heads[order], tails[order], weights[order], n), n, min_cluster_size)
    return _label_points(tree, _excess_of_mass(tree), n)


def _single_linkage(
    heads: np.ndarray, tails: np.ndarray, weights: np.ndarray, n: int
) -> tuple[list[int], list[int], list[float], list[int]]:
    """Merge tree from sorted spanning-tree edges: node n + i is the i-th merge."""
    up = [-1] * (2 * n - 1)
    sizes = [1] * n + [0] * (n - 1)
    left, right, value, size = [], [], weights.tolist(), []
    for i, (a, b) in enumerate(zip(heads.tolist(), tails.tolist(), strict=True)):
        a, b = _root(up, a), _root(up, b)
        merged = n + i
        left.append(a)
        right.append(b)
        sizes[merged] = sizes[a] + sizes[b]
        size.append(sizes[merged])
        up[a] = up[b] = merged
    return left, right, value, size


def _root(up: list[int], node: int) -> int:
    top = node
    while up[top] != -1:
        top = up[top]
    while up[node] != -1 and up[node] != top:  # path compression
        up[node], node = top, up[node]
    return top


def _condense(
    left: list[int], right: list[int], value: list[float], size: list[int], n: int, min_cluster_size: int
) -> np.ndarray:
    """The condensed tree: rows of (parent cluster, child cluster or point, lambda, child size).

    Walks the merge tree from the root breadth first, as scikit-learn does (the row order
    matters below). A split where both sides keep at least ``min_cluster_size`` points makes
    two new clusters; a smaller side leaves its parent point by point at that lambda.
    Clusters are numbered from n (the root) in the order they appear.
    """

    def count(node: int) -> int:
        return size[node - n] if node >= n else 1

    def points_under(node: int) -> list[int]:
        found, level = [], [node]
        while level:
            found.extend(x for x in level if x < n)
            level = [c for x in level if x >= n for c in (left[x - n], right[x - n])]
        return found

    root = 2 * n - 2
    label = {root: n}
    next_label = n + 1
    rows: list[tuple[int, int, float, int]] = []
    queue = [root]
    for node in queue:  # the queue grows while it is walked
        a, b = left[node - n], right[node - n]
        lam = 1.0 / value[node - n] if value[node - n] > 0.0 else np.inf
        mine = label[node]
        big = {a: count(a) >= min_cluster_size, b: count(b) >= min_cluster_size}
        if big[a] and big[b]:
            for side in (a, b):
                label[side] = next_label
                rows.append((mine, next_label, lam, count(side)))
                next_label += 1
        for side in (a, b):
            if big[side]:
                label.setdefault(side, mine)
                queue.append(side)
            else:
                rows.extend((mine, point, lam, 1) for point in points_under(side))
    return np.array(rows, dtype=_CONDENSED)


_CONDENSED = np.dtype([("parent", np.int64), ("child", np.int64), ("lam", np.float64), ("size", np.int64)])


def _excess_of_mass(tree: np.ndarray) -> set[int]:
    """The clusters chosen by excess of mass (never the root): a cluster is kept unless its
    descendants together are more stable than it."""
    root = int(tree["parent"].min())
    births = {int(c): float(lam) for c, lam in zip(tree["child"], tree["lam"], strict=True)}
    births[root] = 0.0
    stability = dict.fromkeys(range(root, int(tree["parent"].max()) + 1), 0.0)
    for parent, lam, size in zip(tree["parent"].tolist(), tree["lam"].tolist(), tree["size"].tolist(), strict=True):
        stability[parent] += (lam - births[parent]) * size
    children: dict[int, list[int]] = {}
    for parent, child, size in zip(tree["parent"].tolist(), tree["child"].tolist(), tree["size"].tolist(), strict=True):
        if size > 1:
            children.setdefault(parent, []).append(child)
    chosen = dict.fromkeys(sorted(stability, reverse=True)[:-1], True)
    for node in chosen:
        below = float(np.sum([stability[c] for c in children.get(node, [])]))
        if below > stability[node]:
            chosen[node] = False
            stability[node] = below
        else:
            stack = list(children.get(node, []))
            while stack:
                sub = stack.pop()
                chosen[sub] = False
                stack.extend(children.get(sub, []))
    return {c for c, keep in chosen.items() if keep}


def _label_points(tree: np.ndarray, clusters: set[int], n: int) -> HdbscanResult:
    """A point belongs to the chosen cluster among its ancestors (noise when none); its
    strength is the lambda at which it left, relative to its cluster's last lambda."""
    parent_of = dict(zip(tree["child"].tolist(), tree["parent"].tolist(), strict=True))
    number = {c: i for i, c in enumerate(sorted(clusters))}
    labels = np.full(n, -1, dtype=np.int64)
    owner = np.full(n, -1, dtype=np.int64)
    for point in range(n):
        node = parent_of[point]
        while node not in clusters and node in parent_of:
            node = parent_of[node]
        if node in clusters:
            labels[point], owner[point] = number[node], node
    deaths = _last_run_max(tree["parent"], tree["lam"])
    probabilities = np.zeros(n)
    points = tree[tree["child"] < n]
    for point, lam in zip(points["child"].tolist(), points["lam"].tolist(), strict=True):
        if owner[point] < 0:
            continue
        death = deaths[int(owner[point])]
        probabilities[point] = 1.0 if death == 0.0 or np.isinf(lam) else min(lam, death) / death
    return HdbscanResult(labels=labels, probabilities=probabilities)


def _last_run_max(parents: np.ndarray, lams: np.ndarray) -> dict[int, float]:
    """Per parent, the largest lambda of its last run of consecutive rows.

    scikit-learn's cluster "death" is computed this way (a parent's rows are not always
    consecutive in the breadth-first condensed tree); kept so membership strengths match.
    """
    starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
    run_max = np.maximum.reduceat(lams, starts)
    return dict(zip(parents[starts].tolist(), run_max.tolist(), strict=True))

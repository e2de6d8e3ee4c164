"""Sparse undirected distance graphs in CSR arrays: connected components and the minimum spanning
tree, in numpy.

The regions' clustering above 500 points needs only these two graph operations; importing
scipy.sparse and its csgraph for them added ~25 MB to a server's resident memory for the rest of
its life (docs/BENCHMARKS.md, "45: memory and recall latency"). Both give what scipy's csgraph
gives on the same graph, ties included: the components numbered in the order of their first
node, and the spanning tree of Kruskal's algorithm over the entries in the stable order of their
weights, returned in row-major order (`tests/test_sparse_graph.py` checks both against scipy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DistanceGraph:
    """An n x n sparse matrix in canonical CSR form (each row's columns ascending, no duplicate
    entry): `indptr` (n + 1), `indices` and `data` (float64) per stored entry. Explicit zeros are
    entries too (HDBSCAN's graph stores each point's zero distance to itself)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def rows(self) -> np.ndarray:
        """The row of each stored entry."""
        return np.repeat(np.arange(self.n), np.diff(self.indptr))

    @classmethod
    def from_entries(cls, rows: np.ndarray, cols: np.ndarray, data: np.ndarray, n: int) -> DistanceGraph:
        """The graph holding `data[i]` at (rows[i], cols[i]); a position given twice is an error."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
        if rows.size > 1 and np.any((rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])):
            raise ValueError("an entry is given twice")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, cols, np.asarray(data, dtype=np.float64)[order])


def connected_components(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    """(count, label of each node) of the undirected graph with these edges, the components
    numbered in the order of their lowest node."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    parent = np.arange(n)
    while True:
        # Hook each edge's higher root under its lower one, then point every node at its root:
        # parents only ever get lower, so a component ends up under its lowest node.
        low = np.minimum(parent[rows], parent[cols])
        hooked = parent.copy()
        np.minimum.at(hooked, parent[rows], low)
        np.minimum.at(hooked, parent[cols], low)
        while True:
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, parent):
            break
        parent = hooked
    roots, labels = np.unique(parent, return_inverse=True)
    return len(roots), labels.reshape(-1)


def minimum_spanning_tree(graph: DistanceGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(heads, tails, weights) of the minimum spanning forest of an undirected graph (each edge
    stored in both directions, or in one), in row-major order of the entries it kept. Kruskal's
    algorithm over the entries in the stable order of their weights, as scipy's csgraph takes
    them, so equal weights choose the same edges; an entry of weight zero is no edge."""
    n = graph.n
    order = np.argsort(graph.data, kind="stable")
    order = order[graph.data[order] != 0.0]
    heads_all, tails_all = graph.rows(), graph.indices
    parent = list(range(n))

    def root(node: int) -> int:
        top = node
        while parent[top] != top:
            top = parent[top]
        while parent[node] != top:  # path compression
            parent[node], node = top, parent[node]
        return top

    kept: list[int] = []
    for entry, head, tail in zip(order.tolist(), heads_all[order].tolist(), tails_all[order].tolist(), strict=True):
        a, b = root(head), root(tail)
        if a != b:
            parent[a] = b
            kept.append(entry)
            if len(kept) == n - 1:
                break
    chosen = np.sort(np.asarray(kept, dtype=np.int64))
    return heads_all[chosen], tails_all[chosen], graph.data[chosen]

"""Exact cosine neighbourhoods via blocked matrix products."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Rows of similarities per block: ~1 MB of float32 (and twice that of indices in cosine_knn) up
# to 1,000 points, never fewer than BLOCK_MIN_ROWS rows (matrix products of fewer rows are slow).
# Blocks of 32 MB held ~16 MB at once in a 1,000-memory `regions`, ~130 MB at 5,000; the
# neighbours are the same (docs/BENCHMARKS.md, "45: memory and recall latency").
_BLOCK_ELEMENTS = 1 << 18
BLOCK_MIN_ROWS = 256


def similarity_blocks(
    unit_vectors: np.ndarray, *, block_elements: int = _BLOCK_ELEMENTS
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield ``(start, stop, sims)`` with ``sims = X[start:stop] @ X.T`` (float32)."""
    x = np.ascontiguousarray(unit_vectors, dtype=np.float32)
    n = x.shape[0]
    block = max(BLOCK_MIN_ROWS, block_elements // max(n, 1))
    for start in range(0, n, block):
        stop = min(n, start + block)
        yield start, stop, x[start:stop] @ x.T


def cosine_knn(unit_vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most similar other rows of each row: (indices, similarities), best first.

    Exact (brute force, BLAS) and deterministic; ``k`` is capped at n-1.
    """
    n = unit_vectors.shape[0]
    k = min(int(k), n - 1)
    indices = np.empty((n, max(k, 0)), dtype=np.int64)
    sims = np.empty((n, max(k, 0)), dtype=np.float32)
    if k <= 0:
        return indices, sims
    for start, stop, block in similarity_blocks(unit_vectors):
        rows = np.arange(stop - start)
        block[rows, rows + start] = -np.inf
        part = np.argpartition(-block, k - 1, axis=1)[:, :k]
        part_sims = np.take_along_axis(block, part, axis=1)
        order = np.lexsort((part, -part_sims), axis=1)
        indices[start:stop] = np.take_along_axis(part, order, axis=1)
        sims[start:stop] = np.take_along_axis(part_sims, order, axis=1)
    return indices, sims

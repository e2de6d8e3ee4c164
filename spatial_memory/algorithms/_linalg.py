"""Small numpy helpers shared by the algorithm modules."""

from __future__ import annotations

import numpy as np


def as_matrix(vectors: np.ndarray, *, name: str = "vectors") -> np.ndarray:
    """Return ``vectors`` as a 2-D float64 array or raise ValueError."""
    arr = np.asarray(vectors, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Row-normalize to unit length; all-zero rows stay zero."""
    arr = as_matrix(vectors)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)


# Elements of each of the three float64 temporaries of a chunk of pairs (both ends and their
# difference): 2 MB each. A chunk of 2**21 held ~50 MB at once, the largest part of `regions`'
# peak (docs/BENCHMARKS.md, "45: memory and recall latency"); each row's distance is the same.
PAIR_CHUNK_ELEMENTS = 1 << 18


def pair_distances(unit: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Euclidean distances between rows[i] and cols[i] of ``unit``, from the differences."""
    # float64 differences: sqrt(2 - 2*sim) from float32 sims is off by ~3e-4
    # for near-duplicates.
    out = np.empty(rows.size)
    step = max(1, PAIR_CHUNK_ELEMENTS // max(unit.shape[1], 1))
    for start in range(0, rows.size, step):
        stop = start + step
        out[start:stop] = np.linalg.norm(unit[rows[start:stop]] - unit[cols[start:stop]], axis=1)
    return out


def below_kth_largest(values: np.ndarray, k: int) -> np.ndarray:
    """A value no larger than the k-th largest of `values` along axis 0 (one per column of a
    matrix; 1 <= k <= its length): the k-th largest of the maxima of blocks of consecutive values.
    The k blocks with the largest maxima each hold a value at least that large. With at least 4k
    (and 64) blocks it is nearly always the k-th largest itself, for a selection over a fraction of
    the values."""
    m = values.shape[0]
    width = max(1, m // max(4 * k, 64))
    maxima = np.maximum.reduceat(values, np.arange(0, m, width), axis=0)
    return np.partition(maxima, maxima.shape[0] - k, axis=0)[maxima.shape[0] - k]

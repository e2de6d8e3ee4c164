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

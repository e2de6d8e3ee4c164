"""Deterministic PCA via a symmetric eigendecomposition (numpy only)."""

from __future__ import annotations

import numpy as np

from ._linalg import as_matrix

_RELATIVE_RANK_TOL = 1e-10


def pca_reduce(vectors: np.ndarray, n_components: int) -> np.ndarray:
    """Project rows onto their top principal components, shape (n, n_components).

    Components beyond the data's rank are zero-filled. Signs are fixed so the
    largest-magnitude loading of each component is positive (deterministic).
    """
    if n_components < 1:
        raise ValueError("n_components must be >= 1")
    x = as_matrix(vectors)
    n, d = x.shape
    out = np.zeros((n, n_components), dtype=np.float64)
    if n < 2:
        return out
    xc = x - x.mean(axis=0)
    if n >= d:
        # d x d covariance: O(n d^2), much cheaper than an SVD of the n x d matrix.
        vals, comps = np.linalg.eigh(xc.T @ xc)
        vals, comps = vals[::-1], comps[:, ::-1]
    else:
        # Few points: eigendecompose the n x n Gram matrix and map back.
        vals, vecs = np.linalg.eigh(xc @ xc.T)
        vals, vecs = vals[::-1], vecs[:, ::-1]
        comps = xc.T @ vecs
    keep = vals > _RELATIVE_RANK_TOL * max(float(vals[0]), 0.0)
    k = min(n_components, int(keep.sum()))
    if k == 0:
        return out
    comps = comps[:, :k] / np.linalg.norm(comps[:, :k], axis=0)
    pivot = np.argmax(np.abs(comps), axis=0)
    signs = np.sign(comps[pivot, np.arange(k)])
    out[:, :k] = xc @ (comps * signs)
    return out

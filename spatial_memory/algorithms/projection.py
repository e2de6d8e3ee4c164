"""Low-dimensional layouts of embedding vectors (UMAP, PCA for tiny inputs)."""

from __future__ import annotations

import warnings

import numpy as np

from ._linalg import unit_rows
from .neighbors import cosine_knn
from .pca import pca_reduce

# Below this UMAP's layout is meaningless (and its spectral init fragile).
UMAP_MIN_POINTS = 16
# UMAP's default of 500 epochs for small inputs costs ~1.3 s at 1,000 points;
# 200 (its own default above 10,000) is visually equivalent for our layouts.
_FULL_EPOCHS_MAX_POINTS = 1000
_FAST_EPOCHS = 200


def project(
    vectors: np.ndarray,
    n_components: int,
    *,
    random_state: int = 42,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
) -> np.ndarray:
    """Layout of shape (n, n_components), float64, on cosine geometry.

    UMAP from ``UMAP_MIN_POINTS`` points up, PCA below; one point maps to the
    origin and two points to opposite positions on the first axis.
    """
    if n_components < 1:
        raise ValueError("n_components must be >= 1")
    unit = unit_rows(vectors)
    n = unit.shape[0]
    if n < max(UMAP_MIN_POINTS, n_components + 2):
        return pca_reduce(unit, n_components)
    return _umap_layout(unit, n_components, random_state, n_neighbors, min_dist)


def _umap_layout(
    unit: np.ndarray, n_components: int, random_state: int, n_neighbors: int, min_dist: float
) -> np.ndarray:
    from ..runtime.imports import import_locked

    umap = import_locked("umap")
    # We pass no NNDescent index on purpose (no .transform needed); UMAP warns
    # about that on every fit. Targeted filter: catch_warnings is not thread-safe.
    warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning, module="umap")
    n = unit.shape[0]
    k = max(2, min(int(n_neighbors), n - 1))
    # Exact cosine k-NN from one BLAS product, handed to UMAP: this skips both
    # its brute-force cosine path below 4,096 points (~2 s at 1,000) and
    # NN-descent above (~40 s at 5,000 in a fresh process, mostly numba
    # compilation). metric="euclidean" on unit vectors was measured no faster
    # (2.0 s vs 2.2 s at 1,000), the neighbour search was the cost.
    indices, sims = cosine_knn(unit, k - 1)
    # UMAP expects each point as its own first neighbour at distance 0.
    knn_indices = np.hstack([np.arange(n)[:, None], indices])
    knn_dists = np.hstack([np.zeros((n, 1), np.float32), np.clip(1.0 - sims, 0.0, 2.0)])
    reducer = umap.UMAP(
        n_components=n_components,
        n_neighbors=k,
        min_dist=min_dist,
        metric="cosine",
        random_state=random_state,
        n_jobs=1,  # implied by random_state; explicit to avoid UMAP's warning
        n_epochs=None if n <= _FULL_EPOCHS_MAX_POINTS else _FAST_EPOCHS,
        precomputed_knn=(knn_indices, knn_dists.astype(np.float32)),
        verbose=False,
    )
    layout = reducer.fit_transform(unit.astype(np.float32))
    return np.asarray(layout, dtype=np.float64)


def warm_up_projection() -> None:
    """Run a tiny UMAP fit so numba compiles before the first real call (~6-15 s)."""
    rng = np.random.default_rng(0)
    points = unit_rows(rng.normal(size=(30, 16)))
    _umap_layout(points, 2, 42, 10, 0.1)


def normalize_coordinates(coords: np.ndarray) -> np.ndarray:
    """Scale each axis to [-1, 1] (min-max); constant axes become zeros."""
    arr = np.asarray(coords, dtype=np.float64)
    if arr.size == 0:
        return arr.copy()
    lo, hi = arr.min(axis=0), arr.max(axis=0)
    span = hi - lo
    scaled = np.divide(2.0 * (arr - lo), span, out=np.zeros_like(arr), where=span > 0) - 1.0
    return np.where(span > 0, scaled, 0.0)

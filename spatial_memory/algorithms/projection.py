"""Low-dimensional layouts of embedding vectors (UMAP, PCA for tiny inputs)."""

from __future__ import annotations

import numpy as np

from ._linalg import unit_rows
from .layout import umap_layout
from .pca import pca_reduce

# Below this UMAP's layout is meaningless.
UMAP_MIN_POINTS = 16
# UMAP's default of 500 epochs for small inputs costs ~1 s at 1,000 points;
# 200 (its own default above 10,000) is visually equivalent for our layouts.
_FULL_EPOCHS = 500
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
    n_epochs = _FULL_EPOCHS if n <= _FULL_EPOCHS_MAX_POINTS else _FAST_EPOCHS
    return umap_layout(
        unit, n_components, n_neighbors=n_neighbors, min_dist=min_dist, n_epochs=n_epochs, random_state=random_state
    )


def warm_up_projection() -> None:
    """Run a tiny layout so its code is imported and its numpy paths are warm before the first
    real map."""
    rng = np.random.default_rng(0)
    umap_layout(unit_rows(rng.normal(size=(30, 16))), 2, n_neighbors=10, n_epochs=10)


def normalize_coordinates(coords: np.ndarray) -> np.ndarray:
    """Scale each axis to [-1, 1] (min-max); constant axes become zeros."""
    arr = np.asarray(coords, dtype=np.float64)
    if arr.size == 0:
        return arr.copy()
    lo, hi = arr.min(axis=0), arr.max(axis=0)
    span = hi - lo
    scaled = np.divide(2.0 * (arr - lo), span, out=np.zeros_like(arr), where=span > 0) - 1.0
    return np.where(span > 0, scaled, 0.0)

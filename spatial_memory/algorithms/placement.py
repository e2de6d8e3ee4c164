"""Placing points on an existing map from their nearest placed neighbours (pure numpy).

The atlas lays out a sample of a large store with UMAP and places every other memory here, and
places a memory written after the layout the same way, so the map never moves under a person's
eyes for one new point. A point lands at the similarity-weighted mean of its k nearest anchors
(cosine), nudged by a deterministic offset a fraction of their spread so that near-copies do not
stack on one pixel.
"""

from __future__ import annotations

import numpy as np

_CHUNK = 2048
_SPREAD = 0.35


def nearest_anchors(unit: np.ndarray, anchors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row of `unit`, the indices (n, k) of its k most similar rows of `anchors` and their
    cosine similarities (both unit-norm), best first."""
    k = max(1, min(k, anchors.shape[0]))
    n = unit.shape[0]
    indices = np.empty((n, k), dtype=np.int64)
    sims = np.empty((n, k), dtype=np.float32)
    anchors_t = np.ascontiguousarray(anchors.T, dtype=np.float32)
    for start in range(0, n, _CHUNK):
        block = unit[start : start + _CHUNK].astype(np.float32, copy=False) @ anchors_t
        rows = np.arange(block.shape[0])
        # k passes of argmax (best first): for the few neighbours wanted, several times faster
        # than argpartition over every row.
        for j in range(k):
            best = block.argmax(axis=1)
            indices[start : start + _CHUNK, j] = best
            sims[start : start + _CHUNK, j] = block[rows, best]
            block[rows, best] = -np.inf
    return indices, sims


def place(
    unit: np.ndarray, anchors: np.ndarray, anchor_coords: np.ndarray, *, k: int = 5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates (n, d) for `unit` rows on the map of `anchors` (their `anchor_coords`), and the
    index of each row's nearest anchor."""
    if unit.shape[0] == 0:
        return np.zeros((0, anchor_coords.shape[1])), np.zeros(0, dtype=np.int64)
    indices, sims = nearest_anchors(unit, anchors, k)
    weights = np.clip(sims.astype(np.float64), 1e-3, None) ** 4  # the closest anchors dominate
    weights /= weights.sum(axis=1, keepdims=True)
    near = anchor_coords[indices]  # (n, k, d)
    centre = (weights[:, :, None] * near).sum(axis=1)
    spread = np.sqrt((weights[:, :, None] * (near - centre[:, None, :]) ** 2).sum(axis=1))
    offset = np.random.default_rng(seed).uniform(-1.0, 1.0, size=centre.shape)
    return centre + _SPREAD * spread * offset, indices[:, 0]

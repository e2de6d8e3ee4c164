"""UMAP's layout in numpy: fuzzy k-NN graph, then SGD with negative sampling.

umap-learn compiles numba functions it does not cache on disk: seconds in every fresh process
before the first map, and the RSS of numba and LLVM (docs/BENCHMARKS.md). This module follows the
same algorithm (McInnes et al. 2018; umap-learn 0.5: smooth k-NN distances, fuzzy union, a/b
curve, epochs-per-sample schedule, negative sampling, `move_other`) with nothing to compile.

Differences from umap-learn: PCA initialisation instead of spectral (deterministic, no
eigensolver, keeps the global arrangement); epoch-synchronous updates (optimize_layout); no
`transform`. On 1,000 MiniLM embeddings of short notes, the share of each point's 15 nearest
neighbours that stay its 15 nearest on the map: 0.595-0.596 here, 0.601 with umap-learn. scipy
is imported only to fit the a/b curve of a min_dist other than the default.
"""

from __future__ import annotations

import functools

import numpy as np

from .neighbors import cosine_knn
from .pca import pca_reduce

_SMOOTH_K_TOLERANCE = 1e-5
_MIN_K_DIST_SCALE = 1e-3
_BISECTION_STEPS = 64
_NEGATIVE_SAMPLE_RATE = 5
_INIT_SCALE = 10.0
_INIT_NOISE = 1e-4


def umap_layout(
    unit: np.ndarray,
    n_components: int,
    *,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    n_epochs: int = 500,
    random_state: int = 42,
) -> np.ndarray:
    """Layout of unit vectors (n >= n_components + 2) on cosine geometry, float64 (n, n_components)."""
    n = unit.shape[0]
    k = max(2, min(int(n_neighbors), n - 1))
    indices, sims = cosine_knn(unit, k - 1)
    # Each point is its own first neighbour at distance 0, as in umap-learn.
    knn_indices = np.hstack([np.arange(n)[:, None], indices])
    knn_dists = np.hstack([np.zeros((n, 1)), np.clip(1.0 - sims.astype(np.float64), 0.0, 2.0)])
    head, tail, weights = fuzzy_graph(knn_indices, knn_dists)
    keep = weights >= weights.max() / n_epochs  # edges sampled less than once are dropped
    head, tail, weights = head[keep], tail[keep], weights[keep]

    rng = np.random.default_rng(random_state)
    # pca.py's one eigendecomposition of the 384 x 384 covariance: scipy's Lanczos solver
    # needs less CPU, but importing scipy.sparse.linalg costs more than that before a first map.
    init = pca_reduce(unit, n_components)
    span = np.abs(init).max()
    init = init * (_INIT_SCALE / span if span > 0 else 1.0) + rng.normal(scale=_INIT_NOISE, size=init.shape)
    lo, hi = init.min(axis=0), init.max(axis=0)
    embedding = _INIT_SCALE * (init - lo) / np.where(hi > lo, hi - lo, 1.0)

    a, b = curve_parameters(float(min_dist))
    epochs_per_sample = (weights.max() / weights).astype(np.float64)
    seed = int(rng.integers(0, 2**31 - 1))
    optimize_layout(embedding, head, tail, epochs_per_sample, a, b, int(n_epochs), _NEGATIVE_SAMPLE_RATE, seed)
    return embedding


def fuzzy_graph(knn_indices: np.ndarray, knn_dists: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The symmetric fuzzy simplicial set of a k-NN graph (fuzzy union of both directions) as
    COO arrays (head, tail, weight), both directions of every edge, in row-major order.

    In numpy (importing scipy.sparse costs ~0.15 s before a fresh process's first map): every
    membership is keyed by (row, column) in both directions; a pair found both ways gets
    w1 + w2 - w1 * w2, the same arithmetic as scipy's P + P^T - P o P^T."""
    n, k = knn_dists.shape
    sigmas, rhos = smooth_knn_distances(knn_dists)
    strengths = np.exp(-np.maximum(knn_dists - rhos[:, None], 0.0) / sigmas[:, None])
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    cols = knn_indices.ravel().astype(np.int64)
    weights = strengths.ravel()
    keep = (rows != cols) & (weights != 0.0)  # no self-loops, no empty memberships
    rows, cols, weights = rows[keep], cols[keep], weights[keep]
    keys = np.concatenate([rows * n + cols, cols * n + rows])
    both = np.concatenate([weights, weights])
    order = np.argsort(keys, kind="stable")
    keys, both = keys[order], both[order]
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    # A pair occurs at most twice: once from each end's neighbour list.
    sums = np.add.reduceat(both, starts)
    products = np.multiply.reduceat(both, starts)
    twice = np.diff(np.append(starts, keys.size)) == 2
    union = np.where(twice, sums - products, sums)
    unique = keys[starts]
    return unique // n, unique % n, union


def smooth_knn_distances(knn_dists: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per point: sigma with sum_j exp(-(d_j - rho) / sigma) = log2(k) over its neighbours
    (bisection, all points at once), and rho, the distance to its nearest other neighbour."""
    n, k = knn_dists.shape
    target = np.log2(k)
    positive = np.where(knn_dists > 0, knn_dists, np.inf)
    rhos = positive.min(axis=1)
    rhos[~np.isfinite(rhos)] = 0.0
    others = knn_dists[:, 1:]
    lo, hi, mid = np.zeros(n), np.full(n, np.inf), np.ones(n)
    active = np.ones(n, dtype=bool)
    for _ in range(_BISECTION_STEPS):
        gap = np.maximum(others - rhos[:, None], 0.0)
        psum = np.exp(-gap / mid[:, None]).sum(axis=1)
        active &= np.abs(psum - target) >= _SMOOTH_K_TOLERANCE
        if not active.any():
            break
        above = active & (psum > target)
        below = active & ~above
        hi = np.where(above, mid, hi)
        lo = np.where(below, mid, lo)
        mid = np.where(above, (lo + hi) / 2.0, mid)
        mid = np.where(below, np.where(np.isinf(hi), mid * 2.0, (lo + hi) / 2.0), mid)
    # umap-learn's floor: a sigma below 1/1000 of the mean neighbour distance (of the point, or of
    # all points when its neighbours all coincide with it) is raised to it.
    floor = _MIN_K_DIST_SCALE * np.where(rhos > 0, knn_dists.mean(axis=1), float(knn_dists.mean()))
    return np.maximum(mid, np.maximum(floor, 1e-12)), rhos


# curve_parameters(0.1) (visualize) and (0.5) (the atlas): importing scipy.optimize to fit them
# costs more than the map (docs/BENCHMARKS.md, "Figures moved from code comments").
_KNOWN_CURVES = {
    (0.1, 1.0): (1.5769434602697652, 0.8950608778515733),
    (0.5, 1.0): (0.5830300203414425, 1.3341669924314914),
}


@functools.lru_cache(maxsize=8)
def curve_parameters(min_dist: float, spread: float = 1.0) -> tuple[float, float]:
    """a, b of the low-dimensional similarity 1 / (1 + a d^(2b)) fitted to UMAP's target curve."""
    if (min_dist, spread) in _KNOWN_CURVES:
        return _KNOWN_CURVES[(min_dist, spread)]
    # scipy only for a curve not in the table above: the default map never imports it.
    from scipy.optimize import curve_fit

    x = np.linspace(0, spread * 3, 300)
    y = np.where(x < min_dist, 1.0, np.exp(-(x - min_dist) / spread))
    params, _ = curve_fit(lambda d, a, b: 1.0 / (1.0 + a * d ** (2 * b)), x, y)
    return float(params[0]), float(params[1])


def optimize_layout(
    embedding: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    epochs_per_sample: np.ndarray,
    a: float,
    b: float,
    n_epochs: int,
    negative_rate: int,
    seed: int,
) -> None:
    """umap-learn's optimize_layout_euclidean (move_other=True, gamma=1), in place, with one change:
    every edge sampled in an epoch reads the positions at the epoch's start and all their moves are
    added together (as GPU implementations such as cuML's do), so an epoch is a few numpy
    operations instead of a compiled per-edge loop.

    Each axis is kept as its own array: gathering and squaring two or three columns of an (n, dim)
    array per edge cost twice the time of the whole epoch otherwise (0.60 -> 0.28 s for 500 points)."""
    rng = np.random.default_rng(seed)
    n, dim = embedding.shape
    per_negative = epochs_per_sample / negative_rate
    next_sample = epochs_per_sample.copy()
    next_negative = per_negative.copy()
    axes = [np.ascontiguousarray(embedding[:, d]) for d in range(dim)]
    for epoch in range(n_epochs):
        alpha = 1.0 - epoch / n_epochs
        sampled = np.flatnonzero(next_sample <= epoch)
        h, t = head[sampled], tail[sampled]
        # Attraction along the sampled edges, both ends moving.
        diffs, d2 = _differences(axes, h, t)
        positive = d2 > 0
        coeff = np.zeros_like(d2)
        coeff[positive] = -2.0 * a * b * d2[positive] ** (b - 1.0) / (a * d2[positive] ** b + 1.0)
        moves = []
        for diff in diffs:
            step = np.clip(coeff * diff, -4.0, 4.0) * alpha
            moves.append(np.bincount(h, step, n) - np.bincount(t, step, n))
        next_sample[sampled] += epochs_per_sample[sampled]
        # Repulsion from random points, owed at negative_rate samples per attraction.
        owed = np.maximum(np.floor((epoch - next_negative[sampled]) / per_negative[sampled]), 0).astype(np.int64)
        next_negative[sampled] += owed * per_negative[sampled]
        nh = np.repeat(h, owed)
        nt = rng.integers(0, n, nh.size)
        nh, nt = nh[nh != nt], nt[nh != nt]
        diffs, d2 = _differences(axes, nh, nt)
        positive = d2 > 0
        coeff = np.zeros_like(d2)
        coeff[positive] = 2.0 * b / ((0.001 + d2[positive]) * (a * d2[positive] ** b + 1.0))
        for move, diff in zip(moves, diffs):
            # Coincident points push apart by the largest step, as in umap-learn.
            step = np.where(positive, np.clip(coeff * diff, -4.0, 4.0), 4.0) * alpha
            move += np.bincount(nh, step, n)
        for axis, move in zip(axes, moves):
            axis += move
    for d, axis in enumerate(axes):
        embedding[:, d] = axis


def _differences(axes: list[np.ndarray], heads: np.ndarray, tails: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Per axis, head minus tail position of each pair, and the pairs' squared distances."""
    diffs = [axis[heads] - axis[tails] for axis in axes]
    d2 = diffs[0] * diffs[0]
    for diff in diffs[1:]:
        d2 += diff * diff
    return diffs, d2

"""UMAP's layout, written out: fuzzy k-NN graph (numpy/scipy) and its SGD (one numba function).

umap-learn compiles ~40 numba functions it does not cache on disk, ~15 s in every fresh process
on 2 cores before the first map. This module follows the same algorithm (McInnes et al. 2018,
umap-learn 0.5: smooth k-NN distances, fuzzy union, a/b curve fit, SGD with negative sampling,
`move_other`) with one compiled function, cached on disk by numba (`cache=True`: the directory
is NUMBA_CACHE_DIR, set by the server to the user's cache directory). Two processes compiling at
once are safe: numba writes its cache files to a temporary name and renames them.

Differences from umap-learn: PCA initialisation instead of spectral (deterministic, no
eigensolver, keeps the global arrangement), and no `transform` support (none is needed).
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
    init = pca_init(unit, n_components)
    span = np.abs(init).max()
    init = init * (_INIT_SCALE / span if span > 0 else 1.0) + rng.normal(scale=_INIT_NOISE, size=init.shape)
    lo, hi = init.min(axis=0), init.max(axis=0)
    embedding = np.ascontiguousarray(_INIT_SCALE * (init - lo) / np.where(hi > lo, hi - lo, 1.0), dtype=np.float32)

    a, b = curve_parameters(float(min_dist))
    epochs_per_sample = (weights.max() / weights).astype(np.float64)
    seed = int(rng.integers(0, 2**31 - 1))
    _sgd()(embedding, head, tail, epochs_per_sample, a, b, int(n_epochs), _NEGATIVE_SAMPLE_RATE, seed)
    return embedding.astype(np.float64)


def pca_init(unit: np.ndarray, n_components: int) -> np.ndarray:
    """The top principal components of the rows, by Lanczos (scipy eigsh): a full eigendecomposition
    of the 384 x 384 covariance costs 30-100x more CPU for the 2-3 components a layout starts from."""
    from scipy.sparse.linalg import ArpackError, eigsh

    centered = unit - unit.mean(axis=0)
    covariance = centered.T @ centered
    if n_components >= covariance.shape[0] - 1:
        return pca_reduce(unit, n_components)
    try:
        # v0 fixed: ARPACK starts from a random vector otherwise, and the layout must be reproducible.
        values, vectors = eigsh(covariance, k=n_components, which="LA", v0=np.ones(covariance.shape[0]))
    except ArpackError:
        return pca_reduce(unit, n_components)
    vectors = vectors[:, np.argsort(-values, kind="stable")]
    pivot = np.argmax(np.abs(vectors), axis=0)
    return centered @ (vectors * np.sign(vectors[pivot, np.arange(n_components)]))


def fuzzy_graph(knn_indices: np.ndarray, knn_dists: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The symmetric fuzzy simplicial set of a k-NN graph (fuzzy union of both directions) as
    COO arrays (head, tail, weight), both directions of every edge, in row-major order."""
    from scipy import sparse

    n, k = knn_dists.shape
    sigmas, rhos = smooth_knn_distances(knn_dists)
    strengths = np.exp(-np.maximum(knn_dists - rhos[:, None], 0.0) / sigmas[:, None])
    strengths[knn_indices == np.arange(n)[:, None]] = 0.0
    p = sparse.csr_matrix((strengths.ravel(), (np.repeat(np.arange(n), k), knn_indices.ravel())), shape=(n, n))
    pt = p.T.tocsr()
    union = (p + pt - p.multiply(pt)).tocoo()
    union.eliminate_zeros()
    order = np.lexsort((union.col, union.row))
    return (
        union.row[order].astype(np.int64),
        union.col[order].astype(np.int64),
        union.data[order].astype(np.float64),
    )


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


# curve_parameters(0.1): importing scipy.optimize to fit them costs ~0.5 s of CPU.
_KNOWN_CURVES = {(0.1, 1.0): (1.5769434602697652, 0.8950608778515733)}


@functools.lru_cache(maxsize=8)
def curve_parameters(min_dist: float, spread: float = 1.0) -> tuple[float, float]:
    """a, b of the low-dimensional similarity 1 / (1 + a d^(2b)) fitted to UMAP's target curve."""
    if (min_dist, spread) in _KNOWN_CURVES:
        return _KNOWN_CURVES[(min_dist, spread)]
    from scipy.optimize import curve_fit

    x = np.linspace(0, spread * 3, 300)
    y = np.where(x < min_dist, 1.0, np.exp(-(x - min_dist) / spread))
    params, _ = curve_fit(lambda d, a, b: 1.0 / (1.0 + a * d ** (2 * b)), x, y)
    return float(params[0]), float(params[1])


@functools.cache
def _sgd():
    """The compiled SGD (numba, imported on first use and cached on disk)."""
    from ..runtime.imports import import_locked

    numba = import_locked("numba")

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def optimize(embedding, head, tail, epochs_per_sample, a, b, n_epochs, negative_rate, seed):
        # umap-learn's optimize_layout_euclidean with move_other=True and gamma=1, serial.
        np.random.seed(seed)
        n_vertices, dim = embedding.shape
        per_negative = epochs_per_sample / negative_rate
        next_sample = epochs_per_sample.copy()
        next_negative = per_negative.copy()
        for epoch in range(n_epochs):
            alpha = 1.0 - epoch / n_epochs
            for i in range(head.shape[0]):
                if next_sample[i] > epoch:
                    continue
                j, k = head[i], tail[i]
                d2 = 0.0
                for d in range(dim):
                    diff = embedding[j, d] - embedding[k, d]
                    d2 += diff * diff
                if d2 > 0.0:
                    coeff = -2.0 * a * b * d2 ** (b - 1.0) / (a * d2**b + 1.0)
                    for d in range(dim):
                        g = min(4.0, max(-4.0, coeff * (embedding[j, d] - embedding[k, d])))
                        embedding[j, d] += g * alpha
                        embedding[k, d] -= g * alpha
                next_sample[i] += epochs_per_sample[i]
                n_negative = int((epoch - next_negative[i]) / per_negative[i])
                for _ in range(n_negative):
                    k = np.random.randint(n_vertices)
                    if k == j:
                        continue
                    d2 = 0.0
                    for d in range(dim):
                        diff = embedding[j, d] - embedding[k, d]
                        d2 += diff * diff
                    coeff = 2.0 * b / ((0.001 + d2) * (a * d2**b + 1.0)) if d2 > 0.0 else 0.0
                    for d in range(dim):
                        g = min(4.0, max(-4.0, coeff * (embedding[j, d] - embedding[k, d]))) if coeff > 0.0 else 4.0
                        embedding[j, d] += g * alpha
                next_negative[i] += n_negative * per_negative[i]

    return optimize

"""Tests for spatial_memory.algorithms (pure numpy algorithms)."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from itertools import pairwise

import numpy as np
import pytest

from spatial_memory.algorithms import (
    STOPWORDS,
    apply_decay,
    choose,
    class_tfidf_keywords,
    cluster_vectors,
    coherence,
    cosine_knn,
    decay_factor,
    interpolation_ts,
    limit_clusters,
    mean_pairwise_similarity,
    near_duplicate_groups,
    normalize_coordinates,
    pca_reduce,
    project,
    representative_index,
    silhouette,
    slerp,
    softmax_probabilities,
    tokenize,
)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = _unit(a.astype(np.float64)), _unit(b.astype(np.float64))
    dot = float(a64 @ b64)
    return math.atan2(float(np.linalg.norm(b64 - dot * a64)), dot)


def _sphere_blobs(n: int, k: int = 4, d: int = 384, noise: float = 0.05, seed: int = 0):
    """k gaussian blobs on the unit sphere; within-blob cosine ~0.5 at noise 0.05."""
    rng = np.random.default_rng(seed)
    centers = _unit(rng.normal(size=(k, d)))
    truth = rng.integers(0, k, n)
    points = _unit(centers[truth] + rng.normal(scale=noise, size=(n, d)))
    return points.astype(np.float32), truth


# --------------------------------------------------------------------------- import


HEAVY = ("sklearn", "scipy", "umap", "hdbscan", "numba")


def heavy_modules_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip())  # noqa: S307 - our own printed list


def test_package_import_is_light():
    assert heavy_modules_after("import spatial_memory.algorithms") == []


def test_a_map_of_500_points_imports_no_scipy():
    """A fresh process's first visualize (500 memories by default) lays out, in 2-D and 3-D, and
    clusters without scipy, whose import cost ~0.25 s before the first map."""
    code = (
        "import numpy as np\n"
        "from spatial_memory.algorithms import cluster_vectors, project\n"
        "x = np.random.default_rng(0).normal(size=(500, 32))\n"
        "project(x, 2), project(x, 3), cluster_vectors(x, 3)"
    )
    assert heavy_modules_after(code) == []


# --------------------------------------------------------------------------- slerp


def test_interpolation_ts():
    assert np.allclose(interpolation_ts(5), [0.0, 0.25, 0.5, 0.75, 1.0])
    assert interpolation_ts(2).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError):
        interpolation_ts(1)


def test_slerp_endpoints_norms_and_equal_angles():
    rng = np.random.default_rng(1)
    v0, v1 = rng.normal(size=64) * 3, rng.normal(size=64)
    path = slerp(v0, v1, interpolation_ts(9))
    assert path.shape == (9, 64) and path.dtype == np.float32
    assert np.allclose(path[0], _unit(v0), atol=1e-6)
    assert np.allclose(path[-1], _unit(v1), atol=1e-6)
    assert np.allclose(np.linalg.norm(path, axis=1), 1.0, atol=1e-6)
    steps = [_angle(path[i], path[i + 1]) for i in range(8)]
    total = _angle(v0, v1)
    assert np.allclose(steps, total / 8, atol=1e-5)


def test_slerp_near_identical_vectors():
    rng = np.random.default_rng(2)
    v0 = rng.normal(size=32)
    v1 = v0 + 1e-10 * rng.normal(size=32)
    path = slerp(v0, v1, [0.0, 0.3, 1.0])
    assert np.all(np.isfinite(path))
    assert np.allclose(np.linalg.norm(path, axis=1), 1.0, atol=1e-6)
    assert np.allclose(path, _unit(v0), atol=1e-6)


@pytest.mark.parametrize("perturb", [0.0, 1e-12])
def test_slerp_opposite_vectors_stay_on_sphere(perturb):
    rng = np.random.default_rng(3)
    v0 = rng.normal(size=16)
    v1 = -v0 + perturb * rng.normal(size=16)
    ts = interpolation_ts(5)
    path = slerp(v0, v1, ts)
    assert np.all(np.isfinite(path))
    assert np.allclose(np.linalg.norm(path, axis=1), 1.0, atol=1e-6)
    assert np.allclose(path[0], _unit(v0), atol=1e-6)
    assert np.allclose(path[-1], _unit(v1), atol=1e-6)
    steps = [_angle(path[i], path[i + 1]) for i in range(4)]
    assert np.allclose(steps, math.pi / 4, atol=1e-4)
    assert abs(float(path[2] @ _unit(v0))) < 1e-5  # midpoint is orthogonal
    # deterministic choice of great circle
    assert np.array_equal(path, slerp(v0, v1, ts))


def test_slerp_rejects_zero_and_mismatched():
    with pytest.raises(ValueError):
        slerp(np.zeros(4), np.ones(4), [0.5])
    with pytest.raises(ValueError):
        slerp(np.ones(4), np.ones(5), [0.5])


# --------------------------------------------------------------------------- sampling


def test_softmax_temperature_zero_is_one_hot_first_argmax():
    probs = softmax_probabilities(np.array([0.2, 0.9, 0.9, 0.1]), 0.0)
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert probs.dtype == np.float64


def test_softmax_temperature_one_is_near_uniform():
    sims = np.linspace(0.2, 0.9, 12)
    probs = softmax_probabilities(sims, 1.0)
    assert probs.sum() == pytest.approx(1.0)
    assert probs.max() / probs.min() < 1.5


def test_softmax_peakedness_is_monotone_in_temperature():
    sims = np.array([0.35, 0.5, 0.62, 0.7, 0.81])
    temps = [0.01, 0.1, 0.25, 0.5, 0.75, 1.0]
    peaks = [softmax_probabilities(sims, t).max() for t in temps]
    assert all(a > b for a, b in pairwise(peaks))
    assert softmax_probabilities(sims, 0.01)[-1] > 0.99


def test_softmax_is_stable_and_validates():
    probs = softmax_probabilities(np.array([1e6, 1e6 - 1, -1e6]), 0.5)
    assert np.all(np.isfinite(probs)) and probs.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        softmax_probabilities(np.array([]), 0.5)
    with pytest.raises(ValueError):
        softmax_probabilities(np.array([0.1]), -1.0)


def test_choose_follows_probabilities():
    rng = np.random.default_rng(0)
    probs = np.array([0.0, 0.7, 0.0, 0.3])
    draws = np.bincount([choose(probs, rng) for _ in range(4000)], minlength=4)
    assert draws[0] == 0 and draws[2] == 0
    assert 0.65 < draws[1] / 4000 < 0.75
    assert choose(np.array([1.0]), rng) == 0


# --------------------------------------------------------------------------- keywords


def test_tokenize_and_stopwords():
    tokens = tokenize("Yeah, I really like PostgreSQL's JSONB and C++; also 2024 won't matter")
    assert tokens == ["postgresql", "jsonb", "c++", "matter"]
    assert len(STOPWORDS) >= 300
    assert {"the", "yeah", "really", "just", "like", "also", "would", "could"} <= STOPWORDS


def test_class_tfidf_keywords_are_distinctive():
    cooking = [
        "I baked sourdough bread with a long fermentation, the project went well",
        "The recipe needs garlic, olive oil and fresh basil for the pasta sauce",
        "Roast the garlic and simmer the tomato sauce before the pasta is done",
        "Sourdough bread recipe: flour, water, salt and a mature starter",
        "Yeah, I really just like cooking pasta with garlic",
    ]
    astronomy = [
        "The telescope showed Jupiter and four of its moons, a great project",
        "A galaxy cluster bends light from distant quasars around it",
        "Saturn rings were visible through the telescope last night",
        "The nebula and the galaxy were faint, the telescope needs a darker sky",
        "Orbit calculations for the moons of Jupiter and Saturn",
    ]
    finance = [
        "Index funds keep fees low and the portfolio diversified, a project for retirement",
        "Bond yields rose so the portfolio shifted toward dividend stocks",
        "Inflation erodes savings unless the portfolio includes stocks",
        "Dividend stocks and index funds make up most of the retirement savings",
        "Rebalance the portfolio when bond yields change",
    ]
    keywords = class_tfidf_keywords([cooking, astronomy, finance], top_n=5)
    assert len(keywords) == 3 and all(len(k) == 5 for k in keywords)
    flat = [term for kws in keywords for term in kws]
    words = {w for term in flat for w in term.split()}
    assert not words & STOPWORDS
    assert "project" not in words  # shared by every cluster
    assert {"garlic", "pasta"} & words and keywords[0][0] in {"garlic", "pasta", "sourdough bread"}
    assert "telescope" in keywords[1]
    assert "portfolio" in keywords[2]
    assert "index funds" in keywords[2]  # frequent bigram replaces its words
    assert "index" not in keywords[2] and "funds" not in keywords[2]
    assert class_tfidf_keywords([cooking, astronomy, finance]) == keywords  # deterministic
    assert class_tfidf_keywords([]) == []
    assert class_tfidf_keywords([["the and of"], cooking])[0] == []


# --------------------------------------------------------------------------- clustering


@pytest.mark.parametrize("n", [200, 3000])
def test_cluster_vectors_recovers_blobs(n):
    from sklearn.metrics import adjusted_rand_score

    vectors, truth = _sphere_blobs(n, k=4)
    start = time.perf_counter()
    result = cluster_vectors(vectors, min_cluster_size=max(5, n // 100))
    elapsed = time.perf_counter() - start
    print(f"cluster_vectors n={n}: {elapsed:.2f}s, clusters={result.n_clusters}")
    assert adjusted_rand_score(truth, result.labels) >= 0.9
    assert result.labels.shape == (n,) and result.probabilities.shape == (n,)
    assert result.embedding.shape[0] == n
    sizes = np.bincount(result.labels[result.labels >= 0])
    assert np.all(np.diff(sizes) <= 0)  # cluster 0 is the largest


def test_cluster_vectors_marks_scattered_points_as_noise():
    vectors, truth = _sphere_blobs(900, k=3, seed=4)
    rng = np.random.default_rng(5)
    scattered = _unit(rng.normal(size=(100, 384))).astype(np.float32)
    result = cluster_vectors(np.vstack([vectors, scattered]), min_cluster_size=10)
    assert result.n_clusters == 3
    # min_samples=2 (chosen on real MiniLM text, where diffuse topics would otherwise
    # be called noise) lets some synthetic scattered points join a cluster: 77% here.
    assert np.mean(result.labels[900:] == -1) > 0.7
    assert np.mean(result.labels[:900] >= 0) > 0.9


def test_cluster_vectors_too_few_points():
    result = cluster_vectors(np.eye(3, 8), min_cluster_size=5)
    assert result.labels.tolist() == [-1, -1, -1]
    assert result.n_clusters == 0
    with pytest.raises(ValueError):
        cluster_vectors(np.eye(3, 8), min_cluster_size=1)


def test_silhouette_matches_sklearn_and_edge_cases():
    from sklearn.metrics import silhouette_score

    vectors, truth = _sphere_blobs(300, k=3, seed=6)
    labels = truth.copy()
    labels[:20] = -1
    mask = labels >= 0
    expected = silhouette_score(vectors[mask], labels[mask], metric="cosine")
    assert silhouette(vectors, labels) == pytest.approx(expected, abs=1e-5)
    assert silhouette(vectors, np.zeros(300, dtype=int)) == 0.0
    assert silhouette(vectors, np.full(300, -1)) == 0.0


def test_coherence_and_representative():
    rng = np.random.default_rng(7)
    center = _unit(rng.normal(size=50))
    members = _unit(center + 0.05 * rng.normal(size=(10, 50)))
    members[3] = center * 2.0
    assert 0.9 < coherence(members) <= 1.0
    assert representative_index(members) == 3
    assert coherence(center[None, :]) == pytest.approx(1.0)
    opposite = np.vstack([center, -center])
    assert coherence(opposite) == 0.0


def test_limit_clusters_keeps_largest_and_relabels():
    labels = np.array([5, 5, 2, 2, 2, 9, -1, 7, 7, 7, 7])
    assert limit_clusters(labels, 2).tolist() == [-1, -1, 1, 1, 1, -1, -1, 0, 0, 0, 0]
    assert limit_clusters(labels, None).tolist() == [2, 2, 1, 1, 1, 3, -1, 0, 0, 0, 0]
    assert limit_clusters(labels, 0).tolist() == [-1] * 11


# --------------------------------------------------------------------------- grouping


def _chain_vectors() -> np.ndarray:
    """A, B, C with sim(A,B) = sim(B,C) = 0.9 and sim(A,C) = 0.62."""
    c, s = 0.9, math.sqrt(1 - 0.81)
    return np.array([[c, s, 0.0], [1.0, 0.0, 0.0], [c, -s, 0.0]])


def test_near_duplicate_groups_do_not_chain():
    vectors = _chain_vectors()
    sims = vectors @ vectors.T
    assert sims[0, 1] == pytest.approx(0.9) and sims[0, 2] == pytest.approx(0.62)
    groups = near_duplicate_groups(vectors, 0.85)
    assert len(groups) == 1 and len(groups[0]) == 2 and 1 in groups[0]


def test_near_duplicate_groups_complete_linkage_order_and_limit():
    rng = np.random.default_rng(8)
    base = _unit(rng.normal(size=(6, 64)))
    rows = []
    for i, copies in enumerate([3, 2, 4]):
        rows += [base[i] + 0.01 * rng.normal(size=64) for _ in range(copies)]
    rows += list(base[3:])  # singletons
    vectors = np.array(rows)
    groups = near_duplicate_groups(vectors, 0.95)
    assert groups == [[5, 6, 7, 8], [0, 1, 2], [3, 4]]
    for group in groups:
        sims = _unit(vectors[group]) @ _unit(vectors[group]).T
        assert sims.min() >= 0.95
    assert near_duplicate_groups(vectors, 0.95, max_groups=1) == [[5, 6, 7, 8]]
    assert near_duplicate_groups(vectors[:1], 0.9) == []


def test_near_duplicate_groups_scale():
    rng = np.random.default_rng(9)
    vectors = _unit(rng.normal(size=(4000, 128))).astype(np.float32)
    vectors[100] = vectors[7]
    vectors[2500] = vectors[7]
    start = time.perf_counter()
    groups = near_duplicate_groups(vectors, 0.97)
    print(f"near_duplicate_groups n=4000: {time.perf_counter() - start:.2f}s")
    assert groups == [[7, 100, 2500]]


def test_mean_pairwise_similarity():
    vectors = _chain_vectors()
    assert mean_pairwise_similarity(vectors) == pytest.approx((0.9 + 0.9 + 0.62) / 3)
    assert mean_pairwise_similarity(vectors[:1]) == 1.0


# --------------------------------------------------------------------------- decay


def test_decay_closed_forms():
    days = np.array([0.0, 15.0, 30.0, 45.0, 60.0, 90.0])
    common = {"half_life_days": 30.0, "access_count": np.zeros(6), "access_weight": 0.0}
    exp = decay_factor(days, function="exponential", **common)
    assert np.allclose(exp, [1.0, 2**-0.5, 0.5, 2**-1.5, 0.25, 0.125])
    lin = decay_factor(days, function="linear", **common)
    assert np.allclose(lin, [1.0, 0.75, 0.5, 0.25, 0.0, 0.0])
    step = decay_factor(days, function="step", **common)
    assert np.allclose(step, [1.0, 1.0, 0.5, 0.5, 0.25, 0.125])
    fresh = decay_factor(np.array([0.0, -3.0]), function="linear", **{**common, "access_count": 0})
    assert fresh.tolist() == [1.0, 1.0]


def test_decay_access_weighting_slows_decay():
    days = np.array([30.0, 30.0, 30.0])
    factor = decay_factor(
        days,
        function="exponential",
        half_life_days=30.0,
        access_count=np.array([0, 5, 50]),
        access_weight=0.5,
    )
    assert factor[0] == pytest.approx(0.5)
    assert factor[0] < factor[1] < factor[2] < 1.0
    expected = 0.5 ** (1 / (1 + 0.5 * math.log1p(5)))
    assert factor[1] == pytest.approx(expected)
    with pytest.raises(ValueError):
        decay_factor(days, function="cubic", half_life_days=30.0, access_count=0, access_weight=0)


def test_apply_decay_floor():
    importance = np.array([0.8, 0.3, 0.05, 0.1])
    factor = np.array([0.5, 0.1, 0.5, 1.0])
    out = apply_decay(importance, factor, min_importance=0.1)
    assert np.allclose(out, [0.4, 0.1, 0.05, 0.1])


# --------------------------------------------------------------------------- projection


def test_project_shapes_small_inputs():
    rng = np.random.default_rng(10)
    assert project(rng.normal(size=(1, 32)), 2).tolist() == [[0.0, 0.0]]
    two = project(rng.normal(size=(2, 32)), 3)
    assert two.shape == (2, 3)
    assert np.allclose(two[:, 1:], 0.0) and two[0, 0] == pytest.approx(-two[1, 0])
    assert two[0, 0] != 0.0
    five = project(rng.normal(size=(5, 32)), 2)
    assert five.shape == (5, 2) and five.dtype == np.float64 and np.all(np.isfinite(five))
    assert project(np.empty((0, 32)), 2).shape == (0, 2)


def test_project_umap_separates_blobs():
    vectors, truth = _sphere_blobs(200, k=4, seed=11)
    start = time.perf_counter()
    layout = project(vectors, 2, random_state=42)
    print(f"project n=200: {time.perf_counter() - start:.2f}s")
    assert layout.shape == (200, 2) and layout.dtype == np.float64
    assert np.all(np.isfinite(layout))
    centroids = np.array([layout[truth == c].mean(axis=0) for c in range(4)])
    spread = max(np.linalg.norm(layout[truth == c] - centroids[c], axis=1).mean() for c in range(4))
    gaps = [np.linalg.norm(centroids[a] - centroids[b]) for a in range(4) for b in range(a + 1, 4)]
    assert min(gaps) > 2 * spread


def test_normalize_coordinates_bounds():
    rng = np.random.default_rng(12)
    coords = np.column_stack([rng.normal(size=50) * 7 + 3, np.full(50, 4.2)])
    out = normalize_coordinates(coords)
    assert out[:, 0].min() == pytest.approx(-1.0) and out[:, 0].max() == pytest.approx(1.0)
    assert np.all(out[:, 1] == 0.0)
    assert normalize_coordinates(np.empty((0, 2))).shape == (0, 2)


# --------------------------------------------------------------------------- helpers


def test_cosine_knn_and_pca():
    rng = np.random.default_rng(13)
    vectors = _unit(rng.normal(size=(40, 8)))
    idx, sims = cosine_knn(vectors, 5)
    full = vectors @ vectors.T
    np.fill_diagonal(full, -np.inf)
    expected = np.argsort(-full, axis=1)[:, :5]
    assert np.array_equal(idx, expected)
    assert np.allclose(sims, np.take_along_axis(full, expected, axis=1), atol=1e-6)

    reduced = pca_reduce(vectors, 3)
    assert reduced.shape == (40, 3)
    variances = reduced.var(axis=0)
    assert np.all(np.diff(variances) <= 1e-12)
    assert pca_reduce(vectors[:3], 5)[:, 2:].tolist() == [[0.0] * 3] * 3


def test_layout_follows_umaps_fuzzy_graph_and_is_reproducible():
    from spatial_memory.algorithms.layout import fuzzy_graph, smooth_knn_distances, umap_layout

    vectors, _ = _sphere_blobs(120, k=3, seed=5)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    idx, sims = cosine_knn(unit, 9)
    knn = np.hstack([np.arange(120)[:, None], idx])
    dists = np.hstack([np.zeros((120, 1)), 1.0 - sims.astype(np.float64)])
    sigmas, rhos = smooth_knn_distances(dists)
    # Each point's memberships over its other neighbours sum to log2(k), as in umap-learn.
    sums = np.exp(-np.maximum(dists[:, 1:] - rhos[:, None], 0.0) / sigmas[:, None]).sum(axis=1)
    assert np.allclose(sums, np.log2(10), atol=1e-3)
    assert np.allclose(rhos, dists[:, 1])
    head, tail, weights = fuzzy_graph(knn, dists)
    pairs = dict(zip(zip(head.tolist(), tail.tolist()), weights.tolist()))
    assert all(pairs[(t, h)] == w for (h, t), w in pairs.items())  # symmetric
    assert weights.max() <= 1.0 and weights.min() > 0 and not (head == tail).any()
    first = umap_layout(unit, 2, n_neighbors=10, random_state=3)
    assert np.array_equal(first, umap_layout(unit, 2, n_neighbors=10, random_state=3))
    assert not np.array_equal(first, umap_layout(unit, 2, n_neighbors=10, random_state=4))

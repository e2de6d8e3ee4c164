"""Rank fusion of several result lists."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    weights: Sequence[float],
    k: int = 60,
) -> list[tuple[str, float]]:
    """Weighted RRF: score(id) = sum_i w_i / (k + rank_i), rank from 1.

    Sorted by score desc; ties by rank in the first ranking, then best rank in
    any ranking, then id. Zero-weight rankings contribute nothing, and ids that
    appear only in them are dropped. Repeated ids keep their first rank.
    """
    if len(rankings) != len(weights):
        raise ValueError("rankings and weights must have the same length")
    if k < 0:
        raise ValueError("k must be >= 0")
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError("weights must be finite and >= 0")

    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)

    first_rank: dict[str, int] = {}
    if rankings:
        for rank, item in enumerate(rankings[0], start=1):
            first_rank.setdefault(item, rank)

    def key(item: str) -> tuple[float, float, int, str]:
        # Rounding makes sums of the same terms in a different order tie exactly.
        return (
            -round(scores[item], 12),
            first_rank.get(item, math.inf),
            best_rank[item],
            item,
        )

    return [(item, scores[item]) for item in sorted(scores, key=key)]


def normalize_scores(scores: np.ndarray) -> np.ndarray:
    """Min-max scale to [0, 1]; all-equal input gives ones."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr.copy()
    lo, hi = float(np.min(arr)), float(np.max(arr))
    if hi - lo <= 0 or not math.isfinite(hi - lo):
        return np.ones_like(arr)
    return (arr - lo) / (hi - lo)

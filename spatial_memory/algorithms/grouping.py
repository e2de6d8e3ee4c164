"""Complete-linkage groups of near-duplicate vectors."""

from __future__ import annotations

import numpy as np

from ._linalg import as_matrix, unit_rows
from .neighbors import similarity_blocks

# Screening runs in float32; candidates within this slack are re-checked in
# float64 so results do not depend on BLAS rounding.
_SCREEN_SLACK = 1e-5


def near_duplicate_groups(vectors: np.ndarray, threshold: float, max_groups: int | None = None) -> list[list[int]]:
    """Groups (size >= 2) in which every pair has cosine similarity >= ``threshold``.

    Greedy and deterministic: seeds are taken by neighbour count (desc, then
    index); a group grows by the candidate similar enough to every member with
    the best average similarity to them (ties: lower index). Each index is in
    at most one group. Groups are sorted by size desc, then first index, and
    their members ascending.
    """
    if max_groups is not None and max_groups < 0:
        raise ValueError("max_groups must be >= 0")
    unit = unit_rows(vectors)
    n = unit.shape[0]
    if n < 2:
        return []
    neighbours = _neighbours_above(unit, threshold)
    degree = np.array([nb.size for nb in neighbours])
    assigned = np.zeros(n, dtype=bool)
    groups: list[list[int]] = []
    for seed in np.lexsort((np.arange(n), -degree)).tolist():
        if degree[seed] == 0:
            break
        if assigned[seed]:
            continue
        candidates = neighbours[seed][~assigned[neighbours[seed]]]
        if candidates.size == 0:
            continue
        group = [seed]
        sums = unit[candidates] @ unit[seed]
        while candidates.size:
            best = int(np.lexsort((candidates, -sums))[0])
            member = int(candidates[best])
            group.append(member)
            keep = np.arange(candidates.size) != best
            candidates, sums = candidates[keep], sums[keep]
            sims = unit[candidates] @ unit[member]
            ok = sims >= threshold
            candidates, sums = candidates[ok], sums[ok] + sims[ok]
        assigned[group] = True
        groups.append(sorted(group))
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups if max_groups is None else groups[:max_groups]


def _neighbours_above(unit: np.ndarray, threshold: float) -> list[np.ndarray]:
    """Per row, the other rows with cosine similarity >= threshold (float64-exact)."""
    result: list[np.ndarray] = []
    for start, stop, block in similarity_blocks(unit):
        rows, cols = np.nonzero(block >= threshold - _SCREEN_SLACK)
        rows += start
        keep = (_pair_similarities(unit, rows, cols) >= threshold) & (rows != cols)
        rows, cols = rows[keep], cols[keep]
        bounds = np.searchsorted(rows, np.arange(start, stop + 1))
        result.extend(cols[bounds[i] : bounds[i + 1]] for i in range(stop - start))
    return result


def _pair_similarities(unit: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    out = np.empty(rows.size)
    step = max(1, (1 << 21) // max(unit.shape[1], 1))
    for start in range(0, rows.size, step):
        stop = start + step
        out[start:stop] = np.einsum("ij,ij->i", unit[rows[start:stop]], unit[cols[start:stop]])
    return out


def mean_pairwise_similarity(vectors_of_group: np.ndarray) -> float:
    """Mean cosine similarity over all distinct pairs (1.0 for a single vector)."""
    unit = unit_rows(as_matrix(vectors_of_group, name="vectors_of_group"))
    m = unit.shape[0]
    if m == 0:
        raise ValueError("empty group")
    if m == 1:
        return 1.0
    sims = unit @ unit.T
    return float((sims.sum() - np.trace(sims)) / (m * (m - 1)))

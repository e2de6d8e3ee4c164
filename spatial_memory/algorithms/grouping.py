"""Complete-linkage groups of near-duplicate vectors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._linalg import PAIR_CHUNK_ELEMENTS, as_matrix, unit_rows
from .neighbors import similarity_blocks

# Screening runs in float32; candidates within this slack are re-checked in
# float64 so results do not depend on BLAS rounding.
_SCREEN_SLACK = 1e-5


def near_duplicate_groups(
    vectors: np.ndarray,
    threshold: float,
    max_groups: int | None = None,
    *,
    agree: Callable[[int, np.ndarray], np.ndarray] | None = None,
    band: float = 0.0,
    reaches: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> list[list[int]]:
    """Groups (size >= 2) in which every pair has cosine similarity >= ``threshold``
    (and, given ``agree``, every pair agrees: ``agree(i, js)`` is a boolean mask over ``js``,
    asked only about pairs similar enough). Given ``reaches``, the pairs whose similarity is
    within ``band`` of the threshold are decided by ``reaches(rows, cols, similarities)`` (a
    boolean mask) instead of by the similarity.

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
    neighbours = _neighbours_above(unit, threshold, band if reaches is not None else 0.0, reaches)
    if agree is not None:
        neighbours = [nb[agree(i, nb)] if nb.size else nb for i, nb in enumerate(neighbours)]
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
            ok = np.isin(candidates, neighbours[member])
            candidates, sums = candidates[ok], sums[ok] + sims[ok]
        assigned[group] = True
        groups.append(sorted(group))
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups if max_groups is None else groups[:max_groups]


def _neighbours_above(
    unit: np.ndarray,
    threshold: float,
    band: float = 0.0,
    reaches: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Per row, the other rows with cosine similarity >= threshold (float64-exact), those within
    ``band`` of it as ``reaches`` decides."""
    result: list[np.ndarray] = []
    for start, stop, block in similarity_blocks(unit):
        rows, cols = np.nonzero(block >= threshold - band - _SCREEN_SLACK)
        rows += start
        sims = _pair_similarities(unit, rows, cols)
        keep = sims >= threshold
        if reaches is not None:
            close = np.flatnonzero((np.abs(sims - threshold) < band) & (rows != cols))
            if close.size:
                keep[close] = reaches(rows[close], cols[close], sims[close])
        keep &= rows != cols
        rows, cols = rows[keep], cols[keep]
        bounds = np.searchsorted(rows, np.arange(start, stop + 1))
        result.extend(cols[bounds[i] : bounds[i + 1]] for i in range(stop - start))
    return result


def _pair_similarities(unit: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    out = np.empty(rows.size)
    step = max(1, PAIR_CHUNK_ELEMENTS // max(unit.shape[1], 1))
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


def without_outliers(vectors_of_group: np.ndarray, margin: float) -> list[int]:
    """The positions of a group's members kept once those much less alike the rest than the rest
    are alike each other are dropped, worst first: a member goes while its mean similarity to the
    others is more than ``margin`` below the others' mean similarity among themselves (at least
    three stay to compare; the positions come back ascending)."""
    unit = unit_rows(as_matrix(vectors_of_group, name="vectors_of_group"))
    sims = unit @ unit.T
    kept = list(range(unit.shape[0]))
    while len(kept) > 3:
        block = sims[np.ix_(kept, kept)]
        k = len(kept)
        row = block.sum(axis=1) - np.diag(block)
        total = row.sum()
        mine = row / (k - 1)
        # the others' pairs: every pair but those touching this member
        others = (total - 2 * row) / ((k - 1) * (k - 2))
        gap = mine - others
        worst = int(np.argmin(gap))
        if gap[worst] >= -margin:
            break
        kept.pop(worst)
    return kept


def split_in_two(vectors_of_group: np.ndarray, gap: float) -> list[list[int]]:
    """A group that is two groups: average linkage down to two clusters, kept apart (positions of
    each, ascending) when each has two members or more and the two are less alike each other, on
    average, than the members of either are among themselves by more than ``gap``; else the one
    group whole."""
    unit = unit_rows(as_matrix(vectors_of_group, name="vectors_of_group"))
    sims = unit @ unit.T
    clusters = [[i] for i in range(unit.shape[0])]
    if len(clusters) < 4:
        return [list(range(len(clusters)))]
    while len(clusters) > 2:
        best = max(
            ((a, b) for a in range(len(clusters)) for b in range(a + 1, len(clusters))),
            key=lambda ab: (float(sims[np.ix_(clusters[ab[0]], clusters[ab[1]])].mean()), -ab[0], -ab[1]),
        )
        clusters[best[0]] = sorted(clusters[best[0]] + clusters[best[1]])
        del clusters[best[1]]
    first, second = clusters
    if min(len(first), len(second)) >= 2:
        between = float(sims[np.ix_(first, second)].mean())
        within = min(mean_pairwise_similarity(unit[first]), mean_pairwise_similarity(unit[second]))
        if within - between > gap:
            return [first, second]
    return [list(range(unit.shape[0]))]

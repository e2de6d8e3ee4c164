"""Near-copies among memories about to be stored: one routine for extract and import.

A candidate is a near-copy when its cosine similarity to a memory of the same namespace -
already stored, or an earlier candidate that is kept - reaches the threshold. The first of a
group of near-copies is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..storage.filters import build_filter

# Up to this many memories in a namespace, stored vectors are compared exactly (in blocks);
# beyond, each candidate asks the vector index for its closest memory.
EXACT_SCAN_LIMIT = 20_000
_BLOCK = 8_192


@dataclass(frozen=True)
class NearCopy:
    """What a candidate duplicates: a stored memory (memory_id) or an earlier candidate (candidate)."""

    similarity: float
    memory_id: str | None = None
    candidate: int | None = None


def near_copies(store, namespaces: Sequence[str], vectors: np.ndarray, threshold: float) -> list[NearCopy | None]:
    """For each candidate (namespace, unit vector), in order: what it is a near-copy of, or None."""
    vectors = np.asarray(vectors, dtype=np.float32)
    found: list[NearCopy | None] = [None] * len(vectors)
    by_namespace: dict[str, list[int]] = {}
    for i, namespace in enumerate(namespaces):
        by_namespace.setdefault(namespace, []).append(i)
    for namespace, indexes in by_namespace.items():
        for i, (memory_id, similarity) in zip(
            indexes, _closest_stored(store, namespace, vectors[indexes]), strict=True
        ):
            if memory_id is not None and similarity >= threshold:
                found[i] = NearCopy(similarity=similarity, memory_id=memory_id)
        kept: list[int] = []
        for i in indexes:
            if found[i] is None and kept:
                sims = vectors[kept] @ vectors[i]
                j = int(np.argmax(sims))
                if sims[j] >= threshold:
                    found[i] = NearCopy(similarity=float(sims[j]), candidate=kept[j])
            if found[i] is None:
                kept.append(i)
    return found


def _closest_stored(store, namespace: str, vectors: np.ndarray) -> list[tuple[str | None, float]]:
    """For each vector: (id, cosine similarity) of the closest stored memory of the namespace."""
    flt = build_filter(namespace=namespace)
    total = store.count(flt)
    nothing = [(None, -1.0)] * len(vectors)
    if total == 0:
        return nothing
    if total <= EXACT_SCAN_LIMIT:
        from ..storage.schema import vectors_of

        table = store.scan_arrow(["id", "vector"], flt)
        ids = table.column("id").to_pylist()
        if not ids:
            return nothing
        stored = vectors_of(table)
        best_sim = np.full(len(vectors), -np.inf, dtype=np.float32)
        best_at = np.zeros(len(vectors), dtype=np.int64)
        for offset in range(0, len(stored), _BLOCK):
            sims = vectors @ stored[offset : offset + _BLOCK].T
            at = np.argmax(sims, axis=1)
            value = sims[np.arange(len(vectors)), at]
            better = value > best_sim
            best_sim[better], best_at[better] = value[better], at[better] + offset
        return [(ids[j], float(s)) for j, s in zip(best_at.tolist(), best_sim.tolist(), strict=True)]
    closest: list[tuple[str | None, float]] = []
    for vector in vectors:
        hits = store.search(vector, 1, flt)
        closest.append((hits[0].record.id, hits[0].similarity) if hits else (None, -1.0))
    return closest

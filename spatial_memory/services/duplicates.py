"""Near-copies among memories about to be stored: one routine for extract and import.

A candidate is a near-copy when its cosine similarity to a memory of the same namespace -
already stored, or an earlier candidate that is kept - reaches the threshold. The first of a
group of near-copies is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..embeddings.decisions import at_least, decision_band
from ..storage.filters import build_filter
from ..storage.table.schema import vectors_of

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

# When the store's in-memory exact copy can answer (a store below its vector index size), it
# answers every candidate in one matrix product. Otherwise: up to this many memories in a
# namespace, stored vectors are compared exactly (in blocks); beyond, each candidate asks the
# vector index for its closest memory.
EXACT_SCAN_LIMIT = 20_000
# Without the exact copy, up to this many vectors in the whole batch (a remember), each is one
# search rather than a scan of every stored vector of the namespace.
FEW_VECTORS = 16
_BLOCK = 8_192
# Stored memories looked at per candidate while the closest ones are all within the band of the
# threshold: beyond, the rest are left undecided as not near-copies.
MAX_UNDECIDED = 256


@dataclass(frozen=True)
class NearCopy:
    """What a candidate duplicates: a stored memory (memory_id) or an earlier candidate (candidate)."""

    similarity: float
    memory_id: str | None = None
    candidate: int | None = None


def near_copies(
    store: Store,
    namespaces: Sequence[str],
    vectors: np.ndarray,
    threshold: float,
    texts: Sequence[str],
    embedder: object,
) -> list[NearCopy | None]:
    """For each candidate (namespace, unit vector, its text), in order: what it is a near-copy of,
    or None. Similarities near the threshold are decided as the embedder's fp32 path would
    (embeddings/decisions.py): every stored memory within its band is looked at, not only the closest."""
    vectors = np.asarray(vectors, dtype=np.float32)
    band = decision_band(embedder, threshold)
    found: list[NearCopy | None] = [None] * len(vectors)
    by_namespace: dict[str, list[int]] = {}
    for i, namespace in enumerate(namespaces):
        by_namespace.setdefault(namespace, []).append(i)
    with store.one_version():  # one version check for every namespace, not one each
        for namespace, indexes in by_namespace.items():
            closest_of = _closest_within(store, namespace, vectors[indexes], threshold, band, len(vectors))
            pairs = [(i, hit) for i, closest in zip(indexes, closest_of, strict=True) for hit in closest]
            reached = at_least(
                embedder,
                [h[1] for _, h in pairs],
                threshold,
                lambda k, pairs=pairs: (texts[pairs[k][0]], pairs[k][1][2]),
            )
            for (i, hit), ok in zip(pairs, reached.tolist(), strict=True):
                if ok and found[i] is None:
                    found[i] = NearCopy(similarity=hit[1], memory_id=hit[0])
            kept: list[int] = []
            for i in indexes:
                if found[i] is None and kept:
                    sims = vectors[kept] @ vectors[i]
                    # texts(k) is asked only for the few within the band, before `kept` grows again
                    ok = at_least(embedder, sims, threshold, lambda k, a=texts[i], kept=kept: (a, texts[kept[k]]))
                    if ok.any():
                        j = int(np.argmax(np.where(ok, sims, -np.inf)))
                        found[i] = NearCopy(similarity=float(sims[j]), candidate=kept[j])
                if found[i] is None:
                    kept.append(i)
    return found


def _closest_within(
    store, namespace: str, vectors: np.ndarray, threshold: float, band: float, batch_size: int
) -> list[list[tuple[str, float, str]]]:
    """For each vector, the stored memories of the namespace it may be a near-copy of, closest
    first: the closest one when it is at least `threshold - band` alike, and while the closest is
    within the band (undecided yet), every other within it too."""
    floor = threshold - band
    k = 1
    found = closest_stored(store, namespace, vectors, k, batch_size=batch_size)
    while band > 0 and k < MAX_UNDECIDED:
        more = [
            n
            for n, hits in enumerate(found)
            if len(hits) == k and hits[-1][1] >= floor and hits[0][1] < threshold + band
        ]
        if not more:
            break
        k *= 4
        for n, hits in zip(
            more, closest_stored(store, namespace, vectors[more], k, batch_size=batch_size), strict=True
        ):
            found[n] = hits
    return [[hit for hit in hits if hit[1] >= floor] for hits in found]


def closest_stored(
    store, namespace: str, vectors: np.ndarray, k: int = 1, *, batch_size: int | None = None
) -> list[list[tuple[str, float, str]]]:
    """For each vector: (id, cosine similarity, content) of the `k` closest stored memories of the
    namespace, closest first. `batch_size`: the vectors of the whole batch these belong to (every
    namespace's), which decides between a search per vector and a scan of the namespace."""
    flt = build_filter(namespace=namespace)
    if len(vectors) == 0:
        return []
    found = store.closest_contents(vectors, k, flt, exact_only=True)  # the in-memory copy: one product
    if found is not None:
        return _triples(found)
    total = store.count(flt) if max(len(vectors), batch_size or 0) > FEW_VECTORS else None
    if total == 0:
        return [[] for _ in vectors]
    if total is not None and total <= EXACT_SCAN_LIMIT:
        table = store.scan_arrow(["id", "content", "vector"], flt)
        ids = table.column("id").to_pylist()
        contents = table.column("content")
        if not ids:
            return [[] for _ in vectors]
        stored = vectors_of(table)
        k = min(k, len(ids))
        best_sim = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        best_at = np.zeros((len(vectors), k), dtype=np.int64)
        for offset in range(0, len(stored), _BLOCK):
            sims = vectors @ stored[offset : offset + _BLOCK].T
            both_sims = np.concatenate([best_sim, sims], axis=1)
            both_at = np.concatenate(
                [best_at, np.arange(offset, offset + sims.shape[1])[None, :].repeat(len(vectors), 0)], 1
            )
            top = np.argsort(-both_sims, axis=1, kind="stable")[:, :k]
            best_sim = np.take_along_axis(both_sims, top, 1)
            best_at = np.take_along_axis(both_at, top, 1)
        return [
            [(ids[j], float(x), contents[j].as_py()) for j, x in zip(at, sim, strict=True) if np.isfinite(x)]
            for at, sim in zip(best_at.tolist(), best_sim.tolist(), strict=True)
        ]
    return _triples(store.closest_contents(vectors, k, flt))


def _triples(found) -> list[list[tuple[str, float, str]]]:
    return [[(m.id, m.similarity, m.content) for m in hits] for hits in found]

"""A similarity of embedded vectors against a threshold: the one routine every such decision uses
(near-copies, look-alikes, consolidate's and distill's groups, how_to, connections, bridges).

On the fp32 path a similarity is compared as it is. On int8-row a pair's cosine differs from its
fp32 cosine by a shift measured over every pair of the near-copy corpus and of 5,000 LoCoMo dev
texts (`python -m benchmarks.similarity_band --write`, docs/BENCHMARKS.md): int8_row_shift.json
holds the largest shift per 0.05 of fp32 cosine. The band at a threshold is SAFETY times the
largest shift measured within `near` of it. A similarity farther than the band from the threshold
is decided as it is, one within the band again on the fp32 vectors of its two texts (the
embedder's reference vectors: the fp32 model, loaded at the first such case). Why that is fp32's
decision, as far as the measurement holds: a pair whose int8-row cosine is at least `band` above
(below) the threshold and whose fp32 cosine is below (above) it would have shifted by more than
the band; within `near` of the threshold no measured pair shifted by more than band / SAFETY, and
every measured shift is below `near`. The int8 path (batch-dependent) has no band: its cosines
move with their batch, no bound is claimed for it.

Decided again (`redecide`, the default): a decision that changes the store - which near-copies
extract and import leave out, what consolidate merges and distill learns, what remember skips or
closes (on_duplicate=skip / supersede) - and remember's near-duplicate finding, a near-copy
decision even when only reported. A read or another report - recall's ranking, how_to's floor,
discover_connections, corpus_bridges, remember's contradictions with on_duplicate=store - is
decided on the store's own vectors, as recall ranks on them: fp32 loads only for those few
similarities near a near-copy or write threshold.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

SAFETY = 1.5
SHIFT_FILE = Path(__file__).with_name("int8_row_shift.json")


@functools.cache
def load_shifts() -> dict[str, Any]:
    """int8-row's measured shifts: {"bin", "near", "pairs", "max_shift": {bin start: largest shift}}."""
    return json.loads(SHIFT_FILE.read_text())


def band_at(shifts: Mapping[str, Any], threshold: float) -> float:
    """SAFETY times the largest shift measured for pairs within `near` of the threshold (fp32
    cosine); the largest of all where part of that range was not measured."""
    width, near, maxima = float(shifts["bin"]), float(shifts["near"]), shifts["max_shift"]
    lows = np.arange(np.floor((threshold - near) / width), np.floor((threshold + near) / width) + 1) * width
    found = [maxima.get(f"{low:.2f}") for low in lows.tolist() if -1.0 <= low < 1.0]
    worst = max(maxima.values()) if any(m is None for m in found) or not found else max(found)
    return SAFETY * float(worst)


@runtime_checkable
class Redecides(Protocol):
    """An embedder whose similarities near a threshold are decided again on reference vectors."""

    def decision_band(self, threshold: float) -> float: ...

    def reference_vectors(self, texts: list[str]) -> np.ndarray: ...

    def decision_note(self) -> str: ...


def decision_band(embedder: object, threshold: float, *, redecide: bool = True) -> float:
    """How far from the threshold a similarity may be and still be decided again (0: never; never
    when not `redecide`)."""
    return embedder.decision_band(threshold) if redecide and isinstance(embedder, Redecides) else 0.0


def decide(
    embedder: object,
    similarities: np.ndarray | list[float],
    threshold: float,
    texts: Callable[[int], tuple[str, str]],
    *,
    redecide: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(whether each similarity reaches the threshold, the similarities as decided: fp32's for
    those within the embedder's band of it, if `redecide`). `texts(i)` names
    the two texts of similarity i, asked only for those within the band."""
    sims = np.asarray(similarities, dtype=np.float64).reshape(-1).copy()
    band = decision_band(embedder, threshold, redecide=redecide)
    close = np.flatnonzero(np.abs(sims - threshold) < band) if band > 0 else np.zeros(0, np.int64)
    if close.size and isinstance(embedder, Redecides):
        pairs = [texts(int(i)) for i in close]
        unique = list(dict.fromkeys(t for pair in pairs for t in pair))
        at = {text: k for k, text in enumerate(unique)}
        vectors = np.asarray(embedder.reference_vectors(unique), dtype=np.float64)
        sims[close] = [vectors[at[a]] @ vectors[at[b]] for a, b in pairs]
    return sims >= threshold, sims


def at_least(
    embedder: object,
    similarities: np.ndarray | list[float],
    threshold: float,
    texts: Callable[[int], tuple[str, str]],
    *,
    redecide: bool = True,
) -> np.ndarray:
    """Whether each similarity reaches the threshold (`decide`'s first half)."""
    return decide(embedder, similarities, threshold, texts, redecide=redecide)[0]


def among(
    embedder: object, threshold: float, texts: Sequence[str]
) -> tuple[float, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]]:
    """(band, reaches) for `algorithms.grouping.near_duplicate_groups` over the vectors of `texts`:
    `reaches(rows, cols, similarities)` decides pairs of those texts by `at_least`."""

    def reaches(rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray) -> np.ndarray:
        return at_least(embedder, similarities, threshold, lambda k: (texts[int(rows[k])], texts[int(cols[k])]))

    return decision_band(embedder, threshold), reaches


def as_decided(embedder: object, vectors: np.ndarray, texts: Sequence[str], threshold: float) -> np.ndarray:
    """The vectors a group's similarities are reported from: its texts' fp32 vectors when one of
    its pairs is within the band of the threshold (so decided on them), else the vectors given."""
    band = decision_band(embedder, threshold)
    if band <= 0 or len(texts) < 2 or not isinstance(embedder, Redecides):
        return vectors
    unit = np.asarray(vectors, dtype=np.float64)
    sims = unit @ unit.T
    if np.abs(sims[np.triu_indices(len(texts), 1)] - threshold).min() >= band:
        return vectors
    return embedder.reference_vectors(list(texts))

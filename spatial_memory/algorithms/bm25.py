"""BM25, as LanceDB's full-text index scores it (k1 1.2, b 0.75, idf ln(1 + (N - n + 0.5) / (n + 0.5))),
for the in-memory keyword index (storage/search/keyword_index.py)."""

from __future__ import annotations

import math

import numpy as np

K1 = 1.2
B = 0.75


def idf(holding: int, documents: int) -> float:
    """How much a term that `holding` of `documents` documents hold tells (0.0 when none hold it)."""
    if holding <= 0:
        return 0.0
    return math.log((documents - holding + 0.5) / (holding + 0.5) + 1.0)


def bm25_weights(
    counts: np.ndarray, lengths: np.ndarray, average_length: float, holding: int, documents: int
) -> np.ndarray:
    """One term's score in each document that holds it: `counts` its occurrences there, `lengths`
    those documents' term counts; `holding` documents of `documents` hold it."""
    counts = counts.astype(np.float64)
    norm = K1 * (1.0 - B + B * lengths / max(average_length, 1e-9))
    return idf(holding, documents) * (K1 + 1.0) * counts / (counts + norm)

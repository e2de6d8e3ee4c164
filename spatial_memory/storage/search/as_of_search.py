"""Search as things stood at a moment: current rows whose version existed then, and retired states
current then, ranked together."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from ...records import ScoredMemory
from ..filters import Filter, metadata_matches
from ..side_tables.history import VersionHistory
from .vector_search import VectorSearch


class AsOfSearch:
    def __init__(self, vector: VectorSearch, history: VersionHistory) -> None:
        self._vector = vector
        self._history = history

    def search(self, vector: np.ndarray, limit: int, flt: Filter, moment: datetime) -> list[ScoredMemory]:
        """What was current at `moment` nearest to the vector: current rows whose version existed
        then, and retired states current then (`flt` must include `filters.current_at(moment)`)."""
        hits = self._vector.search(vector, limit, flt, with_vectors=True)
        retired = self._history.states_at(flt, moment)
        if flt.metadata:
            retired = [r for r in retired if metadata_matches(r.metadata, flt.metadata)]
        if retired:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in retired])
            scores = np.clip(vectors @ np.asarray(vector, dtype=np.float32), 0.0, 1.0)
            hits += [ScoredMemory(r, float(x)) for r, x in zip(retired, scores.tolist(), strict=True)]
        hits.sort(key=lambda h: -h.similarity)
        return hits[:limit]

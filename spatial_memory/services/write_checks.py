"""What a memory about to be stored resembles: near-duplicates and likely contradictions already stored.

A stored memory close in meaning is a *near-duplicate* when it states the same specifics (the
same numbers, dates, units and negation: `text.details.detail_signature`, no opposite words) and
its similarity reaches Settings.duplicate_threshold; it is a *likely contradiction* when it
differs in one of those specifics - "the API limit is 100 per minute" against "... 1000 per
minute", "we use Postgres" against "we no longer use Postgres" - and its similarity reaches
Settings.contradiction_threshold. Consolidate uses the same test to keep such look-alikes apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import Settings
from ..storage.records import MemoryRecord
from .duplicates import closest_stored

# Stored look-alikes examined per new memory.
LOOK_ALIKES = 5
DUPLICATE = "duplicate"
CONTRADICTION = "contradiction"


@dataclass(frozen=True)
class LookAlike:
    memory_id: str
    similarity: float
    relation: str  # DUPLICATE or CONTRADICTION
    content: str


def relation(new_text: str, stored_text: str, similarity: float, settings: Settings) -> str | None:
    """DUPLICATE, CONTRADICTION or None for a stored memory this similar to a new one."""
    from ..text.details import detail_signature, opposed, polarity

    if similarity < min(settings.duplicate_threshold, settings.contradiction_threshold):
        return None
    same_details = detail_signature(new_text) == detail_signature(stored_text)
    if same_details and not opposed(polarity(new_text), polarity(stored_text)):
        return DUPLICATE if similarity >= settings.duplicate_threshold else None
    return CONTRADICTION if similarity >= settings.contradiction_threshold else None


def look_alikes(store, records: Sequence[MemoryRecord], settings: Settings) -> list[list[LookAlike]]:
    """For each record (with its vector), the stored memories of its namespace it duplicates or
    contradicts, most similar first."""
    found: list[list[LookAlike]] = [[] for _ in records]
    floor = min(settings.duplicate_threshold, settings.contradiction_threshold)
    by_namespace: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        by_namespace.setdefault(record.namespace, []).append(i)
    candidates: list[tuple[int, str, float]] = []
    for namespace, indexes in by_namespace.items():
        vectors = np.stack([np.asarray(records[i].vector, dtype=np.float32) for i in indexes])
        for i, closest in zip(indexes, closest_stored(store, namespace, vectors, LOOK_ALIKES), strict=True):
            candidates += [(i, memory_id, sim) for memory_id, sim in closest if sim >= floor]
    if not candidates:
        return found
    stored = {r.id: r for r in store.get_many(list(dict.fromkeys(c[1] for c in candidates)))}
    for i, memory_id, similarity in candidates:
        other = stored.get(memory_id)
        if other is None:
            continue
        kind = relation(records[i].content, other.content, similarity, settings)
        if kind is not None:
            found[i].append(LookAlike(memory_id, min(similarity, 1.0), kind, other.content))
    return found

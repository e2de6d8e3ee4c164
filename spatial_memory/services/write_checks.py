"""What a memory about to be stored resembles: near-duplicates and likely contradictions already stored.

A stored memory close in meaning is a *near-duplicate* when it states the same specifics (the
same numbers, dates, units and negation: `text.details.detail_signature`, no opposite words) and
its similarity reaches Settings.duplicate_threshold; it is a *likely contradiction* when it
differs in one of those specifics - "the API limit is 100 per minute" against "... 1000 per
minute", "we use Postgres" against "we no longer use Postgres" - and its similarity reaches
Settings.contradiction_threshold. Consolidate uses the same test to keep such look-alikes apart.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..config import Settings
from ..embeddings.decisions import decide, decision_band
from ..records import MemoryRecord
from .duplicates import closest_stored

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

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


@functools.lru_cache(maxsize=4096)
def _specifics(text: str) -> tuple[tuple[frozenset[str], bool], tuple[int, ...]]:
    """(detail signature, polarity) of a text: kept, as a batch compares each new memory with up to
    LOOK_ALIKES stored ones and the same stored ones come back batch after batch."""
    # Not at the top: text/details.py reads text/extraction.py, whose rule table is slow to
    # compile: paid by the first write that needs it, not by every server's start.
    from ..text.details import specifics

    return specifics(text)


def relation(new_text: str, stored_text: str) -> str:
    """What a stored memory is to a new one if similar enough: DUPLICATE or CONTRADICTION."""
    # Not at the top: text/details.py reads text/extraction.py, whose rule table is slow to
    # compile: paid by the first write that needs it, not by every server's start.
    from ..text.details import opposed

    (new_details, new_polarity), (stored_details, stored_polarity) = _specifics(new_text), _specifics(stored_text)
    if new_details == stored_details and not opposed(new_polarity, stored_polarity):
        return DUPLICATE
    return CONTRADICTION


def look_alikes(
    store: Store,
    records: Sequence[MemoryRecord],
    settings: Settings,
    embedder: object,
    as_fp32: Collection[str] = (DUPLICATE, CONTRADICTION),
) -> list[list[LookAlike]]:
    """For each record (with its vector), the stored memories of its namespace it duplicates or
    contradicts, most similar first. `as_fp32`: the relations (DUPLICATE, CONTRADICTION) whose
    similarities near their threshold are decided as the embedder's fp32 path would; the others
    are a report, decided on the store's own vectors (embeddings/decisions.py)."""
    found: list[list[LookAlike]] = [[] for _ in records]
    thresholds = {DUPLICATE: settings.duplicate_threshold, CONTRADICTION: settings.contradiction_threshold}
    floor = min(t - decision_band(embedder, t, redecide=k in as_fp32) for k, t in thresholds.items())
    by_namespace: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        by_namespace.setdefault(record.namespace, []).append(i)
    asked: list[tuple[int, str, float, str, str]] = []  # (record, id, similarity, content, relation)
    with store.one_version():  # one version check for every namespace of the batch, not one each
        for namespace, indexes in by_namespace.items():
            vectors = np.stack([np.asarray(records[i].vector, dtype=np.float32) for i in indexes])
            closest_of = closest_stored(store, namespace, vectors, LOOK_ALIKES, batch_size=len(records))
            for i, closest in zip(indexes, closest_of, strict=True):
                for memory_id, similarity, content in closest:
                    if similarity >= floor:
                        asked.append((i, memory_id, similarity, content, relation(records[i].content, content)))
    for kind in (DUPLICATE, CONTRADICTION):
        mine = [a for a in asked if a[4] == kind]
        if not mine:
            continue
        reached, decided = decide(
            embedder,
            [a[2] for a in mine],
            thresholds[kind],
            lambda k, mine=mine: (records[mine[k][0]].content, mine[k][3]),
            redecide=kind in as_fp32,
        )
        for (i, memory_id, _, content, _), ok, similarity in zip(mine, reached.tolist(), decided.tolist(), strict=True):
            if ok:
                found[i].append(LookAlike(memory_id, min(similarity, 1.0), kind, content))
    for alike in found:
        alike.sort(key=lambda a: -a.similarity)
    return found

"""extract: memorable statements found in a text (text/extraction.py's rules), stored in one commit."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import validation as check
from ..errors import (
    ExtractionError,
    StorageError,
    with_context,
)
from ..limits import DUPLICATE_SIMILARITY
from ..records import NewMemory, Provenance
from ..runtime.resources import Resources
from .base import Service
from .duplicates import near_copies
from .memory import MemoryService
from .results import (
    Extraction,
    ExtractResult,
)

EXTRACTION_KEY = "extraction"


class ExtractionService(Service):
    def __init__(self, resources: Resources, memory: MemoryService) -> None:
        super().__init__(resources)
        self._memory = memory  # builds and stores the records, as remember does

    def extract(
        self,
        text: str,
        *,
        namespace: str = "extracted",
        min_confidence: float = 0.5,
        deduplicate: bool = True,
        dedup_threshold: float = 0.9,
        provenance: Provenance | None = None,
    ) -> ExtractResult:
        text = check.content(text, self._settings, field="text")  # secrets redacted before anything is kept
        check.namespace(namespace, self._settings)
        min_confidence = check.number_in("min_confidence", min_confidence, 0.0, 1.0)
        dedup_threshold = check.number_in("dedup_threshold", dedup_threshold, *DUPLICATE_SIMILARITY)
        candidates = _candidates(text, min_confidence)
        if not candidates:
            return ExtractResult(candidates_found=0, memories_created=0, deduplicated_count=0, extractions=[])
        vectors = np.asarray(
            self._resources.embedder.embed_documents([c.content for c in candidates]), dtype=np.float32
        )
        duplicate_of = (
            _duplicates(self._resources, namespace, vectors, [c.content for c in candidates], dedup_threshold)
            if deduplicate
            else {}
        )
        accepted = [i for i in range(len(candidates)) if i not in duplicate_of]
        items = [_new_memory(candidates[i], namespace) for i in accepted]
        records = (
            self._memory.build_records(
                items, source="extracted", vectors=vectors[accepted], provenance=provenance or Provenance(via="extract")
            )
            if items
            else []
        )
        if records:
            try:
                self._memory.store_records(records)
            except StorageError as exc:
                raise with_context(exc, "Storing the extracted memories failed; nothing was stored") from exc
        new_ids = {i: r.id for i, r in zip(accepted, records, strict=True)}
        return ExtractResult(
            candidates_found=len(candidates),
            memories_created=len(records),
            deduplicated_count=len(duplicate_of),
            extractions=[
                _extraction(c, new_ids.get(i), duplicate_of.get(i), new_ids) for i, c in enumerate(candidates)
            ],
        )


def _candidates(text: str, min_confidence: float) -> list:
    # Here, not at the top: compiling the rule table's expressions is slow, paid by the first
    # extract rather than by every server's start (the services are built in the lifespan).
    from ..text.extraction import extract_candidates

    try:
        return extract_candidates(text, min_confidence=min_confidence)
    except Exception as exc:  # noqa: BLE001 - a bug in a heuristic must not look like bad input
        raise ExtractionError(f"Extraction failed on this text: {type(exc).__name__}") from exc


def _duplicates(resources, namespace: str, vectors: np.ndarray, texts: list[str], threshold: float) -> dict[int, Any]:
    """Candidate -> the memory it copies: a stored memory's id, or ("candidate", index) of an earlier one."""
    copies = near_copies(resources.store(), [namespace] * len(vectors), vectors, threshold, texts, resources.embedder)
    return {
        i: copy.memory_id if copy.memory_id is not None else ("candidate", copy.candidate)
        for i, copy in enumerate(copies)
        if copy is not None
    }


def _new_memory(candidate, namespace: str) -> NewMemory:
    """A candidate as a memory: tagged with its pattern, as important as it is certain."""
    return NewMemory(
        content=candidate.content,
        namespace=namespace,
        tags=[candidate.pattern_matched],
        importance=min(1.0, max(0.0, round(candidate.confidence, 3))),
        metadata={
            EXTRACTION_KEY: {
                "pattern": candidate.pattern_matched,
                "confidence": candidate.confidence,
                "start_pos": candidate.start_pos,
                "end_pos": candidate.end_pos,
            }
        },
    )


def _extraction(candidate, memory_id: str | None, duplicate: Any, new_ids: dict[int, str]) -> Extraction:
    if isinstance(duplicate, tuple):  # of an earlier candidate: the id it was stored under
        duplicate = new_ids[duplicate[1]]
    return Extraction(
        content=candidate.content,
        confidence=candidate.confidence,
        pattern_matched=candidate.pattern_matched,
        start_pos=candidate.start_pos,
        end_pos=candidate.end_pos,
        stored=memory_id is not None,
        memory_id=memory_id,
        duplicate_of=duplicate,
    )

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
from ..runtime.resources import Resources
from ..storage.records import Provenance
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
        from ..storage.records import NewMemory
        from ..text.extraction import extract_candidates

        text = check.content(text, self._settings, field="text")  # secrets redacted before anything is kept
        check.namespace(namespace, self._settings)
        min_confidence = check.number_in("min_confidence", min_confidence, 0.0, 1.0)
        dedup_threshold = check.number_in("dedup_threshold", dedup_threshold, *DUPLICATE_SIMILARITY)
        try:
            candidates = extract_candidates(text, min_confidence=min_confidence)
        except Exception as exc:  # noqa: BLE001 - a bug in a heuristic must not look like bad input
            raise ExtractionError(f"Extraction failed on this text: {type(exc).__name__}") from exc
        if not candidates:
            return ExtractResult(candidates_found=0, memories_created=0, deduplicated_count=0, extractions=[])

        vectors = np.asarray(self._r.embedder.embed_documents([c.content for c in candidates]), dtype=np.float32)
        store = self._r.store()
        copies = near_copies(store, [namespace] * len(candidates), vectors, dedup_threshold) if deduplicate else []
        duplicate_of: dict[int, Any] = {}  # candidate -> existing id, or ("candidate", index)
        for i, copy in enumerate(copies):
            if copy is not None:
                duplicate_of[i] = copy.memory_id if copy.memory_id is not None else ("candidate", copy.candidate)
        accepted = [i for i in range(len(candidates)) if i not in duplicate_of]

        items = [
            NewMemory(
                content=candidates[i].content,
                namespace=namespace,
                tags=[candidates[i].pattern_matched],
                importance=min(1.0, max(0.0, round(candidates[i].confidence, 3))),
                metadata={
                    EXTRACTION_KEY: {
                        "pattern": candidates[i].pattern_matched,
                        "confidence": candidates[i].confidence,
                        "start_pos": candidates[i].start_pos,
                        "end_pos": candidates[i].end_pos,
                    }
                },
            )
            for i in accepted
        ]
        memory = self._memory
        origin = provenance or Provenance(via="extract")
        records = (
            memory.build_records(items, source="extracted", vectors=vectors[accepted], provenance=origin)
            if items
            else []
        )
        if records:
            try:
                memory.store_records(records)
            except StorageError as exc:
                raise with_context(exc, "Storing the extracted memories failed; nothing was stored") from exc
        new_ids = {i: r.id for i, r in zip(accepted, records, strict=True)}

        extractions = []
        for i, c in enumerate(candidates):
            dup = duplicate_of.get(i)
            if isinstance(dup, tuple):
                dup = new_ids[dup[1]]
            extractions.append(
                Extraction(
                    content=c.content,
                    confidence=c.confidence,
                    pattern_matched=c.pattern_matched,
                    start_pos=c.start_pos,
                    end_pos=c.end_pos,
                    stored=i in new_ids,
                    memory_id=new_ids.get(i),
                    duplicate_of=dup,
                )
            )
        return ExtractResult(
            candidates_found=len(candidates),
            memories_created=len(records),
            deduplicated_count=len(duplicate_of),
            extractions=extractions,
        )

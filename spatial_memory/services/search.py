"""Finding memories: by meaning (recall), meaning and keywords (hybrid_recall), near a memory (nearby)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    MemoryNotFoundError,
    ValidationError,
)
from ..storage.filters import build_filter
from ..storage.records import MemoryRecord, ScoredMemory
from .base import Service
from .results import (
    HybridMemoryItem,
    HybridRecallResult,
    MemoryItem,
    MemoryRef,
    NearbyResult,
    RecallResult,
)

# RRF's k: 60 (the textbook value, tuned for fusing deep TREC runs) nearly flattens ranks within
# the top-50 candidates each side contributes here, so memories that both sides rank mediocre
# beat the best hit of either side. A small k keeps the top ranks decisive: on LoCoMo dev
# (benchmarks/hybrid_locomo.py) k=1 beats k=60 at every alpha and in each of the 5
# conversations, and k from 0 to 3 give the same results within noise.
RRF_K = 1


def hybrid_depth(limit: int) -> int:
    """Candidates taken from each side of a hybrid search before fusion."""
    return min(max(limit * 5, 50), 500)


@dataclass
class HybridHit:
    record: MemoryRecord
    similarity: float
    vector_score: float | None
    fts_score: float | None
    score: float


class SearchService(Service):
    def search(
        self,
        query: str,
        *,
        limit: int,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> list[ScoredMemory]:
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        flt = build_filter(namespace=namespace, tags=tags, filters=filters)
        vector = self._r.embedder.embed_query(query)
        return self._r.store().search(vector, limit, flt, min_similarity=min_similarity)

    def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
        hybrid_alpha: float | None = None,
    ) -> RecallResult:
        if hybrid_alpha is not None:
            # Same memories and fields as recall, ranked by hybrid_recall's fusion with this alpha.
            hits = [
                ScoredMemory(h.record, h.similarity)
                for h in self.hybrid_search(
                    query,
                    alpha=hybrid_alpha,
                    limit=limit,
                    namespace=namespace,
                    tags=tags,
                    filters=filters,
                    min_similarity=min_similarity,
                )
            ]
        else:
            hits = self.search(
                query, limit=limit, namespace=namespace, tags=tags, filters=filters, min_similarity=min_similarity
            )
        self._r.upkeep.record_access(h.record.id for h in hits)
        return RecallResult(memories=[MemoryItem.of(h) for h in hits], total=len(hits))

    def nearby(self, memory_id: str, *, limit: int = 5, namespace: str | None = None) -> NearbyResult:
        store = self._r.store()
        reference = store.get(memory_id, with_vector=True)
        if reference is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id}. Use recall to find memory ids.")
        hits = store.search(reference.vector, limit + 1, build_filter(namespace=namespace))
        neighbors = [h for h in hits if h.record.id != reference.id][:limit]
        return NearbyResult(reference=MemoryRef.of(reference), neighbors=[MemoryItem.of(h) for h in neighbors])

    def hybrid_search(
        self,
        query: str,
        *,
        alpha: float = 0.5,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> list[HybridHit]:
        """Vector and keyword (BM25) results fused by weighted reciprocal rank fusion.

        alpha weights the vector ranking and 1 - alpha the keyword ranking (1.0 = vector only,
        0.0 = keyword only). Each side contributes its best `hybrid_depth(limit)` candidates.
        `similarity` is always the cosine similarity to the query (computed from the stored
        vector for keyword-only hits), so min_similarity means the same thing as in recall.
        """
        from ..algorithms.fusion import reciprocal_rank_fusion

        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValidationError("alpha must be a number from 0.0 (keyword only) to 1.0 (vector only)")
        alpha = float(alpha)
        flt = build_filter(namespace=namespace, tags=tags, filters=filters)
        query_vector = np.asarray(self._r.embedder.embed_query(query), dtype=np.float32)
        store = self._r.store()
        depth = hybrid_depth(limit)
        by_vector = store.search(query_vector, depth, flt) if alpha > 0.0 else []
        by_keyword = store.fts_search(query, depth, flt, with_vectors=True) if alpha < 1.0 else []
        fused = reciprocal_rank_fusion(
            [[h.record.id for h in by_vector], [record.id for record, _ in by_keyword]],
            [alpha, 1.0 - alpha],
            k=RRF_K,
        )
        vector_hits = {h.record.id: h for h in by_vector}
        keyword_hits = {record.id: (record, score) for record, score in by_keyword}
        best_bm25 = max((score for _, score in by_keyword), default=0.0)
        hits: list[HybridHit] = []
        for memory_id, fused_score in fused:
            from_vector = vector_hits.get(memory_id)
            from_keyword = keyword_hits.get(memory_id)
            if from_vector is not None:
                record, similarity = from_vector.record, from_vector.similarity
            else:
                record = from_keyword[0]
                similarity = min(1.0, max(0.0, float(np.dot(record.vector, query_vector))))
            if similarity < min_similarity:
                continue
            record.vector = None
            hits.append(
                HybridHit(
                    record=record,
                    similarity=similarity,
                    vector_score=from_vector.similarity if from_vector is not None else None,
                    fts_score=from_keyword[1] / best_bm25 if from_keyword is not None and best_bm25 > 0 else None,
                    score=fused_score,
                )
            )
            if len(hits) >= limit:
                break
        return hits

    def hybrid_recall(
        self,
        query: str,
        *,
        alpha: float = 0.5,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> HybridRecallResult:
        hits = self.hybrid_search(
            query,
            alpha=alpha,
            limit=limit,
            namespace=namespace,
            tags=tags,
            filters=filters,
            min_similarity=min_similarity,
        )
        self._r.upkeep.record_access(h.record.id for h in hits)
        items = [
            HybridMemoryItem(
                similarity=round(h.similarity, 6),
                vector_score=None if h.vector_score is None else round(h.vector_score, 6),
                fts_score=None if h.fts_score is None else round(h.fts_score, 6),
                score=round(h.score, 8),
                **h.record.summary(),
            )
            for h in hits
        ]
        search_type = "vector" if alpha >= 1.0 else "keyword" if alpha <= 0.0 else "hybrid"
        return HybridRecallResult(
            query=query, alpha=float(alpha), memories=items, total=len(items), search_type=search_type
        )

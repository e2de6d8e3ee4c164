"""Finding memories: recall and hybrid_recall (meaning, keywords and conversation context), nearby."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..algorithms.ranking import DEFAULT_PARAMS
from ..errors import MemoryNotFoundError, ValidationError
from ..limits import MAX_CONTEXT
from ..storage.filters import Filter, both, build_filter, current_at, session_windows
from ..storage.records import MemoryRecord, ScoredMemory, as_utc
from .base import Service
from .cache import VersionedCache
from .results import (
    ContextMemory,
    HybridMemoryItem,
    HybridRecallResult,
    MemoryItem,
    MemoryRef,
    NearbyResult,
    RecallResult,
)

# How far from a keyword hit its session neighbours join the candidates.
NEIGHBOUR_RADIUS = 2


def search_depth(limit: int) -> int:
    """Candidates the vector search contributes before ranking; the keyword search gives twice as many
    (the ranking study: 100 keyword candidates for a top 10 find ~0.3 points more without structure)."""
    return min(max(limit * 5, 50), 500)


@dataclass
class RankedHit:
    record: MemoryRecord
    similarity: float  # cosine similarity to the query, always
    vector_score: float | None  # the similarity, when the vector search returned the memory
    fts_score: float | None  # BM25 relative to the best keyword hit, when the keyword search returned it
    score: float  # what the hits are ordered by


def _session_windows(records: list[MemoryRecord], radius: int) -> list[tuple[str, int, int]]:
    """(session_id, low, high): the sequences within `radius` of each record placed in a session."""
    return [
        (c.session_id, c.sequence - radius, c.sequence + radius)
        for r in records
        if (c := r.conversation).session_id is not None and c.sequence is not None
    ]


def _epoch(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else float("nan")


class SearchService(Service):
    def __init__(self, resources) -> None:
        super().__init__(resources)
        self._pinned_cache = VersionedCache(size=16)

    def ranked(
        self,
        query: str,
        *,
        limit: int,
        alpha: float = DEFAULT_PARAMS.alpha,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
        since: Any = None,
        until: Any = None,
        as_of: datetime | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[RankedHit]:
        """The best memories for a query, by meaning, keywords and conversation context.

        alpha 1.0 is pure meaning (cosine order, nothing else). Below it, the vector and keyword
        (BM25) searches each give `search_depth(limit)` candidates, keyword hits bring their session
        neighbours (sequence within NEIGHBOUR_RADIUS), and `algorithms.ranking.rank` orders the
        union (normalised fusion, neighbours, speaker/time cues: see there). `similarity` is always
        the cosine similarity to the query, so min_similarity means the same whatever the ranking.
        With `as_of`, the memories current at that moment are searched instead (their versions then,
        memories superseded since included; keywords find only versions still current).
        """
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValidationError("alpha must be a number from 0.0 (keyword only) to 1.0 (vector only)")
        flt = build_filter(namespace=namespace, tags=tags, filters=filters, since=since, until=until)
        if as_of is not None:
            if not isinstance(as_of, datetime):
                raise ValidationError("as_of must be an ISO 8601 date and time")
            as_of = as_utc(as_of)
            flt = both(flt, current_at(as_of))
        if query_vector is None:
            query_vector = self.query_vector(query)
        store = self._r.store()

        def nearest(k: int, **options: Any) -> list[ScoredMemory]:
            if as_of is not None:
                return store.as_of_search(query_vector, k, flt, as_of)
            return store.search(query_vector, k, flt, **options)

        if alpha >= 1.0:
            return [
                RankedHit(h.record, h.similarity, h.similarity, None, h.similarity)
                for h in nearest(limit, min_similarity=min_similarity)
                if h.similarity >= min_similarity
            ]
        depth = search_depth(limit)
        by_vector = nearest(depth, with_vectors=True) if alpha > 0.0 else []
        by_keyword = store.fts_search(query, 2 * depth, flt, with_vectors=True)
        candidates = self._candidates(store, flt, [h.record for h in by_vector], [r for r, _ in by_keyword])
        if not candidates:
            return []
        bm25 = {record.id: score for record, score in by_keyword}
        order, scores, similarity = _rank(query, query_vector, candidates, bm25, alpha)
        from_vector = {h.record.id for h in by_vector}
        best_bm25 = max(bm25.values(), default=0.0)
        hits: list[RankedHit] = []
        for i in order.tolist():
            if similarity[i] < min_similarity:
                continue
            record = candidates[i]
            record.vector = None
            hits.append(
                RankedHit(
                    record=record,
                    similarity=float(similarity[i]),
                    vector_score=float(similarity[i]) if record.id in from_vector else None,
                    fts_score=bm25[record.id] / best_bm25 if record.id in bm25 and best_bm25 > 0 else None,
                    score=float(scores[i]),
                )
            )
            if len(hits) >= limit:
                break
        return hits

    @staticmethod
    def _candidates(
        store, flt: Filter, by_vector: list[MemoryRecord], by_keyword: list[MemoryRecord]
    ) -> list[MemoryRecord]:
        """The union of both searches' hits and the keyword hits' session neighbours (under the same
        filter), with their vectors."""
        records: dict[str, MemoryRecord] = {r.id: r for r in by_vector}
        for record in by_keyword:
            records.setdefault(record.id, record)
        windows = _session_windows(by_keyword, NEIGHBOUR_RADIUS)
        for record in store.neighbours(windows, flt):
            records.setdefault(record.id, record)
        return list(records.values())

    def query_vector(self, query: str) -> np.ndarray:
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        return np.asarray(self._r.embedder.embed_query(query), dtype=np.float32)

    def pinned(self, namespace: str | None) -> list[MemoryRecord]:
        """The namespace's pinned memories recall lists first (Settings.max_pinned_in_recall), with
        vectors; kept per table version, so recall pays for them once per write."""
        cap = self._settings.max_pinned_in_recall
        if cap == 0:
            return []
        store = self._r.store()
        key = (store.version, namespace, cap)
        found = self._pinned_cache.get(key)
        if found is None:
            found = store.pinned(namespace, cap)
            self._pinned_cache.put(key, found)
        return [dataclasses.replace(r) for r in found]

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
        since: Any = None,
        until: Any = None,
        context: int = 0,
        as_of: datetime | None = None,
    ) -> RecallResult:
        """The best `limit` memories for the query, after the namespace's pinned memories (which
        come first, whatever the query; not with as_of, which shows the past as it was)."""
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
            raise ValidationError(f"context must be an integer from 0 to {MAX_CONTEXT}")
        query_vector = self.query_vector(query)
        pinned = self.pinned(namespace) if as_of is None else []
        pinned_ids = {r.id for r in pinned}
        hits = self.ranked(
            query,
            query_vector=query_vector,
            as_of=as_of,
            limit=limit + len(pinned),
            alpha=DEFAULT_PARAMS.alpha if hybrid_alpha is None else hybrid_alpha,
            namespace=namespace,
            tags=tags,
            filters=filters,
            min_similarity=min_similarity,
            since=since,
            until=until,
        )
        hits = [h for h in hits if h.record.id not in pinned_ids][:limit]
        firsts = [ScoredMemory(r, float(np.clip(np.dot(r.vector, query_vector), 0.0, 1.0))) for r in pinned]
        for first in firsts:
            first.record.vector = None
        shown = [*firsts, *(ScoredMemory(h.record, h.similarity) for h in hits)]
        self._r.upkeep.record_access(h.record.id for h in shown)
        items = [MemoryItem.of(h) for h in shown]
        if context:
            self._attach_context(items, [h.record for h in shown], context, namespace)
        return RecallResult(memories=items, total=len(items))

    def _attach_context(
        self, items: list[MemoryItem], records: list[MemoryRecord], radius: int, namespace: str | None
    ) -> None:
        """Each hit's neighbours in its session (up to `radius` before and after), in order, marked by
        their offset from the hit."""
        windows = _session_windows(records, radius)
        if not windows:
            return
        by_session: dict[str, list[MemoryRecord]] = {}
        for record in self._r.store().scan(session_windows(windows, namespace=namespace)):
            by_session.setdefault(record.conversation.session_id, []).append(record)
        for item, record in zip(items, records, strict=True):
            c = record.conversation
            if c.session_id is None or c.sequence is None:
                continue
            around = [
                n
                for n in by_session.get(c.session_id, [])
                if n.id != record.id and abs(n.conversation.sequence - c.sequence) <= radius
            ]
            around.sort(key=lambda n: n.conversation.sequence)
            item.context = [ContextMemory.of(n, n.conversation.sequence - c.sequence) for n in around]

    def nearby(self, memory_id: str, *, limit: int = 5, namespace: str | None = None) -> NearbyResult:
        store = self._r.store()
        reference = store.get(memory_id, with_vector=True)
        if reference is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id}. Use recall to find memory ids.")
        hits = store.search(reference.vector, limit + 1, build_filter(namespace=namespace))
        neighbors = [h for h in hits if h.record.id != reference.id][:limit]
        return NearbyResult(reference=MemoryRef.of(reference), neighbors=[MemoryItem.of(h) for h in neighbors])

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
        since: Any = None,
        until: Any = None,
        as_of: datetime | None = None,
    ) -> HybridRecallResult:
        hits = self.ranked(
            query,
            as_of=as_of,
            alpha=alpha,
            limit=limit,
            namespace=namespace,
            tags=tags,
            filters=filters,
            min_similarity=min_similarity,
            since=since,
            until=until,
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


def _rank(
    query: str, query_vector: np.ndarray, candidates: list[MemoryRecord], bm25: dict[str, float], alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, scores, cosine similarities) of the candidates by `algorithms.ranking.rank`."""
    from ..algorithms.ranking import CandidateArrays, query_features, rank

    vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in candidates])
    similarity = np.clip(vectors @ query_vector, 0.0, 1.0)
    arrays = CandidateArrays.from_texts(
        similarity,
        [r.content for r in candidates],
        [bm25.get(r.id, np.nan) for r in candidates],
        session=[r.conversation.session_id for r in candidates],
        sequence=[-1 if r.conversation.sequence is None else r.conversation.sequence for r in candidates],
        speaker=[r.conversation.speaker for r in candidates],
        occurred_at=[_epoch(r.conversation.occurred_at) for r in candidates],
        vectors=vectors,
    )
    speakers = {r.conversation.speaker for r in candidates if r.conversation.speaker}
    params = dataclasses.replace(DEFAULT_PARAMS, alpha=float(alpha))
    order, scores = rank(query_features(query, speakers), arrays, params)
    return order, scores, similarity

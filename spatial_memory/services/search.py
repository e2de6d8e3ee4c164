"""Finding memories: recall and hybrid_recall (meaning, keywords and conversation context), nearby."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Unpack

import numpy as np

from .. import validation as check
from ..algorithms.ranking import (
    DEFAULT_PARAMS,
    CandidateArrays,
    RankingParams,
    TextFeatures,
    query_features,
    rank,
)
from ..algorithms.relevance import WEAK_RULE, WeakRule, weak_hits
from ..errors import MemoryNotFoundError, ValidationError
from ..limits import MAX_CONTEXT, MAX_EXPAND
from ..records import MemoryRecord, ScoredMemory
from ..storage.filters import Filter, build_filter, session_windows
from ..storage.search.candidates import Candidates
from .base import Service
from .cache import VersionedCache
from .expansion import EXPANSION, ExpansionParams, session_windows_of
from .expansion import expand as expand_recall
from .recall_filters import RecallFilters, as_of_moment, similarity_floor, store_filter
from .results import (
    ContextMemory,
    HybridMemoryItem,
    HybridRecallResult,
    MemoryItem,
    MemoryRef,
    NearbyResult,
    ProcedureItem,
    RecallResult,
)

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

# How far from a keyword hit its session neighbours join the candidates.
NEIGHBOUR_RADIUS = 2
# The hits of one recall whose pairs count as recalled together.
CO_RECALL_TOP = 3


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


@dataclass
class _Begun:
    """What a ranked search starts before it embeds the query: the table version it reads (checked on
    the keyword thread: a hand-off to LanceDB's event loop, beside the embedding instead of before
    it), the namespace's pinned memories at that version, the keyword search (None at alpha 1.0) and
    the query's vector."""

    version: int
    pinned: list[MemoryRecord]
    keyword: Future | None
    query_vector: np.ndarray


class SearchService(Service):
    def __init__(self, resources) -> None:
        super().__init__(resources)
        self._pinned_cache = VersionedCache(size=16)
        self._text_features = TextFeatures()  # of the memories recall ranks, kept across queries
        self._keyword_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _pool(self) -> ThreadPoolExecutor:
        """The keyword thread(s), started by the first search."""
        with self._pool_lock:
            if self._keyword_pool is None:
                self._keyword_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="keyword-search")
            return self._keyword_pool

    def _keyword_search(self, store: Store, query: str, limit: int, flt: Filter | None, version: int) -> Future:
        """The keyword search, started on a thread of its own: it needs no query vector, so it runs
        while the query is embedded (LanceDB and onnxruntime both leave the GIL). It reads the
        table at the search's version."""

        def search():
            with store.one_version(version):
                return store.fts_candidates(query, limit, flt)

        return self._pool().submit(search)

    def _begin(
        self, store: Store, query: str, limit: int, alpha: float, where: RecallFilters, *, pinned: bool
    ) -> _Begun:
        """Check the table version, read the pinned memories (with `pinned`; they add to the search
        depth) and start the keyword search `search_depth` deep for the limit and the pinned, all on the
        keyword thread, while this thread embeds the query (or here, while the query's embedding
        begun when its request arrived ends). Arguments are checked first."""
        check.query_text(query)
        _check_alpha(alpha)
        flt = store_filter(where)
        as_of_moment(where), similarity_floor(where)  # checked now: a bad one starts nothing
        namespace = where.get("namespace")
        ready: Future = Future()

        def head():
            try:
                version = store.version
                with store.one_version(version):
                    found = self.pinned(namespace) if pinned else []
                    ready.set_result((version, found))
                    if alpha >= 1.0:
                        return None
                    return store.fts_candidates(query, 2 * search_depth(limit + len(found)), flt)
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        if self._resources.early_queries.pending(query):
            # The query is being embedded already (runtime/early_queries.py): this thread does the
            # rest meanwhile, with no hand-off to the keyword thread and back, and works out the
            # keyword candidates' text features the ranking will look up (TextFeatures keeps them).
            keyword: Future = Future()
            by_keyword = head()
            keyword.set_result(by_keyword)
            if by_keyword is not None:
                self._text_features.all_of(by_keyword[0].content)
        else:
            keyword = self._pool().submit(head)
        query_vector = self.query_vector(query)  # while the version, pinned and keyword search come
        version, found = ready.result()
        return _Begun(version, found, keyword, query_vector)

    def ranked(
        self, query: str, *, limit: int, alpha: float = DEFAULT_PARAMS.alpha, **where: Unpack[RecallFilters]
    ) -> list[RankedHit]:
        """The best memories for a query, by meaning, keywords and conversation context (see
        `_ranked`)."""
        with self._resources.store().one_version():
            return self._ranked(query, limit=limit, alpha=alpha, **where)[0]

    def _ranked(
        self,
        query: str,
        *,
        limit: int,
        alpha: float = DEFAULT_PARAMS.alpha,
        spare: int = 0,
        begun: _Begun | None = None,
        enough: Callable[[list[RankedHit]], bool] | None = None,
        **where: Unpack[RecallFilters],
    ) -> tuple[list[RankedHit], np.ndarray]:
        """The best memories for a query, by meaning, keywords and conversation context, and the
        query's vector.

        alpha 1.0 is pure meaning (cosine order, nothing else). Below it, the vector and keyword
        (BM25) searches each give `search_depth(limit)` candidates, keyword hits bring their session
        neighbours (sequence within NEIGHBOUR_RADIUS), and `algorithms.ranking.rank` orders the
        union (normalised fusion, neighbours, speaker/time cues: see there). `similarity` is always
        the cosine similarity to the query, so min_similarity means the same whatever the ranking.
        With `as_of`, the memories current at that moment are searched instead (their versions then,
        memories superseded since included; keywords find only versions still current). `spare`
        more hits follow the best `limit` (ranked alike: the search depth is the limit's), for a
        caller that drops some (`_distinct`); with `enough`, they are left out when `enough` of the
        best `limit` hits says the caller has what it needs from them (it then keeps no spare).
        `begun`: what `_begin` started for this search.
        """
        check.query_text(query)
        _check_alpha(alpha)
        flt = store_filter(where)
        as_of = as_of_moment(where)
        min_similarity = similarity_floor(where)
        store = self._resources.store()
        if alpha >= 1.0:
            return self._by_meaning(store, query, limit, flt, as_of, min_similarity, spare, begun)
        query_vector, by_vector, by_keyword, bm25_scores = self._searches(store, query, limit, alpha, flt, as_of, begun)
        by_neighbour = store.neighbour_candidates(by_keyword.windows(NEIGHBOUR_RADIUS), flt)
        candidates = Candidates.union([c for c in (by_vector, by_keyword, by_neighbour) if c is not None])
        if not len(candidates):
            return [], query_vector
        bm25 = dict(zip(by_keyword.ids, bm25_scores))
        order, scores, similarity = _rank(query, query_vector, candidates, bm25, alpha, self._text_features)
        chosen: list[int] = order[similarity[order] >= min_similarity][: limit + spare].tolist()
        from_vector = set(by_vector.ids) if by_vector is not None else set()
        best_bm25 = max(bm25.values(), default=0.0)
        hits: list[RankedHit] = []
        # The best `limit` first; the spares only when the caller's `enough` does not find enough
        # among those (a record per hit is most of the hits' cost).
        best, spares = (chosen[:limit], chosen[limit:]) if enough is not None else (chosen, [])
        for batch in (best, spares):
            if not batch or (batch is spares and enough is not None and enough(hits)):
                continue
            for i, record in zip(batch, store.materialize(candidates, batch), strict=True):
                if record is None:  # deleted since the search
                    continue
                hits.append(
                    RankedHit(
                        record=record,
                        similarity=float(similarity[i]),
                        vector_score=float(similarity[i]) if record.id in from_vector else None,
                        fts_score=bm25[record.id] / best_bm25 if record.id in bm25 and best_bm25 > 0 else None,
                        score=float(scores[i]),
                    )
                )
        return hits, query_vector

    def _by_meaning(
        self,
        store,
        query: str,
        limit: int,
        flt: Filter | None,
        as_of: datetime | None,
        min_similarity: float,
        spare: int = 0,
        begun: _Begun | None = None,
    ) -> tuple[list[RankedHit], np.ndarray]:
        """alpha 1.0: the nearest memories by cosine similarity, nothing else."""
        query_vector = self.query_vector(query) if begun is None else begun.query_vector
        if as_of is not None:
            found = store.as_of_search(query_vector, limit + spare, flt, as_of)
        else:
            found = store.search(query_vector, limit + spare, flt, min_similarity=min_similarity)
        hits = [
            RankedHit(h.record, h.similarity, h.similarity, None, h.similarity)
            for h in found
            if h.similarity >= min_similarity
        ]
        return hits, query_vector

    def _searches(
        self,
        store,
        query: str,
        limit: int,
        alpha: float,
        flt: Filter | None,
        as_of: datetime | None,
        begun: _Begun | None = None,
    ):
        """The query's vector and the two searches ranking fuses: by meaning (None at alpha 0.0) and by
        keywords (candidates and their BM25 scores), `search_depth(limit)` deep each."""
        depth = search_depth(limit)
        if begun is not None and begun.keyword is not None:
            keyword, query_vector = begun.keyword, begun.query_vector
        else:
            keyword = self._keyword_search(store, query, 2 * depth, flt, store.version)
            query_vector = self.query_vector(query)  # while the keyword search runs
        by_vector = None
        if alpha > 0.0 and as_of is not None:
            # What was current then: current rows whose version existed, and retired states.
            by_vector = Candidates.of_records(
                [h.record for h in store.as_of_search(query_vector, depth, flt, as_of)], store.dim
            )
        elif alpha > 0.0:
            by_vector = store.search_candidates(query_vector, depth, flt)
        by_keyword, bm25_scores = keyword.result()
        if store.fts_may_lag():  # keyword searches scan the rows outside the index: compact now
            self._resources.upkeep.poke()
        return query_vector, by_vector, by_keyword, bm25_scores

    def query_vector(self, query: str) -> np.ndarray:
        check.query_text(query)
        vector = self._resources.early_queries.take(query)
        if vector is None:
            vector = self._resources.embedder.embed_query(query)
        return np.asarray(vector, dtype=np.float32)

    def pinned(self, namespace: str | None) -> list[MemoryRecord]:
        """The namespace's pinned memories recall lists first (Settings.max_pinned_in_recall), with
        vectors; kept per table version, so recall pays for them once per write."""
        cap = self._settings.max_pinned_in_recall
        if cap == 0:
            return []
        store = self._resources.store()
        key = (store.version, namespace, cap)
        found = self._pinned_cache.get(key)
        if found is None:
            found = store.pinned(namespace, cap)
            self._pinned_cache.put(key, found)
        return [dataclasses.replace(r) for r in found]

    def _hits(
        self, query: str, limit: int, alpha: float, where: RecallFilters, *, pinned: bool
    ) -> tuple[list[RankedHit], np.ndarray, list[MemoryRecord]]:
        """recall's and hybrid_recall's hits: the best `limit` with distinct contents that are not
        pinned memories (with `pinned`: read, and returned), the query's vector and the pinned
        memories."""
        store = self._resources.store()
        begun = self._begin(store, query, limit, alpha, where, pinned=pinned)
        wanted = limit + len(begun.pinned)  # room for copies of another hit or of a pinned memory
        with store.one_version(begun.version):
            hits, query_vector = self._ranked(
                query,
                limit=wanted,
                alpha=alpha,
                spare=wanted,
                begun=begun,
                enough=lambda found: len(_shown(found, begun.pinned, limit)) >= limit,
                **where,
            )
        return _shown(hits, begun.pinned, limit), query_vector, begun.pinned

    def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        hybrid_alpha: float | None = None,
        context: int = 0,
        expand: int = 0,
        expansion: ExpansionParams | None = None,
        **where: Unpack[RecallFilters],
    ) -> RecallResult:
        """The best `limit` memories for the query, after the namespace's pinned memories (which
        come first, whatever the query; not with as_of, which shows the past as it was). With
        `expand`, up to that many more memories reached from the hits by spreading activation
        (services/expansion.py), in `expanded`."""
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
            raise ValidationError(f"context must be an integer from 0 to {MAX_CONTEXT}")
        if isinstance(expand, bool) or not isinstance(expand, int) or not 0 <= expand <= MAX_EXPAND:
            raise ValidationError(f"expand must be an integer from 0 to {MAX_EXPAND}")
        as_of = where.get("as_of")
        if expand and as_of is not None:
            raise ValidationError("expand cannot be combined with as_of: relations and links are today's; drop one")
        namespace = where.get("namespace")
        alpha = DEFAULT_PARAMS.alpha if hybrid_alpha is None else hybrid_alpha
        hits, query_vector, pinned = self._hits(query, limit, alpha, where, pinned=as_of is None)
        firsts = [ScoredMemory(r, float(np.clip(np.dot(r.vector, query_vector), 0.0, 1.0))) for r in pinned]
        for first in firsts:
            first.record.vector = None
        shown = [*firsts, *(ScoredMemory(h.record, h.similarity) for h in hits)]
        self._resources.upkeep.record_access(h.record.id for h in shown)
        # The best few hits were recalled together: their co-recall links grow (co_recall.py).
        self._resources.upkeep.record_co_recall(h.record.id for h in hits[:CO_RECALL_TOP])
        items = [MemoryItem.of(h) for h in shown]
        mark_weak(items[len(firsts) :], [h.similarity for h in hits])  # pinned ones are not hits
        if context:
            self._attach_context(items, [h.record for h in shown], context, namespace)
        expanded = None
        if expand:
            flt = store_filter(where)  # as_of is not set: expand is refused with it
            # Seeds: the best hits, and a pinned memory that answers the query as well as they do.
            seeds = [ScoredMemory(h.record, h.similarity) for h in hits[: (expansion or EXPANSION).seeds]]
            floor = min((h.similarity for h in seeds), default=1.0)
            seeds += [f for f in firsts if f.similarity >= floor]
            expanded = expand_recall(
                self._resources.store(),
                query_vector,
                seeds,
                {h.record.id for h in shown},
                flt,
                expand,
                expansion or EXPANSION,
            )
        return RecallResult(memories=items, total=len(items), expanded=expanded)

    def _attach_context(
        self, items: list[MemoryItem], records: list[MemoryRecord], radius: int, namespace: str | None
    ) -> None:
        """Each hit's neighbours in its session (up to `radius` before and after), in order, marked by
        their offset from the hit."""
        windows = session_windows_of(records, radius)
        if not windows:
            return
        by_session: dict[str | None, list[MemoryRecord]] = {}
        for record in self._resources.store().scan(session_windows(windows, namespace=namespace)):
            by_session.setdefault(record.conversation.session_id, []).append(record)
        for item, record in zip(items, records, strict=True):
            c = record.conversation
            at = c.sequence
            if c.session_id is None or at is None:
                continue
            around = [  # (offset from the hit, neighbour); the windows hold sequenced memories only
                (n.conversation.sequence - at, n)
                for n in by_session.get(c.session_id, [])
                if n.id != record.id
                and n.conversation.sequence is not None
                and abs(n.conversation.sequence - at) <= radius
            ]
            around.sort(key=lambda pair: pair[0])
            item.context = [ContextMemory.of(n, offset, at + offset) for offset, n in around]

    def nearby(self, memory_id: str, *, limit: int = 5, namespace: str | None = None) -> NearbyResult:
        store = self._resources.store()
        reference = store.get(memory_id, with_vector=True)
        if reference is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id}. Use recall to find memory ids.")
        hits = store.search(reference.vector, limit + 1, build_filter(namespace=namespace))
        neighbors = [h for h in hits if h.record.id != reference.id][:limit]
        return NearbyResult(reference=MemoryRef.of(reference), neighbors=[MemoryItem.of(h) for h in neighbors])

    def hybrid_recall(
        self, query: str, *, alpha: float = 0.5, limit: int = 5, **where: Unpack[RecallFilters]
    ) -> HybridRecallResult:
        hits, _, _ = self._hits(query, limit, alpha, where, pinned=False)
        self._resources.upkeep.record_access(h.record.id for h in hits)
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
        mark_weak(items, [h.similarity for h in hits])
        search_type = "vector" if alpha >= 1.0 else "keyword" if alpha <= 0.0 else "hybrid"
        return HybridRecallResult(
            query=query, alpha=float(alpha), memories=items, total=len(items), search_type=search_type
        )


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValidationError("alpha must be a number from 0.0 (keyword only) to 1.0 (vector only)")


def mark_weak(
    items: Sequence[MemoryItem] | Sequence[ProcedureItem], similarities: Sequence[float], rule: WeakRule = WEAK_RULE
) -> None:
    """Mark the hits where relevance has ended (algorithms/relevance.py): a step after ranking,
    the order left as it is (recall's memories, how_to's procedures: each by its similarity to the
    query)."""
    for item, weak in zip(items, weak_hits(similarities, rule), strict=True):
        item.weak = weak


def _shown(hits: list[RankedHit], pinned: list[MemoryRecord], limit: int) -> list[RankedHit]:
    """The first `limit` hits that are not a pinned memory or a copy of one, with distinct contents."""
    ids, contents = {r.id for r in pinned}, {r.content for r in pinned}
    return _distinct([h for h in hits if h.record.id not in ids and h.record.content not in contents], limit)


def _distinct(hits: list[RankedHit], limit: int) -> list[RankedHit]:
    """The first `limit` hits with distinct contents: a memory stored twice (allow_duplicate, or
    in two namespaces) takes one slot, its best-ranked copy."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        if hit.record.content not in seen:
            seen.add(hit.record.content)
            kept.append(hit)
    return kept[:limit]


# The ranking's parameters per alpha (made and checked once each: callers use a few alphas).
_PARAMS: dict[float, RankingParams] = {}


def _rank(
    query: str,
    query_vector: np.ndarray,
    candidates: Candidates,
    bm25: dict[str, float],
    alpha: float,
    text_features: TextFeatures,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, scores, cosine similarities) of the candidates by `algorithms.ranking.rank`."""
    similarity = np.clip(candidates.vectors @ query_vector, 0.0, 1.0)
    words, question, time_ref, stated_at, form = text_features.all_of(candidates.content)
    arrays = CandidateArrays.build(
        similarity,
        [bm25.get(memory_id, np.nan) for memory_id in candidates.ids],
        session=candidates.session_id,
        sequence=[-1 if q is None else q for q in candidates.sequence],
        speaker=candidates.speaker,
        occurred_at=candidates.occurred_at,
        words=words,
        question=question,
        time_ref=time_ref,
        stated_at=stated_at,
        vectors=candidates.vectors,
        form=form,
    )
    speakers = {s for s in candidates.speaker if s}
    params = _PARAMS.get(alpha)
    if params is None:
        params = dataclasses.replace(DEFAULT_PARAMS, alpha=float(alpha))
        if len(_PARAMS) < 64:  # a caller giving ever new alphas makes them each time
            _PARAMS[alpha] = params
    order, scores = rank(query_features(query, speakers), arrays, params)
    return order, scores, similarity

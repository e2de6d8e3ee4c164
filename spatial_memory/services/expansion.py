"""recall's expansion: spreading activation from the top hits over relations (both ways), co-recall
links, conversation neighbours and (off by default) memories near in meaning; a reached memory's
activation is weighed by its similarity to the query, and the strongest are returned."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..algorithms.activation import spread
from ..records import MemoryRecord, ScoredMemory
from ..storage.filters import Filter, both, build_filter
from .results import ActivationStep, ExpandedMemory

Edge = tuple[str, str, float, str]  # from, to, weight, kind


@dataclass(frozen=True)
class ExpansionParams:
    """recall's spreading activation (expand): what spreads, how far, and what is kept."""

    seeds: int = 5  # the top hits activation starts from (each at its similarity / the best one's)
    hops: int = 2
    decay: float = 0.5  # per hop
    relation_weight: float = 1.0  # x the relation's own weight
    co_recall_weight: float = 1.0  # x the link's strength (0-1)
    conversation_weight: float = 0.6  # / the distance in turns
    conversation_radius: int = 1
    similar_weight: float = 0.0  # x cosine to the node; 0: off (it did not help on LoCoMo)
    similar_k: int = 5
    query_gate: float = 0.5  # activation x (1 - gate + gate x cosine to the query)
    threshold: float = 0.05
    max_candidates: int = 200


EXPANSION = ExpansionParams()


def session_windows_of(records: list[MemoryRecord], radius: int) -> list[tuple[str, int, int]]:
    """(session_id, low, high): the sequences within `radius` of each record placed in a session."""
    return [
        (c.session_id, c.sequence - radius, c.sequence + radius)
        for r in records
        if (c := r.conversation).session_id is not None and c.sequence is not None
    ]


class ActivationGraph:
    """The edges activation spreads over, found as it reaches each node (never the whole graph)."""

    def __init__(self, store, query_vector: np.ndarray, flt: Filter, p: ExpansionParams, known: dict) -> None:
        self._store = store
        self._query_vector = query_vector
        self._flt = flt
        self._p = p
        self.known: dict[str, MemoryRecord] = known  # records read so far, by id
        self._graph = store.relation_graph()

    def edges_of(self, ids: list[str]) -> Iterator[Edge]:
        yield from self._relations(ids)
        if self._p.co_recall_weight > 0:
            yield from self._co_recall(ids)
        if self._p.conversation_weight > 0:
            yield from self._conversation(ids)
        if self._p.similar_weight > 0:
            yield from self._similar(ids)

    def _relations(self, ids: list[str]) -> Iterator[Edge]:
        weight = self._p.relation_weight
        for r in self._graph.of(ids):
            yield r.source_id, r.target_id, r.weight * weight, f"relation:{r.relation}"
            yield r.target_id, r.source_id, r.weight * weight, f"relation:{r.relation} (reverse)"

    def _co_recall(self, ids: list[str]) -> Iterator[Edge]:
        for a, b, strength in self._store.co_recall_links(ids):
            yield a, b, strength * self._p.co_recall_weight, "co_recall"
            yield b, a, strength * self._p.co_recall_weight, "co_recall"

    def _conversation(self, ids: list[str]) -> Iterator[Edge]:
        """Each placed memory to the turns within conversation_radius of it, weaker with the distance."""
        p = self._p
        missing = [i for i in ids if i not in self.known]
        self.known.update({r.id: r for r in self._store.get_many(missing)} if missing else {})
        placed = [self.known[i] for i in ids if i in self.known]
        windows = session_windows_of(placed, p.conversation_radius)
        if not windows:
            return
        around = self._store.neighbours(windows, self._flt)
        by_session: dict[str | None, list[MemoryRecord]] = {}
        for r in around:
            self.known.setdefault(r.id, r)
            by_session.setdefault(r.conversation.session_id, []).append(r)
        for record in placed:
            c = record.conversation
            for n in by_session.get(c.session_id, ()):
                if n.conversation.sequence is None or c.sequence is None:  # windows hold sequenced memories
                    continue
                gap = abs(n.conversation.sequence - c.sequence)
                if 0 < gap <= p.conversation_radius:
                    yield record.id, n.id, p.conversation_weight / gap, "conversation"

    def _similar(self, ids: list[str]) -> Iterator[Edge]:
        """Off by default (measured: benchmarks/expansion_locomo.py): the memories nearest to the query
        moved towards each node, a second hop by meaning."""
        p = self._p
        for memory_id in ids:
            record = self.known.get(memory_id)
            if record is None or record.vector is None:
                found = self._store.get_many([memory_id], with_vectors=True)
                if not found:
                    continue
                record = self.known[memory_id] = found[0]
            toward = self._query_vector + np.asarray(record.vector, dtype=np.float32)
            toward /= np.linalg.norm(toward) or 1.0
            for hit in self._store.search(toward, p.similar_k + 1, self._flt, with_vectors=True):
                if hit.record.id != memory_id:
                    self.known.setdefault(hit.record.id, hit.record)
                    near = float(np.dot(hit.record.vector, record.vector))
                    yield memory_id, hit.record.id, max(near, 0.0) * p.similar_weight, "similar"


def expand(
    store,
    query_vector: np.ndarray,
    seeds_hits: list[ScoredMemory],
    shown: set[str],
    flt: Filter,
    count: int,
    p: ExpansionParams,
) -> list[ExpandedMemory]:
    """The `count` memories most activated from the seeds (each starting at its similarity / the best
    one's), not already shown, above p.threshold once weighed by their similarity to the query."""
    if not seeds_hits:
        return []
    top = max(h.similarity for h in seeds_hits) or 1.0
    seeds = {h.record.id: h.similarity / top for h in seeds_hits}
    graph = ActivationGraph(store, query_vector, flt, p, {h.record.id: h.record for h in seeds_hits})
    reached = spread(seeds, graph.edges_of, hops=p.hops, decay=p.decay)
    candidates = [i for i in reached if i not in shown][: p.max_candidates]
    if not candidates:
        return []
    records = {r.id: r for r in store.scan(both(flt, build_filter(ids=candidates)), with_vectors=True)}
    found: list[ExpandedMemory] = []
    for memory_id in candidates:
        record = records.get(memory_id)
        if record is None:  # outside the recall's namespace or filters, or gone
            continue
        similarity = float(np.clip(np.dot(record.vector, query_vector), 0.0, 1.0))
        node = reached[memory_id]
        weighed = node.activation * (1.0 - p.query_gate + p.query_gate * similarity)
        if weighed < p.threshold:
            continue
        found.append(
            ExpandedMemory(
                id=record.id,
                content=record.content,
                namespace=record.namespace,
                similarity=round(similarity, 6),
                activation=round(weighed, 6),
                path=[ActivationStep(from_id=a, via=kind) for a, kind in node.path],
            )
        )
    found.sort(key=lambda m: -m.activation)
    return found[:count]

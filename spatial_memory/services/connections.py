"""Connections between memories: relations (relate, unrelate), discover_connections, corpus_bridges."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..algorithms.keywords import tokenize
from ..embeddings.decisions import at_least, decision_band
from ..errors import MemoryNotFoundError, ValidationError
from ..records import Provenance
from ..storage.filters import build_filter
from ..storage.side_tables.relations import Relation
from ..storage.table.schema import vectors_of
from ..validation import relation_label
from .base import Service
from .results import (
    Bridge,
    BridgeEnd,
    Connection,
    CorpusBridgesResult,
    DiscoverConnectionsResult,
    RelateResult,
    RelationItem,
    UnrelateResult,
    content_preview,
    timestamp,
)

# How much shared terms add to a connection's score: cosine overlap of the two term sets times this.
TERM_WEIGHT = 0.25
# Candidates each search contributes to discover_connections, per connection asked for.
DEPTH_PER_RESULT = 4
# Rows per block of corpus_bridges' similarity products (bounds the memory a block takes).
BRIDGE_BLOCK = 1024
# ... and at most this many similarities per block (256 MB of float32), whatever the corpus size.
BRIDGE_BLOCK_CELLS = 1 << 26


def relation_item(r: Relation) -> RelationItem:
    return RelationItem(
        source_id=r.source_id,
        target_id=r.target_id,
        relation=r.relation,
        weight=round(float(r.weight), 6),
        created_at=timestamp(r.created_at),
    )


def _not_found(memory_id: str) -> MemoryNotFoundError:
    return MemoryNotFoundError(
        f"Memory not found: {memory_id[:64]}. It may have been superseded, expired or forgotten; "
        "use recall or get_memories to find current ids."
    )


class ConnectionService(Service):
    # ---- relations ---------------------------------------------------------------------------

    def relate(
        self,
        source_id: str,
        target_id: str,
        relation: str,
        *,
        weight: float | None = None,
        provenance: Provenance | None = None,
    ) -> RelateResult:
        """Link source to target by a typed, directed relation (one commit, under the write lock)."""
        label = relation_label(relation)
        value = 1.0 if weight is None else float(weight)
        if isinstance(weight, bool) or not (math.isfinite(value) and 0.0 < value <= 1.0):
            raise ValidationError("weight must be a number above 0.0 and at most 1.0")
        if source_id == target_id:
            raise ValidationError("a memory cannot be related to itself: give two different ids")
        store = self._resources.store()
        with store.exclusive():
            found = {r.id for r in store.get_many([source_id, target_id])}
            for memory_id in (source_id, target_id):
                if memory_id not in found:
                    raise _not_found(memory_id)
            existed = any(
                r.target_id == target_id and r.relation == label
                for r in store.relation_graph().by_memory.get(source_id, ())
                if r.source_id == source_id
            )
            made = Relation(source_id, target_id, label, value, self._resources.clock(), provenance)
            store.relate([made])
        return RelateResult(relation=relation_item(made), created=not existed)

    def unrelate(self, source_id: str, target_id: str, relation: str | None = None) -> UnrelateResult:
        """Remove the relations from source to target (only `relation` when given)."""
        label = None if relation is None else relation_label(relation)
        gone = self._resources.store().unrelate(source_id, target_id, label)
        return UnrelateResult(removed=len(gone), relations=[relation_item(r) for r in gone])

    # ---- discover_connections --------------------------------------------------------------------

    def discover_connections(
        self,
        memory_id: str,
        *,
        limit: int = 10,
        min_similarity: float = 0.5,
        exclude_same_namespace: bool = False,
    ) -> DiscoverConnectionsResult:
        """Memories in any namespace related to one memory, by meaning and shared terms, best first.

        Candidates come from the vector search (nearest by meaning) and the keyword search (the
        memory's own distinctive words); each is scored by its cosine similarity plus TERM_WEIGHT
        times the overlap of the two memories' terms. min_similarity applies to the cosine."""
        store = self._resources.store()
        reference = store.get(memory_id, with_vector=True)
        if reference is None:
            raise _not_found(memory_id)
        flt = build_filter(filters={"namespace": {"ne": reference.namespace}}) if exclude_same_namespace else None
        depth = max(limit * DEPTH_PER_RESULT, 40)
        vector = np.asarray(reference.vector, dtype=np.float32)
        candidates = {h.record.id: h.record for h in store.search(vector, depth + 1, flt, with_vectors=True)}
        own_terms = tokenize(reference.content)
        if own_terms:
            for record, _ in store.fts_search(" ".join(dict.fromkeys(own_terms)), depth, flt, with_vectors=True):
                candidates.setdefault(record.id, record)
        candidates.pop(reference.id, None)
        if not candidates:
            return DiscoverConnectionsResult(
                memory_id=reference.id, namespace=reference.namespace, connections=[], total=0
            )
        records = list(candidates.values())
        vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
        similarity = np.clip(vectors @ vector, 0.0, 1.0)
        mine = set(own_terms)
        related: dict[str, list[str]] = {}
        for r in store.relation_graph().by_memory.get(reference.id, ()):
            other = r.target_id if r.source_id == reference.id else r.source_id
            related.setdefault(other, []).append(r.relation)
        related_enough = at_least(  # a read: decided on the store's own vectors (decisions.py)
            self._resources.embedder,
            similarity,
            min_similarity,
            lambda k: (reference.content, records[k].content),
            redecide=False,
        )
        found: list[Connection] = []
        for record, sim, ok in zip(records, similarity.tolist(), related_enough.tolist(), strict=True):
            if not ok:
                continue
            theirs = set(tokenize(record.content))
            shared = sorted(mine & theirs)
            overlap = len(shared) / math.sqrt(len(mine) * len(theirs)) if shared else 0.0
            found.append(
                Connection(
                    id=record.id,
                    content=record.content,
                    namespace=record.namespace,
                    similarity=round(float(sim), 6),
                    score=round(float(sim) + TERM_WEIGHT * overlap, 6),
                    shared_terms=shared[:10],
                    relations=sorted(related.get(record.id, [])),
                )
            )
        found.sort(key=lambda c: (-c.score, -c.similarity, c.id))
        return DiscoverConnectionsResult(
            memory_id=reference.id, namespace=reference.namespace, connections=found[:limit], total=len(found)
        )

    # ---- corpus_bridges ------------------------------------------------------------------------

    def corpus_bridges(
        self,
        *,
        namespaces: Sequence[str] | None = None,
        min_similarity: float = 0.8,
        max_bridges: int = 50,
    ) -> CorpusBridgesResult:
        """Pairs of close memories in different namespaces, closest first. Exact: every pair of
        memories in two different namespaces is compared (one matrix product per pair of
        namespaces, in blocks)."""
        if namespaces is not None:
            namespaces = list(dict.fromkeys(namespaces))
            if len(namespaces) < 2:
                raise ValidationError("namespaces needs at least two namespaces to bridge (or omit it for all)")
        store = self._resources.store()
        flt = build_filter(filters={"namespace": {"in": namespaces}}) if namespaces else None
        table = store.scan_arrow(["id", "namespace", "vector"], flt)
        ids = np.array(table.column("id").to_pylist(), dtype=object)
        spaces = np.array(table.column("namespace").to_pylist(), dtype=object)
        vectors = vectors_of(table) if table.num_rows else np.zeros((0, store.dim), np.float32)
        names = sorted(set(spaces.tolist()))
        groups = [np.flatnonzero(spaces == name) for name in names]
        id_of: list[str] = ids.tolist()
        contents: dict[str, str] = {}

        def reaches(rows: np.ndarray, cols: np.ndarray, sims: np.ndarray) -> np.ndarray:
            """Pairs near min_similarity, decided on the store's own vectors (a read: decisions.py)."""
            missing = list({id_of[i] for i in (*rows.tolist(), *cols.tolist())} - contents.keys())
            contents.update((r.id, r.content) for r in store.get_many(missing))
            return at_least(
                self._resources.embedder,
                sims,
                float(min_similarity),
                lambda k: (contents.get(id_of[int(rows[k])], ""), contents.get(id_of[int(cols[k])], "")),
                redecide=False,
            )

        band = decision_band(self._resources.embedder, float(min_similarity), redecide=False)
        pairs, total = _bridges(vectors, groups, float(min_similarity), int(max_bridges), band, reaches)
        records = {r.id: r for r in store.get_many(list({ids[i] for p in pairs for i in p[1:]}))}
        bridges = []
        for sim, i, j in pairs:
            a, b = records.get(ids[i]), records.get(ids[j])
            if a is None or b is None:  # forgotten since the scan
                continue
            bridges.append(Bridge(similarity=round(sim, 6), a=_end(a), b=_end(b)))
        return CorpusBridgesResult(
            bridges=bridges, total_bridges=total, memories_compared=int(table.num_rows), namespaces=names
        )


def _end(record: Any) -> BridgeEnd:
    return BridgeEnd(id=record.id, namespace=record.namespace, content_preview=content_preview(record.content))


def _bridges(
    vectors: np.ndarray,
    groups: list[np.ndarray],
    threshold: float,
    keep: int,
    band: float = 0.0,
    reaches: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[list[tuple[float, int, int]], int]:
    """(similarity, row, row) of the `keep` closest pairs of rows in different groups at or above
    the threshold, closest first, and how many pairs reached it; the pairs within `band` of it
    as `reaches(rows, rows, similarities)` decides.

    Exact: the rows are laid out group by group, and each block of a group is multiplied with
    every later group at once (one large product instead of one per pair of groups). A bound to
    skip pairs (principal directions plus Cauchy-Schwarz on the rest) was measured slower on
    MiniLM vectors: their rest is too large for the bound to prune."""
    order = np.concatenate(groups) if groups else np.zeros(0, np.int64)
    laid = np.ascontiguousarray(vectors[order])
    ends = np.cumsum([len(g) for g in groups])
    total = 0
    kept = _Best(keep)
    begin = 0
    for end in ends[:-1].tolist():
        later = laid[end:]
        rows_per_block = max(1, min(BRIDGE_BLOCK, BRIDGE_BLOCK_CELLS // max(len(later), 1)))
        for start in range(begin, end, rows_per_block):
            stop = min(start + rows_per_block, end)
            block = laid[start:stop] @ later.T
            rows, cols = np.nonzero(block >= threshold - band)
            if rows.size and reaches is not None and band > 0:
                sims = block[rows, cols]
                close = np.abs(sims - threshold) < band
                ok = sims >= threshold
                if close.any():
                    ok[close] = reaches(order[start + rows[close]], order[end + cols[close]], sims[close])
                rows, cols = rows[ok], cols[ok]
            if rows.size:
                total += int(rows.size)
                kept.add(block[rows, cols], order[start + rows], order[end + cols])
        begin = end
    return kept.ordered(), total


class _Best:
    """The `keep` closest pairs seen so far."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.sims: list[np.ndarray] = []
        self.a: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self.size = 0

    def add(self, sims: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        self.sims.append(sims)
        self.a.append(a)
        self.b.append(b)
        self.size += len(sims)
        if self.size > 4 * self.keep:
            all_sims = np.concatenate(self.sims)
            top = np.argpartition(-all_sims, self.keep - 1)[: self.keep]
            self.sims, self.a, self.b = [all_sims[top]], [np.concatenate(self.a)[top]], [np.concatenate(self.b)[top]]
            self.size = self.keep

    def ordered(self) -> list[tuple[float, int, int]]:
        if not self.sims:
            return []
        sims, a, b = np.concatenate(self.sims), np.concatenate(self.a), np.concatenate(self.b)
        order = np.lexsort((b, a, -sims))[: self.keep]
        return [(float(min(1.0, sims[k])), int(a[k]), int(b[k])) for k in order]

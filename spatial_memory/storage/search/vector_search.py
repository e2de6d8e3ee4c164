"""Nearest memories by cosine similarity (vectors are unit norm, so the dot product): from the exact
copy when it can answer, else from LanceDB, through its HNSW index once the table has one; and the
one-namespace search every LanceDB search of the store (vector or keyword) goes through."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import StorageError
from ...records import ContentMatch, ScoredMemory
from ..filters import NO_MATCH, Filter, build_filter
from ..side_tables.access_counts import AccessCounts
from ..table.connection import in_one_trip, take_in_order
from ..table.reads import Reads, summary_columns
from ..table.schema import rows_to_records
from ..table.table import MemoryTable
from .exact_search import ExactSearch
from .indexing import IndexPolicy, VectorIndexState

# A namespace's search on an indexed table: the best OVERFETCH x limit / share rows of the whole
# table, filtered afterwards, when that is at most POSTFILTER_MAX_ROWS (see `namespace_search`).
OVERFETCH = 2.0
POSTFILTER_MAX_ROWS = 2000

# start(async table handle, rows, share of the table's rows searched) -> the query begun
Start = Callable[[Any, int, float], Any]


class NamespaceSearch:
    """A LanceDB search limited to one namespace, fast on an indexed table."""

    def __init__(self, table: MemoryTable, indexed: VectorIndexState) -> None:
        self._table = table
        self._indexed = indexed
        self._shares: dict[str, tuple[int, float]] = {}  # namespace -> (version, share of the rows)

    def run(
        self, start: Start, columns: list[str], score: str, limit: int, flt: Filter | None, where: str | None
    ) -> pa.Table:
        """A search's Arrow result (the columns and its `score` column). On an indexed table, a
        search in one namespace asks for the best OVERFETCH x limit / share rows of the whole table
        (ids and scores only), keeps the namespace's, and reads the columns of the first `limit`:
        they are the namespace's best whenever that many are there (else the filter goes first, as
        on small tables). It is several times faster than filtering first on large tables
        (docs/BENCHMARKS.md)."""
        handle = self._table.handle
        namespace = flt.only_namespace if flt is not None else None
        if namespace is None or not self._indexed.ready():
            return in_one_trip(handle, lambda table: start(table, limit, 1.0), [*columns, score], limit, where)
        share = self._share(namespace)
        wide = math.ceil(limit * OVERFETCH / share) if share > 0 else POSTFILTER_MAX_ROWS + 1
        if wide <= POSTFILTER_MAX_ROWS:
            best = in_one_trip(
                handle, lambda table: start(table, wide, 1.0).with_row_id(), [score], wide, where, postfilter=True
            )
            if best.num_rows >= limit:
                best = best.slice(0, limit)
                row_ids = best.column("_rowid").to_pylist()
                rows = take_in_order(handle, row_ids, columns)
                if rows.num_rows == len(row_ids):  # else a row went away meanwhile: ask again below
                    return rows.append_column(score, best.column(score))
        return in_one_trip(handle, lambda table: start(table, limit, share), [*columns, score], limit, where)

    def _share(self, namespace: str) -> float:
        """The share of the table's rows in this namespace, kept per table version (two counts
        through the namespace's bitmap index)."""
        version = self._table.version
        cached = self._shares.get(namespace)
        if cached is None or cached[0] != version:
            total = max(self._table.count_rows(), 1)
            cached = self._shares[namespace] = (
                version,
                self._table.count_rows(build_filter(namespace=namespace).sql) / total,
            )
        return cached[1]


class VectorSearch:
    def __init__(
        self,
        table: MemoryTable,
        namespace_search: NamespaceSearch,
        indexed: VectorIndexState,
        policy: IndexPolicy,
        reads: Reads,
        exact: ExactSearch,
        accesses: AccessCounts,
    ) -> None:
        self._table = table
        self._namespace_search = namespace_search
        self._indexed = indexed
        self._policy = policy
        self._reads = reads
        self._exact = exact
        self._accesses = accesses

    def search(
        self,
        vector: np.ndarray,
        limit: int,
        flt: Filter | None = None,
        *,
        min_similarity: float = 0.0,
        with_vectors: bool = False,
    ) -> list[ScoredMemory]:
        """Nearest memories by cosine similarity."""
        exact = self._exact.search(vector, limit, flt, with_vectors)
        if exact is not None:
            self._accesses.apply_to(hit.record for hit in exact)
            return [hit for hit in exact if hit.similarity >= min_similarity]
        where = self._reads.search_where(flt)
        if where is NO_MATCH:
            return []
        table = self.nearest(vector, limit, flt, where, summary_columns(with_vectors), refine=True)
        distances = table.column("_distance").to_pylist()
        records = self._accesses.apply(rows_to_records(table.drop_columns(["_distance"])))
        similarities = [min(1.0, max(0.0, 1.0 - float(distance))) for distance in distances]
        return [ScoredMemory(r, s) for r, s in zip(records, similarities) if s >= min_similarity]

    def closest_contents(
        self, vectors: np.ndarray, limit: int, flt: Filter | None = None, *, exact_only: bool = False
    ) -> list[list[ContentMatch]] | None:
        """For each of several vectors, its `limit` nearest memories (as `search`) by id, similarity,
        content and namespace: one matrix product on the exact copy when it can answer, reading the
        hits' content only; else one search each at one version (or None, with `exact_only`, so the
        caller can choose another way)."""
        exact = self._exact.contents_many(vectors, limit, flt)
        if exact is not None or exact_only:
            return exact
        with self._table.one_version():
            return [
                [ContentMatch(h.record.id, h.similarity, h.record.content, h.record.namespace) for h in hits]
                for hits in (self.search(vector, limit, flt) for vector in vectors)
            ]

    def nearest(
        self, vector: np.ndarray, limit: int, flt: Filter | None, where: str | None, columns: list[str], *, refine: bool
    ) -> pa.Table:
        """LanceDB's nearest rows (the columns and _distance). With the vector index: its HNSW graph
        searched `IndexPolicy.search_ef` wide and, with `refine`, its candidates re-ranked on the
        full vectors."""
        policy = self._policy
        indexed = self._indexed.ready()

        def start(table: Any, rows: int, share: float) -> Any:
            query = table.query().nearest_to(np.asarray(vector, dtype=np.float32)).column("vector")
            query = query.distance_type("dot")
            if not indexed:
                return query
            query = query.ef(policy.search_ef(rows * (policy.refine_factor if refine else 1), share))
            return query.refine_factor(policy.refine_factor) if refine else query

        try:
            return self._namespace_search.run(start, columns, "_distance", limit, flt, where)
        except Exception as exc:
            raise StorageError(f"vector search failed: {exc}") from exc

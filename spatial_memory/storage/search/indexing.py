"""When and how the memories table gets its approximate vector index and scalar indexes.

Below `vector_index_threshold` rows, exact brute-force search is fast enough (and exact);
above it, an IVF_HNSW_SQ index keeps recall latency flat as the table grows. The index is
built, extended and retrained by the background upkeep thread, never on a request.
Queries over an indexed table re-rank the index's candidates on the full vectors
(`refine_factor`), which keeps recall@10 against exact search high.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

VECTOR_INDEX_NAME = "vector_idx"


@dataclass(frozen=True)
class IndexPolicy:
    vector_index_threshold: int = 50_000
    scalar_index_threshold: int = 20_000
    ef: int = 400  # HNSW search width: recall@10 against exact search per width in docs/BENCHMARKS.md
    refine_factor: int = 5
    retrain_growth: float = 2.0  # rebuild once the table has grown this much since the build
    # Compaction indexes new rows as extra index segments ("deltas"), and every query searches
    # each one, so each segment adds to every query's time (docs/BENCHMARKS.md). Past this many,
    # the index is rebuilt as a single segment.
    max_segments: int = 3

    def search_ef(self, k: int, share: float = 1.0) -> int:
        """The HNSW search width for k results among `share` of the rows (a namespace filter). A
        prefiltered search fills its width with rows that pass the filter only, walking ~1/share as
        much of the graph, so the width shrinks with the share, at no loss of recall against exact
        search (docs/BENCHMARKS.md)."""
        return max(k, math.ceil(self.ef * share))


def vector_index(table):
    """The vector index's entry in list_indices (which carries its row and segment counts;
    index_stats would also load the IVF centroids), or None."""
    return next((index for index in table.list_indices() if "vector" in index.columns), None)


def _indexed_rows(index) -> int | None:
    if index is None:
        return None
    try:
        return int(index.num_indexed_rows)
    except (AttributeError, TypeError, ValueError):
        return 0


def _segments(index) -> int:
    return 0 if index is None else int(getattr(index, "num_segments", 1) or 1)


def vector_index_rows(table) -> int | None:
    """Rows covered by the vector index, or None when there is none."""
    return _indexed_rows(vector_index(table))


def has_scalar_index(table, column: str) -> bool:
    return any(column in index.columns and "vector" not in index.columns for index in table.list_indices())


def vector_index_segments(table) -> int:
    return _segments(vector_index(table))


def ensure_indexes(table, rows: int, policy: IndexPolicy) -> list[str]:
    """Create or rebuild indexes the table's size calls for. Returns what was done."""
    from lancedb.index import HnswSq  # imported here: see connection.py's docstring

    done = []
    if rows >= policy.scalar_index_threshold:
        # session_id: recall fetches the session neighbours of its keyword hits by it.
        for column, kind in (("id", "BTREE"), ("namespace", "BITMAP"), ("session_id", "BTREE")):
            if not has_scalar_index(table, column):
                table.create_scalar_index(column, index_type=kind)
                done.append(f"{kind} index on {column}")
    index = vector_index(table)
    indexed = _indexed_rows(index)
    stale = indexed is None or rows >= policy.retrain_growth * max(indexed, 1)
    if rows >= policy.vector_index_threshold and (stale or _segments(index) > policy.max_segments):
        # One HNSW partition per ~500k rows keeps training memory bounded on big tables.
        partitions = max(1, rows // 500_000)
        table.create_index(
            "vector",
            config=HnswSq(distance_type="dot", num_partitions=partitions),
            replace=True,
            name=VECTOR_INDEX_NAME,
        )
        done.append(f"vector index over {rows} rows ({partitions} partition(s))")
    return done


# Another process may build the index: a store looks again this often.
RECHECK_INDEX_SECONDS = 30.0


class VectorIndexState:
    """Whether the memories table has its vector index, looked at again every RECHECK_INDEX_SECONDS.
    `table` is the store's MemoryTable (anything with the LanceDB table as `handle`)."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._indexed = False
        self._checked_at = 0.0
        self.refresh()

    def refresh(self) -> None:
        try:
            self._indexed = vector_index_rows(self._table.handle) is not None
        except Exception:  # noqa: BLE001 - advisory; searching without ef/refine still works
            self._indexed = False
        self._checked_at = time.monotonic()

    def ready(self) -> bool:
        if time.monotonic() - self._checked_at > RECHECK_INDEX_SECONDS:
            self.refresh()
        return self._indexed

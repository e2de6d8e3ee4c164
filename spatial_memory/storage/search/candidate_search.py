"""Recall's candidate searches (candidates.py holds what they return): from the exact copy's columns
when it can answer, else from LanceDB, reading only what the ranking uses; and the final hits'
records."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np
import pyarrow as pa

from ...records import MemoryRecord
from ..filters import NO_MATCH, Filter
from ..side_tables.access_counts import AccessCounts
from ..table.connection import ROW_ID, take_in_order
from ..table.reads import Reads
from ..table.schema import SUMMARY_COLUMNS, rows_to_records, vectors_of
from ..table.table import MemoryTable
from .candidates import RANKING_COLUMNS, Candidates
from .exact_index import UNKNOWN, Snapshot
from .exact_search import ExactSearch
from .fulltext import FullTextSearch
from .indexing import VectorIndexState
from .ranking_columns import RankingColumns
from .vector_search import VectorSearch

log = logging.getLogger(__name__)

# What a candidate read from LanceDB brings: a few short columns, the vector and the row's address,
# not the whole record. Reading every column was much slower on mid-sized tables and, on the
# largest, recall with whole-record candidates was slower in an interleaved A/B: decoding them while
# two searches share the cores costs more than the final hits' second read (docs/BENCHMARKS.md,
# round seven, and "Figures moved from code comments").
CANDIDATE_COLUMNS = ["id", *RANKING_COLUMNS, "vector", ROW_ID]


def _of_table(table: pa.Table) -> Candidates:
    """Candidates from a LanceDB result holding CANDIDATE_COLUMNS."""
    return Candidates.of_columns(table.column("id").to_pylist(), table, vectors_of(table))


class CandidateSearch:
    """Searches for ranking: candidates as columns, and the records of the final hits."""

    def __init__(
        self,
        table: MemoryTable,
        exact: ExactSearch,
        reads: Reads,
        vector: VectorSearch,
        fulltext: FullTextSearch,
        accesses: AccessCounts,
        indexed: VectorIndexState,
        clock: Callable[[], datetime],
    ) -> None:
        self._clock = clock
        self._table = table
        self._exact = exact
        self._ranking_columns = RankingColumns()
        self._reads = reads
        self._vector = vector
        self._fulltext = fulltext
        self._accesses = accesses
        self._indexed = indexed
        self._dim = table.dim

    def search(self, vector: np.ndarray, limit: int, flt: Filter | None) -> Candidates:
        """The `limit` nearest memories by cosine similarity, best first (as VectorSearch.search)."""
        found = self._exact.answering(flt)
        if found is not None:
            snap, namespace = found
            rows = [row for row, _ in self._exact.top_rows(snap, vector, limit, namespace)]
            columns = self._candidate_rows(snap, rows)
            if columns is not None:
                return columns
        where = self._reads.search_where(flt)
        if where is NO_MATCH:
            return Candidates.empty(self._dim)
        # The ranking reads its columns and the full vectors, so the index's candidates need no
        # re-ranking on them (refine) first; the final hits' records come in `materialize`.
        return _of_table(self._vector.nearest(vector, limit, flt, where, CANDIDATE_COLUMNS, refine=False))

    def keyword(self, text: str, limit: int, flt: Filter | None) -> tuple[Candidates, list[float]]:
        """The best keyword matches and their BM25 scores, best first (as FullTextSearch.search)."""
        found = self._fulltext.rows(text, limit, flt)
        if found is not None:
            snap, hits = found
            columns = self._candidate_rows(snap, [row for row, _ in hits])
            if columns is not None:
                return columns, [score for _, score in hits]
        # Only row addresses and scores from LanceDB when the copy will answer for the rows.
        snap = self._exact.snapshot(load=False) if not self._indexed.ready() else None
        if snap is not None:
            hits = self._fulltext.addresses(text, limit, flt)
            if hits is None:
                return Candidates.empty(self._dim), []
            kept = self._rows_of(snap, hits)
            if kept is not None:
                columns = self._candidate_rows(snap, [row for row, _ in kept])
                if columns is not None:
                    return columns, [score for _, score in kept]
        table = self._fulltext.query(text, limit, flt, CANDIDATE_COLUMNS)
        if table is None:
            return Candidates.empty(self._dim), []
        return _of_table(table), [float(s) for s in table.column("_score").to_pylist()]

    def _rows_of(self, snap: Snapshot, hits: list[tuple[int, float]]) -> list[tuple[int, float]] | None:
        """(row of the copy, score) of keyword hits given by row address, in order; a memory deleted
        since is left out. Addresses the copy does not know (rows written or rewritten since its
        load) are read as ids, and those rows found by id, as every hit was before; None when that
        read fails (then LanceDB answers)."""
        rows = self._exact.index.rows_at(snap, np.fromiter((a for a, _ in hits), dtype=np.int64, count=len(hits)))
        unknown = [int(address) for (address, _), row in zip(hits, rows.tolist(), strict=True) if row == UNKNOWN]
        by_address: dict[int, int] = {}
        if unknown:
            try:
                found = take_in_order(self._table.handle, unknown, ["id", ROW_ID])
            except Exception:  # noqa: BLE001 - a row gone meanwhile: LanceDB answers the whole search
                log.debug("reading keyword hits by row address failed", exc_info=True)
                return None
            for memory_id, address in zip(found.column("id").to_pylist(), found.column(ROW_ID).to_pylist()):
                row = snap.positions.get(memory_id)
                if row is not None:
                    by_address[address] = row
        kept = []
        for (address, score), row in zip(hits, rows.tolist(), strict=True):
            row = by_address.get(address) if row == UNKNOWN else row
            if row is not None:
                kept.append((row, score))
        return kept

    def neighbours(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None) -> Candidates:
        """Memories whose session and sequence lie in one of the windows (as Reads.neighbours)."""
        if not windows:
            return Candidates.empty(self._dim)
        found = self._exact.answering(flt)
        if found is not None:
            snap, namespace = found
            columns = self._candidate_rows(snap, self._exact.session_rows(snap, windows, namespace))
            if columns is not None:
                return columns
        return Candidates.of_records(self._reads.neighbours(windows, flt), self._dim)

    def materialize(self, candidates: Candidates, indices: Sequence[int]) -> list[MemoryRecord | None]:
        """The records (without vectors) of these candidates, in order; None for a memory deleted since."""
        missing = [i for i in indices if candidates.records[i] is None]
        fetched = self._records_at(candidates, missing)
        by_id = [candidates.ids[i] for i in missing if candidates.ids[i] not in fetched]
        if by_id:
            fetched.update((r.id, r) for r in self._reads.get_many(by_id))
        out: list[MemoryRecord | None] = []
        for i in indices:
            record = candidates.records[i]
            if record is None:
                out.append(fetched.get(candidates.ids[i]))
            else:
                record.vector = None
                out.append(record)
        return out

    def _records_at(self, candidates: Candidates, indices: Sequence[int]) -> dict[str, MemoryRecord]:
        """id -> record of the candidates read from LanceDB, taken at their row addresses: one read
        instead of a search of the id index (faster on large tables: docs/BENCHMARKS.md). A row
        deleted or moved by a compaction since is not there, or holds another memory: it is left
        out, for `get_many` to find by id."""
        known = [(candidates.ids[i], address) for i in indices if (address := candidates.addresses[i]) is not None]
        if not known:
            return {}
        try:
            table = take_in_order(self._table.handle, [address for _, address in known], SUMMARY_COLUMNS)
        except Exception:  # noqa: BLE001 - an address a compaction removed: ask by id instead
            log.debug("reading candidates by row address failed", exc_info=True)
            return {}
        wanted, now = {memory_id for memory_id, _ in known}, self._clock()
        records = [r for r in rows_to_records(table) if r.id in wanted and not r.expired(now)]
        return {r.id: r for r in self._accesses.apply(records)}

    def _candidate_rows(self, snap: Snapshot, rows: list[int]) -> Candidates | None:
        """The copy's rows as candidates; None when the table no longer matches the copy."""
        if not rows:
            return Candidates.empty(self._dim)
        positions = np.asarray(rows, dtype=np.int64)
        current = snap.current_summary[positions]
        if current.all():
            return self._ranking_columns.candidates(snap, positions)
        # Rows written or rewritten since the copy was loaded: their records, kept by the copy or fetched.
        fresh = positions[current]
        stale = positions[~current]
        records = self._exact.fetch_rows(snap, stale.tolist(), with_vectors=False)
        if records is None:
            return None
        parts = [
            self._ranking_columns.candidates(snap, fresh),
            Candidates.of_records(records, self._dim, vectors=snap.vectors[stale], keep=False),
        ]
        # back to the rows' order
        return Candidates.concat(parts).take(np.argsort(np.r_[np.flatnonzero(current), np.flatnonzero(~current)]))

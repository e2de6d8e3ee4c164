"""Searches and row fetches answered by the in-memory exact copy (exact_index.py) instead of
LanceDB, while the table is below the size of its approximate index. Every method returns None
when the copy cannot answer (a filter it cannot apply, a copy gone stale), and the caller asks
LanceDB instead."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from copy import copy
from datetime import datetime

import numpy as np

from ...records import ContentMatch, MemoryRecord, ScoredMemory
from ..filters import Filter, build_filter, ids_clause
from ..table.connection import take_in_order
from ..table.schema import SUMMARY_COLUMNS, rows_to_records
from ..table.table import MemoryTable
from .exact_index import UNKNOWN, ExactIndex, Snapshot
from .indexing import VectorIndexState
from .keyword_index import KeywordIndex
from .row_records import RowRecords

log = logging.getLogger(__name__)

# Up to this many unresolved row addresses are looked up by id; more (many rewritten rows),
# by one scan of the id column.
RESOLVE_BY_ID_MAX = 1024


class ExactSearch:
    def __init__(
        self,
        table: MemoryTable,
        index: ExactIndex,
        keywords: KeywordIndex,
        indexed: VectorIndexState,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self.index = index
        self._keywords = keywords
        self._indexed = indexed
        self._clock = clock
        self._skipped_at: int | None = None  # a version found too big for the copy
        self._row_records = RowRecords()

    def snapshot(self, *, load: bool = True) -> Snapshot | None:
        """The exact copy at the table's current version (loading it if allowed and small
        enough), or None when searches must go to LanceDB."""
        if self._indexed.ready():
            return None
        try:
            version = self._table.version
            snap = self.index.current(version)
            if snap is not None or not load or self._skipped_at == version:
                return snap
            if self._table.count_rows() > self.index.max_rows:
                self._skipped_at = version
                return None
            columns = [*SUMMARY_COLUMNS, "vector"]
            scan = self._table.handle.search().select(columns).with_row_id(True).limit(None).to_arrow()
            if self._table.newest_version != version:
                return None  # changed while reading: let LanceDB answer this time
            snap = self.index.load(scan, version)
            if snap is not None:
                self._row_records.fill_in_background(snap)
            return snap
        except Exception:  # noqa: BLE001 - LanceDB's own search is always there to fall back on
            log.debug("exact index unavailable", exc_info=True)
            return None

    def answering(self, flt: Filter | None) -> tuple[Snapshot, str | None] | None:
        """The copy and the namespace to keep when the copy can answer under this filter (none, or
        one namespace only); None when LanceDB must."""
        if flt is not None and (flt.metadata or flt.as_of is not None or (flt.sql and flt.only_namespace is None)):
            return None
        snap = self.snapshot()
        if snap is None:
            return None
        return snap, flt.only_namespace if flt else None

    def _now(self) -> float:
        return self._clock().timestamp()

    def top_rows(
        self, snap: Snapshot, vector: np.ndarray, limit: int, namespace: str | None
    ) -> list[tuple[int, float]]:
        """(row, similarity) of the copy's best `limit` live rows, best first."""
        return self.index.top(snap, vector, limit, namespace, self._now())

    def keyword_rows(
        self, snap: Snapshot, words: str, limit: int, namespace: str | None
    ) -> list[tuple[int, float]] | None:
        """(row, BM25 score) of the copy's best `limit` live rows for a keyword query, best first
        (keyword_index.py); None when the copy cannot answer it."""
        return self._keywords.search(snap, words, limit, self.index.live(snap, namespace, self._now()))

    def session_rows(self, snap: Snapshot, windows: Sequence[tuple[str, int, int]], namespace: str | None) -> list[int]:
        return self.index.session_rows(snap, windows, namespace, self._now())

    def search(
        self, vector: np.ndarray, limit: int, flt: Filter | None, with_vectors: bool
    ) -> list[ScoredMemory] | None:
        found = self.answering(flt)
        if found is None:
            return None
        snap, namespace = found
        top = self.top_rows(snap, vector, limit, namespace)
        records = self.fetch_rows(snap, [row for row, _ in top], with_vectors=with_vectors)
        if records is None:
            return None
        return [ScoredMemory(r, min(1.0, max(0.0, score))) for r, (_, score) in zip(records, top)]

    def contents_many(self, vectors: np.ndarray, limit: int, flt: Filter | None) -> list[list[ContentMatch]] | None:
        """`search` for several vectors, one product, reading only each hit's content and namespace:
        the write checks compare texts, and building every hit's whole record took most of their
        time."""
        found = self.answering(flt)
        if found is None:
            return None
        snap, namespace = found
        tops = self.index.top_many(snap, vectors, limit, namespace, self._now())
        by_row = self._contents(snap, list(dict.fromkeys(row for top in tops for row, _ in top)))
        if by_row is None:
            return None
        return [
            [ContentMatch(snap.ids[row], min(1.0, max(0.0, score)), *by_row[row]) for row, score in top] for top in tops
        ]

    def _contents(self, snap: Snapshot, rows: list[int]) -> dict[int, tuple[str, str]] | None:
        """row -> (content, namespace) for these rows of the copy: from the copy's summary, or from
        the records of rows rewritten since it was loaded; None when the table no longer matches
        the copy."""
        current = [row for row in rows if snap.current_summary[row]]
        found: dict[int, tuple[str, str]] = {}
        if current:
            table = snap.summary.select(["content", "namespace"]).take(current)
            found.update(zip(current, zip(table.column("content").to_pylist(), table.column("namespace").to_pylist())))
        stale = [row for row in rows if row not in found]
        if stale:
            records = self.fetch_rows(snap, stale, with_vectors=False)
            if records is None:
                return None
            found.update((row, (r.content, r.namespace)) for row, r in zip(stale, records, strict=True))
        return found

    def neighbours(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None) -> list[MemoryRecord] | None:
        """Session neighbours from the copy (with vectors)."""
        found = self.answering(flt)
        if found is None:
            return None
        snap, namespace = found
        return self.fetch_rows(snap, self.session_rows(snap, windows, namespace), with_vectors=True)

    def pinned(self, namespace: str | None) -> list[MemoryRecord] | None:
        """Pinned memories (with vectors) from the copy."""
        snap = self.snapshot()
        if snap is None:
            return None
        return self.fetch_rows(snap, self.index.pinned_rows(snap, namespace), with_vectors=True)

    def fetch_rows(self, snap: Snapshot, rows: list[int], *, with_vectors: bool) -> list[MemoryRecord] | None:
        """The records at these rows of the copy, in order; None when the table no longer
        matches the copy (a row is missing)."""
        if not rows:
            return []
        wanted = [snap.ids[row] for row in rows]
        loaded = [row for row in rows if snap.current_summary[row]]
        by_id = {r.id: r for r in self._row_records.of_rows(snap, loaded)} if loaded else {}
        by_id.update(self.index.kept([i for i in wanted if i not in by_id]))
        missing = [row for row in rows if snap.ids[row] not in by_id]
        if missing:  # (the usual recall has none: no read, no wait for the copy's lock)
            fresh = self._read_missing(snap, missing)
            if fresh is None:
                return None
            wanted_ids = set(wanted)
            fresh = [r for r in fresh if r.id in wanted_ids]
            self.index.keep(snap, fresh)
            by_id.update((r.id, r) for r in fresh)
            if any(i not in by_id for i in wanted):
                return None
        # Copies, so a caller changing a record (its tags and metadata too) never changes the kept
        # one. The copy's vectors are the stored ones (the same float32 values).
        out = [_own_copy(by_id[i]) for i in wanted]
        for record, row in zip(out, rows, strict=True):
            if row in snap.accessed:  # recall's access counts, written since the summary's
                record.access_count, record.last_accessed = snap.accessed[row]
            if with_vectors:
                record.vector = snap.vectors[row].copy()
        return out

    def _read_missing(self, snap: Snapshot, rows: list[int]) -> list[MemoryRecord] | None:
        """The records of rows the copy does not hold, from LanceDB: by row address when known, else
        by id; None when an address is stale."""
        addresses = [int(snap.addresses[row]) for row in rows if snap.addresses[row] != UNKNOWN]
        unknown = [snap.ids[row] for row in rows if snap.addresses[row] == UNKNOWN]
        try:
            found: list[MemoryRecord] = []
            if addresses:
                found += rows_to_records(take_in_order(self._table.handle, addresses, SUMMARY_COLUMNS))
            if unknown:
                found += rows_to_records(self._table.scan(build_filter(ids=unknown).sql, SUMMARY_COLUMNS))
            return found
        except Exception:  # noqa: BLE001 - stale addresses: fall back to a search by value
            log.debug("fetching rows by address failed", exc_info=True)
            return None

    def refresh(self) -> None:
        """Upkeep: (re)load the exact copy, index its rows' words for keyword search, build the
        records of its rows (a small copy), and look up row addresses of rows written since."""
        snap = self.snapshot()
        if snap is None:
            self._keywords.release()  # searches go to LanceDB now (or the next load indexes anew)
            return
        self._keywords.cover(snap)  # here rather than in the next keyword search
        self._row_records.fill(snap)  # and the records of rows written since, rather than when shown
        pending = self.index.unresolved(snap)
        if not pending:
            return
        try:
            query = self._table.handle.search().with_row_id(True)
            if len(pending) > RESOLVE_BY_ID_MAX:  # many rewritten rows: every address, from one scan
                found = query.select(["id"]).limit(None).to_arrow()
            else:
                query = query.where(ids_clause(pending)).select(SUMMARY_COLUMNS)
                found = query.limit(len(pending)).to_arrow()
            if self._table.newest_version != snap.version:
                return
        except Exception:  # noqa: BLE001 - advisory: unresolved rows are fetched by id
            log.debug("resolving row addresses failed", exc_info=True)
            return
        ids, addresses = found.column("id").to_pylist(), found.column("_rowid").to_pylist()
        self.index.resolve_addresses(snap.version, dict(zip(ids, addresses)))
        if len(pending) <= RESOLVE_BY_ID_MAX:
            # Rewritten rows (recall's access counts) are the ones found again soonest: keep them
            # now rather than on the next search that hits them.
            self.index.keep(snap, rows_to_records(found.drop_columns(["_rowid"])))


def _own_copy(record: MemoryRecord) -> MemoryRecord:
    """A copy of a kept record that shares nothing a caller could change in place."""
    mine = copy(record)
    mine.tags = list(record.tags)
    mine.metadata = dict(record.metadata)
    return mine

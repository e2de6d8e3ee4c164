"""Reading memories: the where clause every read and delete goes through (expired memories left out,
access counts folded in when a filter reads them, metadata conditions as ids), and the reads of
whole records - from the exact copy when it can answer, else from LanceDB - with their access
counts laid over them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from ...records import MemoryRecord, is_uuid
from ..filters import (
    NO_MATCH,
    Filter,
    both,
    build_filter,
    chunks,
    metadata_matches,
    pinned_only,
    session_windows,
    unexpired,
)
from ..search.exact_search import ExactSearch
from ..side_tables.access_counts import AccessCounts
from ..side_tables.access_ledger import ACCESS_COLUMNS
from ..writing.expiry import Expiry
from ..writing.writer import Writer
from .schema import SUMMARY_COLUMNS, NamespaceInfo, rows_to_records
from .table import MemoryTable


def summary_columns(with_vectors: bool) -> list[str]:
    return SUMMARY_COLUMNS + (["vector"] if with_vectors else [])


class Reads:
    def __init__(
        self,
        table: MemoryTable,
        writer: Writer,
        accesses: AccessCounts,
        expiry: Expiry,
        exact: ExactSearch,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self._writer = writer
        self._accesses = accesses
        self._expiry = expiry
        self._exact = exact
        self._clock = clock

    # ---- where clauses ---------------------------------------------------------------------

    def where(self, flt: Filter | None, *, live: bool = True) -> str | None:
        """The filter's where clause, with the ledger's access counts folded into the rows first
        when the clause reads them. `live`: expired memories are left out (when any memory has
        expired at all: see Expiry)."""
        sql = None
        if flt is not None:
            if flt.columns & ACCESS_COLUMNS and not self._writer.read_only and self._accesses.pending_in_ledger():
                self._accesses.fold()
            sql = flt.sql
        if live:
            moment = flt.as_of if flt is not None and flt.as_of is not None else self._clock()
            if flt is not None and flt.as_of is not None or self._expiry.earliest() <= moment.timestamp():
                sql = unexpired(moment) if sql is None else f"({sql}) AND {unexpired(moment)}"
        return sql

    def search_where(self, flt: Filter | None) -> str | None:
        """The where clause of a search under `flt`: metadata conditions, which SQL cannot read in
        the JSON column, become the ids that meet them (NO_MATCH when none does)."""
        if flt is None or not flt.metadata:
            return self.where(flt)
        ids = self.matching_ids(flt)
        return build_filter(ids=ids).sql if ids else NO_MATCH

    def matching_ids(self, flt: Filter) -> list[str]:
        table = self._table.scan(self.where(flt), ["id", "metadata"])
        ids = table.column("id").to_pylist()
        metas = table.column("metadata").to_pylist()
        return [i for i, m in zip(ids, metas) if metadata_matches(json.loads(m) if m else {}, flt.metadata)]

    # ---- records ---------------------------------------------------------------------------

    def count(self, flt: Filter | None = None) -> int:
        if flt is not None and flt.metadata:
            return len(self.matching_ids(flt))
        return self._table.count_rows(self.where(flt))

    def get(self, memory_id: str, *, with_vector: bool = False) -> MemoryRecord | None:
        found = self.get_many([memory_id], with_vectors=with_vector)
        return found[0] if found else None

    def get_many(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[MemoryRecord]:
        """Records for the ids that exist, in the order asked."""
        wanted = [i for i in dict.fromkeys(ids) if is_uuid(i)]
        if not wanted:
            return []
        snap = self._exact.snapshot(load=False)
        if snap is not None:
            rows = [snap.positions[i] for i in wanted if i in snap.positions]
            fetched = self._exact.fetch_rows(snap, rows, with_vectors=with_vectors)
            if fetched is not None:
                now = self._clock()
                return self._accesses.apply([r for r in fetched if not r.expired(now)])
        # one row per id at most: no count of the matching rows first
        where = self.where(build_filter(ids=wanted))
        table = self._table.scan(where, summary_columns(with_vectors), limit=len(wanted))
        by_id = {r.id: r for r in rows_to_records(table)}
        return self._accesses.apply([by_id[i] for i in wanted if i in by_id])

    def scan(
        self, flt: Filter | None = None, *, with_vectors: bool = False, limit: int | None = None
    ) -> list[MemoryRecord]:
        columns = summary_columns(with_vectors)
        table = self._table.scan(self.where(flt), columns, limit=None if flt and flt.metadata else limit)
        records = rows_to_records(table)
        if flt is not None and flt.metadata:
            records = [r for r in records if metadata_matches(r.metadata, flt.metadata)][:limit]
        return self._accesses.apply(records)

    def nth(self, index: int, flt: Filter | None = None, *, with_vector: bool = False) -> MemoryRecord | None:
        """The index-th matching row in storage order (for picking a random memory cheaply)."""
        where = self.where(flt)
        query = self._table.handle.search().select(summary_columns(with_vector)).offset(int(index)).limit(1)
        if where:
            query = query.where(where)
        found = self._accesses.apply(rows_to_records(query.to_arrow()))
        return found[0] if found else None

    def scan_arrow(self, columns: list[str], flt: Filter | None = None) -> pa.Table:
        return self._accesses.apply_arrow(self._table.scan(self.where(flt), columns))

    def neighbours(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None = None) -> list[MemoryRecord]:
        """Memories (with vectors) whose session and sequence lie in one of the windows
        (session_id, low, high), and that match the filter: from the exact copy when it can answer."""
        if not windows:
            return []
        found = self._exact.neighbours(windows, flt)
        if found is not None:
            return self._accesses.apply(found)
        window_filter = session_windows(windows)
        return self.scan(both(flt, window_filter) if flt is not None else window_filter, with_vectors=True)

    def pinned(self, namespace: str | None, limit: int) -> list[MemoryRecord]:
        """A namespace's pinned memories (every namespace's when None), most important first, with
        their vectors: from the exact copy when it can answer."""
        records = self._exact.pinned(namespace)
        if records is None:
            records = self.scan(pinned_only(namespace), with_vectors=True)
        records.sort(key=lambda r: (-r.importance, r.created_at, r.id))
        return records[:limit]

    # ---- facts -----------------------------------------------------------------------------

    def last_sequences(self, sessions: Iterable[str]) -> dict[str, int]:
        """The highest sequence stored in each of these sessions (sessions without one left out)."""
        wanted = sorted(sessions)
        last: dict[str, int] = {}
        for chunk in chunks(wanted):
            table = self._table.scan(
                build_filter(filters={"session_id": {"in": chunk}}).sql, ["session_id", "sequence"]
            )
            if table.num_rows == 0:
                continue
            grouped = table.group_by("session_id").aggregate([("sequence", "max")])
            sessions_found = grouped.column("session_id").to_pylist()
            tops = grouped.column("sequence_max").to_pylist()
            last.update(
                {session: int(top) for session, top in zip(sessions_found, tops, strict=True) if top is not None}
            )
        return last

    def expired_ids(self) -> list[str]:
        """Memories past their expiry, still stored (upkeep purges them)."""
        now = self._clock()
        if self._expiry.earliest() > now.timestamp():
            return []
        return self._table.scan(f"NOT {unexpired(now)}", ["id"]).column("id").to_pylist()

    def namespaces(self) -> list[NamespaceInfo]:
        table = self._table.scan(self.where(None), ["namespace", "created_at"])
        if table.num_rows == 0:
            return []
        grouped = table.group_by("namespace").aggregate(
            [("created_at", "min"), ("created_at", "max"), ("namespace", "count")]
        )
        infos = [
            NamespaceInfo(row["namespace"], row["namespace_count"], row["created_at_min"], row["created_at_max"])
            for row in grouped.to_pylist()
        ]
        return sorted(infos, key=lambda n: n.name)

    def stats(self) -> dict[str, Any]:
        handle = self._table.handle
        stats = self._table.statistics()
        fragments = stats["fragment_stats"]
        indices = [
            {
                "name": index.name,
                "index_type": str(index.index_type),
                "column": index.columns[0] if index.columns else "",
                "num_indexed_rows": int(getattr(index, "num_indexed_rows", 0) or 0),
                "status": "ready" if not getattr(index, "num_unindexed_rows", 0) else "needs_update",
            }
            for index in handle.list_indices()
        ]
        return {
            "total_bytes": int(stats["total_bytes"]),
            "num_rows": int(stats["num_rows"]),
            "num_fragments": int(fragments["num_fragments"]),
            "num_small_fragments": int(fragments["num_small_fragments"]),
            "indices": indices,
            "version": handle.version,
        }

"""Recall's access counts, kept beside the memories table once it has a vector index.

Writing a count into a memory row rewrites the row - a LanceDB update is a delete plus an
append - and a fragment with deleted rows makes every indexed query apply a deletion mask.
On a large store, recall bookkeeping that rewrote well under one percent of the rows made
indexed queries several times slower (docs/BENCHMARKS.md), and LanceDB's compaction drops the
mask only once 10 % of a fragment is deleted. So on an indexed table the counts
go to this small table instead: one row per accessed memory with its current access_count
and last_accessed. The values are absolute, not increments, so writing them twice (a crash
between folding them into the memory rows and clearing them here) changes nothing.

The memory store lays these values over every record it returns, and folds them into the
memory rows when a filter needs them there, when the table has no vector index, and when
the ledger passes FOLD_FRACTION of the rows (access_counts.py). Every write to the ledger happens under the
store's write lock, so its writers never race each other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from ..filters import quote

log = logging.getLogger(__name__)

LEDGER_TABLE = "access_ledger"
# How often a reader looks for a ledger another process may have created. Access counts are
# written in the background seconds after a recall anyway, so this adds no new staleness.
RECHECK_SECONDS = 1.0
OPTIMIZE_AFTER_WRITES = 24
ACCESS_COLUMNS = frozenset({"access_count", "last_accessed"})
_TS = pa.timestamp("us", tz="UTC")
_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("access_count", pa.int32(), nullable=False),
        pa.field("last_accessed", _TS, nullable=False),
    ]
)


@dataclass(frozen=True)
class Access:
    count: int
    last: datetime


def accesses_table(ids: Sequence[str], accesses: Sequence[Access]) -> pa.Table:
    """id, access_count, last_accessed as Arrow (also the source of a fold's merge-insert)."""
    return pa.Table.from_arrays(
        [
            pa.array(list(ids), pa.string()),
            pa.array([a.count for a in accesses], pa.int32()),
            pa.array([a.last for a in accesses], _TS),
        ],
        schema=_SCHEMA,
    )


class AccessLedger:
    def __init__(self, db: Any) -> None:
        self._db = db
        self._table: Any = None
        self._version: int | None = None
        self._entries: dict[str, Access] = {}
        self._looked_at = float("-inf")
        self._lock = threading.Lock()
        self._writes = 0

    def reconnect(self, db: Any) -> None:
        """Follow the store onto a new connection (see MemoryTable.reconnect)."""
        with self._lock:
            self._db = db
            if self._table is not None:
                self._table = db.open_table(LEDGER_TABLE)

    def entries(self, *, exact: bool = False) -> dict[str, Access]:
        """The ledger at its latest version. Until one exists, readers look for a ledger created
        by another process at most every RECHECK_SECONDS; `exact` (writers) looks now."""
        with self._lock:
            if self._table is None:
                now = time.monotonic()
                if not exact and now - self._looked_at < RECHECK_SECONDS:
                    return self._entries
                self._looked_at = now
                if LEDGER_TABLE not in self._db.list_tables().tables:
                    return self._entries
                self._table = self._db.open_table(LEDGER_TABLE)
            version = self._table.version
            if version != self._version:
                data = self._table.search().select(_SCHEMA.names).limit(None).to_arrow()
                self._entries = _entries_of(data)
                self._version = version
            return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def _readable_entries(self) -> dict[str, Access]:
        try:
            return self.entries()
        except Exception as exc:  # noqa: BLE001 - counts are bookkeeping; the memories still read
            log.warning("could not read the access ledger, access counts may be behind: %s", exc)
            return {}

    def apply(self, records: Iterable[Any]) -> None:
        """Lay the ledger's values over records just read from the memories table."""
        entries = self._readable_entries()
        if not entries:
            return
        for record in records:
            access = entries.get(record.id)
            if access is not None:
                record.access_count = access.count
                record.last_accessed = access.last

    def apply_arrow(self, table: pa.Table) -> pa.Table:
        """The same over an Arrow scan (export) that has an id column."""
        entries = self._readable_entries()
        wanted = [name for name in ACCESS_COLUMNS if name in table.column_names]
        if not entries or not wanted or "id" not in table.column_names:
            return table
        hits = [(row, entries[i]) for row, i in enumerate(table.column("id").to_pylist()) if i in entries]
        if not hits:
            return table
        for name in wanted:
            values = table.column(name).to_pylist()
            for row, access in hits:
                values[row] = access.count if name == "access_count" else access.last
            position = table.column_names.index(name)
            table = table.set_column(position, table.field(name), pa.array(values, table.field(name).type))
        return table

    # ---- writes: the caller holds the store's write lock -----------------------------------

    def write(self, updates: dict[str, Access]) -> None:
        if not updates:
            return
        self.entries(exact=True)
        data = accesses_table(list(updates), list(updates.values()))
        with self._lock:
            if self._table is None:
                try:
                    self._table = self._db.create_table(LEDGER_TABLE, schema=_SCHEMA)
                except (ValueError, OSError):  # created by another process since we looked
                    self._table = self._db.open_table(LEDGER_TABLE)
        self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._committed(updated=updates)

    def drop(self, ids: Iterable[str]) -> list[str]:
        """Forget the entries of these ids (rows just rewritten or deleted); returns those dropped."""
        entries = self.entries(exact=True)
        if not entries:
            return []
        gone = [i for i in dict.fromkeys(ids) if i in entries]
        if not gone:
            return []
        everything = len(gone) == len(entries)
        where = "true" if everything else f"id IN ({', '.join(quote(i) for i in gone)})"
        self._table.delete(where)
        self._committed(removed=gone)
        return gone

    def _committed(self, *, updated: dict[str, Access] | None = None, removed: Sequence[str] = ()) -> None:
        """Bring the in-memory copy to the commit just made instead of re-reading the table
        (nobody else can have committed in between: writers hold the store lock)."""
        with self._lock:
            entries = {**self._entries, **(updated or {})}
            for i in removed:
                entries.pop(i, None)
            self._entries = entries
            self._version = self._table.version
            self._writes += 1

    @property
    def writes_since_optimize(self) -> int:
        return self._writes

    def needs_optimize(self) -> bool:
        return self._table is not None and self._writes >= OPTIMIZE_AFTER_WRITES

    def optimize(self, retention: timedelta) -> None:
        """Merge the ledger's small fragments and drop versions older than `retention`. A reader
        always loads the latest version, which cleanup never removes."""
        if self._table is None:
            return
        self._table.optimize(cleanup_older_than=retention)
        with self._lock:
            self._writes = 0


def _entries_of(data: pa.Table) -> dict[str, Access]:
    ids = data.column("id").to_pylist()
    counts = data.column("access_count").to_pylist()
    stamps = data.column("last_accessed").to_pylist()
    return {i: Access(int(c), t) for i, c, t in zip(ids, counts, stamps)}

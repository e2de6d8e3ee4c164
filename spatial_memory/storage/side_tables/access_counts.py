"""Recall's access counts: written into the memory rows while the table has no vector index, into
the access ledger beside it once it has one (access_ledger.py says why), and laid over every
record the store returns."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

from ...errors import StorageError
from ...records import MemoryRecord, is_uuid, utc_now
from ..filters import build_filter, quote
from ..search.exact_index import Change
from ..search.indexing import VectorIndexState
from ..table.table import MemoryTable
from ..writing.writer import WriteActivity, Writer
from .access_ledger import Access, AccessLedger, accesses_table

log = logging.getLogger(__name__)

# Folding this share of a table's rows into it deletes as many rows in its fragments, which
# is where LanceDB's compaction rewrites a fragment and drops its deletion mask anyway.
FOLD_FRACTION = 0.1


class AccessCounts:
    def __init__(
        self,
        table: MemoryTable,
        writer: Writer,
        ledger: AccessLedger,
        indexed: VectorIndexState,
        activity: WriteActivity,
        retention: timedelta,
    ) -> None:
        self._table = table
        self._writer = writer
        self.ledger = ledger
        self._indexed = indexed
        self._activity = activity
        self._retention = retention

    # ---- reads -----------------------------------------------------------------------------

    def apply(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """The records (just read from the memories table) with the ledger's counts laid over them."""
        self.ledger.apply(records)
        return records

    def apply_to(self, records: Iterable[Any]) -> None:
        self.ledger.apply(records)

    def apply_arrow(self, table: pa.Table) -> pa.Table:
        return self.ledger.apply_arrow(table)

    def pending_in_ledger(self) -> bool:
        """The ledger holds counts the memory rows lack (writers' view: looked at now)."""
        return bool(self.ledger.entries(exact=True))

    # ---- writes ----------------------------------------------------------------------------

    def record(self, counts: dict[str, int], when: datetime | None = None) -> None:
        """Add recall accesses (id -> how many) and stamp last_accessed: into the access ledger
        once the table has a vector index, into the rows before that."""
        wanted = {i: int(n) for i, n in counts.items() if is_uuid(i) and int(n) > 0}
        if not wanted:
            return
        when = (when or utc_now()).astimezone(timezone.utc)
        with self._writer.lock:
            if self._indexed.ready():
                self._into_ledger(wanted, when)
            else:
                self.fold()
                self._into_rows(wanted, when)

    def _into_rows(self, counts: dict[str, int], when: datetime) -> None:
        """One update per distinct count."""
        naive = when.replace(tzinfo=None)
        stamp = f"CAST('{naive.isoformat(sep=' ', timespec='microseconds')}' AS TIMESTAMP)"
        by_count: dict[int, list[str]] = {}
        for memory_id, n in counts.items():
            by_count.setdefault(n, []).append(memory_id)
        for n, ids in by_count.items():
            where = f"id IN ({', '.join(quote(i) for i in ids)})"
            values = {"access_count": f"access_count + {int(n)}", "last_accessed": stamp}
            self._writer.commit(
                "recording accesses failed",
                lambda w=where, v=values: self._table.handle.update(where=w, values_sql=v),
                change=Change(moved=ids, counted=(n, when)),
            )

    def _into_ledger(self, counts: dict[str, int], when: datetime) -> None:
        entries = self.ledger.entries(exact=True)
        unseen = [i for i in counts if i not in entries]
        base: dict[str, int] = {}
        if unseen:
            rows = self._table.scan(build_filter(ids=unseen).sql, ["id", "access_count"])
            base = dict(zip(rows.column("id").to_pylist(), rows.column("access_count").to_pylist()))
        updates = {}
        for memory_id, n in counts.items():
            before = entries[memory_id].count if memory_id in entries else base.get(memory_id)
            if before is not None:  # else deleted since the recall
                updates[memory_id] = Access(int(before) + n, when)
        self._writer.attempt("recording accesses failed", lambda: self.ledger.write(updates), counted=False)
        if self.ledger.needs_optimize():
            self._writer.attempt(
                "tidying the access ledger failed", lambda: self.ledger.optimize(self._retention), counted=False
            )
        if len(self.ledger) > FOLD_FRACTION * max(self._table.count_rows(), 1):
            self.fold()
            # The fold deleted a tenth of the rows from their fragments: let the next upkeep
            # pass compact, which rewrites those fragments without their deletion masks.
            self._activity.compact_soon()

    def fold(self) -> None:
        """Write the ledger's access counts into the memory rows (one commit) and clear it."""
        with self._writer.lock:
            entries = self.ledger.entries(exact=True)
            if not entries:
                return
            ids = list(entries)
            data = accesses_table(ids, [entries[i] for i in ids])
            self._writer.commit(
                "writing access counts failed, nothing was changed",
                lambda: self._table.handle.merge_insert("id").when_matched_update_all().execute(data),
                change=Change(moved=ids, accesses={i: (entries[i].count, entries[i].last) for i in ids}),
            )
            self.forget(ids)

    def forget(self, ids: Sequence[str]) -> None:
        """Drop ledger entries of rows just written with their access values, or deleted
        (under the write lock, after the commit that made them redundant)."""
        try:
            self._writer.attempt("clearing the access ledger failed", lambda: self.ledger.drop(ids), counted=False)
        except StorageError as exc:
            # The memory write landed. An entry left behind still holds the row's current
            # values unless the row was replaced from outside (import), where it is now stale.
            log.warning("%s", exc)

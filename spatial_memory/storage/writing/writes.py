"""Writing memories: each public write is one commit to the memories table (all of it or none),
under the write lock; what hangs off a memory (its history, relations, co-recall links, ledger
entry) is dropped before a delete's commit and its access counts forgotten after, so a crash
between them leaves the memory, never a history without it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from ...errors import StorageError
from ...records import MemoryRecord, is_uuid
from ..filters import MAX_LIST_VALUES, Filter, build_filter, unexpired
from ..search.exact_index import Change, Written
from ..side_tables.access_counts import AccessCounts
from ..side_tables.co_recall import CoRecall
from ..side_tables.history import RetiredState, VersionHistory
from ..side_tables.relations import RELATIONS_TABLE, Relation, Relations
from ..table.reads import Reads
from ..table.schema import HISTORY_TABLE
from ..table.table import MemoryTable
from .pending_imports import PENDING_IMPORTS_TABLE, PendingImports
from .writer import WriteActivity, Writer

log = logging.getLogger(__name__)

# An add of at least this many rows lets the next upkeep pass compact: rows outside the full-text
# index are found by a slow scan until compaction folds them in.
BULK_ROWS = 1000


def expiry_seconds(record: MemoryRecord) -> float:
    """When the record expires, in epoch seconds (inf: never, as for pinned ones)."""
    if record.pinned or record.expires_at is None:
        return float("inf")
    return record.expires_at.timestamp()


def written(records: Sequence[MemoryRecord]) -> list[Written]:
    """The records as the exact copy follows them (exact_index.Written)."""
    return [
        Written(
            r.id,
            r.namespace,
            np.asarray(r.vector, dtype=np.float32),
            r.conversation.session_id,
            r.conversation.sequence,
            expiry_seconds(r),
            bool(r.pinned),
        )
        for r in records
    ]


class MemoryWrites:
    def __init__(
        self,
        table: MemoryTable,
        writer: Writer,
        reads: Reads,
        accesses: AccessCounts,
        history: VersionHistory,
        relations: Relations,
        co_recall: CoRecall,
        pending: PendingImports,
        activity: WriteActivity,
        clock: Callable[[], datetime],
    ) -> None:
        self._table = table
        self._writer = writer
        self._reads = reads
        self._accesses = accesses
        self._history = history
        self._relations = relations
        self._co_recall = co_recall
        self._pending = pending
        self._activity = activity
        self._clock = clock

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert records in one commit: all of them or none."""
        if not records:
            return
        first = build_filter(ids=[records[0].id]).sql  # an add commits every row or none
        with self._writer.lock:
            records = self._in_arrival_order(records)
            data = self._table.to_arrow(records)
            self._writer.commit(
                "write failed, nothing was stored",
                lambda: self._table.handle.add(data),
                landed=lambda: self._table.count_rows(first) > 0,
                change=Change(written=written(records), rows=data),
            )
            self._accesses.forget([r.id for r in records])
        if len(records) >= BULK_ROWS:
            self._activity.compact_soon()

    def _in_arrival_order(self, records: Sequence[MemoryRecord]) -> Sequence[MemoryRecord]:
        """Records of a session given without a sequence get the next ones after the session's
        last, in the order given (called under the write lock, so two writers never share one)."""
        sessions = {
            r.conversation.session_id for r in records if r.conversation.session_id and r.conversation.sequence is None
        }
        if not sessions:
            return records
        last = self._reads.last_sequences(sessions)
        for r in records:  # sequences given explicitly in the batch count too
            c = r.conversation
            if c.session_id in sessions and c.sequence is not None:
                last[c.session_id] = max(last.get(c.session_id, -1), c.sequence)
        placed = []
        for r in records:
            c = r.conversation
            if c.session_id in sessions and c.sequence is None:
                last[c.session_id] = last.get(c.session_id, -1) + 1
                r = replace(r, conversation=replace(c, sequence=last[c.session_id]))
            placed.append(r)
        return placed

    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """Replace whole rows by id (inserting missing ones) in one commit."""
        if not records:
            return
        data = self._table.to_arrow(records)
        with self._writer.lock:
            self._writer.commit(
                "update failed, nothing was changed",
                lambda: (
                    self._table.handle.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(data)
                ),
                change=Change(written=written(records), rows=data),
            )
            self._accesses.forget([r.id for r in records])

    def replace(self, new_records: Sequence[MemoryRecord], delete_ids: Sequence[str]) -> None:
        """Write `new_records` and delete `delete_ids` in a single commit.

        A merge-insert whose source also flags rows for deletion commits both at once,
        so no crash can leave the deletes without the insert (or the reverse).
        """
        deletions = [i for i in delete_ids if i not in {r.id for r in new_records}]
        if not deletions:
            self.upsert(new_records)
            return
        if not new_records:
            self.delete_ids(deletions)
            return
        data = self._table.to_arrow(new_records)
        with self._writer.lock:
            self._relations.drop(deletions)
            self._co_recall.drop(deletions)
            self._writer.commit(
                "replace failed, nothing was changed",
                lambda: (
                    self._table.handle.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(build_filter(ids=deletions).sql)
                    .execute(data)
                ),
                change=Change(written=written(new_records), rows=data, removed=deletions),
            )
            self._accesses.forget([*(r.id for r in new_records), *deletions])

    def update_where(self, flt: Filter, values: dict[str, Any]) -> int:
        where = self._reads.where(flt)
        result = self._writer.commit(
            "update failed, nothing was changed", lambda: self._table.handle.update(where=where, values=values)
        )
        return int(getattr(result, "rows_updated", 0) or 0)

    def delete_ids(self, ids: Iterable[str]) -> list[str]:
        wanted = [i for i in dict.fromkeys(ids) if is_uuid(i)]
        if not wanted:
            return []
        return self.delete_where(build_filter(ids=wanted))

    def delete_where(self, flt: Filter, *, live: bool = True, extra: str | None = None) -> list[str]:
        """Delete matching rows, their history and their relations (those first: a crash between
        leaves the memory, never a history without it); returns the ids deleted. `live`: expired
        memories, which no read returns any more, are not counted; `extra`: a further clause."""
        with self._writer.lock:
            if flt.metadata:
                ids = self._reads.matching_ids(flt)
                where = build_filter(ids=ids).sql if ids else None
            else:
                where = self._reads.where(flt, live=live)
                if extra:
                    where = extra if where is None else f"({where}) AND {extra}"
                ids = self._table.scan(where, ["id"]).column("id").to_pylist()
            if not ids or where is None:
                return []
            self._history.drop(ids)
            self._relations.drop(ids)
            self._co_recall.drop(ids)
            self._writer.commit(
                "delete failed, nothing was deleted",
                lambda: self._table.handle.delete(where),
                change=Change(removed=ids),
            )
            self._accesses.forget(ids)
        return ids

    def purge_expired(self) -> list[str]:
        """Delete expired memories and their history, in one commit per table."""
        if self._writer.read_only:
            return []  # hidden from every read all the same
        ids = self._reads.expired_ids()
        if not ids:
            return []
        with self._writer.lock:
            now = self._clock()
            return self.delete_where(build_filter(ids=ids[:MAX_LIST_VALUES]), live=False, extra=f"NOT {unexpired(now)}")

    @contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """Hold the write lock across writes to several tables, the memories table's commit last:
        if anything inside fails, the side tables (history, relations, pending imports) are restored
        to the versions they had on entry, so the failed writes leave nothing behind (import_memories)."""
        with self._writer.lock:
            names = (HISTORY_TABLE, RELATIONS_TABLE, PENDING_IMPORTS_TABLE)
            tables = {name: self._table.side_table(name, None, create=False) for name in names}
            entry = {name: (table.version if table is not None else None) for name, table in tables.items()}
            try:
                yield
            except BaseException:
                for name in names:
                    table = self._table.side_table(name, None, create=False)
                    if table is not None and table.version != (entry[name] or 1):
                        table.restore(entry[name] or 1)  # created inside: back to its empty first version
                raise

    def add_imported(
        self, records: Sequence[MemoryRecord], states: Sequence[RetiredState], relations: Sequence[Relation]
    ) -> None:
        """An import's writes: retired versions and relations first, the memories' one commit last,
        which is the import's commit point. A crash before it leaves nothing visible: the side rows
        are listed as pending first (pending_imports.py) and cleared by the next `settle`."""
        with self._writer.lock:
            self._pending.settle()  # an earlier import killed half-way: its rows go before ids are reused
            batch = None
            if records and (states or relations):
                batch = self._pending.begin(
                    records[0].id,
                    self._pending.new_history_keys([s.key for s in states]),
                    self._pending.new_relation_keys([r.key for r in relations]),
                )
            self._history.restore(states)
            self._relations.relate(relations)
            self.add(records)
            if batch is not None:
                try:
                    self._pending.end(batch)
                except StorageError as exc:
                    # The import has landed: a raise here would make all_or_nothing restore the side
                    # tables under landed memories. A batch whose anchor is current reads as landed,
                    # and the next settle forgets it.
                    log.warning("an import landed but its pending entry stays until the next settle: %s", exc)

    # ---- memories that change (update_memory, supersedes) --------------------------------

    def rewrite(self, record: MemoryRecord, previous: MemoryRecord, max_versions: int) -> None:
        """Replace a memory by its next version, keeping `previous` in its history. Call under
        `exclusive()` after reading `previous`, so no other writer's version is lost."""
        self._history.retire([RetiredState(previous, record.updated_at, "update")], max_versions)
        self.upsert([record])

    def supersede(
        self,
        successors: Sequence[MemoryRecord],
        closed: Sequence[MemoryRecord],
        successor_of: dict[str, str],
        max_versions: int,
    ) -> None:
        """Store `successors` and close `closed` (their last states go to the history, each linked to
        its successor, `successor_of[id]`): the memories table changes in one commit. Call under
        `exclusive()`."""
        when = successors[0].created_at
        self._history.retire([RetiredState(r, when, "supersede", successor_of[r.id]) for r in closed], max_versions)
        self.replace(successors, [r.id for r in closed])

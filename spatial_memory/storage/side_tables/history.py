"""The states memories left behind: versions replaced by update_memory, memories closed by a successor.

It writes through the store's Writer, beside the memories table (table.py). The history lives
in its own table, `memory_versions` (schema.HISTORY_TABLE), created by the first retirement, so
the memories table only ever holds current memories and every existing read stays as it was.

Each change is two commits - the retired state into the history table, then the memories table
- under the store's write lock. The second commit is the change: until it lands, the history row
it wrote is not part of any memory's history, by this rule (`_real`): a history row counts when
the memory's current row has a higher version, or when the memory has no current row and a
successor closed it at this row's version or a later one. So a crash between the two commits
leaves a row nobody reads, and the retry writes the same row again (rows are keyed
"<id>#<version>"). An import's rows follow pending_imports.py as well: those of an import whose
memories never landed are left out, the retired versions of memories closed before the export too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from ...errors import StorageError
from ...records import MemoryRecord
from ..filters import Filter, chunks, ids_clause, quote, retired_current_at
from ..table.schema import (
    HISTORY_COLUMNS,
    HISTORY_TABLE,
    SUMMARY_COLUMNS,
    TS,
    history_schema,
    records_to_arrow,
    rows_to_records,
)
from ..table.table import MemoryTable
from ..writing.pending_imports import PendingImports
from ..writing.writer import Writer

log = logging.getLogger(__name__)

RETIRED_BY = ("update", "supersede")
_HISTORY_ONLY = [f.name for f in HISTORY_COLUMNS]


@dataclass
class RetiredState:
    """A memory as it was, and how it stopped being current."""

    record: MemoryRecord
    valid_until: datetime
    retired_by: str  # one of RETIRED_BY
    superseded_by: str | None = None

    @property
    def key(self) -> str:
        return f"{self.record.id}#{self.record.version}"


class VersionHistory:
    def __init__(self, table: MemoryTable, writer: Writer, pending: PendingImports) -> None:
        self._table = table
        self._writer = writer
        self._pending = pending

    def _schema(self) -> pa.Schema:
        return history_schema(self._table.model_id, self._table.dim)

    def _history(self, *, create: bool = False) -> Any:
        """The history table (None when it does not exist yet and `create` is False)."""
        return self._table.side_table(HISTORY_TABLE, self._schema, create=create)

    def retire(self, states: Sequence[RetiredState], max_versions: int) -> None:
        """Write retired states (under the write lock), keeping at most `max_versions` versions per
        memory, the one replacing them included."""
        if not states:
            return
        table = self._history(create=True)
        data = self._history_arrow(states)
        # Versions beyond the bound go in the same commit.
        trims = [
            f"(id = {quote(s.record.id)} AND version <= {int(s.record.version) + 1 - max_versions})"
            for s in states
            if s.record.version + 1 > max_versions
        ]
        with self._writer.lock:
            merge = table.merge_insert("version_key").when_matched_update_all().when_not_matched_insert_all()
            if trims:
                merge = merge.when_not_matched_by_source_delete(" OR ".join(trims))
            self._writer.attempt(
                "history write failed, nothing was changed", lambda: merge.execute(data), counted=False
            )

    def _history_arrow(self, states: Sequence[RetiredState]) -> pa.Table:
        """Retired states as rows of the history table (with their vectors)."""
        if not states:
            return self._schema().empty_table()
        # Not MemoryTable.to_arrow: tests break that one to fail the memories table's commit.
        data = records_to_arrow([s.record for s in states], self._table.model_id, self._table.dim)
        extra = {
            "version_key": pa.array([s.key for s in states], pa.string()),
            "valid_until": pa.array([s.valid_until for s in states], TS),
            "retired_by": pa.array([s.retired_by for s in states], pa.string()),
            "superseded_by": pa.array([s.superseded_by for s in states], pa.string()),
        }
        for name in _HISTORY_ONLY:
            data = data.append_column(name, extra[name])
        return data.select(self._schema().names)

    def history_arrow(self, flt: Filter | None) -> pa.Table:
        """Every retired state matching the filter, as history rows (for export)."""
        where = flt.sql if flt is not None and flt.sql else "true"
        return self._history_arrow(self._real(self._history_rows(where, with_vectors=True)))

    def _history_rows(self, where: str, *, with_vectors: bool = False) -> list[tuple[MemoryRecord, dict]]:
        table = self._history()
        if table is None:
            return []
        columns = SUMMARY_COLUMNS + _HISTORY_ONLY + (["vector"] if with_vectors else [])
        try:
            found = table.search().where(where).select(columns).limit(max(table.count_rows(where), 1)).to_arrow()
        except Exception as exc:  # noqa: BLE001
            raise StorageError(f"history read failed: {exc}") from exc
        extras = found.select(_HISTORY_ONLY).to_pylist()
        return list(zip(rows_to_records(found.drop_columns(_HISTORY_ONLY)), extras, strict=True))

    def _real(self, rows: list[tuple[MemoryRecord, dict]]) -> list[RetiredState]:
        """The rows that are part of a memory's history (see the module docstring)."""
        if not rows:
            return []
        ids = list(dict.fromkeys(r.id for r, _ in rows))
        current = self._current_versions(ids)
        closed = self._closing_versions([i for i in ids if i not in current])
        # Only a closed memory's rows can belong to an import in flight without a current row to
        # vouch for them (a current memory's rows count only below its version).
        hidden = self._pending.hidden_history_keys() if closed else set()
        states = []
        for record, extra in rows:
            live, closing = current.get(record.id), closed.get(record.id)
            if (live is not None and live > record.version) or (
                live is None
                and closing is not None
                and closing >= record.version
                and f"{record.id}#{record.version}" not in hidden
            ):
                states.append(RetiredState(record, extra["valid_until"], extra["retired_by"], extra["superseded_by"]))
        return states

    def _current_versions(self, ids: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in chunks(ids):
            table = self._table.scan(ids_clause(chunk), ["id", "version"])
            for memory_id, version in zip(table.column("id").to_pylist(), table.column("version").to_pylist()):
                found[memory_id] = int(version or 1)
        return found

    def _closing_versions(self, ids: list[str]) -> dict[str, int]:
        """For memories without a current row: the version a successor closed them at."""
        table = self._history()
        found: dict[str, int] = {}
        if table is None:
            return found
        for chunk in chunks(ids):
            where = f"superseded_by IS NOT NULL AND {ids_clause(chunk)}"
            rows = table.search().where(where).select(["id", "version"]).limit(None).to_arrow()
            for memory_id, version in zip(rows.column("id").to_pylist(), rows.column("version").to_pylist()):
                found[memory_id] = max(found.get(memory_id, 0), int(version or 1))
        return found

    def retired(self, ids: Sequence[str]) -> list[RetiredState]:
        """The retired states of these memories (one read of the history), newest version first."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        states: list[RetiredState] = []
        for chunk in chunks(wanted):
            where = ids_clause(chunk)
            states += self._real(self._history_rows(where))
        return sorted(states, key=lambda s: s.record.version, reverse=True)

    def states_at(self, flt: Filter, moment: datetime) -> list[MemoryRecord]:
        """Retired states that were current at `moment` and match the filter, with vectors."""
        where = " AND ".join(f"({c})" for c in (flt.sql, retired_current_at(moment)) if c)
        return [s.record for s in self._real(self._history_rows(where, with_vectors=True))]

    def restore(self, states: Sequence[RetiredState]) -> None:
        """Write retired states as they are (import)."""
        if states:
            self.retire(states, max_versions=1 << 30)

    def drop(self, ids: Sequence[str]) -> None:
        """Remove every retired state of these memories (before they are forgotten)."""
        table = self._history()
        wanted = list(dict.fromkeys(ids))
        if table is None or not wanted:
            return
        with self._writer.lock:
            for chunk in chunks(wanted):
                where = ids_clause(chunk)
                self._writer.attempt("history delete failed", lambda w=where: table.delete(w), counted=False)

"""Imports in flight: what an import wrote to the side tables before its memories' commit landed.

import_memories writes three tables: the retired versions (history.py), the relations
(relations.py), then the memories, whose single commit is the import's commit point. Before the
side writes, one row of the `pending_imports` table lists the keys they add, under the import's
batch id and its anchor (the first imported memory's id, new to the store); the row is deleted
once the memories' commit has landed. So a process killed between the parts leaves a row whose
anchor is not a current memory, and by this rule nothing of that import is visible:

- history reads leave out the rows such a batch lists (`hidden_history_keys`): without it, the
  retired versions of memories closed before the export would show as soon as they were written;
- relations need no rule of their own: each has an imported memory at one end, and relations.py
  shows a relation only while both of its ends are current.

`settle` (the next writable open, the start of the next import) deletes the rows of a batch that
never landed, so a later import that gives the same ids cannot bring them back, and forgets the
batches that did land. A key the import found already stored is not listed: its row was visible
before the import and stays (merge-inserts overwrite it with the file's copy of the same version).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..filters import any_in, build_filter, quote
from ..side_tables.relations import RELATIONS_TABLE
from ..table.schema import HISTORY_TABLE
from ..table.table import MemoryTable
from .writer import Writer

PENDING_IMPORTS_TABLE = "pending_imports"
PENDING_IMPORTS_SCHEMA = pa.schema(
    [
        pa.field("batch", pa.string(), nullable=False),
        pa.field("anchor", pa.string(), nullable=False),  # a memory the batch's commit adds
        pa.field("history_keys", pa.string(), nullable=False),  # JSON list of "<id>#<version>"
        pa.field("relation_keys", pa.string(), nullable=False),  # JSON list of "<source>#<target>#<relation>"
    ]
)


class PendingImports:
    def __init__(self, table: MemoryTable, writer: Writer) -> None:
        self._table = table
        self._writer = writer

    def _pending(self, *, create: bool = False) -> Any:
        return self._table.side_table(PENDING_IMPORTS_TABLE, lambda: PENDING_IMPORTS_SCHEMA, create=create)

    def _rows(self) -> list[dict[str, Any]]:
        table = self._pending()
        if table is None or table.count_rows() == 0:
            return []
        return table.search().select(PENDING_IMPORTS_SCHEMA.names).limit(None).to_arrow().to_pylist()

    def _landed(self, anchors: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(anchors))
        if not wanted:
            return set()
        return set(self._table.scan(build_filter(ids=wanted).sql, ["id"]).column("id").to_pylist())

    def _unlanded(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The batches in the table: (those whose commit never landed, those whose commit did)."""
        rows = self._rows()
        landed = self._landed([r["anchor"] for r in rows])
        return [r for r in rows if r["anchor"] not in landed], [r for r in rows if r["anchor"] in landed]

    def begin(self, anchor: str, history_keys: Sequence[str], relation_keys: Sequence[str]) -> str:
        """Record, before the side writes, what they will add (call under the write lock)."""
        batch = uuid.uuid4().hex
        row = pa.Table.from_pylist(
            [
                {
                    "batch": batch,
                    "anchor": anchor,
                    "history_keys": json.dumps(list(history_keys)),
                    "relation_keys": json.dumps(list(relation_keys)),
                }
            ],
            schema=PENDING_IMPORTS_SCHEMA,
        )
        table = self._pending(create=True)
        with self._writer.lock:
            self._writer.attempt("import failed, nothing was imported", lambda: table.add(row), counted=False)
        return batch

    def end(self, batch: str) -> None:
        """The batch's memories landed: its side rows are plain rows from now on."""
        table = self._pending()
        with self._writer.lock:
            self._writer.attempt(
                "import bookkeeping failed", lambda: table.delete(f"batch = {quote(batch)}"), counted=False
            )

    def hidden_history_keys(self) -> set[str]:
        """The history rows of imports whose memories never landed (see the module docstring)."""
        unlanded, _ = self._unlanded()
        return {key for r in unlanded for key in json.loads(r["history_keys"])}

    def new_history_keys(self, keys: Sequence[str]) -> list[str]:
        """The keys not already in the history table."""
        return self._new_keys(HISTORY_TABLE, "version_key", keys)

    def new_relation_keys(self, keys: Sequence[str]) -> list[str]:
        """The keys not already in the relations table."""
        return self._new_keys(RELATIONS_TABLE, "relation_key", keys)

    def _new_keys(self, name: str, column: str, keys: Sequence[str]) -> list[str]:
        wanted = list(dict.fromkeys(keys))
        table = self._table.side_table(name, None, create=False)
        if table is None or not wanted:
            return wanted
        stored: set[str] = set()
        for where in any_in((column,), wanted):
            stored.update(
                table.search().where(where).select([column]).limit(None).to_arrow().column(column).to_pylist()
            )
        return [k for k in wanted if k not in stored]

    def settle(self) -> int:
        """Delete the side rows of every import that never landed and forget every batch (under the
        write lock, so no import is in flight); returns how many batches never landed."""
        if self._writer.read_only or self._pending() is None:
            return 0
        with self._writer.lock:
            unlanded, landed = self._unlanded()
            for r in unlanded:
                for name, column, field in (
                    (HISTORY_TABLE, "version_key", "history_keys"),
                    (RELATIONS_TABLE, "relation_key", "relation_keys"),
                ):
                    keys = json.loads(r[field])
                    table = self._table.side_table(name, None, create=False)
                    if table is None or not keys:
                        continue
                    for where in any_in((column,), keys):
                        self._writer.attempt(
                            "clearing an unfinished import failed", lambda w=where, t=table: t.delete(w), counted=False
                        )
            for r in (*unlanded, *landed):
                self.end(r["batch"])
        return len(unlanded)

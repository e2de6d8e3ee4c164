"""Relations between memories: typed, directed links kept in their own small table.

It writes through the store's Writer, beside the memories table (table.py). The table,
`relations` (created by the first `relate`), holds one row per (source, relation, target) with a
weight, when it was made and who made it. Each write is one commit under the store's write lock.

A relation counts only while both of its memories are current: forgetting a memory drops its
relations (MemoryWrites.delete_where, before the memories' own commit), and every read leaves out
a relation whose other end is gone, so a crash between the two commits, or a relation written by
an import whose memories never landed, is never shown.

The whole table is read once per table version and kept (relations are few next to memories):
recall's spreading activation asks for the relations of its top hits on every call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from ...errors import StorageError
from ...records import Provenance
from ..filters import any_in, chunks, quote
from ..table.reads import Reads
from ..table.table import MemoryTable
from ..writing.writer import Writer

RELATIONS_TABLE = "relations"
_TS = pa.timestamp("us", tz="UTC")
RELATIONS_SCHEMA = pa.schema(
    [
        pa.field("relation_key", pa.string(), nullable=False),  # "<source>#<target>#<relation>"
        pa.field("source_id", pa.string(), nullable=False),
        pa.field("target_id", pa.string(), nullable=False),
        pa.field("relation", pa.string(), nullable=False),
        pa.field("weight", pa.float32(), nullable=False),
        pa.field("created_at", _TS, nullable=False),
        pa.field("provenance", pa.string(), nullable=True),
    ]
)


@dataclass(frozen=True)
class Relation:
    source_id: str
    target_id: str
    relation: str
    weight: float
    created_at: datetime
    provenance: Provenance | None = None

    @property
    def key(self) -> str:
        return f"{self.source_id}#{self.target_id}#{self.relation}"


def _arrow(relations: Sequence[Relation]) -> pa.Table:
    return pa.Table.from_arrays(
        [
            pa.array([r.key for r in relations], pa.string()),
            pa.array([r.source_id for r in relations], pa.string()),
            pa.array([r.target_id for r in relations], pa.string()),
            pa.array([r.relation for r in relations], pa.string()),
            pa.array([float(r.weight) for r in relations], pa.float32()),
            pa.array([r.created_at for r in relations], _TS),
            pa.array(
                [None if r.provenance is None else json.dumps(r.provenance.as_dict()) for r in relations], pa.string()
            ),
        ],
        schema=RELATIONS_SCHEMA,
    )


def _relations_of(table: pa.Table) -> list[Relation]:
    found = []
    for row in table.to_pylist():
        origin = Provenance.from_dict(json.loads(row["provenance"])) if row.get("provenance") else None
        found.append(
            Relation(
                row["source_id"], row["target_id"], row["relation"], float(row["weight"]), row["created_at"], origin
            )
        )
    return found


class RelationGraph:
    """The relations at one table version, indexed by either end."""

    def __init__(self, version: int | None, relations: list[Relation]) -> None:
        self.version = version
        self.relations = relations
        self.by_memory: dict[str, list[Relation]] = {}
        for r in relations:
            self.by_memory.setdefault(r.source_id, []).append(r)
            if r.target_id != r.source_id:
                self.by_memory.setdefault(r.target_id, []).append(r)

    def of(self, ids: Iterable[str]) -> list[Relation]:
        """Every relation with one of these memories at either end, once each."""
        seen: dict[str, Relation] = {}
        for memory_id in ids:
            for r in self.by_memory.get(memory_id, ()):
                seen.setdefault(r.key, r)
        return list(seen.values())


_EMPTY = RelationGraph(None, [])


class Relations:
    def __init__(self, table: MemoryTable, writer: Writer, reads: Reads) -> None:
        self._table = table
        self._writer = writer
        self._reads = reads
        self._lock = threading.Lock()
        self._graph: RelationGraph | None = None

    def _relations_table(self, *, create: bool = False) -> Any:
        """The relations table (None when it does not exist yet and `create` is False)."""
        return self._table.side_table(RELATIONS_TABLE, lambda: RELATIONS_SCHEMA, create=create)

    def graph(self) -> RelationGraph:
        """Every stored relation (both ends not checked: see `of`), read once per version."""
        table = self._relations_table()
        if table is None:
            return _EMPTY
        try:
            version = table.version
            cached = self._graph
            if cached is not None and cached.version == version:
                return cached
            with self._lock:
                data = table.search().select(RELATIONS_SCHEMA.names).limit(None).to_arrow()
        except Exception as exc:  # noqa: BLE001
            raise StorageError(f"reading relations failed: {exc}") from exc
        graph = RelationGraph(version, _relations_of(data))
        self._graph = graph
        return graph

    def of(self, ids: Sequence[str]) -> list[Relation]:
        """The relations of these memories whose two ends are both current memories."""
        found = self.graph().of(ids)
        if not found:
            return []
        ends = {e for r in found for e in (r.source_id, r.target_id)}
        alive = {r.id for r in self._reads.get_many(list(ends))}
        return [r for r in found if r.source_id in alive and r.target_id in alive]

    def relate(self, relations: Sequence[Relation]) -> None:
        """Write relations (a triple already stored gets the new weight), one commit. Call under
        `exclusive()` after checking both ends exist."""
        if not relations:
            return
        table = self._relations_table(create=True)
        data = _arrow(relations)
        with self._writer.lock:
            merge = table.merge_insert("relation_key").when_matched_update_all().when_not_matched_insert_all()
            failure = "relation write failed, nothing was changed"
            self._writer.attempt(failure, lambda: merge.execute(data), counted=False)

    def unrelate(self, source_id: str, target_id: str, relation: str | None) -> list[Relation]:
        """Delete the relations from source to target (only `relation`, when given), one commit;
        returns those deleted."""
        table = self._relations_table()
        if table is None:
            return []
        with self._writer.lock:
            gone = [
                r
                for r in self.graph().by_memory.get(source_id, ())
                if (r.source_id, r.target_id) == (source_id, target_id) and relation in (None, r.relation)
            ]
            if gone:
                where = f"relation_key IN ({', '.join(quote(r.key) for r in gone)})"
                failure = "relation delete failed, nothing was changed"
                self._writer.attempt(failure, lambda: table.delete(where), counted=False)
        return gone

    def drop(self, ids: Sequence[str]) -> None:
        """Remove every relation of these memories (before they are forgotten)."""
        table = self._relations_table()
        wanted = list(dict.fromkeys(ids))
        if table is None or not wanted:
            return
        graph = self.graph()
        if not any(i in graph.by_memory for i in wanted):
            return
        with self._writer.lock:
            for where in any_in(("source_id", "target_id"), wanted):
                self._writer.attempt("relation delete failed", lambda w=where: table.delete(w), counted=False)

    def current(self) -> list[Relation]:
        """Every relation whose two ends are current (export)."""
        graph = self.graph()
        if not graph.relations:
            return []
        ends = list({e for r in graph.relations for e in (r.source_id, r.target_id)})
        alive: set[str] = set()
        for chunk in chunks(ends):
            alive.update(r.id for r in self._reads.get_many(chunk))
        return [r for r in graph.relations if r.source_id in alive and r.target_id in alive]

"""The memories table: its Arrow schema, the summary columns, and rows as MemoryRecords."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from ...errors import StorageError
from ...records import DEFAULT_MEMORY_TYPE, Conversation, MemoryRecord, Provenance, utc_now

TABLE_NAME = "memories"
MODEL_KEY = b"spatial_memory.embedding_model"
DIM_KEY = b"spatial_memory.embedding_dim"
TS = pa.timestamp("us", tz="UTC")
# Columns added after release 0.1.0: nullable, so a store written before them gains them, all
# null, in one commit when it is opened (table.py).
ADDED_COLUMNS = [
    pa.field("session_id", pa.string(), nullable=True),
    pa.field("sequence", pa.int64(), nullable=True),
    pa.field("speaker", pa.string(), nullable=True),
    pa.field("occurred_at", TS, nullable=True),
    # release 0.3.0 (memories that change): null reads as fact / never / not pinned / 1 / unknown
    pa.field("memory_type", pa.string(), nullable=True),
    pa.field("expires_at", TS, nullable=True),
    pa.field("pinned", pa.bool_(), nullable=True),
    pa.field("version", pa.int64(), nullable=True),
    pa.field("provenance", pa.string(), nullable=True),
]
# What reads return of a memory: every column but its vector.
SUMMARY_COLUMNS = [
    "id",
    "content",
    "namespace",
    "tags",
    "importance",
    "source",
    "metadata",
    "created_at",
    "updated_at",
    "last_accessed",
    "access_count",
    *(f.name for f in ADDED_COLUMNS),
]

# The history table: one row per state a memory left behind - replaced by update_memory, or
# closed by a successor (supersedes). `id` is the memory's id (so the memories' filters work
# on it unchanged), `version_key` "<id>#<version>" identifies the row.
HISTORY_TABLE = "memory_versions"
HISTORY_COLUMNS = [
    pa.field("version_key", pa.string(), nullable=False),
    pa.field("valid_until", TS, nullable=False),
    pa.field("retired_by", pa.string(), nullable=False),  # update | supersede
    pa.field("superseded_by", pa.string(), nullable=True),
]


def history_schema(model_id: str, dim: int) -> pa.Schema:
    base = memory_schema(model_id, dim)
    return pa.schema([*base, *HISTORY_COLUMNS], metadata=base.metadata)


def memory_schema(model_id: str, dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            pa.field("created_at", TS, nullable=False),
            pa.field("updated_at", TS, nullable=False),
            pa.field("last_accessed", TS, nullable=False),
            pa.field("access_count", pa.int32(), nullable=False),
            pa.field("importance", pa.float32(), nullable=False),
            pa.field("namespace", pa.string(), nullable=False),
            pa.field("tags", pa.list_(pa.string()), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("metadata", pa.string(), nullable=False),
            *ADDED_COLUMNS,
        ],
        metadata={MODEL_KEY: model_id.encode(), DIM_KEY: str(dim).encode()},
    )


@dataclass
class NamespaceInfo:
    name: str
    memory_count: int
    oldest: datetime
    newest: datetime


def rows_to_records(table: pa.Table) -> list[MemoryRecord]:
    vectors = None
    if "vector" in table.column_names:
        vectors = vectors_of(table)
        table = table.drop_columns(["vector"])
    n = table.num_rows
    present = set(table.column_names)

    def values(name: str, default: object = None) -> list:
        """The column's Python values (a missing column: `default` per row), a column at a time:
        a row at a time (Table.to_pylist) built a dict per row and took most of the time."""
        return _python_values(table.column(name)) if name in present else [default] * n

    columns = zip(
        values("id"),
        values("content", ""),
        values("namespace", "default"),
        values("tags"),
        values("importance", 0.5),
        values("source", "manual"),
        values("metadata"),
        values("created_at"),
        values("updated_at"),
        values("last_accessed"),
        values("access_count", 0),
        values("session_id"),
        values("sequence"),
        values("speaker"),
        values("occurred_at"),
        values("memory_type"),
        values("expires_at"),
        values("pinned"),
        values("version"),
        values("provenance"),
        strict=True,
    )
    records = []
    for i, row in enumerate(columns):
        (memory_id, content, namespace, tags, importance, source, metadata, created, updated, accessed) = row[:10]
        (count, session_id, sequence, speaker, occurred_at, memory_type, expires_at, pinned, version) = row[10:19]
        provenance = row[19]
        records.append(
            MemoryRecord(
                id=memory_id,
                content=content,
                namespace=namespace,
                tags=list(tags or []),
                importance=float(importance),
                source=source,
                metadata=json.loads(metadata) if metadata else {},
                created_at=created or utc_now(),
                updated_at=updated or utc_now(),
                last_accessed=accessed or utc_now(),
                access_count=int(count),
                conversation=Conversation(
                    session_id=session_id, sequence=sequence, speaker=speaker, occurred_at=occurred_at
                ),
                memory_type=memory_type or DEFAULT_MEMORY_TYPE,
                expires_at=expires_at,
                pinned=bool(pinned),
                version=int(version or 1),
                provenance=Provenance.from_dict(json.loads(provenance)) if provenance else None,
                vector=None if vectors is None else vectors[i],
            )
        )
    return records


def _python_values(column: pa.ChunkedArray | pa.Array) -> list:
    """column.to_pylist(), with UTC microsecond timestamps made from their integers (UTC has no
    offsets to apply): pyarrow converts each through its time zone, several times slower. The
    datetimes are equal, with the same tzinfo object (pyarrow's own, from its conversion of the
    epoch)."""
    kind = column.type
    if not (pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz == "UTC"):
        return column.to_pylist()
    epoch = _EPOCHS.get(kind)
    if epoch is None:
        epoch = _EPOCHS[kind] = pa.scalar(0, type=kind).as_py()
    if column.null_count:
        micros = column.cast(pa.int64()).to_pylist()
        return [None if v is None else epoch + timedelta(microseconds=v) for v in micros]
    return [epoch + timedelta(microseconds=v) for v in column.to_numpy().view(np.int64).tolist()]


# The epoch as pyarrow converts it, per timestamp type (its tzinfo is the one pyarrow gives).
_EPOCHS: dict[pa.DataType, datetime] = {}


def vectors_of(table: pa.Table) -> np.ndarray:
    """The vector column as a (n, dim) float32 array without a Python-level copy per row."""
    column = table.column("vector").combine_chunks()
    dim = column.type.list_size
    return column.values.to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32, copy=False)


def records_to_arrow(records: Sequence[MemoryRecord], model_id: str, dim: int) -> pa.Table:
    """Records (with vectors) as rows of the memories table."""
    vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
    if vectors.shape[1] != dim:
        raise StorageError(f"vector has {vectors.shape[1]} dimensions, the store needs {dim}")
    schema = memory_schema(model_id, dim)
    columns = {
        "id": pa.array([r.id for r in records], pa.string()),
        "content": pa.array([r.content for r in records], pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
        "created_at": pa.array([r.created_at for r in records], TS),
        "updated_at": pa.array([r.updated_at for r in records], TS),
        "last_accessed": pa.array([r.last_accessed for r in records], TS),
        "access_count": pa.array([int(r.access_count) for r in records], pa.int32()),
        "importance": pa.array([float(r.importance) for r in records], pa.float32()),
        "namespace": pa.array([r.namespace for r in records], pa.string()),
        "tags": pa.array([list(r.tags) for r in records], pa.list_(pa.string())),
        "source": pa.array([r.source for r in records], pa.string()),
        "metadata": pa.array([json.dumps(r.metadata, ensure_ascii=False) for r in records], pa.string()),
        "session_id": pa.array([r.conversation.session_id for r in records], pa.string()),
        "sequence": pa.array([r.conversation.sequence for r in records], pa.int64()),
        "speaker": pa.array([r.conversation.speaker for r in records], pa.string()),
        "occurred_at": pa.array([r.conversation.occurred_at for r in records], TS),
        "memory_type": pa.array([r.memory_type for r in records], pa.string()),
        "expires_at": pa.array([r.expires_at for r in records], TS),
        "pinned": pa.array([bool(r.pinned) for r in records], pa.bool_()),
        "version": pa.array([int(r.version) for r in records], pa.int64()),
        "provenance": pa.array(
            [None if r.provenance is None else json.dumps(r.provenance.as_dict()) for r in records], pa.string()
        ),
    }
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)

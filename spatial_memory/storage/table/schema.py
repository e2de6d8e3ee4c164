"""The memories table: its Arrow schema, the summary columns, and rows as MemoryRecords."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

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
    records = []
    for i, row in enumerate(table.to_pylist()):
        records.append(
            MemoryRecord(
                id=row["id"],
                content=row.get("content", ""),
                namespace=row.get("namespace", "default"),
                tags=list(row.get("tags") or []),
                importance=float(row.get("importance", 0.5)),
                source=row.get("source", "manual"),
                metadata=json.loads(row["metadata"]) if row.get("metadata") else {},
                created_at=row.get("created_at") or utc_now(),
                updated_at=row.get("updated_at") or utc_now(),
                last_accessed=row.get("last_accessed") or utc_now(),
                access_count=int(row.get("access_count", 0)),
                conversation=Conversation(
                    session_id=row.get("session_id"),
                    sequence=row.get("sequence"),
                    speaker=row.get("speaker"),
                    occurred_at=row.get("occurred_at"),
                ),
                memory_type=row.get("memory_type") or DEFAULT_MEMORY_TYPE,
                expires_at=row.get("expires_at"),
                pinned=bool(row.get("pinned")),
                version=int(row.get("version") or 1),
                provenance=Provenance.from_dict(json.loads(row["provenance"])) if row.get("provenance") else None,
                vector=None if vectors is None else vectors[i],
            )
        )
    return records


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

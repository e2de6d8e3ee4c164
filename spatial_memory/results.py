"""Typed tool results. Their JSON schemas become the tools' published outputSchema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .records import MemoryRecord, ScoredMemory, iso


class MemoryItem(BaseModel):
    id: str
    content: str
    similarity: float = Field(ge=0.0, le=1.0)
    namespace: str
    tags: list[str]
    importance: float
    created_at: str
    metadata: dict[str, Any]

    @classmethod
    def of(cls, scored: ScoredMemory) -> MemoryItem:
        return cls(similarity=round(scored.similarity, 6), **scored.record.summary())


class MemoryRef(BaseModel):
    id: str
    content: str
    namespace: str

    @classmethod
    def of(cls, record: MemoryRecord) -> MemoryRef:
        return cls(id=record.id, content=record.content, namespace=record.namespace)


class RememberResult(BaseModel):
    id: str
    content: str
    namespace: str
    created_at: str


class RememberBatchResult(BaseModel):
    ids: list[str]
    count: int


class RecallResult(BaseModel):
    memories: list[MemoryItem]
    total: int


class NearbyResult(BaseModel):
    reference: MemoryRef
    neighbors: list[MemoryItem]


class ForgetResult(BaseModel):
    deleted: int
    ids: list[str]


class IndexInfo(BaseModel):
    name: str
    index_type: str
    column: str
    num_indexed_rows: int
    status: str


class StatsResult(BaseModel):
    total_memories: int
    memories_by_namespace: dict[str, int]
    storage_bytes: int
    storage_mb: float
    estimated_vector_bytes: int
    has_vector_index: bool
    has_fts_index: bool
    indices: list[IndexInfo]
    num_fragments: int
    needs_compaction: bool
    table_version: int
    oldest_memory_date: str | None
    newest_memory_date: str | None
    avg_content_length: float
    embedding_model: str
    embedding_dimensions: int
    storage_path: str


class NamespaceItem(BaseModel):
    name: str
    memory_count: int | None = None
    oldest_memory: str | None = None
    newest_memory: str | None = None


class NamespacesResult(BaseModel):
    namespaces: list[NamespaceItem]
    total_namespaces: int
    total_memories: int


class DeleteNamespaceResult(BaseModel):
    namespace: str
    memories_deleted: int
    success: bool
    message: str
    dry_run: bool


class RenameNamespaceResult(BaseModel):
    old_namespace: str
    new_namespace: str
    memories_renamed: int
    success: bool
    message: str


def timestamp(value: Any) -> str | None:
    return iso(value) if value is not None else None

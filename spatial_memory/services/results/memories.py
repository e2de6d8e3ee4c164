"""The results of remember, recall, get/update/history, forget and the namespace tools."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, overload

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from ...records import MemoryRecord, Provenance, ScoredMemory, iso
from .visibility import FOR_PROGRAMS

PREVIEW_CHARS = 100


def content_preview(content: str, limit: int = PREVIEW_CHARS) -> str:
    """The content on one line, cut to `limit` characters with "..." when longer."""
    flat = " ".join(content.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "..."


class ContextMemory(BaseModel):
    """A memory next to a hit in its session, shown so the exchange reads whole (not a hit itself)."""

    id: str
    content: str
    offset: int = Field(description="Its place relative to the hit: -1 just before, 1 just after.")
    sequence: int
    speaker: str | None = None
    occurred_at: str | None = None

    @classmethod
    def of(cls, record: MemoryRecord, offset: int, sequence: int) -> ContextMemory:
        c = record.conversation
        return cls(
            id=record.id,
            content=record.content,
            offset=offset,
            sequence=sequence,
            speaker=c.speaker,
            occurred_at=iso(c.occurred_at) if c.occurred_at is not None else None,
        )


class MemoryItem(BaseModel):
    id: str
    content: str
    similarity: float = Field(ge=0.0, le=1.0)
    namespace: str
    tags: list[str]
    importance: float
    created_at: str
    metadata: dict[str, Any]
    session_id: str | None = Field(default=None, description="The conversation or episode it belongs to.")
    sequence: int | None = Field(default=None, description="Its order within the session.")
    speaker: str | None = Field(default=None, description="Who said or wrote it.")
    occurred_at: str | None = Field(default=None, description="When it happened (ISO 8601), when known.")
    context: list[ContextMemory] | None = Field(
        default=None, description="With recall's context=N: its session neighbours, marked as context, in order."
    )
    pinned: bool = Field(default=False, description="A pinned memory: recall lists these first.")
    weak: bool = Field(
        default=False, description="recall: far below the best hit or the relevance floor, so likely not relevant."
    )

    @classmethod
    def of(cls, scored: ScoredMemory) -> MemoryItem:
        return cls(similarity=round(scored.similarity, 6), **scored.record.summary())

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler):
        """The optional fields above are left out at their default (none of the conversation's,
        no context, not pinned, not weak), as the schema's defaults say: most memories have none of
        them, and every client and model reads the result faster without them. (No return type: with
        one, pydantic would give the result's schema that type instead of the fields.)"""
        data = handler(self)
        for name in _ABSENT_AT_DEFAULT:
            if name in data and (data[name] is None or data[name] is False):  # not 0: a sequence
                del data[name]
        return data


# MemoryItem's fields a result leaves out when they hold their default (None or False).
_ABSENT_AT_DEFAULT = ("session_id", "sequence", "speaker", "occurred_at", "context", "pinned", "weak")


class ProvenanceInfo(BaseModel):
    via: str = Field(
        description="What wrote it: remember, remember_batch, extract, import, consolidate, update, revert, "
        "supersede or hook."
    )
    client: str | None = Field(default=None, description="The MCP client's name (from initialize).")
    client_version: str | None = None
    session_id: str | None = None
    derived_from: list[str] = Field(default_factory=list, description="Ids of the memories it came from.")

    @classmethod
    def of(cls, provenance: Provenance | None) -> ProvenanceInfo | None:
        return None if provenance is None else cls(**provenance.as_dict())


class MemoryDetail(BaseModel):
    """Everything stored about a memory but its vector."""

    id: str
    content: str
    namespace: str
    tags: list[str]
    importance: float
    source: str
    created_at: str
    updated_at: str
    last_accessed: str
    access_count: int
    metadata: dict[str, Any]
    session_id: str | None = None
    sequence: int | None = None
    speaker: str | None = None
    occurred_at: str | None = None
    memory_type: str = "fact"
    expires_at: str | None = None
    pinned: bool = False
    version: int = 1
    provenance: ProvenanceInfo | None = None

    @classmethod
    def of(cls, record: MemoryRecord) -> MemoryDetail:
        return cls(
            **record.summary(),
            source=record.source,
            updated_at=iso(record.updated_at),
            last_accessed=iso(record.last_accessed),
            access_count=record.access_count,
            memory_type=record.memory_type,
            expires_at=timestamp(record.expires_at),
            version=record.version,
            provenance=ProvenanceInfo.of(record.provenance),
        )


class RelationItem(BaseModel):
    source_id: str
    target_id: str
    relation: str
    weight: float
    created_at: str


class FullMemory(MemoryDetail):
    """get_memories: a memory with its versions; a superseded one with its successor."""

    current: bool = Field(default=True, description="False when a successor closed it (supersedes).")
    valid_until: str | None = Field(default=None, description="When it stopped being current (closed memories).")
    superseded_by: str | None = None
    versions: int = Field(default=1, description="Versions kept, this one included (memory_history lists them).")
    relations: list[RelationItem] = Field(default_factory=list, description="Its relations, either direction.")


class GetMemoriesResult(BaseModel):
    memories: list[FullMemory]
    not_found: list[str]


class UpdateMemoryResult(BaseModel):
    memory: MemoryDetail
    changed: list[str] = Field(description="The fields that changed.")
    re_embedded: bool = Field(description="True when the content changed and the memory was embedded again.")


class DiffPart(BaseModel):
    op: Literal["equal", "delete", "insert"]
    text: str


class MemoryVersion(BaseModel):
    version: int
    content: str
    tags: list[str]
    importance: float
    metadata: dict[str, Any]
    memory_type: str
    pinned: bool
    expires_at: str | None = None
    valid_from: str
    valid_until: str | None = Field(default=None, description="null for the current version.")
    current: bool
    retired_by: str | None = Field(default=None, description="update or supersede.")
    superseded_by: str | None = None
    provenance: ProvenanceInfo | None = None
    changed: list[str] | None = Field(
        default=None, description="diff=true: the fields that differ from the version before."
    )
    diff: list[DiffPart] | None = Field(
        default=None, description="diff=true: the content against the version before, by words."
    )


class MemoryHistoryResult(BaseModel):
    memory_id: str
    versions: list[MemoryVersion] = Field(description="Newest first.")
    total: int


class RecentMemories(BaseModel):
    namespace: str
    memories: list[MemoryDetail]
    total_in_namespace: int


class MemoryRef(BaseModel):
    id: str
    content: str
    namespace: str

    @classmethod
    def of(cls, record: MemoryRecord) -> MemoryRef:
        return cls(id=record.id, content=record.content, namespace=record.namespace)


class SimilarMemory(BaseModel):
    id: str
    similarity: float
    relation: str = Field(description="duplicate, or contradiction: alike but a number, date or negation differs.")
    content_preview: str
    index: int | None = Field(default=None, description="remember_batch: the item it resembles.")


class RememberResult(BaseModel):
    id: str = Field(
        description="The new memory's id; for an exact copy of a stored memory (or with on_duplicate=skip and a "
        "duplicate found), that memory's, not stored again."
    )
    content: str
    namespace: str
    created_at: str
    stored: bool = True
    similar_existing: list[SimilarMemory] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list, description="Memories this one closed.")


class RememberBatchResult(BaseModel):
    ids: list[str] = Field(description="The stored memories' ids, in item order (skipped items left out).")
    count: int
    similar_existing: list[SimilarMemory] = Field(
        default_factory=list, description="Each item's closest stored look-alike, if any (index: the item)."
    )
    skipped: list[int] = Field(
        default_factory=list,
        description="Items not stored: exact copies (see similar_existing) or, with on_duplicate=skip, duplicates.",
    )
    superseded: list[str] = Field(default_factory=list)


class ActivationStep(BaseModel):
    from_id: str
    via: str = Field(description="relation:<label> (reverse: followed backwards), co_recall or conversation.")


class ExpandedMemory(BaseModel):
    """A memory reached from recall's hits (get_memories gives the rest of it)."""

    id: str
    content: str
    namespace: str
    similarity: float = Field(description="Cosine similarity to the query.")
    activation: float = Field(description="How strongly the hits activated it (0-1), weighed by the query.")
    path: list[ActivationStep] = Field(description="How it was reached, from a hit.")


class RecallResult(BaseModel):
    memories: list[MemoryItem]
    total: int
    expanded: list[ExpandedMemory] | None = Field(
        default=None, description="With expand: memories reached from the hits by spreading activation."
    )


class NearbyResult(BaseModel):
    reference: MemoryRef
    neighbors: list[MemoryItem]


class ForgetResult(BaseModel):
    deleted: int
    ids: list[str]
    not_found: list[str] = Field(
        default_factory=list, description="Ids asked for by id that were not deleted: no such memory (or not matching)."
    )

    @classmethod
    def of(cls, deleted: list[str], *, asked: Sequence[str]) -> ForgetResult:
        gone = set(deleted)
        return cls(deleted=len(deleted), ids=deleted, not_found=[i for i in dict.fromkeys(asked) if i not in gone])


class IndexInfo(BaseModel):
    name: str
    index_type: str
    column: str
    num_indexed_rows: int
    status: str


class StatsResult(BaseModel):
    total_memories: int
    memories_by_namespace: dict[str, int]
    storage_bytes: Annotated[int, FOR_PROGRAMS]
    storage_mb: float
    estimated_vector_bytes: Annotated[int, FOR_PROGRAMS]
    has_vector_index: bool
    has_fts_index: bool
    indices: Annotated[list[IndexInfo], FOR_PROGRAMS]
    num_fragments: Annotated[int, FOR_PROGRAMS]
    needs_compaction: bool
    table_version: Annotated[int, FOR_PROGRAMS]
    oldest_memory_date: str | None
    newest_memory_date: str | None
    avg_content_length: float
    embedding_model: str
    embedding_dimensions: Annotated[int, FOR_PROGRAMS]
    storage_path: str
    memories_by_tier: dict[str, int] = Field(
        default_factory=dict, description="working, episodic, semantic, procedural (how each is used)."
    )
    read_only: bool = False
    read_only_reason: str | None = None
    damaged_versions: list[int] = Field(default_factory=list)


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


@overload
def timestamp(value: None) -> None: ...


@overload
def timestamp(value: datetime) -> str: ...


@overload
def timestamp(value: datetime | None) -> str | None: ...


def timestamp(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


class HybridMemoryItem(MemoryItem):
    vector_score: float | None = Field(
        default=None,
        description="Cosine similarity from the vector search; null when the memory was not among its results.",
    )
    fts_score: float | None = Field(
        default=None,
        description="BM25 keyword score divided by the best keyword score for this query (1.0 = best keyword "
        "match, 0-1); null when the memory did not match by keyword.",
    )
    score: float = Field(
        description="What the results are ordered by: alpha x scaled similarity + (1 - alpha) x scaled keyword "
        "score, plus cues."
    )


class HybridRecallResult(BaseModel):
    query: Annotated[str, FOR_PROGRAMS]
    alpha: Annotated[float, FOR_PROGRAMS]
    memories: list[HybridMemoryItem]
    total: int
    search_type: str = Field(description="hybrid, vector (alpha=1.0) or keyword (alpha=0.0).")

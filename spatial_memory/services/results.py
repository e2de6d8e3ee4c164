"""Typed tool results. Their JSON schemas become the tools' published outputSchema.

One model per result, kept in one module because together they are the contract clients read
(tests/snapshots/tools_list.json pins it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..storage.records import MemoryRecord, Provenance, ScoredMemory, iso

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
    def of(cls, record: MemoryRecord, offset: int) -> ContextMemory:
        c = record.conversation
        return cls(
            id=record.id,
            content=record.content,
            offset=offset,
            sequence=c.sequence,
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
    session_id: str | None = Field(None, description="The conversation or episode it belongs to.")
    sequence: int | None = Field(None, description="Its order within the session.")
    speaker: str | None = Field(None, description="Who said or wrote it.")
    occurred_at: str | None = Field(None, description="When it happened (ISO 8601), when known.")
    context: list[ContextMemory] | None = Field(
        None, description="With recall's context=N: its session neighbours, marked as context, in order."
    )
    pinned: bool = Field(False, description="A pinned memory: recall lists these first.")

    @classmethod
    def of(cls, scored: ScoredMemory) -> MemoryItem:
        return cls(similarity=round(scored.similarity, 6), **scored.record.summary())


class ProvenanceInfo(BaseModel):
    via: str = Field(
        description="What wrote it: remember, remember_batch, extract, import, consolidate, update, revert, "
        "supersede or hook."
    )
    client: str | None = Field(None, description="The MCP client's name (from initialize).")
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

    current: bool = Field(True, description="False when a successor closed it (supersedes).")
    valid_until: str | None = Field(None, description="When it stopped being current (closed memories).")
    superseded_by: str | None = None
    versions: int = Field(1, description="Versions kept, this one included (memory_history lists them).")
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
    valid_until: str | None = Field(None, description="null for the current version.")
    current: bool
    retired_by: str | None = Field(None, description="update or supersede.")
    superseded_by: str | None = None
    provenance: ProvenanceInfo | None = None
    changed: list[str] | None = Field(None, description="diff=true: the fields that differ from the version before.")
    diff: list[DiffPart] | None = Field(
        None, description="diff=true: the content against the version before, by words."
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
    index: int | None = Field(None, description="remember_batch: the item it resembles.")


class RememberResult(BaseModel):
    id: str = Field(description="The new memory's id; with on_duplicate=skip and a duplicate found, that duplicate's.")
    content: str
    namespace: str
    created_at: str
    stored: bool = True
    similar_existing: list[SimilarMemory] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list, description="Memories this one closed.")


class RememberBatchResult(BaseModel):
    ids: list[str] = Field(description="The stored memories' ids, in item order (skipped items left out).")
    count: int
    similar_existing: list[SimilarMemory] = Field(default_factory=list)
    skipped: list[int] = Field(default_factory=list, description="Items not stored (on_duplicate=skip).")
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
        None, description="With expand: memories reached from the hits by spreading activation."
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


def timestamp(value: Any) -> str | None:
    return iso(value) if value is not None else None


# ---- spatial ------------------------------------------------------------------------------


class PathMemory(BaseModel):
    id: str
    content: str
    namespace: str
    similarity: float = Field(description="Cosine similarity to this point of the path.")


class JourneyStep(BaseModel):
    step: int
    t: float
    position: list[float] | None = Field(None, description="The interpolated vector (only with include_positions).")
    nearby_memories: list[PathMemory]
    distance_to_path: float = Field(description="Cosine distance from the nearest memory to this path point.")


class JourneyResult(BaseModel):
    start_id: str
    end_id: str
    steps: list[JourneyStep]
    path_coverage: float = Field(description="Fraction of steps with a memory within the coverage radius.")
    start_end_similarity: float
    coverage_similarity: float = Field(description="Similarity a memory needs to a path point to cover it.")


class WanderStep(BaseModel):
    step: int
    memory: MemoryItem
    similarity_to_previous: float
    selection_probability: float
    via: str | None = Field(None, description="relation:<label> when the step followed a relation.")


class WanderResult(BaseModel):
    start_id: str
    steps: list[WanderStep]
    total_distance: float = Field(description="Sum of cosine distances between consecutive memories.")
    ended_early: bool = False
    end_reason: str | None = None


class ClusterSample(BaseModel):
    id: str
    content: str
    similarity: float = Field(description="Cosine similarity to the cluster centroid.")


class Cluster(BaseModel):
    cluster_id: int
    size: int
    keywords: list[str]
    representative_memory: ClusterSample
    sample_memories: list[ClusterSample]
    coherence: float
    member_ids: list[str] | None = Field(None, description="Every member's id (only with include_members).")


class RegionsResult(BaseModel):
    clusters: list[Cluster]
    total_memories: int
    noise_count: int
    clustering_quality: float = Field(description="Silhouette score over clustered memories (-1 to 1).")
    sampled: bool = Field(False, description="True when a random sample of the namespace was analyzed.")


class VisualNode(BaseModel):
    id: str
    x: float
    y: float
    z: float | None = None
    label: str
    cluster: int
    importance: float
    highlighted: bool = False


class VisualEdge(BaseModel):
    from_id: str
    to_id: str
    weight: float


class VisualCluster(BaseModel):
    id: int
    label: str
    color: str
    size: int
    center_x: float
    center_y: float
    center_z: float | None = None


class VisualizeResult(BaseModel):
    format: str
    node_count: int
    nodes: list[VisualNode] | None = None
    edges: list[VisualEdge] | None = None
    clusters: list[VisualCluster] | None = None
    bounds: dict[str, float] | None = None
    output: str | None = Field(None, description="The mermaid or svg text (for those formats).")
    cached: bool = False


# ---- lifecycle ------------------------------------------------------------------------


class DecayedMemory(BaseModel):
    id: str
    content_preview: str = Field(description="The first 100 characters of the content.")
    old_importance: float
    new_importance: float
    decay_factor: float = Field(description="Value of the decay curve at days_since_access (1.0 = no decay).")
    days_since_access: float = Field(description="Days since the memory was last accessed (or created).")
    access_count: int


class DecayResult(BaseModel):
    memories_analyzed: int
    memories_decayed: int = Field(
        description="Memories whose importance drops (or would drop, in a dry run); drops under 0.001 are ignored."
    )
    avg_decay_factor: float = Field(description="Mean decay_factor over the decayed memories (1.0 if none).")
    decayed_memories: list[DecayedMemory] = Field(
        description="The decayed memories, largest importance drop first (at most 100; see details_truncated)."
    )
    dry_run: bool
    details_truncated: bool = Field(False, description="True when decayed_memories lists only the first 100.")


class ReinforcedMemory(BaseModel):
    id: str
    content_preview: str
    old_importance: float
    new_importance: float
    boost_applied: float = Field(description="new_importance - old_importance, after clamping to 0-1.")


class ReinforceResult(BaseModel):
    memories_reinforced: int
    avg_boost: float
    reinforced: list[ReinforcedMemory]
    not_found: list[str]


class Extraction(BaseModel):
    content: str
    confidence: float
    pattern_matched: str
    start_pos: int = Field(description="Start offset of the statement in the source text.")
    end_pos: int = Field(description="End offset (exclusive) of the statement in the source text.")
    stored: bool
    memory_id: str | None = Field(None, description="Id of the stored memory, when stored.")
    duplicate_of: str | None = Field(
        None, description="When skipped as a duplicate: the id of the existing (or just-stored) similar memory."
    )


class ExtractResult(BaseModel):
    candidates_found: int
    memories_created: int
    deduplicated_count: int
    extractions: list[Extraction]


class ConsolidationGroup(BaseModel):
    representative_id: str = Field(description="Id of the memory that is kept (holding the merged content).")
    member_ids: list[str] = Field(description="All members, the representative first.")
    avg_similarity: float
    action_taken: str = Field(
        description="merged (merge_content), deleted (keep_* strategies: the others were deleted), preview "
        "(dry run), or skipped (the merged memory would break a size limit; nothing changed)."
    )
    reason: str | None = Field(None, description="Why a group was skipped.")


class ConsolidateResult(BaseModel):
    groups_found: int = Field(description="Duplicate groups found in the namespace.")
    memories_merged: int = Field(description="Memories kept, one per processed group.")
    memories_deleted: int
    groups: list[ConsolidationGroup] = Field(description="The processed groups (at most max_groups), largest first.")
    dry_run: bool


# ---- search and portability -------------------------------------------------------------------


class HybridMemoryItem(MemoryItem):
    vector_score: float | None = Field(
        None, description="Cosine similarity from the vector search; null when the memory was not among its results."
    )
    fts_score: float | None = Field(
        None,
        description="BM25 keyword score divided by the best keyword score for this query (1.0 = best keyword "
        "match, 0-1); null when the memory did not match by keyword.",
    )
    score: float = Field(description="Weighted reciprocal-rank-fusion score the results are ordered by.")


class HybridRecallResult(BaseModel):
    query: str
    alpha: float
    memories: list[HybridMemoryItem]
    total: int
    search_type: str = Field(description="hybrid, vector (alpha=1.0) or keyword (alpha=0.0).")


class ExportResult(BaseModel):
    format: str
    output_path: str = Field(description="The absolute path written.")
    memories_exported: int
    versions_exported: int = Field(0, description="Retired versions written beside them (rows with valid_until).")
    relations_exported: int = Field(0, description="Relations written with their source memories.")
    file_size_bytes: int
    file_size_mb: float
    namespaces_included: list[str]
    duration_seconds: float
    compression: str | None = Field(None, description="zstd for parquet; null for json and csv.")
    include_vectors: bool


class ImportValidationError(BaseModel):
    row_number: int = Field(description="1-based position of the record in the file (a CSV header is not counted).")
    field: str
    error: str
    value: str | None = Field(None, description="The offending value, truncated to 100 characters.")


class ImportedMemoryPreview(BaseModel):
    id: str
    content_preview: str
    namespace: str


class ImportResult(BaseModel):
    source_path: str = Field(description="The absolute path read.")
    format: str
    total_records_in_file: int
    memories_imported: int = Field(description="Memories stored (always 0 on a dry run; see would_import).")
    memories_skipped: int = Field(description="Valid records skipped as duplicates (deduplicate=true).")
    versions_imported: int = Field(0, description="Retired versions restored into the memories' history.")
    relations_imported: int = Field(0, description="Relations restored (those whose target is gone are dropped).")
    memories_failed: int = Field(description="Records that failed validation.")
    validation_errors: list[ImportValidationError] = Field(description="One entry per bad field (at most 100).")
    namespace_override: str | None = None
    duration_seconds: float
    dry_run: bool
    imported_memories: list[ImportedMemoryPreview] = Field(description="The first 10 memories imported.")
    would_import: int = Field(description="Memories a real run stores (dry run), or stored.")
    new_ids_assigned: int = Field(
        description="Records given a new id because theirs was missing, not a UUID, repeated, or already in the store."
    )


class SetupHooksResult(BaseModel):
    """setup_hooks: the configuration that makes a client capture memories (nothing is written)."""

    client: str
    scope: str
    hooks_file: str
    hooks: dict[str, Any] = Field(description="To merge into hooks_file.")
    mcp_file: str
    mcp_server: dict[str, Any] = Field(description='mcp_file\'s mcpServers["spatial-memory"].')
    write_command: str = Field(description="Merges both into the files, backups first.")

    @classmethod
    def of(cls, setup: Any) -> SetupHooksResult:
        flags = f"--client {setup.client} --{setup.scope} --write"
        return cls(
            client=setup.client,
            scope=setup.scope,
            hooks_file=str(setup.hooks_file),
            hooks=setup.hooks,
            mcp_file=str(setup.mcp_file),
            mcp_server=setup.mcp_server,
            write_command=f"spatial-memory setup-hooks {flags}",
        )

    def render(self) -> str:
        """The result as the command line shows it."""
        import json

        return (
            f"# {self.client} hooks ({self.scope}): merge into {self.hooks_file}\n"
            f"{json.dumps(self.hooks, indent=2)}\n\n"
            f'# MCP server: {self.mcp_file}, under "mcpServers"\n'
            f"{json.dumps({'spatial-memory': self.mcp_server}, indent=2)}"
        )


# ---- connections ----------------------------------------------------------------------------


class HealthCheck(BaseModel):
    name: str
    status: str = Field(description="ok, warning or error.")
    message: str
    latency_ms: float


class HealthResult(BaseModel):
    status: str = Field(description="healthy, degraded (a warning) or unhealthy (an error).")
    ready: bool = Field(description="The store is open and the model loaded: a call waits for neither.")
    alive: bool
    version: str
    timestamp: str
    checks: list[HealthCheck] | None = Field(None, description="Each check (only with verbose).")


class Connection(BaseModel):
    id: str
    content: str
    namespace: str
    similarity: float = Field(description="Cosine similarity to the memory.")
    score: float = Field(description="What connections are ordered by: similarity plus shared terms.")
    shared_terms: list[str]
    relations: list[str] = Field(default_factory=list, description="Relations already linking the two.")


class DiscoverConnectionsResult(BaseModel):
    memory_id: str
    namespace: str
    connections: list[Connection]
    total: int


class BridgeEnd(BaseModel):
    id: str
    namespace: str
    content_preview: str


class Bridge(BaseModel):
    similarity: float
    a: BridgeEnd
    b: BridgeEnd


class CorpusBridgesResult(BaseModel):
    bridges: list[Bridge] = Field(description="Closest first.")
    total_bridges: int = Field(description="Pairs at or above min_similarity (bridges lists max_bridges of them).")
    memories_compared: int
    namespaces: list[str]


class RelateResult(BaseModel):
    relation: RelationItem
    created: bool = Field(description="False when the relation existed (its weight was updated).")


class UnrelateResult(BaseModel):
    removed: int
    relations: list[RelationItem]

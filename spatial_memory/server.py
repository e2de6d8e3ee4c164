"""The MCP server: registers the tools and routes each to one service method.

Tools are thin typed functions; every constraint lives in the signature so the JSON
schema is generated. Heavy modules (LanceDB, onnxruntime, numpy-heavy services) are
imported lazily so `initialize` and `tools/list` are answered at once.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from . import __version__
from .config import Settings
from .results import (
    ConsolidateResult,
    DecayResult,
    DeleteNamespaceResult,
    ExportResult,
    ExtractResult,
    ForgetResult,
    HybridRecallResult,
    ImportResult,
    JourneyResult,
    NamespacesResult,
    NearbyResult,
    RecallResult,
    RegionsResult,
    ReinforceResult,
    RememberBatchResult,
    RememberResult,
    RenameNamespaceResult,
    StatsResult,
    VisualizeResult,
    WanderResult,
)
from .runtime import Embedder, Resources
from .toolkit import ADDITIVE, CHANGING, DESTRUCTIVE, READ_ONLY, SpatialMemoryMCPServer, call

log = logging.getLogger(__name__)

INSTRUCTIONS = """Persistent memory as a semantic space. Store facts, decisions and context with
`remember`; find them with `recall` (by meaning) or `hybrid_recall` (meaning + keywords). Explore
with `nearby`, `journey`, `wander`, `regions` and `visualize`. Keep memory healthy with `decay`,
`reinforce`, `consolidate` and `extract`. Namespaces separate projects."""


@dataclass
class App:
    """Everything a tool needs, wired once per server in the lifespan."""

    resources: Resources

    def __post_init__(self) -> None:
        from .services.memory import MemoryService

        self.memory = MemoryService(self.resources)
        from .services.spatial import SpatialService
        from .services.visualization import VisualizationService

        self.spatial = SpatialService(self.resources)
        self.visualization = VisualizationService(self.resources)
        from .services.lifecycle import LifecycleService

        self.lifecycle = LifecycleService(self.resources)


# ---- argument types ---------------------------------------------------------------------

MemoryId = Annotated[str, Field(min_length=1, max_length=64, description="Memory UUID.")]
Namespace = Annotated[str, Field(min_length=1, max_length=256, description="Namespace name.")]
NamespaceFilter = Annotated[str | None, Field(max_length=256, description="Only memories in this namespace.")]
Content = Annotated[
    str, Field(min_length=1, max_length=100_000, description="The text to remember (at most 100,000 characters).")
]
Tags = Annotated[list[Annotated[str, Field(max_length=1000)]] | None, Field(max_length=100, description="Tags.")]
Importance = Annotated[float, Field(ge=0.0, le=1.0, description="Importance from 0.0 to 1.0.")]
Metadata = Annotated[dict[str, Any] | None, Field(description="Arbitrary JSON metadata.")]
Limit = Annotated[int, Field(ge=1, le=100, description="Maximum number of results (1-100).")]
MinSimilarity = Annotated[float, Field(ge=0.0, le=1.0, description="Minimum cosine similarity (0.0-1.0).")]
Filters = Annotated[
    dict[str, Any] | None,
    Field(
        description=(
            "Conditions combined with AND: {column: value} for equality or {column: {op: value}} with op in "
            "eq, ne, gt, gte, lt, lte, in, nin, contains. Columns: namespace, tags, importance, source, "
            "created_at, updated_at, last_accessed, access_count, or metadata.<key>."
        )
    ),
]


class MemoryInput(BaseModel):
    content: Content
    namespace: Namespace = "default"
    tags: Tags = None
    importance: Importance = 0.5
    metadata: Metadata = None


def _new(item: MemoryInput):
    from .services.memory import NewMemory

    return NewMemory(
        content=item.content,
        namespace=item.namespace,
        tags=list(item.tags or []),
        importance=item.importance,
        metadata=dict(item.metadata or {}),
    )


def create_server(settings: Settings, *, embedder: Embedder | None = None) -> SpatialMemoryMCPServer:
    @asynccontextmanager
    async def lifespan(_server) -> AsyncIterator[App]:
        resources = Resources(settings, embedder)
        app = App(resources)
        resources.upkeep.start()
        if settings.preload:
            threading.Thread(target=resources.warm_up, name="spatial-memory-warm-up", daemon=True).start()
        try:
            yield app
        finally:
            await anyio.to_thread.run_sync(resources.upkeep.stop)

    server = SpatialMemoryMCPServer(
        "spatial-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=settings.log_level,
    )

    def tool(**options):
        # Docstrings become descriptions: dedent them so clients show clean text.
        def register(fn):
            return server.tool(description=inspect.cleandoc(fn.__doc__ or ""), **options)(fn)

        return register

    # ---- core ---------------------------------------------------------------------------

    @tool(annotations=ADDITIVE)
    async def remember(
        content: Content,
        ctx: Context,
        namespace: Namespace = "default",
        tags: Tags = None,
        importance: Importance = 0.5,
        metadata: Metadata = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a new memory. Returns its id. Use namespaces to separate projects and tags to categorize."""
        item = MemoryInput(content=content, namespace=namespace, tags=tags, importance=importance, metadata=metadata)
        return await call(ctx, lambda app: app.memory.remember(_new(item)))

    @tool(annotations=ADDITIVE)
    async def remember_batch(
        memories: Annotated[list[MemoryInput], Field(min_length=1, description="Memories to store.")],
        ctx: Context,
    ) -> Annotated[CallToolResult, RememberBatchResult]:
        """Store many memories in one call, all or nothing: if any item is invalid, nothing is stored."""
        return await call(ctx, lambda app: app.memory.remember_batch([_new(m) for m in memories]))

    @tool(annotations=READ_ONLY)
    async def recall(
        query: Annotated[str, Field(min_length=1, max_length=10_000, description="What to search for.")],
        ctx: Context,
        limit: Limit = 5,
        namespace: NamespaceFilter = None,
        min_similarity: MinSimilarity = 0.0,
        tags: Annotated[
            list[str] | None, Field(max_length=100, description="Only memories with any of these tags.")
        ] = None,
        filters: Filters = None,
        hybrid_alpha: Annotated[
            float | None,
            Field(
                ge=0.0,
                le=1.0,
                description="Rank by hybrid_recall's fusion of meaning and keywords instead, with this alpha "
                "(1.0 = meaning only, 0.0 = keywords only). Omit for pure semantic search.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Find the memories most similar in meaning to the query, best first."""
        return await call(
            ctx,
            lambda app: app.memory.recall(
                query,
                limit=limit,
                namespace=namespace,
                tags=tags,
                filters=filters,
                min_similarity=min_similarity,
                hybrid_alpha=hybrid_alpha,
            ),
        )

    @tool(annotations=READ_ONLY)
    async def nearby(
        memory_id: MemoryId,
        ctx: Context,
        limit: Limit = 5,
        namespace: NamespaceFilter = None,
    ) -> Annotated[CallToolResult, NearbyResult]:
        """Find the memories closest to a given memory."""
        return await call(ctx, lambda app: app.memory.nearby(memory_id, limit=limit, namespace=namespace))

    @tool(annotations=DESTRUCTIVE)
    async def forget(
        ctx: Context,
        memory_id: MemoryId | None = None,
        namespace: NamespaceFilter = None,
        filters: Filters = None,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Delete a memory by id (deleted: 0 if it does not exist), or every memory matching namespace and filters."""
        return await call(ctx, lambda app: app.memory.forget(memory_id, namespace=namespace, filters=filters))

    @tool(annotations=DESTRUCTIVE)
    async def forget_batch(
        memory_ids: Annotated[list[MemoryId], Field(min_length=1, description="Memory UUIDs to delete.")],
        ctx: Context,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Delete several memories by id; returns the ids actually deleted."""
        return await call(ctx, lambda app: app.memory.forget_batch(memory_ids))

    # ---- spatial ------------------------------------------------------------------------

    @tool(annotations=READ_ONLY)
    async def journey(
        start_id: MemoryId,
        end_id: MemoryId,
        ctx: Context,
        steps: Annotated[int, Field(ge=2, le=20, description="Points along the path, ends included (2-20).")] = 10,
        namespace: NamespaceFilter = None,
        neighbors_per_step: Annotated[int, Field(ge=1, le=10, description="Memories listed per step.")] = 3,
        include_positions: Annotated[bool, Field(description="Include each step's vector (large).")] = False,
    ) -> Annotated[CallToolResult, JourneyResult]:
        """Walk the straight (spherical) path between two memories and list the memories found along it.

        Reveals the concepts that connect two ideas. path_coverage is the fraction of steps with a memory
        at cosine similarity >= 0.6 to the path point; distance_to_path is 1 - that similarity."""
        return await call(
            ctx,
            lambda app: app.spatial.journey(
                start_id,
                end_id,
                steps=steps,
                namespace=namespace,
                neighbors_per_step=neighbors_per_step,
                include_positions=include_positions,
            ),
        )

    @tool(annotations=READ_ONLY)
    async def wander(
        ctx: Context,
        start_id: Annotated[MemoryId | None, Field(description="Start here (default: a random memory).")] = None,
        seed: Annotated[
            str | None, Field(max_length=10_000, description="Or start at the memory nearest this text.")
        ] = None,
        steps: Annotated[int, Field(ge=1, le=20, description="Moves to make (1-20).")] = 10,
        temperature: Annotated[
            float, Field(ge=0.0, le=1.0, description="0 = always the most similar neighbour, 1 = near uniform.")
        ] = 0.5,
        namespace: NamespaceFilter = None,
        random_seed: Annotated[int | None, Field(description="Make the walk reproducible.")] = None,
    ) -> Annotated[CallToolResult, WanderResult]:
        """Random walk through memory space for serendipitous discovery; never revisits a memory.

        Each move picks among the 10 nearest unvisited memories by a softmax over similarity."""
        return await call(
            ctx,
            lambda app: app.spatial.wander(
                start_id=start_id,
                seed=seed,
                steps=steps,
                temperature=temperature,
                namespace=namespace,
                random_seed=random_seed,
            ),
        )

    @tool(annotations=READ_ONLY)
    async def regions(
        ctx: Context,
        namespace: NamespaceFilter = None,
        min_cluster_size: Annotated[int, Field(ge=2, le=50, description="Minimum memories per cluster.")] = 3,
        max_clusters: Annotated[int | None, Field(ge=1, le=1000, description="Keep the largest N clusters.")] = None,
        include_members: Annotated[bool, Field(description="List every member id of each cluster.")] = False,
    ) -> Annotated[CallToolResult, RegionsResult]:
        """Discover topic clusters (HDBSCAN) with keywords, a representative memory and samples for each."""
        return await call(
            ctx,
            lambda app: app.spatial.regions(
                namespace=namespace,
                min_cluster_size=min_cluster_size,
                max_clusters=max_clusters,
                include_members=include_members,
            ),
        )

    @tool(annotations=READ_ONLY)
    async def visualize(
        ctx: Context,
        memory_ids: Annotated[
            list[MemoryId] | None, Field(max_length=10_000, description="Specific memories to draw.")
        ] = None,
        namespace: NamespaceFilter = None,
        format: Annotated[Literal["json", "mermaid", "svg"], Field(description="Output format.")] = "json",
        dimensions: Annotated[Literal[2, 3], Field(description="Projection dimensions.")] = 2,
        include_edges: Annotated[bool, Field(description="Include the strongest similarity links.")] = True,
        max_memories: Annotated[int, Field(ge=1, le=10_000, description="Most memories to draw.")] = 500,
        highlight_ids: Annotated[list[MemoryId] | None, Field(max_length=1000, description="Memories to mark.")] = None,
    ) -> Annotated[CallToolResult, VisualizeResult]:
        """Map memories to 2-D/3-D (UMAP on cosine similarity) as json, a Mermaid flowchart or an SVG image.

        Colours are clusters, size is importance, tooltips hold the full content."""
        # The first projection in a process compiles UMAP (numba): say so while it runs.
        app = ctx.request_context.lifespan_context
        note = None if app.visualization.projection_ready else "compiling UMAP for the first map since start-up"
        return await call(
            ctx,
            lambda app: app.visualization.visualize(
                memory_ids=memory_ids,
                namespace=namespace,
                format=format,
                dimensions=dimensions,
                include_edges=include_edges,
                max_memories=max_memories,
                highlight_ids=highlight_ids,
            ),
            progress=note,
        )

    # ---- lifecycle ----------------------------------------------------------------------

    @tool(annotations=DESTRUCTIVE)
    async def decay(
        ctx: Context,
        namespace: NamespaceFilter = None,
        decay_function: Annotated[
            Literal["exponential", "linear", "step"],
            Field(
                description="Decay curve: exponential (halves every half-life), linear (0.5 at one half-life, "
                "0 at two) or step (halves at each full half-life)."
            ),
        ] = "exponential",
        half_life_days: Annotated[
            float, Field(ge=1, le=365, description="Days until importance halves (1-365).")
        ] = 30.0,
        min_importance: Annotated[
            float,
            Field(ge=0.0, le=0.5, description="Importance floor (0.0-0.5); memories already below it are left alone."),
        ] = 0.1,
        access_weight: Annotated[
            float,
            Field(
                ge=0.0,
                le=1.0,
                description="How much use slows decay (0.0-1.0): the half-life is multiplied by "
                "1 + access_weight * ln(1 + access_count).",
            ),
        ] = 0.3,
        dry_run: Annotated[bool, Field(description="Preview only (the default); pass false to apply.")] = True,
    ) -> Annotated[CallToolResult, DecayResult]:
        """Lower the importance of memories that have not been accessed for a while.

        Age is counted from the last access (or creation): memories used or stored just now keep their importance.
        Preview by default; dry_run=false applies it in one commit. Running decay again later follows the curve
        from the last access instead of compounding it."""
        return await call(
            ctx,
            lambda app: app.lifecycle.decay(
                namespace=namespace,
                decay_function=decay_function,
                half_life_days=half_life_days,
                min_importance=min_importance,
                access_weight=access_weight,
                dry_run=dry_run,
            ),
        )

    @tool(annotations=ADDITIVE)
    async def reinforce(
        memory_ids: Annotated[list[MemoryId], Field(min_length=1, description="Memory UUIDs to reinforce.")],
        ctx: Context,
        boost_type: Annotated[
            Literal["additive", "multiplicative", "set_value"],
            Field(description="additive: old + amount; multiplicative: old * (1 + amount); set_value: amount."),
        ] = "additive",
        boost_amount: Annotated[
            float, Field(ge=0.0, le=1.0, description="Boost amount (0.0-1.0); the result is clamped to 0-1.")
        ] = 0.1,
        update_access: Annotated[
            bool, Field(description="Also count an access: last_accessed = now, access_count + 1.")
        ] = True,
    ) -> Annotated[CallToolResult, ReinforceResult]:
        """Raise (or set) the importance of memories that proved useful.

        Unknown ids are listed in not_found; the others are updated together in one commit."""
        return await call(
            ctx,
            lambda app: app.lifecycle.reinforce(
                memory_ids, boost_type=boost_type, boost_amount=boost_amount, update_access=update_access
            ),
        )

    @tool(annotations=ADDITIVE)
    async def extract(
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=100_000,
                description="Conversation, notes or document to extract from (at most 100,000 characters).",
            ),
        ],
        ctx: Context,
        namespace: Annotated[
            str, Field(min_length=1, max_length=256, description="Namespace for the extracted memories.")
        ] = "extracted",
        min_confidence: Annotated[
            float, Field(ge=0.0, le=1.0, description="Minimum extraction confidence (0.0-1.0).")
        ] = 0.5,
        deduplicate: Annotated[
            bool,
            Field(description="Skip statements similar to a memory of the namespace or to an earlier statement."),
        ] = True,
        dedup_threshold: Annotated[
            float,
            Field(ge=0.7, le=0.99, description="Cosine similarity from which a statement is a duplicate (0.7-0.99)."),
        ] = 0.9,
    ) -> Annotated[CallToolResult, ExtractResult]:
        """Find memorable statements in text and store each as a memory.

        Recognises decisions, definitions, solutions, errors, patterns, facts, preferences, insights,
        requirements, problems and explicit notes. Stored memories have source "extracted", their pattern as a
        tag, importance = confidence, and metadata.extraction with the pattern, confidence and
        start_pos/end_pos of the statement in the text."""
        return await call(
            ctx,
            lambda app: app.lifecycle.extract(
                text,
                namespace=namespace,
                min_confidence=min_confidence,
                deduplicate=deduplicate,
                dedup_threshold=dedup_threshold,
            ),
        )

    @tool(annotations=DESTRUCTIVE)
    async def consolidate(
        namespace: Namespace,
        ctx: Context,
        similarity_threshold: Annotated[
            float,
            Field(
                ge=0.7,
                le=0.99,
                description="Minimum cosine similarity between every two members of a group (0.7-0.99).",
            ),
        ] = 0.85,
        strategy: Annotated[
            Literal["keep_newest", "keep_oldest", "keep_highest_importance", "merge_content"],
            Field(
                description="Which memory survives: the newest, the oldest, the most important, or one merged "
                "memory holding every distinct sentence of the group (merge_content)."
            ),
        ] = "keep_highest_importance",
        dry_run: Annotated[bool, Field(description="Preview only (the default); pass false to apply.")] = True,
        max_groups: Annotated[
            int, Field(ge=1, le=100, description="Maximum number of groups to process (1-100).")
        ] = 50,
    ) -> Annotated[CallToolResult, ConsolidateResult]:
        """Merge near-duplicate memories within a namespace.

        Statements that differ in a number, date, unit, environment or negation are never grouped. Preview by
        default; dry_run=false writes the kept memories (recording metadata.consolidated_from) and deletes the
        others in one commit, so nothing can be lost half-way."""
        return await call(
            ctx,
            lambda app: app.lifecycle.consolidate(
                namespace,
                similarity_threshold=similarity_threshold,
                strategy=strategy,
                dry_run=dry_run,
                max_groups=max_groups,
            ),
        )

    # ---- utility ------------------------------------------------------------------------

    @tool(annotations=READ_ONLY)
    async def stats(
        ctx: Context,
        namespace: NamespaceFilter = None,
        include_index_details: bool = True,
    ) -> Annotated[CallToolResult, StatsResult]:
        """Store statistics: counts per namespace, size on disk, indexes, fragments, date range."""
        return await call(
            ctx, lambda app: app.memory.stats(namespace=namespace, include_index_details=include_index_details)
        )

    @tool(annotations=READ_ONLY)
    async def namespaces(ctx: Context, include_stats: bool = True) -> Annotated[CallToolResult, NamespacesResult]:
        """List namespaces with memory counts and date ranges."""
        return await call(ctx, lambda app: app.memory.namespaces(include_stats=include_stats))

    @tool(annotations=DESTRUCTIVE)
    async def delete_namespace(
        namespace: Namespace,
        ctx: Context,
        confirm: bool = False,
        dry_run: bool = True,
    ) -> Annotated[CallToolResult, DeleteNamespaceResult]:
        """Delete every memory in a namespace. Preview with dry_run=true (the default); deleting needs confirm=true."""
        return await call(ctx, lambda app: app.memory.delete_namespace(namespace, confirm=confirm, dry_run=dry_run))

    @tool(annotations=CHANGING)
    async def rename_namespace(
        old_namespace: Namespace,
        new_namespace: Namespace,
        ctx: Context,
    ) -> Annotated[CallToolResult, RenameNamespaceResult]:
        """Move every memory of a namespace to a new namespace name, all at once."""
        return await call(ctx, lambda app: app.memory.rename_namespace(old_namespace, new_namespace))

    # ---- search and portability ---------------------------------------------------------

    @tool(annotations=READ_ONLY)
    async def hybrid_recall(
        query: Annotated[
            str, Field(min_length=1, max_length=10_000, description="What to search for, by meaning and by keywords.")
        ],
        ctx: Context,
        alpha: Annotated[
            float,
            Field(ge=0.0, le=1.0, description="Balance: 1.0 = pure vector (meaning), 0.0 = pure keyword, 0.5 = both."),
        ] = 0.5,
        limit: Limit = 5,
        namespace: NamespaceFilter = None,
        min_similarity: MinSimilarity = 0.0,
        tags: Annotated[
            list[str] | None, Field(max_length=100, description="Only memories with any of these tags.")
        ] = None,
        filters: Filters = None,
    ) -> Annotated[CallToolResult, HybridRecallResult]:
        """Search by meaning and by keywords together (LanceDB full-text BM25 + vector search, fused by weighted
        reciprocal rank). Good for names, codes and exact terms. Each hit has vector_score (cosine, null when
        found by keywords only) and fts_score (BM25 relative to the best keyword hit, null when no keyword matched);
        similarity is always the cosine similarity to the query, which min_similarity applies to."""
        return await call(
            ctx,
            lambda app: app.memory.hybrid_recall(
                query,
                alpha=alpha,
                limit=limit,
                namespace=namespace,
                tags=tags,
                filters=filters,
                min_similarity=min_similarity,
            ),
        )

    @tool(annotations=DESTRUCTIVE)
    async def export_memories(
        output_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="File to write, ending in .parquet, .json or .csv, inside an allowed export directory "
                "(default <data dir>/exports); a relative path is taken relative to the first allowed directory. "
                "An existing file there is replaced.",
            ),
        ],
        ctx: Context,
        format: Annotated[
            Literal["parquet", "json", "csv"] | None,
            Field(description="parquet (zstd), json or csv; default: from the file extension."),
        ] = None,
        namespace: NamespaceFilter = None,
        include_vectors: Annotated[
            bool | None,
            Field(description="Include embedding vectors (default: true for parquet and json, false for csv)."),
        ] = None,
    ) -> Annotated[CallToolResult, ExportResult]:
        """Export memories (all, or one namespace) to a Parquet, JSON or CSV file, written atomically."""
        return await call(
            ctx,
            lambda app: app.memory.export_memories(
                output_path, format=format, namespace=namespace, include_vectors=include_vectors
            ),
        )

    @tool(annotations=ADDITIVE)
    async def import_memories(
        source_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="File to read (.parquet, .json or .csv) inside an allowed import directory "
                "(default <data dir>/exports); a relative path is taken relative to the first allowed directory.",
            ),
        ],
        ctx: Context,
        format: Annotated[
            Literal["parquet", "json", "csv"] | None,
            Field(description="parquet (zstd), json or csv; default: from the file extension."),
        ] = None,
        namespace_override: Annotated[
            str | None, Field(max_length=256, description="Put every imported memory in this namespace.")
        ] = None,
        deduplicate: Annotated[
            bool,
            Field(
                description="Skip records at least dedup_threshold similar to a memory of the same namespace "
                "(already stored or earlier in the file)."
            ),
        ] = False,
        dedup_threshold: Annotated[
            float, Field(ge=0.7, le=0.99, description="Cosine similarity at which a record counts as a duplicate.")
        ] = 0.95,
        validate: Annotated[
            bool,
            Field(
                description="true: any invalid record fails the whole import (nothing stored). "
                "false: invalid records are skipped and reported."
            ),
        ] = True,
        regenerate_embeddings: Annotated[
            bool,
            Field(description="Embed the content with this server's model (required when the file has no vectors)."),
        ] = False,
        dry_run: Annotated[bool, Field(description="Only check the file and report; store nothing (default).")] = True,
    ) -> Annotated[CallToolResult, ImportResult]:
        """Import memories from a Parquet, JSON or CSV file (ours or the reference implementation's), all or
        nothing. Preview with dry_run=true (the default), which checks every record. Valid UUID ids not already in
        the store, timestamps, importance, tags, metadata and access counts are kept."""
        return await call(
            ctx,
            lambda app: app.memory.import_memories(
                source_path,
                format=format,
                namespace_override=namespace_override,
                deduplicate=deduplicate,
                dedup_threshold=dedup_threshold,
                validate=validate,
                regenerate_embeddings=regenerate_embeddings,
                dry_run=dry_run,
            ),
        )

    return server

"""Walking and drawing the memory space: journey, wander, regions, visualize."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_HIGHLIGHTS, MAX_MAP_MEMORIES, MAX_STEPS
from ..services.results import JourneyResult, RegionsResult, VisualizeResult, WanderResult
from .atlas_app import TOOL_META
from .calls import READ_ONLY, call, with_picture
from .registry import tool
from .types import Context, MemoryId, NamespaceFilter, Query, Similarity


@tool(READ_ONLY)
async def journey(
    start_id: MemoryId,
    end_id: MemoryId,
    ctx: Context,
    steps: Annotated[int, Field(ge=2, le=MAX_STEPS)] = 10,
    namespace: NamespaceFilter = None,
    neighbors_per_step: Annotated[int, Field(ge=1, le=10)] = 3,
    include_positions: bool = False,
) -> Annotated[CallToolResult, JourneyResult]:
    """Memories along the path between two memories: what connects two ideas."""
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


@tool(READ_ONLY)
async def wander(
    ctx: Context,
    start_id: MemoryId | None = None,
    seed: Query | None = None,
    steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] = 10,
    temperature: Similarity = 0.5,
    namespace: NamespaceFilter = None,
    random_seed: int | None = None,
) -> Annotated[CallToolResult, WanderResult]:
    """Random walk from start_id, the memory nearest seed, or anywhere; temperature 0 takes the closest
    step."""
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


@tool(READ_ONLY)
async def regions(
    ctx: Context,
    namespace: NamespaceFilter = None,
    min_cluster_size: Annotated[int, Field(ge=2, le=50)] = 3,
    max_clusters: Annotated[int, Field(ge=1, le=1000)] | None = None,
    include_members: bool = False,
) -> Annotated[CallToolResult, RegionsResult]:
    """Topic clusters (HDBSCAN) with keywords, the memory nearest the centre and samples (by id: get_memories)."""
    return await call(
        ctx,
        lambda app: app.spatial.regions(
            namespace=namespace,
            min_cluster_size=min_cluster_size,
            max_clusters=max_clusters,
            include_members=include_members,
        ),
    )


@tool(READ_ONLY, meta=TOOL_META)
async def visualize(
    ctx: Context,
    memory_ids: Annotated[list[MemoryId], Field(max_length=MAX_MAP_MEMORIES)] | None = None,
    namespace: NamespaceFilter = None,
    format: Literal["json", "mermaid", "svg"] = "json",
    dimensions: Literal[2, 3] = 2,
    include_edges: bool = True,
    max_memories: Annotated[int, Field(ge=1, le=MAX_MAP_MEMORIES)] = 500,
    highlight_ids: Annotated[list[MemoryId], Field(max_length=MAX_HIGHLIGHTS)] | None = None,
) -> Annotated[CallToolResult, VisualizeResult]:
    """Map of memories (ids, or a namespace) as json, Mermaid or SVG (UMAP; colour = cluster)."""
    # The first map in a process loads its code (scipy too above 500 memories): say so while it runs.
    app: Any = ctx.request_context.lifespan_context
    note = None if app.visualization.projection_ready else "loading the UMAP layout code for a first map"
    out = await call(
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
    return with_picture(out) if format == "svg" else out


TOOLS = (journey, wander, regions, visualize)

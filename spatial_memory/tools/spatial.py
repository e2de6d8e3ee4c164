"""Walking and drawing the memory space: journey, wander, regions, visualize."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..atlas import TOOL_META
from ..limits import MAX_MAP_MEMORIES
from ..services.results import JourneyResult, RegionsResult, VisualizeResult, WanderResult
from .arguments import Arguments
from .calls import READ_ONLY, call, with_picture
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY)
    async def journey(
        start_id: a.memory_id,
        end_id: a.memory_id,
        ctx: Context,
        steps: Annotated[int, Field(ge=2, le=20, description="Points along the path, ends included (2-20).")] = 10,
        namespace: a.namespace_filter = None,
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

    @tools.tool(READ_ONLY)
    async def wander(
        ctx: Context,
        start_id: Annotated[a.memory_id | None, Field(description="Start here (default: a random memory).")] = None,
        seed: Annotated[a.query | None, Field(description="Or start at the memory nearest this text.")] = None,
        steps: Annotated[int, Field(ge=1, le=20, description="Moves to make (1-20).")] = 10,
        temperature: Annotated[
            float, Field(ge=0.0, le=1.0, description="0 = always the most similar neighbour, 1 = near uniform.")
        ] = 0.5,
        namespace: a.namespace_filter = None,
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

    @tools.tool(READ_ONLY)
    async def regions(
        ctx: Context,
        namespace: a.namespace_filter = None,
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

    @tools.tool(READ_ONLY, meta=TOOL_META)
    async def visualize(
        ctx: Context,
        memory_ids: Annotated[
            list[a.memory_id] | None, Field(max_length=MAX_MAP_MEMORIES, description="Specific memories to draw.")
        ] = None,
        namespace: a.namespace_filter = None,
        format: Annotated[Literal["json", "mermaid", "svg"], Field(description="Output format.")] = "json",
        dimensions: Annotated[Literal[2, 3], Field(description="Projection dimensions.")] = 2,
        include_edges: Annotated[bool, Field(description="Include the strongest similarity links.")] = True,
        max_memories: Annotated[int, Field(ge=1, le=MAX_MAP_MEMORIES, description="Most memories to draw.")] = 500,
        highlight_ids: Annotated[
            list[a.memory_id] | None, Field(max_length=1000, description="Memories to mark.")
        ] = None,
    ) -> Annotated[CallToolResult, VisualizeResult]:
        """Map memories to 2-D/3-D (UMAP on cosine similarity) as json, a Mermaid flowchart or an SVG image.

        Colours are clusters, size is importance, tooltips hold the full content."""
        # The first map in a process loads its code (scipy too above 500 memories): say so while it runs.
        app = ctx.request_context.lifespan_context
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

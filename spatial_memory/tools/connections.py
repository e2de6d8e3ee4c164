"""Connections between memories, and the server's health."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ..services.results import (
    CorpusBridgesResult,
    DiscoverConnectionsResult,
    HealthResult,
    RelateResult,
    UnrelateResult,
)
from .arguments import Arguments
from .calls import DESTRUCTIVE, READ_ONLY, call, provenance
from .registry import ToolSet

LINKING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
RELATION = Annotated[
    str, Field(min_length=1, max_length=64, description="e.g. caused, supports, contradicts, part_of (free text).")
]


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY)
    async def health(
        ctx: Context,
        verbose: Annotated[bool, Field(description="List each check with its latency.")] = False,
    ) -> Annotated[CallToolResult, HealthResult]:
        """Server health: status (healthy, degraded, unhealthy), ready, alive. Cheap to poll."""
        return await call(ctx, lambda app: app.health.health(verbose=verbose))

    @tools.tool(READ_ONLY)
    async def discover_connections(
        memory_id: a.memory_id,
        ctx: Context,
        limit: a.limit = 10,
        min_similarity: a.min_similarity = 0.5,
        exclude_same_namespace: Annotated[bool, Field(description="Only other namespaces.")] = False,
    ) -> Annotated[CallToolResult, DiscoverConnectionsResult]:
        """Memories in any namespace related to one memory, by meaning and shared terms, best first."""
        return await call(
            ctx,
            lambda app: app.connections.discover_connections(
                memory_id, limit=limit, min_similarity=min_similarity, exclude_same_namespace=exclude_same_namespace
            ),
        )

    @tools.tool(READ_ONLY)
    async def corpus_bridges(
        ctx: Context,
        namespaces: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=a.max_namespace)]] | None,
            Field(min_length=2, max_length=100, description="Only these namespaces (default: all)."),
        ] = None,
        min_similarity: a.min_similarity = 0.8,
        max_bridges: Annotated[int, Field(ge=1, le=500, description="Most pairs to return.")] = 50,
    ) -> Annotated[CallToolResult, CorpusBridgesResult]:
        """Pairs of close memories in different namespaces (every pair compared), closest first."""
        return await call(
            ctx,
            lambda app: app.connections.corpus_bridges(
                namespaces=namespaces, min_similarity=min_similarity, max_bridges=max_bridges
            ),
        )

    @tools.tool(LINKING)
    async def relate(
        source_id: a.memory_id,
        target_id: a.memory_id,
        relation: RELATION,
        ctx: Context,
        weight: Annotated[float | None, Field(gt=0.0, le=1.0, description="Strength, default 1.0.")] = None,
    ) -> Annotated[CallToolResult, RelateResult]:
        """Link two memories by a typed, directed relation (source -> target). recall's expand follows it."""
        origin = provenance(ctx, "relate")
        return await call(
            ctx,
            lambda app: app.connections.relate(source_id, target_id, relation, weight=weight, provenance=origin),
        )

    @tools.tool(DESTRUCTIVE)
    async def unrelate(
        source_id: a.memory_id,
        target_id: a.memory_id,
        ctx: Context,
        relation: Annotated[RELATION | None, Field(description="Only this relation (default: every one).")] = None,
    ) -> Annotated[CallToolResult, UnrelateResult]:
        """Remove relations from source to target."""
        return await call(ctx, lambda app: app.connections.unrelate(source_id, target_id, relation))

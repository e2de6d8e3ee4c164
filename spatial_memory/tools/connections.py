"""Connections between memories: discovered, bridged across namespaces, related and unrelated by hand."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ..limits import MAX_BRIDGES, MAX_NAMESPACE_CHARS, MAX_RELATION_CHARS
from ..services.results import (
    CorpusBridgesResult,
    DiscoverConnectionsResult,
    RelateResult,
    UnrelateResult,
)
from .calls import DESTRUCTIVE, READ_ONLY, call, provenance
from .registry import tool
from .types import Context, Limit, MemoryId, Similarity, Text, Unlisted

LINKING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
Relation = Annotated[str, Unlisted(MAX_RELATION_CHARS)]


@tool(READ_ONLY)
async def discover_connections(
    memory_id: MemoryId,
    ctx: Context,
    limit: Limit = 10,
    min_similarity: Similarity = 0.5,
    exclude_same_namespace: bool = False,
) -> Annotated[CallToolResult, DiscoverConnectionsResult]:
    """Related memories in any namespace, by meaning and shared terms."""
    return await call(
        ctx,
        lambda app: app.connections.discover_connections(
            memory_id, limit=limit, min_similarity=min_similarity, exclude_same_namespace=exclude_same_namespace
        ),
    )


@tool(READ_ONLY)
async def corpus_bridges(
    ctx: Context,
    namespaces: Annotated[list[Annotated[Text, MAX_NAMESPACE_CHARS]], Field(min_length=2, max_length=100)]
    | None = None,
    min_similarity: Similarity = 0.8,
    max_bridges: Annotated[int, Field(ge=1, le=MAX_BRIDGES)] = 50,
) -> Annotated[CallToolResult, CorpusBridgesResult]:
    """Close pairs of memories across namespaces."""
    return await call(
        ctx,
        lambda app: app.connections.corpus_bridges(
            namespaces=namespaces, min_similarity=min_similarity, max_bridges=max_bridges
        ),
    )


@tool(LINKING)
async def relate(
    source_id: MemoryId,
    target_id: MemoryId,
    relation: Relation,
    ctx: Context,
    weight: Annotated[float, Field(gt=0.0, le=1.0)] | None = None,
) -> Annotated[CallToolResult, RelateResult]:
    """Link two memories by a named relation (caused, supports, part_of...); recall's expand follows it."""
    origin = provenance(ctx, "relate")
    return await call(
        ctx, lambda app: app.connections.relate(source_id, target_id, relation, weight=weight, provenance=origin)
    )


@tool(DESTRUCTIVE)
async def unrelate(
    source_id: MemoryId, target_id: MemoryId, ctx: Context, relation: Relation | None = None
) -> Annotated[CallToolResult, UnrelateResult]:
    """Remove relations from source to target."""
    return await call(ctx, lambda app: app.connections.unrelate(source_id, target_id, relation))


TOOLS = (discover_connections, corpus_bridges, relate, unrelate)

"""Finding memories: by meaning and keywords, and near another memory."""

from __future__ import annotations

from typing import Annotated, Unpack

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_CONTEXT, MAX_EXPAND
from ..services.recall_filters import RecallFilters
from ..services.results import HybridRecallResult, NearbyResult, RecallResult
from .calls import READ_ONLY, call
from .registry import tool
from .types import Limit, MemoryId, NamespaceFilter, Query, Similarity


@tool(READ_ONLY)
async def recall(
    query: Query,
    ctx: Context,
    limit: Limit = 5,
    hybrid_alpha: Similarity | None = None,
    context: Annotated[int, Field(ge=0, le=MAX_CONTEXT)] = 0,
    expand: Annotated[int, Field(ge=0, le=MAX_EXPAND)] = 0,
    **where: Unpack[RecallFilters],
) -> Annotated[CallToolResult, RecallResult]:
    """Find the memories that best answer the query, best first, by meaning and keywords (the conversation
    around keyword hits counts); the namespace's pinned memories come first. similarity is cosine to the
    query. hybrid_alpha: 1 = meaning only, 0 = keywords only (default balanced). context: also each hit's
    session neighbours, this many each side. expand: also up to this many memories linked to the hits
    (relations, co-recall, conversation), with their path."""
    return await call(
        ctx,
        lambda app: app.search.recall(
            query, limit=limit, hybrid_alpha=hybrid_alpha, context=context, expand=expand, **where
        ),
    )


@tool(READ_ONLY)
async def hybrid_recall(
    query: Query,
    ctx: Context,
    alpha: Similarity = 0.5,
    limit: Limit = 5,
    **where: Unpack[RecallFilters],
) -> Annotated[CallToolResult, HybridRecallResult]:
    """recall's ranking with an explicit alpha (1 = meaning only, 0 = keywords only) and each hit's scores:
    vector_score (cosine; null if found by keywords only), fts_score (BM25 relative to the best keyword hit)
    and score (the order)."""
    return await call(ctx, lambda app: app.search.hybrid_recall(query, alpha=alpha, limit=limit, **where))


@tool(READ_ONLY)
async def nearby(
    memory_id: MemoryId, ctx: Context, limit: Limit = 5, namespace: NamespaceFilter = None
) -> Annotated[CallToolResult, NearbyResult]:
    """Find the memories closest to a given memory."""
    return await call(ctx, lambda app: app.search.nearby(memory_id, limit=limit, namespace=namespace))


TOOLS = (recall, hybrid_recall, nearby)

"""Finding memories: by meaning and keywords, and near another memory."""

from __future__ import annotations

from typing import Annotated, Unpack

from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_CONTEXT, MAX_EXPAND
from ..services.recall_filters import RecallFilters
from ..services.results import HybridRecallResult, NearbyResult, RecallResult
from .atlas_app import TOOL_META
from .calls import READ_ONLY, call
from .registry import tool
from .types import Context, Limit, MemoryId, NamespaceFilter, Query, Similarity


@tool(READ_ONLY, meta=TOOL_META)
async def recall(
    query: Query,
    ctx: Context,
    limit: Limit = 5,
    hybrid_alpha: Similarity | None = None,
    context: Annotated[int, Field(ge=0, le=MAX_CONTEXT)] = 0,
    expand: Annotated[int, Field(ge=0, le=MAX_EXPAND)] = 0,
    **where: Unpack[RecallFilters],
) -> Annotated[CallToolResult, RecallResult]:
    """Find memories answering a query, best first, by meaning and keywords; pinned ones first.
    hybrid_alpha: 1 = meaning only, 0 = keywords only. context: n conversation neighbours per hit. expand:
    up to n more memories linked to the hits."""
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
    """recall with an explicit alpha (1 = meaning, 0 = keywords) and each hit's vector_score (cosine),
    fts_score (BM25 relative to the best) and score."""
    return await call(ctx, lambda app: app.search.hybrid_recall(query, alpha=alpha, limit=limit, **where))


@tool(READ_ONLY)
async def nearby(
    memory_id: MemoryId, ctx: Context, limit: Limit = 5, namespace: NamespaceFilter = None
) -> Annotated[CallToolResult, NearbyResult]:
    """The memories closest to a memory."""
    return await call(ctx, lambda app: app.search.nearby(memory_id, limit=limit, namespace=namespace))


TOOLS = (recall, hybrid_recall, nearby)
# Tools whose first step is embedding their `query`: the server begins it as their request arrives
# (runtime/early_queries.py).
QUERY_TOOLS = ("recall", "hybrid_recall")

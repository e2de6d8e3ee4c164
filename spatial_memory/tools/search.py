"""Finding memories: by meaning and keywords, and near another memory."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..services.results import HybridRecallResult, NearbyResult, RecallResult
from .arguments import Arguments
from .calls import READ_ONLY, call
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY)
    async def recall(
        query: a.query,
        ctx: Context,
        limit: a.limit = 5,
        namespace: a.namespace_filter = None,
        min_similarity: a.min_similarity = 0.0,
        tags: a.tag_filter = None,
        filters: a.filters = None,
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
            lambda app: app.search.recall(
                query,
                limit=limit,
                namespace=namespace,
                tags=tags,
                filters=filters,
                min_similarity=min_similarity,
                hybrid_alpha=hybrid_alpha,
            ),
        )

    @tools.tool(READ_ONLY)
    async def hybrid_recall(
        query: Annotated[a.query, Field(description="What to search for, by meaning and by keywords.")],
        ctx: Context,
        alpha: Annotated[
            float,
            Field(ge=0.0, le=1.0, description="Balance: 1.0 = pure vector (meaning), 0.0 = pure keyword, 0.5 = both."),
        ] = 0.5,
        limit: a.limit = 5,
        namespace: a.namespace_filter = None,
        min_similarity: a.min_similarity = 0.0,
        tags: a.tag_filter = None,
        filters: a.filters = None,
    ) -> Annotated[CallToolResult, HybridRecallResult]:
        """Search by meaning and by keywords together (LanceDB full-text BM25 + vector search, fused by weighted
        reciprocal rank). Good for names, codes and exact terms. Each hit has vector_score (cosine, null when
        found by keywords only) and fts_score (BM25 relative to the best keyword hit, null when no keyword matched);
        similarity is always the cosine similarity to the query, which min_similarity applies to."""
        return await call(
            ctx,
            lambda app: app.search.hybrid_recall(
                query,
                alpha=alpha,
                limit=limit,
                namespace=namespace,
                tags=tags,
                filters=filters,
                min_similarity=min_similarity,
            ),
        )

    @tools.tool(READ_ONLY)
    async def nearby(
        memory_id: a.memory_id,
        ctx: Context,
        limit: a.limit = 5,
        namespace: a.namespace_filter = None,
    ) -> Annotated[CallToolResult, NearbyResult]:
        """Find the memories closest to a given memory."""
        return await call(ctx, lambda app: app.search.nearby(memory_id, limit=limit, namespace=namespace))

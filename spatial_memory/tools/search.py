"""Finding memories: by meaning and keywords, and near another memory."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..atlas import TOOL_META
from ..limits import MAX_CONTEXT, MAX_EXPAND
from ..services.results import HybridRecallResult, NearbyResult, RecallResult
from .arguments import Arguments
from .calls import READ_ONLY, call
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY, meta=TOOL_META)
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
                description="Weight of meaning against keywords in the ranking (1.0 = meaning only: plain cosine "
                "order; 0.0 = keywords only). Omit for the default balance.",
            ),
        ] = None,
        since: a.since = None,
        until: a.until = None,
        context: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_CONTEXT,
                description=f"Also return up to this many neighbouring memories of each hit's session before and "
                f"after it (0-{MAX_CONTEXT}), marked as context.",
            ),
        ] = 0,
        as_of: a.as_of = None,
        expand: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_EXPAND,
                description="Also return up to this many memories reached from the hits over relations, "
                "co-recall links and conversation neighbours (in expanded, with their path).",
            ),
        ] = 0,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Find the memories that best answer the query, best first: by meaning and keywords, with the
        conversation around keyword hits (memories stored with session_id) taken into account. The
        namespace's pinned memories come first. similarity is the cosine similarity to the query."""
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
                since=since,
                until=until,
                context=context,
                as_of=as_of,
                expand=expand,
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
        since: a.since = None,
        until: a.until = None,
        as_of: a.as_of = None,
    ) -> Annotated[CallToolResult, HybridRecallResult]:
        """recall's ranking (meaning + BM25 keywords + conversation context) with an explicit alpha and each hit's
        scores: vector_score (cosine, null when found by keywords only), fts_score (BM25 relative to the best
        keyword hit, null when no keyword matched) and score (what hits are ordered by). similarity is always the
        cosine similarity to the query, which min_similarity applies to."""
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
                since=since,
                until=until,
                as_of=as_of,
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

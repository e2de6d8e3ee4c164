"""Keeping memory healthy: decay, reinforce, extract, consolidate."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_GROUPS
from ..services.results import ConsolidateResult, DecayResult, ExtractResult, ReinforceResult
from .calls import ADDITIVE, DESTRUCTIVE, call, provenance
from .registry import tool
from .types import Content, Context, DedupThreshold, MemoryId, Namespace, NamespaceFilter, Similarity


@tool(DESTRUCTIVE)
async def decay(
    ctx: Context,
    namespace: NamespaceFilter = None,
    decay_function: Literal["exponential", "linear", "step", "fsrs"] = "exponential",
    half_life_days: Annotated[float, Field(ge=1, le=365)] = 30.0,
    min_importance: Annotated[float, Field(ge=0.0, le=0.5)] = 0.1,
    access_weight: Similarity = 0.3,
    dry_run: bool = True,
) -> Annotated[CallToolResult, DecayResult]:
    """Lower the importance of memories unused for long (by time since last access; access_weight: use
    slows it)."""
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


@tool(ADDITIVE)
async def reinforce(
    memory_ids: Annotated[list[MemoryId], Field(min_length=1)],
    ctx: Context,
    boost_type: Literal["additive", "multiplicative", "set_value"] = "additive",
    boost_amount: Similarity = 0.1,
    update_access: bool = True,
) -> Annotated[CallToolResult, ReinforceResult]:
    """Raise the importance of useful memories: + amount, * (1 + amount), or set to amount."""
    return await call(
        ctx,
        lambda app: app.lifecycle.reinforce(
            memory_ids, boost_type=boost_type, boost_amount=boost_amount, update_access=update_access
        ),
    )


@tool(ADDITIVE)
async def extract(
    text: Content,
    ctx: Context,
    namespace: Namespace = "extracted",
    min_confidence: Similarity = 0.5,
    deduplicate: bool = True,
    dedup_threshold: DedupThreshold = 0.9,
) -> Annotated[CallToolResult, ExtractResult]:
    """Store a text's memorable statements (decisions, facts, preferences, errors...), importance =
    confidence."""
    origin = provenance(ctx, "extract")
    return await call(
        ctx,
        lambda app: app.extraction.extract(
            text,
            namespace=namespace,
            min_confidence=min_confidence,
            deduplicate=deduplicate,
            dedup_threshold=dedup_threshold,
            provenance=origin,
        ),
    )


@tool(DESTRUCTIVE)
async def consolidate(
    namespace: Namespace,
    ctx: Context,
    similarity_threshold: DedupThreshold = 0.85,
    strategy: Literal["keep_newest", "keep_oldest", "keep_highest_importance", "merge_content", "distill"] = (
        "keep_highest_importance"
    ),
    dry_run: bool = True,
    max_groups: Annotated[int, Field(ge=1, le=MAX_GROUPS)] = 50,
) -> Annotated[CallToolResult, ConsolidateResult]:
    """Merge near-duplicates in a namespace (every pair >= similarity_threshold) into the one strategy
    keeps; differing numbers or negations never merge. distill: 3+ similar episodes gain one semantic
    memory; they stay."""
    origin = provenance(ctx, "consolidate")
    return await call(
        ctx,
        lambda app: app.consolidation.consolidate(
            namespace,
            similarity_threshold=similarity_threshold,
            strategy=strategy,
            dry_run=dry_run,
            max_groups=max_groups,
            provenance=origin,
        ),
    )


TOOLS = (decay, reinforce, extract, consolidate)

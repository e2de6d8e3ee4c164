"""Keeping memory healthy: decay, reinforce, extract, consolidate."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..services.results import ConsolidateResult, DecayResult, ExtractResult, ReinforceResult
from .arguments import Arguments
from .calls import ADDITIVE, DESTRUCTIVE, call, provenance
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(DESTRUCTIVE)
    async def decay(
        ctx: Context,
        namespace: a.namespace_filter = None,
        decay_function: Annotated[
            Literal["exponential", "linear", "step", "fsrs"],
            Field(
                description="Decay curve: exponential (halves every half-life), linear (0.5 at one half-life, "
                "0 at two), step (halves at each full half-life) or fsrs (FSRS retrievability: 0.5 at one "
                "half-life, a long tail, stability x (1 + 2 * access_weight) per recall)."
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

    @tools.tool(ADDITIVE)
    async def reinforce(
        memory_ids: Annotated[list[a.memory_id], Field(min_length=1, description="Memory UUIDs to reinforce.")],
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

    @tools.tool(ADDITIVE)
    async def extract(
        text: Annotated[a.content, Field(description="Conversation, notes or document to extract from.")],
        ctx: Context,
        namespace: Annotated[a.namespace, Field(description="Namespace for the extracted memories.")] = "extracted",
        min_confidence: Annotated[
            float, Field(ge=0.0, le=1.0, description="Minimum extraction confidence (0.0-1.0).")
        ] = 0.5,
        deduplicate: Annotated[
            bool,
            Field(description="Skip statements similar to a memory of the namespace or to an earlier statement."),
        ] = True,
        dedup_threshold: a.dedup_threshold = 0.9,
    ) -> Annotated[CallToolResult, ExtractResult]:
        """Find memorable statements in text and store each as a memory.

        Recognises decisions, definitions, solutions, errors, patterns, facts, preferences, insights,
        requirements, problems and explicit notes. Stored memories have source "extracted", their pattern as a
        tag, importance = confidence, and metadata.extraction with the pattern, confidence and
        start_pos/end_pos of the statement in the text."""
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

    @tools.tool(DESTRUCTIVE)
    async def consolidate(
        namespace: a.namespace,
        ctx: Context,
        similarity_threshold: Annotated[
            a.dedup_threshold, Field(description="Minimum cosine similarity between every two members of a group.")
        ] = 0.85,
        strategy: Annotated[
            Literal["keep_newest", "keep_oldest", "keep_highest_importance", "merge_content", "distill"],
            Field(
                description="Which memory survives: the newest, the oldest, the most important, or one merged "
                "memory holding every distinct sentence of the group (merge_content); distill: 3+ similar "
                "episodes gain one semantic memory (their most central statement), the episodes stay."
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

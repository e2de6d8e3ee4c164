"""Storing, changing, reading and forgetting memories."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..services.results import (
    ForgetResult,
    GetMemoriesResult,
    MemoryHistoryResult,
    RememberBatchResult,
    RememberResult,
    UpdateMemoryResult,
)
from .arguments import Arguments
from .calls import ADDITIVE, CHANGING, DESTRUCTIVE, READ_ONLY, call, provenance
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(ADDITIVE)
    async def remember(
        content: a.content,
        ctx: Context,
        namespace: a.namespace = "default",
        tags: a.tags = None,
        importance: a.importance = 0.5,
        metadata: a.metadata = None,
        session_id: a.session_id = None,
        sequence: a.sequence = None,
        speaker: a.speaker = None,
        occurred_at: a.occurred_at = None,
        memory_type: a.memory_type = None,
        expires_at: a.expires_at = None,
        pinned: a.pinned = None,
        supersedes: Annotated[
            list[a.memory_id] | None,
            Field(max_length=a.max_batch, description="Ids of memories this one replaces (closed, kept in history)."),
        ] = None,
        on_duplicate: a.on_duplicate = "store",
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a new memory. Returns its id, and similar_existing: stored near-duplicates and likely
        contradictions. Namespaces separate projects, tags categorize; for a conversation turn give
        session_id (and speaker, occurred_at). A changed fact: pass supersedes, or use update_memory."""
        item = a.memory_input.model_construct(
            content=content,
            namespace=namespace,
            tags=tags,
            importance=importance,
            metadata=metadata,
            session_id=session_id,
            sequence=sequence,
            speaker=speaker,
            occurred_at=occurred_at,
            memory_type=memory_type,
            expires_at=expires_at,
            pinned=pinned,
        ).new_memory()
        origin = provenance(ctx, "remember")
        return await call(
            ctx,
            lambda app: app.memory.remember(item, supersedes=supersedes, on_duplicate=on_duplicate, provenance=origin),
        )

    @tools.tool(ADDITIVE)
    async def remember_batch(
        memories: Annotated[
            list[a.memory_input], Field(min_length=1, max_length=a.max_batch, description="Memories to store.")
        ],
        ctx: Context,
        on_duplicate: a.on_duplicate = "store",
    ) -> Annotated[CallToolResult, RememberBatchResult]:
        """Store many memories in one call, all or nothing: if any item is invalid, nothing is stored.
        Reports stored near-duplicates and contradictions per item (similar_existing)."""
        items = [m.new_memory() for m in memories]
        origin = provenance(ctx, "remember_batch")
        return await call(
            ctx, lambda app: app.memory.remember_batch(items, on_duplicate=on_duplicate, provenance=origin)
        )

    @tools.tool(READ_ONLY)
    async def get_memories(memory_ids: a.memory_ids, ctx: Context) -> Annotated[CallToolResult, GetMemoriesResult]:
        """Memories by id, whole: provenance, type, expiry, pinned, version count; superseded ones marked."""
        return await call(ctx, lambda app: app.revisions.get_memories(memory_ids))

    @tools.tool(CHANGING)
    async def update_memory(
        memory_id: a.memory_id,
        ctx: Context,
        content: Annotated[a.content | None, Field(description="New text (the memory is embedded again).")] = None,
        tags: a.tags = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="Importance from 0.0 to 1.0.")] = None,
        metadata: Annotated[dict | None, Field(description="New metadata (replaces the old).")] = None,
        pinned: a.pinned = None,
        memory_type: a.memory_type = None,
        expires_at: a.expires_at = None,
        revert_to: Annotated[int | None, Field(ge=1, description="Restore this version (alone).")] = None,
    ) -> Annotated[CallToolResult, UpdateMemoryResult]:
        """Change a memory in place; the previous version is kept (memory_history). Omitted fields stay."""
        origin = provenance(ctx, "update")
        changes = {"expires_at": expires_at} if expires_at is not None else {}
        return await call(
            ctx,
            lambda app: app.revisions.update_memory(
                memory_id,
                content=content,
                tags=tags,
                importance=importance,
                metadata=metadata,
                pinned=pinned,
                memory_type=memory_type,
                provenance=origin,
                revert_to=revert_to,
                **changes,
            ),
        )

    @tools.tool(READ_ONLY)
    async def memory_history(
        memory_id: a.memory_id,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=1_000, description="Most versions to return.")] = 20,
        diff: Annotated[bool, Field(description="Add each version's changes.")] = False,
    ) -> Annotated[CallToolResult, MemoryHistoryResult]:
        """A memory's versions, newest first: what it said, when, and what replaced it."""
        return await call(ctx, lambda app: app.revisions.memory_history(memory_id, limit=limit, diff=diff))

    @tools.tool(DESTRUCTIVE)
    async def forget(
        ctx: Context,
        memory_id: a.memory_id | None = None,
        namespace: a.namespace_filter = None,
        filters: a.filters = None,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Delete a memory by id (deleted: 0 if it does not exist), or every memory matching namespace and filters."""
        return await call(ctx, lambda app: app.memory.forget(memory_id, namespace=namespace, filters=filters))

    @tools.tool(DESTRUCTIVE)
    async def forget_batch(
        memory_ids: Annotated[list[a.memory_id], Field(min_length=1, description="Memory UUIDs to delete.")],
        ctx: Context,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Delete several memories by id; returns the ids actually deleted."""
        return await call(ctx, lambda app: app.memory.forget_batch(memory_ids))

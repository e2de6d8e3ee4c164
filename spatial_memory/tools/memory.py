"""Storing, changing, reading and forgetting memories."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Unpack

from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_BATCH, MAX_HISTORY
from ..services.recall_filters import MemoryFilters
from ..services.results import (
    ForgetResult,
    GetMemoriesResult,
    MemoryHistoryResult,
    RememberBatchResult,
    RememberResult,
    UpdateMemoryResult,
)
from .calls import ADDITIVE, CHANGING, DESTRUCTIVE, READ_ONLY, call, provenance
from .registry import tool
from .types import (
    Content,
    Context,
    Importance,
    Label,
    MemoryId,
    MemoryIds,
    MemoryInput,
    MemoryType,
    Metadata,
    Namespace,
    OnDuplicate,
    Position,
    Tags,
)


@tool(ADDITIVE)
async def remember(
    content: Content,
    ctx: Context,
    namespace: Namespace = "default",
    tags: Tags = None,
    importance: Importance = 0.5,
    metadata: Metadata = None,
    session_id: Label = None,
    sequence: Position = None,
    speaker: Label = None,
    occurred_at: datetime | None = None,
    memory_type: MemoryType = None,
    expires_at: datetime | None = None,
    pinned: bool | None = None,
    supersedes: Annotated[list[MemoryId], MAX_BATCH] | None = None,
    on_duplicate: OnDuplicate = "store",
    allow_duplicate: bool = False,
) -> Annotated[CallToolResult, RememberResult]:
    """Store a memory; returns its id and similar_existing (near-duplicates, contradictions; on_duplicate:
    store, skip or supersede them). Conversation turns: session_id, speaker, occurred_at, sequence.
    memory_type: fact (default), conversation (expires in days), context (expires today). pinned: recall
    lists it first. supersedes: ids it replaces. An exact copy of a stored memory returns that one
    (stored: false) unless allow_duplicate."""
    item = MemoryInput.model_construct(
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
        lambda app: app.memory.remember(
            item, supersedes=supersedes, on_duplicate=on_duplicate, allow_duplicate=allow_duplicate, provenance=origin
        ),
    )


@tool(ADDITIVE)
async def remember_batch(
    memories: Annotated[list[MemoryInput], Field(min_length=1), MAX_BATCH],
    ctx: Context,
    on_duplicate: OnDuplicate = "store",
    allow_duplicate: bool = False,
) -> Annotated[CallToolResult, RememberBatchResult]:
    """Store memories (items: remember's fields) all or nothing; similar_existing: each item's closest
    look-alike; exact copies skipped unless allow_duplicate."""
    items = [m.new_memory() for m in memories]
    origin = provenance(ctx, "remember_batch")
    return await call(
        ctx,
        lambda app: app.memory.remember_batch(
            items, on_duplicate=on_duplicate, allow_duplicate=allow_duplicate, provenance=origin
        ),
    )


@tool(READ_ONLY)
async def get_memories(memory_ids: MemoryIds, ctx: Context) -> Annotated[CallToolResult, GetMemoriesResult]:
    """Whole memories by id, with provenance, expiry and versions."""
    return await call(ctx, lambda app: app.revisions.get_memories(memory_ids))


@tool(CHANGING)
async def update_memory(
    memory_id: MemoryId,
    ctx: Context,
    content: Content | None = None,
    tags: Tags = None,
    importance: Importance | None = None,
    metadata: Metadata = None,
    pinned: bool | None = None,
    memory_type: MemoryType = None,
    expires_at: datetime | None = None,
    revert_to: Annotated[int, Field(ge=1)] | None = None,
) -> Annotated[CallToolResult, UpdateMemoryResult]:
    """Change a memory; omitted fields stay, the old version is kept (memory_history). revert_to: make
    that version current again (alone)."""
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


@tool(READ_ONLY)
async def memory_history(
    memory_id: MemoryId,
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=MAX_HISTORY)] = 20,
    diff: bool = False,
) -> Annotated[CallToolResult, MemoryHistoryResult]:
    """A memory's versions, newest first; diff: each with its changes (fields, content by words)."""
    return await call(ctx, lambda app: app.revisions.memory_history(memory_id, limit=limit, diff=diff))


@tool(DESTRUCTIVE)
async def forget(
    ctx: Context, memory_id: MemoryId | None = None, **where: Unpack[MemoryFilters]
) -> Annotated[CallToolResult, ForgetResult]:
    """Delete a memory by id (not_found names it if absent), or all matching namespace and filters."""
    return await call(ctx, lambda app: app.memory.forget(memory_id, **where))


@tool(DESTRUCTIVE)
async def forget_batch(
    memory_ids: Annotated[list[MemoryId], Field(min_length=1)], ctx: Context
) -> Annotated[CallToolResult, ForgetResult]:
    """Delete memories by id."""
    return await call(ctx, lambda app: app.memory.forget_batch(memory_ids))


TOOLS = (remember, remember_batch, get_memories, update_memory, memory_history, forget, forget_batch)

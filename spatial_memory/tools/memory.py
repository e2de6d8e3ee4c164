"""Storing and forgetting memories."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..services.results import ForgetResult, RememberBatchResult, RememberResult
from .arguments import Arguments
from .calls import ADDITIVE, DESTRUCTIVE, call
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
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a new memory. Returns its id. Use namespaces to separate projects and tags to categorize;
        for a turn of a conversation, give its session_id (and speaker, occurred_at): recall then ranks
        and shows it with its neighbours."""
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
        ).new_memory()
        return await call(ctx, lambda app: app.memory.remember(item))

    @tools.tool(ADDITIVE)
    async def remember_batch(
        memories: Annotated[
            list[a.memory_input], Field(min_length=1, max_length=a.max_batch, description="Memories to store.")
        ],
        ctx: Context,
    ) -> Annotated[CallToolResult, RememberBatchResult]:
        """Store many memories in one call, all or nothing: if any item is invalid, nothing is stored."""
        items = [m.new_memory() for m in memories]
        return await call(ctx, lambda app: app.memory.remember_batch(items))

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

"""Store statistics and namespaces."""

from __future__ import annotations

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Resolve
from mcp.types import CallToolResult

from ..services.results import DeleteNamespaceResult, NamespacesResult, RenameNamespaceResult, StatsResult
from .calls import CHANGING, DESTRUCTIVE, READ_ONLY, call
from .confirmation import Confirmation, confirm_namespace_deletion, confirmed
from .registry import tool
from .types import Context, Namespace, NamespaceFilter


@tool(READ_ONLY)
async def stats(
    ctx: Context, namespace: NamespaceFilter = None, include_index_details: bool = True
) -> Annotated[CallToolResult, StatsResult]:
    """Store statistics: counts, size, indexes, dates."""
    return await call(
        ctx, lambda app: app.namespaces.stats(namespace=namespace, include_index_details=include_index_details)
    )


@tool(READ_ONLY)
async def namespaces(ctx: Context, include_stats: bool = True) -> Annotated[CallToolResult, NamespacesResult]:
    """Namespaces with memory counts."""
    return await call(ctx, lambda app: app.namespaces.namespaces(include_stats=include_stats))


@tool(DESTRUCTIVE)
async def delete_namespace(
    namespace: Namespace,
    ctx: Context,
    confirm: bool = False,
    dry_run: bool = True,
    # Not an argument: the user's answer where the client can ask (confirmation.py).
    answer: Annotated[ElicitationResult[Confirmation], Resolve(confirm_namespace_deletion)] = None,  # pyright: ignore[reportArgumentType] - the SDK resolves it before the call; the default only marks it optional to Python
) -> Annotated[CallToolResult, DeleteNamespaceResult]:
    """Delete a namespace's memories: needs dry_run=false and confirm=true."""
    sure = confirmed(answer)
    return await call(ctx, lambda app: app.namespaces.delete_namespace(namespace, confirm=sure, dry_run=dry_run))


@tool(CHANGING)
async def rename_namespace(
    old_namespace: Namespace, new_namespace: Namespace, ctx: Context
) -> Annotated[CallToolResult, RenameNamespaceResult]:
    """Move a namespace's memories to a new name."""
    return await call(ctx, lambda app: app.namespaces.rename_namespace(old_namespace, new_namespace))


TOOLS = (stats, namespaces, delete_namespace, rename_namespace)

"""Store statistics and namespaces."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve
from mcp.types import CallToolResult

from ..services.results import DeleteNamespaceResult, NamespacesResult, RenameNamespaceResult, StatsResult
from .arguments import Arguments
from .calls import CHANGING, DESTRUCTIVE, READ_ONLY, call
from .confirmation import Confirmation, confirm_namespace_deletion, confirmed
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY)
    async def stats(
        ctx: Context,
        namespace: a.namespace_filter = None,
        include_index_details: bool = True,
    ) -> Annotated[CallToolResult, StatsResult]:
        """Store statistics: counts per namespace, size on disk, indexes, fragments, date range."""
        return await call(
            ctx, lambda app: app.namespaces.stats(namespace=namespace, include_index_details=include_index_details)
        )

    @tools.tool(READ_ONLY)
    async def namespaces(ctx: Context, include_stats: bool = True) -> Annotated[CallToolResult, NamespacesResult]:
        """List namespaces with memory counts and date ranges."""
        return await call(ctx, lambda app: app.namespaces.namespaces(include_stats=include_stats))

    @tools.tool(DESTRUCTIVE)
    async def delete_namespace(
        namespace: a.namespace,
        ctx: Context,
        confirm: bool = False,
        dry_run: bool = True,
        # Not an argument: filled by asking the user where the client can (confirmation.py).
        answer: Annotated[ElicitationResult[Confirmation], Resolve(confirm_namespace_deletion)] = None,
    ) -> Annotated[CallToolResult, DeleteNamespaceResult]:
        """Delete every memory in a namespace. Preview with dry_run=true (the default); deleting needs confirm=true."""
        sure = confirmed(answer)
        return await call(ctx, lambda app: app.namespaces.delete_namespace(namespace, confirm=sure, dry_run=dry_run))

    @tools.tool(CHANGING)
    async def rename_namespace(
        old_namespace: a.namespace,
        new_namespace: a.namespace,
        ctx: Context,
    ) -> Annotated[CallToolResult, RenameNamespaceResult]:
        """Move every memory of a namespace to a new namespace name, all at once."""
        return await call(ctx, lambda app: app.namespaces.rename_namespace(old_namespace, new_namespace))

"""Capture: the configuration that makes a client store memories from its hooks."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..services.results import SetupHooksResult
from .arguments import Arguments
from .calls import READ_ONLY, call
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(READ_ONLY)
    async def setup_hooks(
        client: Annotated[Literal["claude-code", "cursor"], Field(description="The client to capture from.")],
        ctx: Context,
        scope: Annotated[Literal["user", "project"], Field(description="User settings, or one project's.")] = "user",
    ) -> Annotated[CallToolResult, SetupHooksResult]:
        """Show the hooks and MCP entry that make a client capture memories by itself (edits, failures and
        fixes, decisions; secrets redacted). Writes nothing: the user runs write_command."""
        return await call(ctx, lambda app: _setup(app, client, scope))


def _setup(app, client: str, scope: str) -> SetupHooksResult:
    from ..capture.setup import plan
    from ..config import default_data_dir

    settings = app.resources.settings
    store = None if settings.path == default_data_dir().expanduser().resolve() else settings.path
    # The server does not know the user's project: project paths stay relative to its root.
    setup = plan(client, scope, project=Path("<project>"), home=Path("~"), store=store)
    return SetupHooksResult.of(setup)

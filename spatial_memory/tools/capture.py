"""Capture: the configuration that makes a client store memories from its hooks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from mcp.types import CallToolResult

from ..capture.setup import plan
from ..config import default_data_dir
from ..services.results import SetupHooksResult
from .calls import READ_ONLY, call
from .registry import tool
from .types import Context

if TYPE_CHECKING:  # named in annotations only
    from ..app import App


@tool(READ_ONLY)
async def setup_hooks(
    client: Literal["claude-code", "cursor"],
    ctx: Context,
    scope: Literal["user", "project"] = "user",
) -> Annotated[CallToolResult, SetupHooksResult]:
    """The client hooks that capture memories automatically (edits, fixes, decisions); the user runs
    write_command."""
    return await call(ctx, lambda app: _setup(app, client, scope))


def _setup(app: App, client: str, scope: str) -> SetupHooksResult:
    settings = app.resources.settings
    store = None if settings.path == default_data_dir().expanduser().resolve() else settings.path
    # The server does not know the user's project: project paths stay relative to its root.
    setup = plan(client, scope, project=Path("<project>"), home=Path("~"), store=store)
    return SetupHooksResult.of(setup)


TOOLS = (setup_hooks,)

"""The server's health."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult

from ..services.results import HealthResult
from .calls import READ_ONLY, call
from .registry import tool
from .types import Context


@tool(READ_ONLY)
async def health(ctx: Context, verbose: bool = False) -> Annotated[CallToolResult, HealthResult]:
    """Server status, ready, alive. Cheap."""
    return await call(ctx, lambda app: app.health.health(verbose=verbose))


TOOLS = (health,)

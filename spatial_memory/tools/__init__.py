"""The MCP tools: plain typed functions, one module per area.

Each tool is a module-level `async def` whose signature is its input schema (types.py, with the
limits of limits.py) and whose docstring is its description. It calls one service method in a
worker thread (calls.call: every outcome, errors included, becomes a CallToolResult) and is
annotated with the result model its output schema comes from. registry.py builds the SDK's
Tool objects from them for one server's settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tool_profiles import selected_names
from . import capture, connections, health, lifecycle, memory, namespaces, portability, procedures, search, spatial
from .registry import build, read_only_names

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools import Tool

    from ..config import Settings


# Every tool module, in the order clients list their tools.
AREAS = (memory, search, spatial, lifecycle, namespaces, portability, health, connections, capture, procedures)


def build_tools(settings: Settings) -> list[Tool]:
    """The tools a server with these settings lists (SPATIAL_MEMORY_TOOLS), in the order clients list them."""
    tools = [build(fn, settings) for area in AREAS for fn in area.TOOLS]
    wanted = selected_names(settings.tools.split(","), read_only_names(tools))
    return [tool for tool in tools if tool.name in wanted]

"""The MCP tools: thin typed functions, one module per area.

Each tool validates its arguments through its signature (the JSON schema is generated from it,
with every limit taken from the settings: arguments.py), calls one service method in a worker
thread and returns a typed result (calls.py turns every outcome, errors included, into a
CallToolResult).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools import Tool

    from ..config import Settings


def build_tools(settings: Settings) -> list[Tool]:
    """The tools a server with these settings lists (SPATIAL_MEMORY_TOOLS), in the order clients list them."""
    from . import capture, connections, lifecycle, memory, namespaces, portability, procedures, search, spatial
    from .arguments import build_arguments
    from .profiles import selected_names
    from .registry import ToolSet, read_only_names

    arguments = build_arguments(settings)
    tools = ToolSet()
    for area in (memory, search, spatial, lifecycle, namespaces, portability, connections, capture, procedures):
        area.register(tools, arguments)
    wanted = selected_names(settings.tools.split(","), read_only_names(tools.tools))
    return [tool for tool in tools.tools if tool.name in wanted]

"""The MCP server: wiring (app.py) and the MCPServer subclass that fronts the tools (mcp_server.py)."""

from .app import create_server

__all__ = ["create_server"]

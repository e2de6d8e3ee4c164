"""The MCP server: wiring (app.py), the MCPServer subclass that fronts the tools (mcp_server.py)
and its streamable HTTP transport under uvicorn (http.py)."""

from .app import create_server

__all__ = ["create_server"]

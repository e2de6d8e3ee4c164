"""The atlas: the memory's map and browser, as an MCP App (a `ui://` resource) and as a local page.

static/     the app: hand-written HTML, CSS and JavaScript modules (no dependency, no build step)
page.py     the app as one self-contained HTML document (the MCP App resource) or as served files
api.py      the page's JSON operations, each one call of the services the tools call
server.py   the local web server (`spatial-memory ui`) and the team server's /ui routes

Nothing here is imported before it is used: the MCP server only needs the constants below.
"""

from __future__ import annotations

ATLAS_URI = "ui://spatial-memory/atlas"
MCP_APP_MIME = "text/html;profile=mcp-app"
# A tool's `_meta` naming the app that shows its results (MCP Apps, SEP-1865).
TOOL_META = {"ui": {"resourceUri": ATLAS_URI}}

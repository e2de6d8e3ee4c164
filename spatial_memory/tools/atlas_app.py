"""The atlas as an MCP App (SEP-1865): the `ui://` resource that shows visualize's and recall's
results, named in those tools' `_meta` (the resource itself: server/resources.py, atlas/page.py)."""

from __future__ import annotations

ATLAS_URI = "ui://spatial-memory/atlas"
MCP_APP_MIME = "text/html;profile=mcp-app"
# A tool's `_meta` naming the app that shows its results.
TOOL_META = {"ui": {"resourceUri": ATLAS_URI}}

"""The atlas: the memory's map and browser, as an MCP App (a `ui://` resource) and as a local page.

static/     the app: hand-written HTML, CSS and JavaScript modules (no dependency, no build step)
page.py     the app as one self-contained HTML document (the MCP App resource) or as served files
api.py      the page's JSON operations, each one call of the services the tools call
server.py   the local web server (`spatial-memory ui`) and the team server's /ui routes

Nothing here is imported before it is used. The names the tools give the app (its URI, its MIME
type) are tools/atlas_app.py's: the atlas sits above the tools, whose way of running work its
server shares.
"""

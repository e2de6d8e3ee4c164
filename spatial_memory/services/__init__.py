"""The operations behind the tools, one service per job; each method validates, works in a worker
thread (blocking) and returns a typed result (results/, one module per group of tools). Services
call storage/, embeddings/, text/ and algorithms/, never the MCP layer."""

"""spatial-memory-mcp: persistent memory for LLMs as a navigable vector space."""

__version__ = "0.1.0"

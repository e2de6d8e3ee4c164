"""Fixed ranges of tool arguments, shared by the tool schemas and the services' own checks.

Limits a user can change (content length, tags, namespace length, metadata size, batch size)
are settings (config.py); the tool schemas are generated from those settings, so a client
reads the limit it will meet.
"""

from __future__ import annotations

MAX_RESULTS = 100  # `limit` of every search
MAX_QUERY_CHARS = 10_000
MAX_ID_CHARS = 64
MAX_PATH_CHARS = 4_096
MAX_MAP_MEMORIES = 10_000  # visualize
MAX_CONTEXT = 5  # recall's context: neighbours shown on each side of a hit
# recall's expand: most memories spreading activation adds.
MAX_EXPAND = 10
DUPLICATE_SIMILARITY = (0.7, 0.99)  # dedup_threshold and consolidate's similarity_threshold

# The settings tools/list and initialize depend on: the limits the tool schemas are built from
# (tools/arguments.py) and the tools listed (tools/profiles.py); the handshake cache keys its
# answers by them.
SCHEMA_SETTINGS = (
    "max_content_length",
    "max_namespace_length",
    "max_tags",
    "max_tag_length",
    "max_batch_size",
    "conversation_ttl_days",  # named in memory_type's description
    "tools",
)
MAX_COMPLETIONS = 100  # values in one completion/complete answer (the MCP spec's limit)

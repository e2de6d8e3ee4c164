"""Tool profiles: which tools a server lists (SPATIAL_MEMORY_TOOLS).

Every tool's description and schema is sent to the model in every conversation, so a server
that lists fewer tools costs less context. Beside config.py rather than in tools/, and light on
purpose (no SDK import): the settings check a selection against these names before the server
starts, without importing the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Every tool, in the order clients list them (tests/test_tool_profiles.py pins this against
# the registered tools).
TOOL_NAMES = (
    "remember",
    "remember_batch",
    "get_memories",
    "update_memory",
    "memory_history",
    "forget",
    "forget_batch",
    "recall",
    "hybrid_recall",
    "nearby",
    "journey",
    "wander",
    "regions",
    "visualize",
    "decay",
    "reinforce",
    "extract",
    "consolidate",
    "stats",
    "namespaces",
    "delete_namespace",
    "rename_namespace",
    "export_memories",
    "import_memories",
    "health",
    "discover_connections",
    "corpus_bridges",
    "relate",
    "unrelate",
    "setup_hooks",
    "build_skill",
    "how_to",
    "execute_skill",
    "deprecate_skill",
)
# Everyday memory: store (one fact, or a session's worth in one all-or-nothing call), find,
# correct, delete, and see which namespaces exist. docs/TOOLS.md, "Tool profiles", says why these.
# In catalogue order, the order clients list them.
CORE = ("remember", "remember_batch", "update_memory", "forget", "recall", "namespaces")
# The tools annotated readOnlyHint (resolved from the annotations when the tools are built).
READONLY = "readonly"
PROFILES = ("all", "core", READONLY)


def parse_selection(value: str) -> tuple[str, ...]:
    """SPATIAL_MEMORY_TOOLS as its items: profile names and tool names, comma-separated.

    Raises ValueError naming the unknown items and listing the valid ones."""
    items = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not items:
        raise ValueError(f"names no tools; use a profile ({', '.join(PROFILES)}) or tool names")
    unknown = [item for item in items if item not in PROFILES and item not in TOOL_NAMES]
    if unknown:
        raise ValueError(
            f"unknown tool or profile {', '.join(repr(u[:60]) for u in unknown[:5])}; "
            f"profiles: {', '.join(PROFILES)}; tools: {', '.join(TOOL_NAMES)}"
        )
    return items


def selected_names(items: Sequence[str], read_only_tools: Iterable[str]) -> set[str]:
    """The tool names a parsed selection stands for."""
    names: set[str] = set()
    for item in items:
        if item == "all":
            names.update(TOOL_NAMES)
        elif item == "core":
            names.update(CORE)
        elif item == READONLY:
            names.update(read_only_tools)
        else:
            names.add(item)
    return names

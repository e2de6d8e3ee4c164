"""Which result fields the model reads, and how: markers in a field's Annotated type (not part of
the JSON schema) that the lean text a model is handed (tools/lean.py) follows; the structured
content clients and programs read keeps every field whole.

- FOR_PROGRAMS: left out of the lean text. For what describes the store's machinery (fragments,
  index rows), echoes the call's arguments, or is a ranking number the order already says.
- BY_ID: memories given by their (short) ids alone. For memories shown beside one that stands for
  them in full (a region's samples beside its representative): their text mostly repeats it, and
  a model reads any of them with get_memories, which takes the ids as shown.
"""

from __future__ import annotations


class ForPrograms:
    """The FOR_PROGRAMS marker."""


class ById:
    """The BY_ID marker."""


FOR_PROGRAMS = ForPrograms()
BY_ID = ById()


def for_programs(metadata: list[object]) -> bool:
    """Whether a field's metadata (pydantic's FieldInfo.metadata) marks it FOR_PROGRAMS."""
    return any(isinstance(m, ForPrograms) for m in metadata)


def by_id(metadata: list[object]) -> bool:
    """Whether a field's metadata (pydantic's FieldInfo.metadata) marks it BY_ID."""
    return any(isinstance(m, ById) for m in metadata)

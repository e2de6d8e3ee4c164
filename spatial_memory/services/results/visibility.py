"""Which result fields the model reads: a field marked FOR_PROGRAMS is left out of the lean text a
model is handed (tools/lean.py) and kept in the structured content clients and programs read.
For what describes the store's machinery (fragments, index rows) or echoes the call's arguments."""

from __future__ import annotations


class ForPrograms:
    """The marker (in a field's Annotated type; not part of the JSON schema)."""


FOR_PROGRAMS = ForPrograms()


def for_programs(metadata: list[object]) -> bool:
    """Whether a field's metadata (pydantic's FieldInfo.metadata) marks it FOR_PROGRAMS."""
    return any(isinstance(m, ForPrograms) for m in metadata)

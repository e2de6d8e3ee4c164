"""Export to and import from files."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_PATH_CHARS
from ..services.results import ExportResult, ImportResult
from .calls import ADDITIVE, DESTRUCTIVE, call, provenance
from .registry import tool
from .types import DedupThreshold, DryRun, NamespaceFilter

Path = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
FileFormat = Literal["parquet", "json", "csv"] | None


@tool(DESTRUCTIVE)
async def export_memories(
    output_path: Path,
    ctx: Context,
    format: FileFormat = None,
    namespace: NamespaceFilter = None,
    include_vectors: bool | None = None,
) -> Annotated[CallToolResult, ExportResult]:
    """Export memories (all, or a namespace) to a .parquet, .json or .csv file (format defaults from the
    extension) in an allowed export directory (default <data dir>/exports; relative paths start there),
    atomically, replacing the file. Vectors included by default except in csv."""
    return await call(
        ctx,
        lambda app: app.portability.export_memories(
            output_path, format=format, namespace=namespace, include_vectors=include_vectors
        ),
    )


@tool(ADDITIVE)
async def import_memories(
    source_path: Path,
    ctx: Context,
    format: FileFormat = None,
    namespace_override: NamespaceFilter = None,
    deduplicate: bool = False,
    dedup_threshold: DedupThreshold = 0.95,
    validate: bool = True,
    regenerate_embeddings: bool = False,
    dry_run: DryRun = True,
) -> Annotated[CallToolResult, ImportResult]:
    """Import a .parquet, .json or .csv file (ours or the reference implementation's) from an allowed import
    directory, all or nothing; ids, timestamps, tags, metadata and counts are kept. Preview (dry_run) by
    default. validate: an invalid record fails all (else skipped and reported). deduplicate skips records
    >= dedup_threshold similar within their namespace. regenerate_embeddings: needed if the file has no
    vectors. namespace_override puts all in one namespace."""
    origin = provenance(ctx, "import")
    return await call(
        ctx,
        lambda app: app.portability.import_memories(
            source_path,
            format=format,
            namespace_override=namespace_override,
            deduplicate=deduplicate,
            dedup_threshold=dedup_threshold,
            validate=validate,
            regenerate_embeddings=regenerate_embeddings,
            dry_run=dry_run,
            provenance=origin,
        ),
    )


TOOLS = (export_memories, import_memories)

"""Export to and import from files."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult

from ..limits import MAX_PATH_CHARS
from ..services.results import ExportResult, ImportResult
from .calls import ADDITIVE, DESTRUCTIVE, call, provenance
from .registry import tool
from .types import Context, DedupThreshold, NamespaceFilter, Unlisted

Path = Annotated[str, Unlisted(MAX_PATH_CHARS)]
FileFormat = Literal["parquet", "json", "csv"] | None


@tool(DESTRUCTIVE)
async def export_memories(
    output_path: Path,
    ctx: Context,
    format: FileFormat = None,
    namespace: NamespaceFilter = None,
    include_vectors: bool | None = None,
) -> Annotated[CallToolResult, ExportResult]:
    """Write memories (all, or a namespace) to a .parquet, .json or .csv file in an allowed export
    directory."""
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
    dry_run: bool = True,
) -> Annotated[CallToolResult, ImportResult]:
    """Import a .parquet, .json or .csv file (ours or the reference's) from an allowed directory, all
    or nothing. validate=false skips invalid records; regenerate_embeddings if it has no vectors."""
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

"""Export to and import from files."""

# Signatures use the argument types built per server (arguments.py): no postponed annotations here.
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ..limits import MAX_PATH_CHARS
from ..services.results import ExportResult, ImportResult
from .arguments import Arguments
from .calls import ADDITIVE, DESTRUCTIVE, call, provenance
from .registry import ToolSet


def register(tools: ToolSet, a: Arguments) -> None:
    @tools.tool(DESTRUCTIVE)
    async def export_memories(
        output_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_PATH_CHARS,
                description="File to write, ending in .parquet, .json or .csv, inside an allowed export directory "
                "(default <data dir>/exports); a relative path is taken relative to the first allowed directory. "
                "An existing file there is replaced.",
            ),
        ],
        ctx: Context,
        format: Annotated[
            Literal["parquet", "json", "csv"] | None,
            Field(description="parquet (zstd), json or csv; default: from the file extension."),
        ] = None,
        namespace: a.namespace_filter = None,
        include_vectors: Annotated[
            bool | None,
            Field(description="Include embedding vectors (default: true for parquet and json, false for csv)."),
        ] = None,
    ) -> Annotated[CallToolResult, ExportResult]:
        """Export memories (all, or one namespace) to a Parquet, JSON or CSV file, written atomically."""
        return await call(
            ctx,
            lambda app: app.portability.export_memories(
                output_path, format=format, namespace=namespace, include_vectors=include_vectors
            ),
        )

    @tools.tool(ADDITIVE)
    async def import_memories(
        source_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_PATH_CHARS,
                description="File to read (.parquet, .json or .csv) inside an allowed import directory "
                "(default <data dir>/exports); a relative path is taken relative to the first allowed directory.",
            ),
        ],
        ctx: Context,
        format: Annotated[
            Literal["parquet", "json", "csv"] | None,
            Field(description="parquet (zstd), json or csv; default: from the file extension."),
        ] = None,
        namespace_override: Annotated[
            a.namespace_filter, Field(description="Put every imported memory in this namespace.")
        ] = None,
        deduplicate: Annotated[
            bool,
            Field(
                description="Skip records at least dedup_threshold similar to a memory of the same namespace "
                "(already stored or earlier in the file)."
            ),
        ] = False,
        dedup_threshold: a.dedup_threshold = 0.95,
        validate: Annotated[
            bool,
            Field(
                description="true: any invalid record fails the whole import (nothing stored). "
                "false: invalid records are skipped and reported."
            ),
        ] = True,
        regenerate_embeddings: Annotated[
            bool,
            Field(description="Embed the content with this server's model (required when the file has no vectors)."),
        ] = False,
        dry_run: Annotated[bool, Field(description="Only check the file and report; store nothing (default).")] = True,
    ) -> Annotated[CallToolResult, ImportResult]:
        """Import memories from a Parquet, JSON or CSV file (ours or the reference implementation's), all or
        nothing. Preview with dry_run=true (the default), which checks every record. Valid UUID ids not already in
        the store, timestamps, importance, tags, metadata and access counts are kept."""
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

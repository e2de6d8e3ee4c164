"""The results of export_memories, import_memories and setup_hooks."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field


class ExportResult(BaseModel):
    format: str
    output_path: str = Field(description="The absolute path written.")
    memories_exported: int
    versions_exported: int = Field(
        default=0, description="Retired versions written beside them (rows with valid_until)."
    )
    relations_exported: int = Field(default=0, description="Relations written with their source memories.")
    file_size_bytes: int
    file_size_mb: float
    namespaces_included: list[str]
    duration_seconds: float
    compression: str | None = Field(default=None, description="zstd for parquet; null for json and csv.")
    include_vectors: bool


class ImportValidationError(BaseModel):
    row_number: int = Field(description="1-based position of the record in the file (a CSV header is not counted).")
    field: str
    error: str
    value: str | None = Field(default=None, description="The offending value, truncated to 100 characters.")


class ImportedMemoryPreview(BaseModel):
    id: str
    content_preview: str
    namespace: str


class ImportResult(BaseModel):
    source_path: str = Field(description="The absolute path read.")
    format: str
    total_records_in_file: int
    memories_imported: int = Field(description="Memories stored (always 0 on a dry run; see would_import).")
    memories_skipped: int = Field(description="Valid records skipped as duplicates (deduplicate=true).")
    versions_imported: int = Field(default=0, description="Retired versions restored into the memories' history.")
    relations_imported: int = Field(
        default=0, description="Relations restored (those whose target is gone are dropped)."
    )
    memories_failed: int = Field(description="Records that failed validation.")
    validation_errors: list[ImportValidationError] = Field(description="One entry per bad field (at most 100).")
    namespace_override: str | None = None
    duration_seconds: float
    dry_run: bool
    imported_memories: list[ImportedMemoryPreview] = Field(description="The first 10 memories imported.")
    would_import: int = Field(description="Memories a real run stores (dry run), or stored.")
    new_ids_assigned: int = Field(
        description="Records given a new id because theirs was missing, not a UUID, repeated, or already in the store."
    )


class SetupHooksResult(BaseModel):
    """setup_hooks: the configuration that makes a client capture memories (nothing is written)."""

    client: str
    scope: str
    hooks_file: str
    hooks: dict[str, Any] = Field(description="To merge into hooks_file.")
    mcp_file: str
    mcp_server: dict[str, Any] = Field(description='mcp_file\'s mcpServers["spatial-memory"].')
    write_command: str = Field(description="Merges both into the files, backups first.")

    @classmethod
    def of(cls, setup: Any) -> SetupHooksResult:
        flags = f"--client {setup.client} --{setup.scope} --write"
        return cls(
            client=setup.client,
            scope=setup.scope,
            hooks_file=str(setup.hooks_file),
            hooks=setup.hooks,
            mcp_file=str(setup.mcp_file),
            mcp_server=setup.mcp_server,
            write_command=f"{setup.cli} setup-hooks {flags}",
        )

    def render(self) -> str:
        """The result as the command line shows it."""
        return (
            f"# {self.client} hooks ({self.scope}): merge into {self.hooks_file}\n"
            f"{json.dumps(self.hooks, indent=2)}\n\n"
            f'# MCP server: {self.mcp_file}, under "mcpServers"\n'
            f"{json.dumps({'spatial-memory': self.mcp_server}, indent=2)}"
        )

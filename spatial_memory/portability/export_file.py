"""Writing an export file (Parquet, JSON, CSV: formats.py) atomically, beside the target then renamed."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import ExportError
from ..records import iso, utc_now
from ..storage.table.schema import vectors_of
from .formats import (
    COLUMNS,
    FORMAT_NAME,
    FORMAT_VERSION,
    META,
    short_float,
    vector_text,
)


@dataclass
class ExportHeader:
    model_id: str
    dim: int
    include_vectors: bool
    exported_at: datetime = field(default_factory=utc_now)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "embedding_model": self.model_id,
            "embedding_dim": self.dim,
            "exported_at": iso(self.exported_at),
            "include_vectors": self.include_vectors,
        }


def atomic_write(path: Path, write: Callable[[str], None]) -> int:
    """Write through a temporary file in the same directory, fsync, rename into place.

    A failure at any point leaves the previous file (or none) and no temporary behind.
    Returns the final size. New files are created readable by their owner only.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass  # not supported everywhere; the rename itself is already atomic
    return path.stat().st_size


def _export_rows(table: pa.Table) -> Iterable[dict[str, Any]]:
    for row in table.select(COLUMNS).to_pylist():
        yield {
            "id": row["id"],
            "content": row["content"],
            "namespace": row["namespace"],
            "importance": short_float(row["importance"]),
            "tags": list(row["tags"] or []),
            "source": row["source"],
            "metadata": json.loads(row["metadata"]) if row["metadata"] else {},
            "created_at": iso(row["created_at"]),
            "updated_at": iso(row["updated_at"]),
            "last_accessed": iso(row["last_accessed"]),
            "access_count": int(row["access_count"]),
            "session_id": row["session_id"],
            "sequence": row["sequence"],
            "speaker": row["speaker"],
            "occurred_at": iso(row["occurred_at"]) if row["occurred_at"] is not None else None,
            "memory_type": row["memory_type"] or "fact",
            "expires_at": iso(row["expires_at"]) if row["expires_at"] is not None else None,
            "pinned": bool(row["pinned"]),
            "version": int(row["version"] or 1),
            "provenance": json.loads(row["provenance"]) if row["provenance"] else None,
            "valid_until": iso(row["valid_until"]) if row["valid_until"] is not None else None,
            "retired_by": row["retired_by"],
            "superseded_by": row["superseded_by"],
            "relations": json.loads(row["relations"]) if row["relations"] else None,
        }


def write_export(path: Path, table: pa.Table, fmt: str, header: ExportHeader) -> int:
    """Write the store rows in `table` (store schema) to `path`; returns the file size."""
    vectors = vectors_of(table) if header.include_vectors and table.num_rows else None

    def parquet(tmp: str) -> None:
        import pyarrow.parquet as pq  # only a Parquet export pays for the Parquet module

        columns = COLUMNS + (["vector"] if header.include_vectors else [])
        out = table.select(columns)
        meta = {f"{META}{k}".encode(): str(v).encode() for k, v in header.as_dict().items()}
        out = out.replace_schema_metadata(meta)
        pq.write_table(out, tmp, compression="zstd")

    def as_json(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            head = {**header.as_dict(), "count": table.num_rows}
            handle.write(json.dumps(head, ensure_ascii=False)[:-1] + ',"memories":[')
            for i, row in enumerate(_export_rows(table)):
                line = json.dumps(row, ensure_ascii=False)
                if vectors is not None:
                    line = line[:-1] + ',"vector":' + vector_text(vectors[i]) + "}"
                handle.write(("\n" if i == 0 else ",\n") + line)
            handle.write("\n]}\n")

    def as_csv(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
            writer.writerow(COLUMNS + (["vector"] if vectors is not None or header.include_vectors else []))
            for i, row in enumerate(_export_rows(table)):
                cells = [row[c] for c in COLUMNS]
                cells[COLUMNS.index("tags")] = json.dumps(row["tags"], ensure_ascii=False)
                cells[COLUMNS.index("metadata")] = json.dumps(row["metadata"], ensure_ascii=False)
                for name in ("provenance", "relations"):
                    if row[name] is not None:
                        cells[COLUMNS.index(name)] = json.dumps(row[name], ensure_ascii=False)
                if vectors is not None:
                    cells.append(vector_text(vectors[i]))
                writer.writerow(cells)

    writers = {"parquet": parquet, "json": as_json, "csv": as_csv}
    try:
        return atomic_write(path, writers[fmt])
    except OSError as exc:
        raise ExportError(f"Export failed, no file was written: {exc.strerror or exc}") from None

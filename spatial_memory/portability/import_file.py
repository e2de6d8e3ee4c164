"""Reading an import file (ours or the reference implementation's) into columns, within the limits."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ImportRecordLimitError, MemoryImportError
from .formats import (
    COLUMNS,
    CSV_FIELD_LIMIT,
    FORMAT_VERSION,
    META,
)


@dataclass
class ParsedFile:
    format: str
    rows: list[Any]  # one raw record per row (a dict, or whatever a JSON list held)
    vectors: list[Any] | None  # raw vector per row, None when the file has no vector field at all
    model_id: str | None = None
    dim: int | None = None
    format_version: int | None = None

    @property
    def total(self) -> int:
        return len(self.rows)


def _too_many(count: int, limit: int) -> ImportRecordLimitError:
    return ImportRecordLimitError(
        f"File holds {count:,} records or more; the import limit is {limit:,} (SPATIAL_MEMORY_MAX_IMPORT_RECORDS). "
        "Split the file or raise the limit."
    )


def parse_file(data: bytes, fmt: str, *, max_records: int) -> ParsedFile:
    """Read every record of an import file, refusing files over the record limit early."""
    reader = {"parquet": _parse_parquet, "json": _parse_json, "csv": _parse_csv}[fmt]
    parsed = reader(data, max_records)
    if parsed.format_version is not None and parsed.format_version > FORMAT_VERSION:
        raise MemoryImportError(
            f"File was written in export format version {parsed.format_version}; this server reads up to "
            f"version {FORMAT_VERSION}. Upgrade spatial-memory-mcp to import it."
        )
    return parsed


def _header_value(meta: dict[str, Any], key: str) -> Any:
    return meta.get(key, meta.get(f"{META}{key}"))


def _dim_of(value: Any) -> int | None:
    try:
        dim = int(value)
    except (TypeError, ValueError):
        return None
    return dim if dim > 0 else None


def _parse_parquet(data: bytes, max_records: int) -> ParsedFile:
    # Only a Parquet import pays for the Parquet module (pyarrow.compute: see runtime/imports.py).
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(pa.BufferReader(data))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise MemoryImportError(f"Not a readable Parquet file (truncated or corrupt?): {exc}") from None
    if handle.metadata.num_rows > max_records:
        raise _too_many(handle.metadata.num_rows, max_records)
    names = handle.schema_arrow.names
    if "content" not in names:
        raise MemoryImportError(f"Parquet file has no 'content' column (columns: {', '.join(names[:20])})")
    try:
        table = handle.read()
    except Exception as exc:  # noqa: BLE001
        raise MemoryImportError(f"Parquet file could not be read (truncated or corrupt?): {exc}") from None
    meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in (table.schema.metadata or {}).items()}
    vectors = None
    if "vector" in names:
        vectors = _arrow_vectors(table.column("vector"))
        table = table.drop_columns(["vector"])
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            # Microseconds, UTC (naive columns are taken as UTC), so to_pylist gives datetimes.
            target = pa.timestamp("us", tz=column.type.tz or "UTC")
            table = table.set_column(table.column_names.index(name), name, pc.cast(column, target, safe=False))
    return ParsedFile(
        "parquet",
        table.to_pylist(),
        vectors,
        model_id=_header_value(meta, "embedding_model"),
        dim=_dim_of(_header_value(meta, "embedding_dim")),
        format_version=_dim_of(_header_value(meta, "format_version")),
    )


def _arrow_vectors(column: pa.ChunkedArray) -> list[Any]:
    """Per-row float32 arrays (None for nulls) without a Python float per element."""
    arr = column.combine_chunks()
    kind = arr.type
    if pa.types.is_fixed_size_list(kind) and arr.null_count == 0:
        values = arr.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return list(values.reshape(len(arr), kind.list_size)) if len(arr) else []
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        offsets = arr.offsets.to_numpy()
        values = arr.values.to_numpy(zero_copy_only=False)
        nulls = arr.is_null().to_numpy(zero_copy_only=False)
        return [None if nulls[i] else values[offsets[i] : offsets[i + 1]] for i in range(len(arr))]
    return arr.to_pylist()


def _parse_json(data: bytes, max_records: int) -> ParsedFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemoryImportError(f"JSON file is not valid UTF-8 (byte {exc.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MemoryImportError(
            f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (truncated file?)"
        ) from None
    header: dict[str, Any] = {}
    if isinstance(document, dict):
        if not isinstance(document.get("memories"), list):
            raise MemoryImportError("JSON file must be a list of memories or an object with a 'memories' list")
        header, records = document, document["memories"]
    elif isinstance(document, list):
        records = document
    else:
        raise MemoryImportError("JSON file must be a list of memories or an object with a 'memories' list")
    if len(records) > max_records:
        raise _too_many(len(records), max_records)
    has_vectors = any(isinstance(r, dict) and r.get("vector") is not None for r in records)
    vectors = [r.get("vector") if isinstance(r, dict) else None for r in records] if has_vectors else None
    return ParsedFile(
        "json",
        records,
        vectors,
        model_id=header.get("embedding_model"),
        dim=_dim_of(header.get("embedding_dim")),
        format_version=_dim_of(header.get("format_version")),
    )


def _parse_csv(data: bytes, max_records: int) -> ParsedFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemoryImportError(f"CSV file is not valid UTF-8 (byte {exc.start})") from None
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header or not any(cell.strip() for cell in header):
            raise MemoryImportError("CSV file is empty: expected a header row naming the columns")
        names = [cell.strip().lower() for cell in header]
        if "content" not in names:
            raise MemoryImportError(
                f"CSV file is missing the required column 'content' (header: {', '.join(names[:20])}). "
                f"Expected columns: {', '.join(COLUMNS)}[, vector]"
            )
        rows: list[Any] = []
        for cells in reader:
            if not cells:
                continue  # blank line
            if len(rows) >= max_records:
                raise _too_many(len(rows) + 1, max_records)
            if len(cells) != len(names):
                rows.append(BadRow(f"has {len(cells)} fields, the header has {len(names)}"))
                continue
            rows.append({name: (cell if cell != "" else None) for name, cell in zip(names, cells, strict=True)})
    except csv.Error as exc:
        raise MemoryImportError(f"Not valid CSV at line {reader.line_num}: {exc}") from None
    vectors = [r.get("vector") if isinstance(r, dict) else None for r in rows] if "vector" in names else None
    return ParsedFile("csv", rows, vectors)


@dataclass
class BadRow:
    reason: str

"""Export and import file formats: Parquet, JSON and CSV, and the checks on imported records.

Every format carries the same fields per memory, named as the reference implementation
(spatial-memory-mcp 1.11.4) names them, so its exports import here and ours are readable by
anything that reads its files:

    id, content, namespace, importance, tags, source, metadata, created_at, updated_at,
    last_accessed, access_count[, vector]

- Parquet (zstd): tags a list of strings, metadata a JSON string, timestamps UTC microseconds,
  vector a fixed-size float32 list; the schema metadata holds `spatial_memory.format`,
  `.format_version`, `.embedding_model`, `.embedding_dim`, `.exported_at`.
- JSON: `{"format": "spatial-memory-mcp", "format_version": 1, "embedding_model": ...,
  "embedding_dim": ..., "exported_at": ..., "count": n, "memories": [...]}` with one memory
  per line; metadata an object, timestamps ISO 8601 with `Z`. A bare list of memories (the
  reference's layout) is read too.
- CSV (RFC 4180, UTF-8, CRLF): tags, metadata and vector as JSON text in their cells. CSV has no
  header block, so it carries no model id: vectors of the right dimension are trusted.

Floats are written in their shortest form that reads back to the identical float32, so a
round trip gives bit-identical vectors and importances.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import validation as check
from ..config import Settings
from ..errors import ExportError, ImportRecordLimitError, MemoryImportError, ValidationError
from ..storage.records import SOURCES, iso, utc_now

FORMAT_NAME = "spatial-memory-mcp"
FORMAT_VERSION = 1
FORMATS = ("parquet", "json", "csv")
EXTENSIONS = {".parquet": "parquet", ".json": "json", ".csv": "csv"}
COLUMNS = [
    "id",
    "content",
    "namespace",
    "importance",
    "tags",
    "source",
    "metadata",
    "created_at",
    "updated_at",
    "last_accessed",
    "access_count",
]
TIMESTAMPS = ("created_at", "updated_at", "last_accessed")
META = "spatial_memory."
MAX_SHOWN_VALUE = 100
MAX_ACCESS_COUNT = 2**31 - 1
_CSV_FIELD_LIMIT = 64 * 1024 * 1024


def format_for(path: Path, requested: str | None, *, for_export: bool) -> str:
    """The format asked for, else the one the extension names; they must not disagree."""
    by_extension = EXTENSIONS.get(path.suffix.lower())
    if requested is not None and requested not in FORMATS:
        raise ValidationError(f"unknown format '{requested}'; use parquet, json or csv")
    if for_export and by_extension is None:
        raise ValidationError("output_path must end in .parquet, .json or .csv")
    if requested and by_extension and requested != by_extension:
        raise ValidationError(f"format '{requested}' does not match the file extension '{path.suffix}'")
    chosen = requested or by_extension
    if chosen is None:
        raise ValidationError("cannot tell the format from the file name: pass format (parquet, json or csv)")
    return chosen


def short_float(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (0.8, not 0.800000011920929)."""
    return float(str(np.float32(value)))


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32))) + "]"


# ---- export -------------------------------------------------------------------------------


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
        }


def write_export(path: Path, table: pa.Table, fmt: str, header: ExportHeader) -> int:
    """Write the store rows in `table` (store schema) to `path`; returns the file size."""
    from ..storage.schema import vectors_of

    vectors = vectors_of(table) if header.include_vectors and table.num_rows else None

    def parquet(tmp: str) -> None:
        import pyarrow.parquet as pq

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
                    line = line[:-1] + ',"vector":' + _vector_text(vectors[i]) + "}"
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
                if vectors is not None:
                    cells.append(_vector_text(vectors[i]))
                writer.writerow(cells)

    writers = {"parquet": parquet, "json": as_json, "csv": as_csv}
    try:
        return atomic_write(path, writers[fmt])
    except OSError as exc:
        raise ExportError(f"Export failed, no file was written: {exc.strerror or exc}") from None


# ---- import: reading files ------------------------------------------------------------------


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
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
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
                rows.append(_BadRow(f"has {len(cells)} fields, the header has {len(names)}"))
                continue
            rows.append({name: (cell if cell != "" else None) for name, cell in zip(names, cells, strict=True)})
    except csv.Error as exc:
        raise MemoryImportError(f"Not valid CSV at line {reader.line_num}: {exc}") from None
    vectors = [r.get("vector") if isinstance(r, dict) else None for r in rows] if "vector" in names else None
    return ParsedFile("csv", rows, vectors)


@dataclass
class _BadRow:
    reason: str


# ---- import: checking records ---------------------------------------------------------------


@dataclass
class Candidate:
    """A valid record ready to be stored (the id is kept only when it is a free UUID)."""

    row_number: int
    id: str | None
    content: str
    namespace: str
    tags: list[str]
    importance: float
    source: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    access_count: int
    vector: np.ndarray | None


@dataclass
class RowProblem:
    row_number: int
    field: str
    error: str
    value: str | None


def shown_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return f"<{value.size} values>"
    if isinstance(value, (list, tuple)) and len(value) > 20:
        return f"<{len(value)} values>"
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            value = repr(value)
    return value if len(value) <= MAX_SHOWN_VALUE else value[:MAX_SHOWN_VALUE] + "..."


def vector_lengths(vectors: list[Any] | None) -> set[int]:
    """Lengths of the vectors that look like vectors (for the file-level dimension check)."""
    lengths: set[int] = set()
    for raw in vectors or []:
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                continue
        if isinstance(raw, (list, tuple, np.ndarray)):
            lengths.add(len(raw))
    return lengths


class _Problem(Exception):
    def __init__(self, field: str, error: str, value: Any) -> None:
        super().__init__(error)
        self.field, self.error, self.value = field, error, value


def _timestamp(name: str, value: Any, default: datetime) -> datetime:
    if value is None:
        return default
    try:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            moment = datetime.fromtimestamp(value, tz=timezone.utc)
        elif isinstance(value, str) and value.strip():
            text = value.strip()
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "zZ" else text)
        else:
            raise ValueError
    except (ValueError, OverflowError, OSError):
        raise _Problem(name, "must be an ISO 8601 timestamp", value) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _json_text(name: str, value: str, expected: type, what: str) -> Any:
    try:
        decoded = json.loads(value)
    except ValueError:
        raise _Problem(name, f"must be {what}", value) from None
    if not isinstance(decoded, expected):
        raise _Problem(name, f"must be {what}", value)
    return decoded


def _tags(value: Any, settings: Settings) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = _json_text("tags", text, list, "a list of strings")
        else:
            value = [t for t in (part.strip() for part in text.split(",")) if t]
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise _Problem("tags", "must be a list of strings", value)
    try:
        return check.tags(list(value), settings)
    except ValidationError as exc:
        raise _Problem("tags", exc.message, value) from None


def _metadata(value: Any, settings: Settings) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = _json_text("metadata", value, dict, "a JSON object") if value.strip() else {}
    if not isinstance(value, dict):
        raise _Problem("metadata", "must be a JSON object", value)
    try:
        return check.metadata(value, settings)
    except ValidationError as exc:
        raise _Problem("metadata", exc.message, value) from None


def _importance(value: Any) -> float:
    if value is None:
        return 0.5
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise _Problem("importance", "must be a number from 0.0 to 1.0", value) from None
    try:
        return check.importance(number)
    except ValidationError as exc:
        raise _Problem("importance", exc.message, value) from None


def _access_count(value: Any) -> int:
    if value is None:
        return 0
    number = value
    try:
        if isinstance(value, str):
            number = float(value) if any(c in value for c in ".eE") else int(value)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number != int(number):
            raise ValueError
        count = int(number)
    except (ValueError, OverflowError):
        raise _Problem("access_count", "must be a whole number >= 0", value) from None
    if not 0 <= count <= MAX_ACCESS_COUNT:
        raise _Problem("access_count", f"must be between 0 and {MAX_ACCESS_COUNT}", value)
    return count


def _vector(value: Any, dim: int | None) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        value = _json_text("vector", value, list, "a list of numbers")
    try:
        vector = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise _Problem("vector", "must be a list of numbers", value) from None
    if vector.ndim != 1 or vector.size == 0:
        raise _Problem("vector", "must be a flat list of numbers", value)
    if dim is not None and vector.size != dim:
        raise _Problem("vector", f"has {vector.size} dimensions, the store needs {dim}", value)
    if not np.all(np.isfinite(vector)):
        raise _Problem("vector", "must contain only finite numbers", value)
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        raise _Problem("vector", "must not be all zeros", value)
    # Stored vectors are unit length (cosine = dot product); exact round trips stay untouched.
    return vector if abs(norm - 1.0) <= 1e-3 else (vector / norm).astype(np.float32)


def _uuid(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value).strip()))
    except ValueError:
        return None


def check_rows(
    parsed: ParsedFile,
    settings: Settings,
    *,
    namespace_override: str | None,
    dim: int | None,
    need_vectors: bool,
) -> tuple[list[Candidate], list[RowProblem]]:
    """Check every record (every field of it): the valid ones, and one problem per bad field.

    Row numbers count records from 1 in file order (a CSV header is not a record).
    With `dim` given, vectors are read and checked (`need_vectors`: a missing one is a problem);
    without it they are ignored (the content will be embedded again).
    """
    candidates: list[Candidate] = []
    problems: list[RowProblem] = []
    now = utc_now()
    for index, raw in enumerate(parsed.rows):
        vector = parsed.vectors[index] if parsed.vectors is not None else None
        candidate, row_problems = _check_row(
            index + 1, raw, vector, settings, namespace_override, dim, need_vectors, now
        )
        problems.extend(row_problems)
        if candidate is not None:
            candidates.append(candidate)
    return candidates, problems


def _check_row(
    row_number: int,
    raw: Any,
    raw_vector: Any,
    settings: Settings,
    namespace_override: str | None,
    dim: int | None,
    need_vectors: bool,
    now: datetime,
) -> tuple[Candidate | None, list[RowProblem]]:
    if isinstance(raw, _BadRow):
        return None, [RowProblem(row_number, "record", raw.reason, None)]
    if not isinstance(raw, dict):
        return None, [RowProblem(row_number, "record", "must be an object", shown_value(raw))]
    problems: list[RowProblem] = []

    def take(fn: Callable[[], Any], default: Any = None) -> Any:
        try:
            return fn()
        except _Problem as problem:
            problems.append(RowProblem(row_number, problem.field, problem.error, shown_value(problem.value)))
            return default

    def content() -> str:
        value = raw.get("content")
        if not isinstance(value, str):
            raise _Problem("content", "is missing or not text", value)
        try:
            return check.content(value, settings)
        except ValidationError as exc:
            raise _Problem("content", exc.message, value) from None

    def namespace() -> str:
        if namespace_override is not None:
            return namespace_override
        value = raw.get("namespace")
        if value is None:
            return "default"
        if not isinstance(value, str):
            raise _Problem("namespace", "must be text", value)
        try:
            return check.namespace(value, settings)
        except ValidationError as exc:
            raise _Problem("namespace", exc.message, value) from None

    def vector() -> np.ndarray | None:
        if dim is None:
            return None
        found = _vector(raw_vector, dim)
        if found is None and need_vectors:
            raise _Problem("vector", "is missing: pass regenerate_embeddings=true to embed the content", None)
        return found

    created = take(lambda: _timestamp("created_at", raw.get("created_at"), now), now)
    updated = take(lambda: _timestamp("updated_at", raw.get("updated_at"), created), created)
    candidate = Candidate(
        row_number=row_number,
        id=_uuid(raw.get("id")),
        content=take(content, ""),
        namespace=take(namespace, "default"),
        tags=take(lambda: _tags(raw.get("tags"), settings), []),
        importance=take(lambda: _importance(raw.get("importance")), 0.5),
        source=raw.get("source") if raw.get("source") in SOURCES else "imported",
        metadata=take(lambda: _metadata(raw.get("metadata"), settings), {}),
        created_at=created,
        updated_at=updated,
        last_accessed=take(lambda: _timestamp("last_accessed", raw.get("last_accessed"), updated), updated),
        access_count=take(lambda: _access_count(raw.get("access_count")), 0),
        vector=take(vector, None),
    )
    return (None if problems else candidate), problems

"""Export and import file formats: Parquet, JSON and CSV, and the checks on imported records.

Every format carries the same fields per memory, named as the reference implementation
(spatial-memory-mcp 1.11.4) names them, so its exports import here and ours are readable by
anything that reads its files:

    id, content, namespace, importance, tags, source, metadata, created_at, updated_at,
    last_accessed, access_count[, vector]

then ours: the conversation fields (session_id, sequence, speaker, occurred_at), what a memory is
(memory_type, expires_at, pinned), its version and provenance (a JSON object), for the rows of
retired versions valid_until, retired_by and superseded_by (see HISTORY_FIELDS), and last
`relations`: the memory's outgoing relations, a list of
`{"target_id", "relation", "weight", "created_at"}` (null when it has none, and always on a
retired version's row). Relations travel as a field of their source memory's row, so a file
holds no relation without its memory; a relation is exported when both its memories are current
(a one-namespace export keeps relations into other namespaces). Import restores a relation when
its target is in the file (under the id the target was given) or already in the store, and
drops it otherwise; it is written in the import's all-or-nothing step, before the memories
(until they land, a relation without both memories is shown nowhere).

- Parquet (zstd): tags a list of strings, metadata and relations JSON strings, timestamps UTC microseconds,
  vector a fixed-size float32 list; the schema metadata holds `spatial_memory.format`,
  `.format_version`, `.embedding_model`, `.embedding_dim`, `.exported_at`.
- JSON: `{"format": "spatial-memory-mcp", "format_version": 1, "embedding_model": ...,
  "embedding_dim": ..., "exported_at": ..., "count": n, "memories": [...]}` with one memory
  per line; metadata an object, timestamps ISO 8601 with `Z`. A bare list of memories (the
  reference's layout) is read too.
- CSV (RFC 4180, UTF-8, CRLF): tags, metadata, provenance, relations and vector as JSON text in
  their cells. CSV has no
  header block, so it carries no model id: vectors of the right dimension are trusted.

Floats are written in their shortest form that reads back to the identical float32, so a
round trip gives bit-identical vectors and importances.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..storage.table.schema import ADDED_COLUMNS, HISTORY_COLUMNS

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
    *(f.name for f in ADDED_COLUMNS),  # ours: the columns the store gained after the reference's
    *(f.name for f in HISTORY_COLUMNS if f.name != "version_key"),
    "relations",
]
# A row with valid_until set is a retired version of the memory with its id (a state replaced by
# update_memory, or closed by the memory superseded_by names): it goes back into the history.
HISTORY_FIELDS = tuple(f.name for f in HISTORY_COLUMNS if f.name != "version_key")
TIMESTAMPS = ("created_at", "updated_at", "last_accessed")
META = "spatial_memory."
MAX_SHOWN_VALUE = 100
MAX_ACCESS_COUNT = 2**31 - 1
CSV_FIELD_LIMIT = 64 * 1024 * 1024


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


def vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32))) + "]"

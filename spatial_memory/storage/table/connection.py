"""Opening the LanceDB database with bounded caches, every read seeing other processes' commits.

This module imports lancedb and pyarrow inside its functions: the CLI reads `is_remote` at
start-up, and lancedb must not be imported before `prepare_lancedb_import` (lancedb_import.py).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from .lancedb_import import prepare_lancedb_import

METADATA_CACHE_BYTES = 64 << 20
# The full-text index of a table below the vector index threshold fits in a few MB; the
# HNSW index of a million rows needs most of a gigabyte to stay fast.
SMALL_INDEX_CACHE_BYTES = 64 << 20
LARGE_INDEX_CACHE_BYTES = 1024 << 20
# LanceDB's row address column: where a row was when it was read (a compaction moves rows).
ROW_ID = "_rowid"


def is_remote(db_path: Path | str) -> bool:
    """A store on object storage (a URI such as s3://bucket/prefix), not a local directory."""
    return isinstance(db_path, str) and "://" in db_path


def connect(db_path: Path | str, index_cache_bytes: int):
    prepare_lancedb_import()
    import lancedb  # here, after the line above: see lancedb_import.py

    # Consistency interval 0: every read sees commits made by other processes. The caches are
    # bounded: by default LanceDB lets them grow to gigabytes, holding every superseded
    # version of the full-text index that compaction leaves behind. A URI (s3://, gs://, az://)
    # goes to LanceDB's object store, which reads credentials and endpoint from the environment
    # (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_REGION, ...).
    session = lancedb.Session(index_cache_size_bytes=index_cache_bytes, metadata_cache_size_bytes=METADATA_CACHE_BYTES)
    return lancedb.connect(str(db_path), read_consistency_interval=timedelta(0), session=session)


def in_one_trip(table, start, columns: list[str], limit: int | None, where: str | None, *, postfilter: bool = False):
    """The Arrow result of a query on `table` (a LanceDB table): `start(its async handle)` begins
    it (e.g. `.query().nearest_to_text(...)`), then the columns, the limit (None: every row) and
    `where` (a prefilter; with `postfilter`, applied to the `limit` best rows instead).

    LanceDB's synchronous query builders hand each step to its event loop thread in turn: the
    table's schema three times, the query, then each batch, and each hand-off costs more when the
    cores are busy; the same query on the table's async handle is one hand-off (docs/BENCHMARKS.md,
    "Figures moved from code comments")."""
    from lancedb.background_loop import LOOP  # imported here: see the module docstring

    query = start(table._table).select(columns)
    query = query.limit(limit) if limit is not None else query
    if where:
        query = query.where(where).postfilter() if postfilter else query.where(where)
    return LOOP.run(query.to_arrow())


def take_in_order(table, row_ids: list[int], columns: list[str]):
    """The rows with these row ids (the columns, "_rowid" among them if asked), in the order given,
    in one hand-off; a row gone since its id was read is left out."""
    # imported here: see the module docstring
    import pyarrow as pa
    from lancedb.background_loop import LOOP

    wanted = [c for c in columns if c != ROW_ID]
    found = LOOP.run(table._table.take_row_ids(row_ids).select(wanted).with_row_id().to_arrow())
    at = {row_id: i for i, row_id in enumerate(found.column(ROW_ID).to_pylist())}
    rows = found.take(pa.array([at[r] for r in row_ids if r in at], type=pa.int64()))
    return rows if ROW_ID in columns else rows.drop_columns([ROW_ID])

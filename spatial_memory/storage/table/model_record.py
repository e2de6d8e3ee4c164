"""Which embedding model (and, for the bundled model, which arithmetic path) wrote a store's
vectors, read before the store is opened so the server can embed queries the same way."""

from __future__ import annotations

from pathlib import Path

from .connection import SMALL_INDEX_CACHE_BYTES, connect, is_remote
from .schema import MODEL_KEY, TABLE_NAME


def recorded_model_id(db_path: Path | str) -> str | None:
    """The model id in the memories table's schema, or None: no store there yet, or one that
    cannot be read here (opening it then says why)."""
    if not is_remote(db_path) and not (Path(db_path) / f"{TABLE_NAME}.lance").is_dir():
        return None
    try:
        table = connect(db_path, SMALL_INDEX_CACHE_BYTES).open_table(TABLE_NAME)
        return (table.schema.metadata or {}).get(MODEL_KEY, b"").decode() or None
    except Exception:  # noqa: BLE001 - MemoryStore reports an unreadable store, typed
        return None

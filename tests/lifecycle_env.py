"""What the lifecycle and consolidation tests share besides conftest's `env`: snapshots, a side handle, error checks."""

from __future__ import annotations

import math
from pathlib import Path

from spatial_memory.storage.store import MemoryStore
from spatial_memory.storage.table.schema import SUMMARY_COLUMNS

from .conftest import data

REPO = Path(__file__).resolve().parents[1]


def snapshot(store: MemoryStore) -> list[dict]:
    """Every column of every row (vectors included), sorted by id."""
    table = store.scan_arrow(SUMMARY_COLUMNS + ["vector"])
    return sorted(table.to_pylist(), key=lambda row: row["id"])


def side_store(settings, embedder) -> MemoryStore:
    """A second handle on the server's store (LanceDB sees other handles' commits at once)."""
    return MemoryStore(settings.db_path, embedder.model_id, embedder.dimension)


def assert_error(result, error_type: str, fragment: str = "") -> dict:
    assert result.is_error, data(result)
    body = data(result)
    assert body["error"] == error_type, body
    assert fragment.lower() in body["message"].lower(), body
    return body


def closed_form(function: str, days: float, half_life: float) -> float:
    if days <= 0:
        return 1.0
    if function == "exponential":
        return 0.5 ** (days / half_life)
    if function == "linear":
        return max(0.0, 1.0 - days / (2 * half_life))
    return 0.5 ** math.floor(days / half_life)

"""Each memory's tier (algorithms/tiers.py) from its stored columns or records: stats counts them,
visualize shows them on the map."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..algorithms.tiers import TIERS, tier_indexes, tier_names
from ..storage.records import MemoryRecord, as_utc

# The columns tiers are read from.
TIER_COLUMNS = ["memory_type", "session_id", "source", "provenance", "created_at", "last_accessed", "access_count"]
# How a distilled memory's provenance reads in its stored JSON (storage/schema.py: json.dumps).
_DISTILLED = '"via": "distill"'


def tier_counts(table, now: datetime) -> dict[str, int]:
    """Memories per tier, every tier named, from a table holding TIER_COLUMNS."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return dict.fromkeys(TIERS, 0)
    provenance = pc.fill_null(table.column("provenance"), "")
    derived = pc.or_(
        pc.equal(pc.fill_null(table.column("source"), ""), "consolidated"),
        pc.match_substring(provenance, _DISTILLED),
    )
    seconds = lambda name: pc.cast(table.column(name), "int64").to_numpy(zero_copy_only=False) / 1e6  # noqa: E731
    indexes = tier_indexes(
        np.array(pc.fill_null(table.column("memory_type"), "fact").to_pylist(), dtype=object),
        pc.is_valid(table.column("session_id")).to_numpy(zero_copy_only=False),
        derived.to_numpy(zero_copy_only=False),
        seconds("created_at"),
        seconds("last_accessed"),
        pc.fill_null(table.column("access_count"), 0).to_numpy(zero_copy_only=False),
        as_utc(now).timestamp(),
    )
    counts = Counter(tier_names(indexes))
    return {tier: counts.get(tier, 0) for tier in TIERS}


def record_tiers(records: Sequence[MemoryRecord], now: datetime) -> list[str]:
    """Each record's tier, in order."""
    if not records:
        return []
    indexes = tier_indexes(
        np.array([r.memory_type for r in records], dtype=object),
        np.array([r.conversation.session_id is not None for r in records]),
        np.array([_derived(r) for r in records]),
        np.array([as_utc(r.created_at).timestamp() for r in records]),
        np.array([as_utc(r.last_accessed).timestamp() for r in records]),
        np.array([r.access_count for r in records]),
        as_utc(now).timestamp(),
    )
    return tier_names(indexes)


def _derived(record: MemoryRecord) -> bool:
    return record.source == "consolidated" or (record.provenance is not None and record.provenance.via == "distill")

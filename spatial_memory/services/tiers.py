"""Each memory's tier (algorithms/tiers.py) from its stored columns or records: stats counts them,
visualize shows them on the map."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..algorithms.tiers import TIERS, tier_indexes, tier_names
from ..records import MemoryRecord, as_utc

# The columns tiers are read from. Distilled memories have source "consolidated" like every
# consolidated one (services/distillation.py): no need to read each row's provenance JSON.
TIER_COLUMNS = ["memory_type", "session_id", "source", "created_at", "last_accessed", "access_count"]


def tier_counts(table, now: datetime) -> dict[str, int]:
    """Memories per tier, every tier named, from a table holding TIER_COLUMNS."""
    # Not at the top: pyarrow.compute loads with the heavy imports before the first tool call
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return dict.fromkeys(TIERS, 0)
    derived = pc.call_function("equal", [pc.fill_null(table.column("source"), ""), "consolidated"])
    seconds = lambda name: pc.cast(table.column(name), "int64").to_numpy(zero_copy_only=False) / 1e6  # noqa: E731
    memory_type = pc.fill_null(table.column("memory_type"), "fact")
    kinds = {
        k: pc.call_function("equal", [memory_type, k]).to_numpy(zero_copy_only=False)
        for k in ("conversation", "context", "procedure")
    }
    indexes = tier_indexes(
        kinds,
        pc.call_function("is_valid", [table.column("session_id")]).to_numpy(zero_copy_only=False),
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
    types = [r.memory_type for r in records]
    indexes = tier_indexes(
        {k: np.array([t == k for t in types]) for k in ("conversation", "context", "procedure")},
        np.array([r.conversation.session_id is not None for r in records]),
        np.array([_derived(r) for r in records]),
        np.array([as_utc(r.created_at).timestamp() for r in records]),
        np.array([as_utc(r.last_accessed).timestamp() for r in records]),
        np.array([r.access_count for r in records]),
        as_utc(now).timestamp(),
    )
    return tier_names(indexes)


def _derived(record: MemoryRecord) -> bool:
    return record.source == "consolidated"

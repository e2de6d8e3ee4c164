"""Memory tiers (after the enhanced-memory seed's four tiers), from what a memory is and how it is used.

- procedural: how a task is done (memory type `procedure`).
- working: in active use - today's working context (type `context`), or a memory created within
  RECENT_DAYS, recalled more than ACTIVE_ACCESSES times, the last time within ACTIVE_DAYS.
- episodic: a time-bound experience - a conversation turn or a capture (type `conversation`), or
  any memory placed in a session, unless distilled from episodes.
- semantic: knowledge that holds beyond one episode - stated facts, and memories distilled or
  consolidated from several.

Vectorised over a table's columns (stats counts a whole store at once).
"""

from __future__ import annotations

import numpy as np

TIERS = ("working", "episodic", "semantic", "procedural")
WORKING, EPISODIC, SEMANTIC, PROCEDURAL = range(4)
RECENT_DAYS = 30
ACTIVE_DAYS = 7
ACTIVE_ACCESSES = 3
_DAY = 86_400.0


def tier_indexes(
    kinds: dict[str, np.ndarray],
    in_session: np.ndarray,
    derived: np.ndarray,
    created_s: np.ndarray,
    accessed_s: np.ndarray,
    access_count: np.ndarray,
    now_s: float,
) -> np.ndarray:
    """Each memory's tier as an index into TIERS. `kinds`: per memory type (conversation, context,
    procedure) which memories have it; `in_session`: it has a session; `derived`: distilled or
    consolidated from others; times in seconds since the epoch."""
    is_ = {kind: np.asarray(kinds[kind], dtype=bool) for kind in ("conversation", "context", "procedure")}
    tiers = np.full(is_["procedure"].shape[0], SEMANTIC, dtype=np.int8)
    episodic = (is_["conversation"] | np.asarray(in_session, dtype=bool)) & ~np.asarray(derived, bool)
    tiers[episodic] = EPISODIC
    active = (
        (now_s - np.asarray(created_s, dtype=np.float64) < RECENT_DAYS * _DAY)
        & (np.asarray(access_count) > ACTIVE_ACCESSES)
        & (now_s - np.asarray(accessed_s, dtype=np.float64) < ACTIVE_DAYS * _DAY)
    )
    tiers[is_["context"] | active] = WORKING
    tiers[is_["procedure"]] = PROCEDURAL
    return tiers


def tier_names(indexes: np.ndarray) -> list[str]:
    return [TIERS[i] for i in np.asarray(indexes).tolist()]

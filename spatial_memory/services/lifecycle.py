"""Memory lifecycle: decay and reinforce (extraction.py and consolidation.py do the other two).

Every write here is a single LanceDB commit (`upsert`, `add` or `replace`), taken while
holding the store's write lock across the read-modify-write, so a crash or an error
leaves either the old state or the new one, never a mix, and no in-process write
(e.g. batched recall access counts) is lost between the read and the write.

decay
    days = now - max(last_accessed, created_at) (0 for a memory used or created just
    now: factor exactly 1). The curve (`algorithms.decay.decay_factor`) uses an
    effective half-life h' = half_life_days * (1 + access_weight * ln(1 + access_count)):
    exponential 0.5^(days/h'), linear max(0, 1 - days/(2h')), step 0.5^floor(days/h');
    fsrs is FSRS's retrievability (1 + 19/81 days/S)^-0.5 with a stability S that puts an unused
    memory at 0.5 after half_life_days and grows (x 1 + 2 access_weight) with each recall.
    new = max(min_importance, base * factor), never above the current importance; a
    memory already below the floor is left alone, and a drop smaller than 0.001 (a
    memory stored seconds ago) is neither applied nor counted. `base` is the importance the memory
    had when it was last accessed: the first decay records it in
    `metadata.decay_state`, so running decay every day follows the curve instead of
    compounding it (applying it twice at the same moment changes nothing). Any access,
    reinforcement or other change of importance starts a fresh curve.
reinforce
    additive / multiplicative / set_value, clamped to 0-1; optional access bump.
extract
    `extraction.extract_candidates`, one embedding batch, duplicates (against the
    namespace and against earlier candidates) skipped, one commit.
consolidate
    groups from `algorithms.grouping.near_duplicate_groups` (complete linkage, never
    chained) inside classes of equal `consolidation.detail_signature`, split where two
    members use opposite words (look-alikes that differ in a number, day, unit,
    negation, enabled/disabled... never merge). All groups of a call are
    written in ONE commit: `store.replace` = merge-insert of the kept/merged rows with
    delete-by-source of the others, so the originals can never disappear without the
    memory that replaces them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from datetime import datetime
from typing import Any, TypeGuard, cast

import numpy as np

from .. import validation as check
from ..algorithms.decay import DecayFunction, apply_decay, decay_factor
from ..errors import (
    DecayError,
    StorageError,
    ValidationError,
    with_context,
)
from ..records import MemoryRecord, as_utc, iso
from ..storage.filters import build_filter
from ..transport.progress import report_progress
from .base import Service
from .results import (
    DecayedMemory,
    DecayResult,
    ReinforcedMemory,
    ReinforceResult,
    content_preview,
)

DECAY_FUNCTIONS = ("exponential", "linear", "step", "fsrs")
BOOST_TYPES = ("additive", "multiplicative", "set_value")
STRATEGIES = ("keep_newest", "keep_oldest", "keep_highest_importance", "merge_content")
DECAY_STATE_KEY = "decay_state"
CONSOLIDATED_FROM_KEY = "consolidated_from"
EXTRACTION_KEY = "extraction"
MAX_DECAY_DETAILS = 100
MIN_DECAY_CHANGE = 0.001


def _f32(value: float) -> float:
    """The value as the store keeps it (importance is a float32 column)."""
    return float(np.float32(value))


def _r6(value: float) -> float:
    return round(float(value), 6)


def decay_base(record: MemoryRecord, reference: datetime) -> float:
    """Importance at the start of the current curve (see the module doc)."""
    state = record.metadata.get(DECAY_STATE_KEY)
    if not isinstance(state, dict):
        return record.importance
    base, since, value = state.get("base_importance"), state.get("since"), state.get("importance")
    if not _is_number(base) or not _is_number(value):
        return record.importance
    if since != iso(reference) or abs(value - record.importance) > 1e-6:
        return record.importance  # accessed, reinforced or edited since: a fresh curve
    return min(1.0, max(record.importance, float(base)))


def _is_number(x: object) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass
class _DecayCurve:
    """Where each memory stands on its decay curve now (see the module doc)."""

    records: list[MemoryRecord]
    references: list[datetime]  # the start of each curve: the last access, else the creation
    days: np.ndarray  # since the reference
    current: np.ndarray  # importance now
    base: np.ndarray  # importance at the reference
    factor: np.ndarray
    new: np.ndarray  # importance after decay
    min_importance: float

    @classmethod
    def of(
        cls, records, now, function: DecayFunction, half_life_days: float, min_importance: float, access_weight: float
    ):
        references = [max(r.last_accessed, r.created_at) for r in records]
        days = np.array([max(0.0, (now - ref).total_seconds() / 86_400) for ref in references])
        current = np.array([r.importance for r in records], dtype=np.float64)
        base = np.array([decay_base(r, ref) for r, ref in zip(records, references, strict=True)])
        counts = np.array([r.access_count for r in records], dtype=np.float64)
        try:
            factor = decay_factor(
                days, function=function, half_life_days=half_life_days, access_count=counts, access_weight=access_weight
            )
            new = np.minimum(apply_decay(base, factor, min_importance), current)
        except ValueError as exc:
            raise DecayError(f"Decay calculation failed: {exc}") from exc
        return cls(records, references, days, current, base, factor, new, min_importance)

    def changed_rows(self) -> list[int]:
        """The memories whose importance drops. Sub-thousandth changes (a memory stored seconds ago)
        are noise: not applied, not counted; since decay follows the curve from the last access, they
        are applied once they add up."""
        dropped = self.new.astype(np.float32) < self.current.astype(np.float32)  # as stored (float32)
        return np.flatnonzero(
            dropped & ((self.current - self.new >= MIN_DECAY_CHANGE) | (self.new <= self.min_importance))
        ).tolist()

    def detail(self, i: int) -> DecayedMemory:
        record = self.records[i]
        return DecayedMemory(
            id=record.id,
            content_preview=content_preview(record.content),
            old_importance=_r6(self.current[i]),
            new_importance=_r6(_f32(self.new[i])),
            decay_factor=_r6(self.factor[i]),
            days_since_access=round(float(self.days[i]), 4),
            access_count=record.access_count,
        )

    def decayed(self, i: int) -> MemoryRecord:
        """The memory at its new importance, with the curve it is on (so the next decay follows it)."""
        record = self.records[i]
        metadata = dict(record.metadata)
        metadata[DECAY_STATE_KEY] = {
            "base_importance": float(self.base[i]),
            "since": iso(self.references[i]),
            "importance": _f32(self.new[i]),
        }
        return dc_replace(record, importance=_f32(self.new[i]), metadata=metadata)


class LifecycleService(Service):
    # ---- decay -------------------------------------------------------------------------

    def decay(
        self,
        *,
        namespace: str | None = None,
        decay_function: str = "exponential",
        half_life_days: float = 30.0,
        min_importance: float = 0.1,
        access_weight: float = 0.3,
        dry_run: bool = True,
        now: datetime | None = None,
    ) -> DecayResult:
        check.one_of("decay_function", decay_function, DECAY_FUNCTIONS)
        function = cast(DecayFunction, decay_function)  # one of DECAY_FUNCTIONS, just checked
        half_life_days = check.number_in("half_life_days", half_life_days, 1, 365)
        min_importance = check.number_in("min_importance", min_importance, 0.0, 0.5)
        access_weight = check.number_in("access_weight", access_weight, 0.0, 1.0)
        now = as_utc(now or self._resources.clock())
        store = self._resources.store()
        if namespace is not None:
            self.require_namespace(store, namespace)
        if not dry_run:
            self._resources.upkeep.flush()
        updates: list[MemoryRecord] = []
        with nullcontext() if dry_run else store.exclusive():
            # Pinned memories (a profile, standing instructions) keep their importance.
            records = [
                r for r in store.scan(build_filter(namespace=namespace), with_vectors=not dry_run) if not r.pinned
            ]
            report_progress(1, 3, "memories read", source="steps")  # read, decayed, written
            if not records:
                return DecayResult(
                    memories_analyzed=0, memories_decayed=0, avg_decay_factor=1.0, decayed_memories=[], dry_run=dry_run
                )
            curve = _DecayCurve.of(records, now, function, half_life_days, min_importance, access_weight)
            changed = curve.changed_rows()
            report_progress(2, 3, "decay computed", source="steps")
            if not dry_run:
                updates = [curve.decayed(i) for i in changed]
            if updates:
                try:
                    store.upsert(updates)
                except StorageError as exc:
                    raise with_context(exc, "Applying decay failed and nothing was changed") from exc
        if updates:
            self._resources.upkeep.poke()
        details = sorted(
            (curve.detail(i) for i in changed), key=lambda d: (-(d.old_importance - d.new_importance), d.id)
        )
        return DecayResult(
            memories_analyzed=len(records),
            memories_decayed=len(details),
            avg_decay_factor=round(float(np.mean(curve.factor[changed])), 6) if details else 1.0,
            decayed_memories=details[:MAX_DECAY_DETAILS],
            dry_run=dry_run,
            details_truncated=len(details) > MAX_DECAY_DETAILS,
        )

    # ---- reinforce ---------------------------------------------------------------------

    def reinforce(
        self,
        memory_ids: Sequence[str],
        *,
        boost_type: str = "additive",
        boost_amount: float = 0.1,
        update_access: bool = True,
        now: datetime | None = None,
    ) -> ReinforceResult:
        check.one_of("boost_type", boost_type, BOOST_TYPES)
        boost_amount = check.number_in("boost_amount", boost_amount, 0.0, 1.0)
        if isinstance(memory_ids, str) or not memory_ids:
            raise ValidationError("memory_ids must be a non-empty list of memory ids")
        if len(memory_ids) > self._settings.max_batch_size:
            raise ValidationError(
                f"{len(memory_ids)} ids in one call; the maximum is {self._settings.max_batch_size}. Split the list."
            )
        ids = list(dict.fromkeys(str(i) for i in memory_ids))
        now = as_utc(now or self._resources.clock())
        store = self._resources.store()
        self._resources.upkeep.flush()
        with store.exclusive():
            found = store.get_many(ids, with_vectors=True)
            by_id = {r.id: r for r in found}
            reinforced: list[ReinforcedMemory] = []
            updates: list[MemoryRecord] = []
            for memory_id in ids:
                record = by_id.get(memory_id)
                if record is None:
                    continue
                old = record.importance
                if boost_type == "additive":
                    target = old + boost_amount
                elif boost_type == "multiplicative":
                    target = old * (1.0 + boost_amount)
                else:
                    target = boost_amount
                new = _f32(min(1.0, max(0.0, target)))
                metadata = {k: v for k, v in record.metadata.items() if k != DECAY_STATE_KEY}
                changes: dict[str, Any] = {"importance": new, "metadata": metadata, "updated_at": now}
                if update_access:
                    changes.update(last_accessed=now, access_count=record.access_count + 1)
                updates.append(dc_replace(record, **changes))
                reinforced.append(
                    ReinforcedMemory(
                        id=record.id,
                        content_preview=content_preview(record.content),
                        old_importance=_r6(old),
                        new_importance=_r6(new),
                        boost_applied=_r6(new - old),
                    )
                )
            if updates:
                try:
                    store.upsert(updates)
                except StorageError as exc:
                    raise with_context(exc, "Reinforcement failed and nothing was changed") from exc
        if updates:
            self._resources.upkeep.poke()
        return ReinforceResult(
            memories_reinforced=len(reinforced),
            avg_boost=_r6(float(np.mean([r.boost_applied for r in reinforced]))) if reinforced else 0.0,
            reinforced=reinforced,
            not_found=[i for i in ids if i not in by_id],
        )

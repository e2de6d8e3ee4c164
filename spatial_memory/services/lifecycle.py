"""Memory lifecycle: decay, reinforce, extract and consolidate.

Every write here is a single LanceDB commit (`upsert`, `add` or `replace`), taken while
holding the store's write lock across the read-modify-write, so a crash or an error
leaves either the old state or the new one, never a mix, and no in-process write
(e.g. batched recall access counts) is lost between the read and the write.

decay
    days = now - max(last_accessed, created_at) (0 for a memory used or created just
    now: factor exactly 1). The curve (`algorithms.decay.decay_factor`) uses an
    effective half-life h' = half_life_days * (1 + access_weight * ln(1 + access_count)):
    exponential 0.5^(days/h'), linear max(0, 1 - days/(2h')), step 0.5^floor(days/h').
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

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace as dc_replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .. import validation as check
from ..errors import (
    ConsolidationError,
    DecayError,
    ExtractionError,
    NamespaceNotFoundError,
    ReinforcementError,
    StorageError,
    ValidationError,
)
from ..limits import DUPLICATE_SIMILARITY
from ..runtime.resources import Resources
from ..storage.filters import build_filter
from ..storage.records import MemoryRecord, iso, utc_now
from .results import (
    ConsolidateResult,
    ConsolidationGroup,
    DecayedMemory,
    DecayResult,
    Extraction,
    ExtractResult,
    ReinforcedMemory,
    ReinforceResult,
)

DECAY_FUNCTIONS = ("exponential", "linear", "step")
BOOST_TYPES = ("additive", "multiplicative", "set_value")
STRATEGIES = ("keep_newest", "keep_oldest", "keep_highest_importance", "merge_content")
DECAY_STATE_KEY = "decay_state"
CONSOLIDATED_FROM_KEY = "consolidated_from"
EXTRACTION_KEY = "extraction"
MAX_DECAY_DETAILS = 100
MIN_DECAY_CHANGE = 0.001
PREVIEW_CHARS = 100
# up to this many memories in a namespace, extract's duplicate check reads all vectors
# once and compares in numpy; above it, one vector search per candidate
_DEDUP_SCAN_LIMIT = 20_000


def preview(content: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "..."


def _number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a number from {low:g} to {high:g}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low:g} and {high:g}, got {value:g}")
    return float(value)


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}; got {str(value)[:40]!r}")
    return value


def _utc(moment: datetime | None) -> datetime:
    moment = moment or utc_now()
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def _f32(value: float) -> float:
    """The value as the store keeps it (importance is a float32 column)."""
    return float(np.float32(value))


def _r6(value: float) -> float:
    return round(float(value), 6)


class LifecycleService:
    def __init__(self, resources: Resources) -> None:
        self._r = resources

    @property
    def _settings(self):
        return self._r.settings

    def _require_namespace(self, store, namespace: str) -> None:
        check.namespace(namespace, self._settings)
        if store.count(build_filter(namespace=namespace)) == 0:
            raise NamespaceNotFoundError(
                f"Namespace not found: '{namespace}'. Use namespaces to list the existing ones."
            )

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
        from ..algorithms.decay import apply_decay, decay_factor

        _choice("decay_function", decay_function, DECAY_FUNCTIONS)
        half_life_days = _number("half_life_days", half_life_days, 1, 365)
        min_importance = _number("min_importance", min_importance, 0.0, 0.5)
        access_weight = _number("access_weight", access_weight, 0.0, 1.0)
        now = _utc(now)
        store = self._r.store()
        if namespace is not None:
            self._require_namespace(store, namespace)
        if not dry_run:
            self._r.upkeep.flush()
        with nullcontext() if dry_run else store.exclusive():
            records = store.scan(build_filter(namespace=namespace), with_vectors=not dry_run)
            if not records:
                return DecayResult(
                    memories_analyzed=0, memories_decayed=0, avg_decay_factor=1.0, decayed_memories=[], dry_run=dry_run
                )
            references = [max(r.last_accessed, r.created_at) for r in records]
            days = np.array([max(0.0, (now - ref).total_seconds() / 86_400) for ref in references])
            current = np.array([r.importance for r in records], dtype=np.float64)
            base = np.array([self._decay_base(r, ref) for r, ref in zip(records, references, strict=True)])
            counts = np.array([r.access_count for r in records], dtype=np.float64)
            try:
                factor = decay_factor(
                    days,
                    function=decay_function,
                    half_life_days=half_life_days,
                    access_count=counts,
                    access_weight=access_weight,
                )
                new = np.minimum(apply_decay(base, factor, min_importance), current)
            except ValueError as exc:
                raise DecayError(f"Decay calculation failed: {exc}") from exc
            # sub-thousandth changes (a memory stored seconds ago) are noise: not applied, not counted;
            # since decay follows the curve from the last access, they are applied once they add up
            dropped = new.astype(np.float32) < current.astype(np.float32)  # as stored (float32)
            changed = dropped & ((current - new >= MIN_DECAY_CHANGE) | (new <= min_importance))

            details: list[DecayedMemory] = []
            updates: list[MemoryRecord] = []
            for i in np.flatnonzero(changed).tolist():
                record = records[i]
                details.append(
                    DecayedMemory(
                        id=record.id,
                        content_preview=preview(record.content),
                        old_importance=_r6(current[i]),
                        new_importance=_r6(_f32(new[i])),
                        decay_factor=_r6(factor[i]),
                        days_since_access=round(float(days[i]), 4),
                        access_count=record.access_count,
                    )
                )
                if not dry_run:
                    metadata = dict(record.metadata)
                    metadata[DECAY_STATE_KEY] = {
                        "base_importance": float(base[i]),
                        "since": iso(references[i]),
                        "importance": _f32(new[i]),
                    }
                    updates.append(dc_replace(record, importance=_f32(new[i]), metadata=metadata))
            if updates:
                try:
                    store.upsert(updates)
                except StorageError as exc:
                    raise DecayError(f"Applying decay failed and nothing was changed: {exc.message[:300]}") from exc
        if updates:
            self._r.upkeep.poke()
        decayed = len(details)
        avg = float(np.mean(factor[changed])) if decayed else 1.0
        details.sort(key=lambda d: (-(d.old_importance - d.new_importance), d.id))
        return DecayResult(
            memories_analyzed=len(records),
            memories_decayed=decayed,
            avg_decay_factor=round(avg, 6),
            decayed_memories=details[:MAX_DECAY_DETAILS],
            dry_run=dry_run,
            details_truncated=decayed > MAX_DECAY_DETAILS,
        )

    @staticmethod
    def _decay_base(record: MemoryRecord, reference: datetime) -> float:
        """Importance at the start of the current curve (see the module doc)."""
        state = record.metadata.get(DECAY_STATE_KEY)
        if not isinstance(state, dict):
            return record.importance
        base, since, value = state.get("base_importance"), state.get("since"), state.get("importance")
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (base, value))
        if not numbers or since != iso(reference) or abs(value - record.importance) > 1e-6:
            return record.importance  # accessed, reinforced or edited since: a fresh curve
        return min(1.0, max(record.importance, float(base)))

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
        _choice("boost_type", boost_type, BOOST_TYPES)
        boost_amount = _number("boost_amount", boost_amount, 0.0, 1.0)
        if isinstance(memory_ids, str) or not memory_ids:
            raise ValidationError("memory_ids must be a non-empty list of memory ids")
        if len(memory_ids) > self._settings.max_batch_size:
            raise ValidationError(
                f"{len(memory_ids)} ids in one call; the maximum is {self._settings.max_batch_size}. Split the list."
            )
        ids = list(dict.fromkeys(str(i) for i in memory_ids))
        now = _utc(now)
        store = self._r.store()
        self._r.upkeep.flush()
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
                        content_preview=preview(record.content),
                        old_importance=_r6(old),
                        new_importance=_r6(new),
                        boost_applied=_r6(new - old),
                    )
                )
            if updates:
                try:
                    store.upsert(updates)
                except StorageError as exc:
                    raise ReinforcementError(
                        f"Reinforcement failed and nothing was changed: {exc.message[:300]}"
                    ) from exc
        if updates:
            self._r.upkeep.poke()
        return ReinforceResult(
            memories_reinforced=len(reinforced),
            avg_boost=_r6(np.mean([r.boost_applied for r in reinforced])) if reinforced else 0.0,
            reinforced=reinforced,
            not_found=[i for i in ids if i not in by_id],
        )

    # ---- extract -----------------------------------------------------------------------

    def extract(
        self,
        text: str,
        *,
        namespace: str = "extracted",
        min_confidence: float = 0.5,
        deduplicate: bool = True,
        dedup_threshold: float = 0.9,
    ) -> ExtractResult:
        from ..storage.records import NewMemory
        from ..text.extraction import extract_candidates
        from .memory import MemoryService

        check.content(text, self._settings, field="text")
        check.namespace(namespace, self._settings)
        min_confidence = _number("min_confidence", min_confidence, 0.0, 1.0)
        dedup_threshold = _number("dedup_threshold", dedup_threshold, *DUPLICATE_SIMILARITY)
        try:
            candidates = extract_candidates(text, min_confidence=min_confidence)
        except Exception as exc:  # noqa: BLE001 - a bug in a heuristic must not look like bad input
            raise ExtractionError(f"Extraction failed on this text: {type(exc).__name__}") from exc
        if not candidates:
            return ExtractResult(candidates_found=0, memories_created=0, deduplicated_count=0, extractions=[])

        vectors = np.asarray(self._r.embedder.embed_documents([c.content for c in candidates]), dtype=np.float32)
        store = self._r.store()
        closest = self._closest_existing(store, namespace, vectors) if deduplicate else []

        accepted: list[int] = []
        duplicate_of: dict[int, Any] = {}  # candidate -> existing id, or ("candidate", index)
        for i in range(len(candidates)):
            if deduplicate:
                existing_id, similarity = closest[i]
                if existing_id is not None and similarity >= dedup_threshold:
                    duplicate_of[i] = existing_id
                    continue
                if accepted:
                    sims = vectors[accepted] @ vectors[i]
                    j = int(np.argmax(sims))
                    if sims[j] >= dedup_threshold:
                        duplicate_of[i] = ("candidate", accepted[j])
                        continue
            accepted.append(i)

        items = [
            NewMemory(
                content=candidates[i].content,
                namespace=namespace,
                tags=[candidates[i].pattern_matched],
                importance=min(1.0, max(0.0, round(candidates[i].confidence, 3))),
                metadata={
                    EXTRACTION_KEY: {
                        "pattern": candidates[i].pattern_matched,
                        "confidence": candidates[i].confidence,
                        "start_pos": candidates[i].start_pos,
                        "end_pos": candidates[i].end_pos,
                    }
                },
            )
            for i in accepted
        ]
        memory = MemoryService(self._r)
        records = memory.build_records(items, source="extracted", vectors=vectors[accepted]) if items else []
        if records:
            try:
                memory.store_records(records)
            except StorageError as exc:
                raise ExtractionError(
                    f"Storing the extracted memories failed; nothing was stored: {exc.message[:300]}"
                ) from exc
        new_ids = {i: r.id for i, r in zip(accepted, records, strict=True)}

        extractions = []
        for i, c in enumerate(candidates):
            dup = duplicate_of.get(i)
            if isinstance(dup, tuple):
                dup = new_ids[dup[1]]
            extractions.append(
                Extraction(
                    content=c.content,
                    confidence=c.confidence,
                    pattern_matched=c.pattern_matched,
                    start_pos=c.start_pos,
                    end_pos=c.end_pos,
                    stored=i in new_ids,
                    memory_id=new_ids.get(i),
                    duplicate_of=dup,
                )
            )
        return ExtractResult(
            candidates_found=len(candidates),
            memories_created=len(records),
            deduplicated_count=len(duplicate_of),
            extractions=extractions,
        )

    @staticmethod
    def _closest_existing(store, namespace: str, vectors: np.ndarray) -> list[tuple[str | None, float]]:
        """For each candidate vector: (id, cosine similarity) of the closest memory in the namespace."""
        flt = build_filter(namespace=namespace)
        total = store.count(flt)
        if total == 0:
            return [(None, -1.0)] * len(vectors)
        if total <= _DEDUP_SCAN_LIMIT:
            from ..storage.store import vectors_of

            table = store.scan_arrow(["id", "vector"], flt)
            ids = table.column("id").to_pylist()
            if not ids:
                return [(None, -1.0)] * len(vectors)
            sims = vectors @ vectors_of(table).T
            best = np.argmax(sims, axis=1)
            return [(ids[j], float(sims[k, j])) for k, j in enumerate(best.tolist())]
        closest: list[tuple[str | None, float]] = []
        for vector in vectors:
            hits = store.search(vector, 1, flt)
            closest.append((hits[0].record.id, hits[0].similarity) if hits else (None, -1.0))
        return closest

    # ---- consolidate -------------------------------------------------------------------

    def consolidate(
        self,
        namespace: str,
        *,
        similarity_threshold: float = 0.85,
        strategy: str = "keep_highest_importance",
        dry_run: bool = True,
        max_groups: int = 50,
        now: datetime | None = None,
    ) -> ConsolidateResult:
        from ..algorithms.grouping import mean_pairwise_similarity

        if not isinstance(namespace, str) or not namespace:
            raise ValidationError("namespace is required: consolidation works inside one namespace")
        similarity_threshold = _number("similarity_threshold", similarity_threshold, *DUPLICATE_SIMILARITY)
        _choice("strategy", strategy, STRATEGIES)
        if isinstance(max_groups, bool) or not isinstance(max_groups, int) or not 1 <= max_groups <= 100:
            raise ValidationError("max_groups must be an integer from 1 to 100")
        now = _utc(now)
        store = self._r.store()
        self._require_namespace(store, namespace)
        if not dry_run:
            self._r.upkeep.flush()

        with nullcontext() if dry_run else store.exclusive():
            records = store.scan(build_filter(namespace=namespace), with_vectors=True)
            if not records:
                raise NamespaceNotFoundError(f"Namespace not found: '{namespace}'. Use namespaces to list them.")
            records.sort(key=lambda r: (r.created_at, r.id))
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
            all_groups = self._duplicate_groups(records, vectors, similarity_threshold)
            groups = all_groups[:max_groups]

            plans = []
            for group in groups:
                members = [records[i] for i in group]
                rep = self._representative(members, strategy)
                others = sorted((m for m in members if m.id != rep.id), key=lambda m: (m.created_at, m.id))
                kept, reason = self._kept_record(rep, others, strategy, now)
                plans.append((rep, others, kept, reason, mean_pairwise_similarity(vectors[group])))

            if not dry_run:
                to_embed = [p[2] for p in plans if p[2] is not None and p[2].vector is None]
                if to_embed:
                    fresh = self._r.embedder.embed_documents([k.content for k in to_embed])
                    for record, vector in zip(to_embed, fresh, strict=True):
                        record.vector = np.asarray(vector, dtype=np.float32)
                new_records = [p[2] for p in plans if p[2] is not None]
                delete_ids = [o.id for p in plans if p[2] is not None for o in p[1]]
                if new_records:
                    try:
                        store.replace(new_records, delete_ids)
                    except StorageError as exc:
                        raise ConsolidationError(
                            "Consolidation failed and nothing was changed (the merge and the deletions are one "
                            f"commit): {exc.message[:300]}"
                        ) from exc
        if not dry_run and any(p[2] is not None for p in plans):
            self._r.upkeep.poke()

        action = "preview" if dry_run else ("merged" if strategy == "merge_content" else "deleted")
        out = [
            ConsolidationGroup(
                representative_id=rep.id,
                member_ids=[rep.id, *(o.id for o in others)],
                avg_similarity=round(similarity, 6),
                action_taken=action if kept is not None else "skipped",
                reason=reason,
            )
            for rep, others, kept, reason, similarity in plans
        ]
        done = [p for p in plans if p[2] is not None]
        return ConsolidateResult(
            groups_found=len(all_groups),
            memories_merged=len(done),
            memories_deleted=sum(len(p[1]) for p in done),
            groups=out,
            dry_run=dry_run,
        )

    @staticmethod
    def _duplicate_groups(records: list[MemoryRecord], vectors: np.ndarray, threshold: float) -> list[list[int]]:
        """Near-duplicate groups (complete linkage) among memories with equal detail signatures,
        split where two members use opposite words (see spatial_memory.text.details)."""
        from ..algorithms.grouping import near_duplicate_groups
        from ..text.details import detail_signature, opposed, polarity

        classes: dict[tuple, list[int]] = defaultdict(list)
        for i, record in enumerate(records):
            classes[detail_signature(record.content)].append(i)
        groups: list[list[int]] = []
        for members in classes.values():
            if len(members) < 2:
                continue
            for group in near_duplicate_groups(vectors[members], threshold):
                polar = {members[k]: polarity(records[members[k]].content) for k in group}
                parts: list[list[int]] = []
                for index in sorted(polar):
                    home = next((p for p in parts if not any(opposed(polar[index], polar[j]) for j in p)), None)
                    if home is None:
                        parts.append([index])
                    else:
                        home.append(index)
                groups.extend(p for p in parts if len(p) >= 2)
        groups.sort(key=lambda g: (-len(g), g[0]))
        return groups

    @staticmethod
    def _representative(members: list[MemoryRecord], strategy: str) -> MemoryRecord:
        if strategy == "keep_newest":
            return max(members, key=lambda m: (m.created_at, m.importance, m.id))
        if strategy == "keep_oldest":
            return min(members, key=lambda m: (m.created_at, -m.importance, m.id))
        # keep_highest_importance and merge_content: the most important, then most used, then newest
        return max(members, key=lambda m: (m.importance, m.access_count, m.created_at, m.id))

    def _kept_record(
        self, rep: MemoryRecord, others: list[MemoryRecord], strategy: str, now: datetime
    ) -> tuple[MemoryRecord | None, str | None]:
        """The row that replaces the group (vector None = needs embedding), or (None, reason)."""
        s = self._settings
        members = [rep, *others]
        tags = list(dict.fromkeys(t for m in members for t in m.tags))
        lineage: list[str] = []
        for m in members:
            previous = m.metadata.get(CONSOLIDATED_FROM_KEY)
            if m is not rep:
                lineage.append(m.id)
            if isinstance(previous, list):
                lineage.extend(str(x) for x in previous)
        lineage = [i for i in dict.fromkeys(lineage) if i != rep.id]

        if strategy == "merge_content":
            from ..text.details import merge_texts

            content = merge_texts([m.content for m in members])
            metadata: dict[str, Any] = {}
            for m in members:
                for key, value in m.metadata.items():
                    metadata.setdefault(key, value)
            metadata.pop(DECAY_STATE_KEY, None)
            metadata[CONSOLIDATED_FROM_KEY] = lineage
            kept = dc_replace(
                rep,
                content=content,
                tags=tags,
                metadata=metadata,
                importance=max(m.importance for m in members),
                access_count=sum(m.access_count for m in members),
                created_at=min(m.created_at for m in members),
                last_accessed=max(m.last_accessed for m in members),
                updated_at=now,
                source="consolidated",
                vector=rep.vector if content == rep.content else None,
            )
        else:
            metadata = dict(rep.metadata)
            metadata[CONSOLIDATED_FROM_KEY] = lineage
            kept = dc_replace(rep, tags=tags, metadata=metadata, updated_at=now)

        if len(kept.content) > s.max_content_length:
            return None, (
                f"the merged content would be {len(kept.content):,} characters (maximum {s.max_content_length:,}); "
                "use a keep_* strategy or shorten these memories"
            )
        if len(kept.tags) > s.max_tags:
            return None, f"the union of tags would have {len(kept.tags)} tags (maximum {s.max_tags})"
        size = len(json.dumps(kept.metadata, ensure_ascii=False).encode())
        if size > s.max_metadata_bytes:
            return None, f"the merged metadata would be {size:,} bytes (maximum {s.max_metadata_bytes:,})"
        return kept, None

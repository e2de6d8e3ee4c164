"""consolidate: near-duplicate memories of a namespace merged, in one commit."""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from datetime import datetime
from typing import Any

import numpy as np

from .. import validation as check
from ..algorithms.grouping import mean_pairwise_similarity, near_duplicate_groups
from ..embeddings.decisions import among, as_decided
from ..errors import (
    NamespaceNotFoundError,
    StorageError,
    ValidationError,
    with_context,
)
from ..limits import DUPLICATE_SIMILARITY
from ..records import MemoryRecord, Provenance, as_utc
from ..storage.filters import build_filter
from ..transport.progress import report_progress
from .base import Service
from .distillation import distill
from .lifecycle import DECAY_STATE_KEY
from .results import (
    ConsolidateResult,
    ConsolidationGroup,
)

STRATEGIES = ("keep_newest", "keep_oldest", "keep_highest_importance", "merge_content", "distill")
CONSOLIDATED_FROM_KEY = "consolidated_from"


CONSOLIDATE_STEPS = 4  # read, grouped, merged (new texts embedded), committed


@dataclass
class _GroupPlan:
    """One group of near-duplicates: the member kept (or merged into), the others, and the row that
    replaces them (None: skipped, for `reason`)."""

    rep: MemoryRecord
    others: list[MemoryRecord]
    kept: MemoryRecord | None
    reason: str | None
    similarity: float

    def shown(self, action: str) -> ConsolidationGroup:
        return ConsolidationGroup(
            representative_id=self.rep.id,
            member_ids=[self.rep.id, *(o.id for o in self.others)],
            avg_similarity=round(self.similarity, 6),
            action_taken=action if self.kept is not None else "skipped",
            reason=self.reason,
        )


class ConsolidationService(Service):
    def consolidate(
        self,
        namespace: str,
        *,
        similarity_threshold: float = 0.85,
        strategy: str = "keep_highest_importance",
        dry_run: bool = True,
        max_groups: int = 50,
        now: datetime | None = None,
        provenance: Provenance | None = None,
    ) -> ConsolidateResult:
        if not isinstance(namespace, str) or not namespace:
            raise ValidationError("namespace is required: consolidation works inside one namespace")
        similarity_threshold = check.number_in("similarity_threshold", similarity_threshold, *DUPLICATE_SIMILARITY)
        check.one_of("strategy", strategy, STRATEGIES)
        if isinstance(max_groups, bool) or not isinstance(max_groups, int) or not 1 <= max_groups <= 100:
            raise ValidationError("max_groups must be an integer from 1 to 100")
        if strategy == "distill":  # its own measured rule for restatements, not similarity_threshold
            return distill(self._resources, namespace, dry_run=dry_run, max_groups=max_groups, provenance=provenance)
        now = as_utc(now or self._resources.clock())
        store = self._resources.store()
        self.require_namespace(store, namespace)
        if not dry_run:
            self._resources.upkeep.flush()
        with nullcontext() if dry_run else store.exclusive():
            records = store.scan(build_filter(namespace=namespace), with_vectors=True)
            if not records:
                raise NamespaceNotFoundError(f"Namespace not found: '{namespace}'. Use namespaces to list them.")
            records.sort(key=lambda r: (r.created_at, r.id))
            report_progress(1, CONSOLIDATE_STEPS, "memories read", source="steps")
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
            all_groups = self._duplicate_groups(records, vectors, similarity_threshold, self._resources.embedder)
            plans = [
                self._plan(records, vectors, group, strategy, now, similarity_threshold)
                for group in all_groups[:max_groups]
            ]
            report_progress(2, CONSOLIDATE_STEPS, f"{len(plans)} groups found", source="steps")
            done = [plan for plan in plans if plan.kept is not None]
            if not dry_run and done:
                report_progress(3, CONSOLIDATE_STEPS, "merging", source="steps")
                self._write(store, done, provenance or Provenance(via="consolidate"))
        if not dry_run and done:
            self._resources.upkeep.poke()
        action = "preview" if dry_run else ("merged" if strategy == "merge_content" else "deleted")
        return ConsolidateResult(
            groups_found=len(all_groups),
            memories_merged=len(done),
            memories_deleted=sum(len(plan.others) for plan in done),
            groups=[plan.shown(action) for plan in plans],
            dry_run=dry_run,
        )

    def _plan(
        self, records, vectors: np.ndarray, group: list[int], strategy: str, now: datetime, threshold: float
    ) -> _GroupPlan:
        members = [records[i] for i in group]
        described = as_decided(self._resources.embedder, vectors[group], [m.content for m in members], threshold)
        rep = self._representative(members, strategy)
        others = sorted((m for m in members if m.id != rep.id), key=lambda m: (m.created_at, m.id))
        kept, reason = self._kept_record(rep, others, strategy, now)
        return _GroupPlan(rep, others, kept, reason, mean_pairwise_similarity(described))

    def _write(self, store, done: list[_GroupPlan], origin: Provenance) -> None:
        """The kept rows (embedded when their content changed) in, the others closed: one commit."""
        kept = [(plan, plan.kept) for plan in done if plan.kept is not None]  # all of them: done was filtered
        to_embed = [k for _, k in kept if k.vector is None]
        if to_embed:
            fresh = self._resources.embedder.embed_documents([k.content for k in to_embed])
            for record, vector in zip(to_embed, fresh, strict=True):
                record.vector = np.asarray(vector, dtype=np.float32)
        new_records = [
            dc_replace(k, provenance=origin.but(derived_from=tuple(m.id for m in (plan.rep, *plan.others))))
            for plan, k in kept
        ]
        # The others are closed, not erased: their last state stays in their history,
        # linked to the memory that absorbed them (get_memories, as_of).
        absorbed = [o for plan in done for o in plan.others]
        successor_of = {o.id: k.id for plan, k in kept for o in plan.others}
        try:
            store.supersede(new_records, absorbed, successor_of, self._settings.max_versions)
        except StorageError as exc:
            raise with_context(
                exc, "Consolidation failed and nothing was changed (the merge and the deletions are one commit)"
            ) from exc

    @staticmethod
    def _duplicate_groups(
        records: list[MemoryRecord], vectors: np.ndarray, threshold: float, embedder: object
    ) -> list[list[int]]:
        """Near-duplicate groups (complete linkage) among memories with equal detail signatures,
        split where two members use opposite words (see spatial_memory.text.details); pairs near
        the threshold decided as the embedder's fp32 path would (embeddings/decisions.py)."""
        # Not at the top: text/details.py reads text/extraction.py, whose rule table is slow to
        # compile: paid by the first consolidate, not by every server's start.
        from ..text.details import detail_signature, split_opposed

        classes: dict[tuple, list[int]] = defaultdict(list)
        for i, record in enumerate(records):
            classes[detail_signature(record.content)].append(i)
        groups: list[list[int]] = []
        for members in classes.values():
            if len(members) < 2:
                continue
            band, reaches = among(embedder, threshold, [records[k].content for k in members])
            for group in near_duplicate_groups(vectors[members], threshold, band=band, reaches=reaches):
                parts = split_opposed([records[members[k]].content for k in group], 2)
                groups.extend([members[group[i]] for i in part] for part in parts)
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
            from ..text.details import merge_texts  # see _duplicate_groups: not at start-up

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

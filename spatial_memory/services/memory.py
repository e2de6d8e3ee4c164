"""Core memory operations: remember, recall, nearby, forget, and namespace upkeep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import validation as check
from ..errors import MemoryNotFoundError, NamespaceNotFoundError, NamespaceOperationError, ValidationError
from ..filters import build_filter
from ..records import MemoryRecord, ScoredMemory, new_id, utc_now
from ..results import (
    DeleteNamespaceResult,
    ForgetResult,
    IndexInfo,
    MemoryItem,
    MemoryRef,
    NamespaceItem,
    NamespacesResult,
    NearbyResult,
    RecallResult,
    RememberBatchResult,
    RememberResult,
    RenameNamespaceResult,
    StatsResult,
    timestamp,
)
from ..runtime import Resources


@dataclass
class NewMemory:
    content: str
    namespace: str = "default"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    metadata: dict[str, Any] = field(default_factory=dict)


def _directory_size(path) -> int:
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file():
                total += item.stat().st_size
        except OSError:
            continue
    return total


class MemoryService:
    def __init__(self, resources: Resources) -> None:
        self._r = resources

    @property
    def _settings(self):
        return self._r.settings

    # ---- building records --------------------------------------------------------------

    def _validated(self, item: NewMemory, *, field_prefix: str = "") -> NewMemory:
        s = self._settings
        try:
            return NewMemory(
                content=check.content(item.content, s),
                namespace=check.namespace(item.namespace, s),
                tags=check.tags(item.tags, s),
                importance=check.importance(item.importance),
                metadata=check.metadata(item.metadata, s),
            )
        except ValidationError as exc:
            raise ValidationError(f"{field_prefix}{exc.message}") from None

    def build_records(
        self, items: Sequence[NewMemory], *, source: str = "manual", vectors: np.ndarray | None = None
    ) -> list[MemoryRecord]:
        """Validate every item first, then embed them all: a bad item stores nothing."""
        many = len(items) > 1
        valid = [self._validated(it, field_prefix=f"memories[{i}]: " if many else "") for i, it in enumerate(items)]
        if vectors is None:
            vectors = self._r.embedder.embed_documents([v.content for v in valid])
        now = utc_now()
        return [
            MemoryRecord(
                id=new_id(),
                content=v.content,
                namespace=v.namespace,
                tags=v.tags,
                importance=v.importance,
                source=source,
                metadata=v.metadata,
                created_at=now,
                updated_at=now,
                last_accessed=now,
                access_count=0,
                vector=vec,
            )
            for v, vec in zip(valid, vectors)
        ]

    def store_records(self, records: list[MemoryRecord]) -> None:
        self._r.store().add(records)
        self._r.upkeep.poke()

    # ---- tools -------------------------------------------------------------------------

    def remember(self, item: NewMemory) -> RememberResult:
        (record,) = self.build_records([item])
        self.store_records([record])
        return RememberResult(
            id=record.id, content=record.content, namespace=record.namespace, created_at=timestamp(record.created_at)
        )

    def remember_batch(self, items: Sequence[NewMemory]) -> RememberBatchResult:
        if not items:
            raise ValidationError("Memory list is empty: pass at least one memory")
        if len(items) > self._settings.max_batch_size:
            raise ValidationError(
                f"{len(items)} memories in one batch; the maximum is {self._settings.max_batch_size}. Split the batch."
            )
        records = self.build_records(items)
        self.store_records(records)
        return RememberBatchResult(ids=[r.id for r in records], count=len(records))

    def search(
        self,
        query: str,
        *,
        limit: int,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> list[ScoredMemory]:
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        flt = build_filter(namespace=namespace, tags=tags, filters=filters)
        vector = self._r.embedder.embed_query(query)
        return self._r.store().search(vector, limit, flt, min_similarity=min_similarity)

    def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> RecallResult:
        hits = self.search(
            query, limit=limit, namespace=namespace, tags=tags, filters=filters, min_similarity=min_similarity
        )
        self._r.upkeep.record_access(h.record.id for h in hits)
        return RecallResult(memories=[MemoryItem.of(h) for h in hits], total=len(hits))

    def nearby(self, memory_id: str, *, limit: int = 5, namespace: str | None = None) -> NearbyResult:
        store = self._r.store()
        reference = store.get(memory_id, with_vector=True)
        if reference is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id}. Use recall to find memory ids.")
        hits = store.search(reference.vector, limit + 1, build_filter(namespace=namespace))
        neighbors = [h for h in hits if h.record.id != reference.id][:limit]
        return NearbyResult(reference=MemoryRef.of(reference), neighbors=[MemoryItem.of(h) for h in neighbors])

    def forget(
        self,
        memory_id: str | None = None,
        *,
        namespace: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> ForgetResult:
        if memory_id is None and namespace is None and not filters:
            raise ValidationError("Give memory_id, or namespace and/or filters, to say what to forget")
        store = self._r.store()
        if memory_id is not None:
            if namespace is not None or filters:
                flt = build_filter(ids=[memory_id], namespace=namespace, filters=filters)
                deleted = store.delete_where(flt)
            else:
                deleted = store.delete_ids([memory_id])
        else:
            deleted = store.delete_where(build_filter(namespace=namespace, filters=filters))
        self._r.upkeep.poke()
        return ForgetResult(deleted=len(deleted), ids=deleted)

    def forget_batch(self, memory_ids: Sequence[str]) -> ForgetResult:
        if not memory_ids:
            raise ValidationError("Memory ID list is empty")
        if len(memory_ids) > self._settings.max_batch_size:
            raise ValidationError(f"at most {self._settings.max_batch_size} ids per call")
        deleted = self._r.store().delete_ids(memory_ids)
        self._r.upkeep.poke()
        return ForgetResult(deleted=len(deleted), ids=deleted)

    def stats(self, *, namespace: str | None = None, include_index_details: bool = True) -> StatsResult:
        import pyarrow.compute as pc

        store = self._r.store()
        flt = build_filter(namespace=namespace)
        table = store.scan_arrow(["content", "created_at"], flt)
        total = table.num_rows
        by_namespace = {n.name: n.memory_count for n in store.namespaces()}
        if namespace is not None:
            by_namespace = {k: v for k, v in by_namespace.items() if k == namespace}
        raw = store.stats()
        indices = [IndexInfo(**i) for i in raw["indices"]]
        lengths = pc.utf8_length(table.column("content")) if total else None
        storage_bytes = _directory_size(self._settings.db_path)
        return StatsResult(
            total_memories=total,
            memories_by_namespace=by_namespace,
            storage_bytes=storage_bytes,
            storage_mb=round(storage_bytes / 1_048_576, 3),
            estimated_vector_bytes=total * store.dim * 4,
            has_vector_index=any(i.column == "vector" for i in indices),
            has_fts_index=any("FTS" in i.index_type.upper() or "INVERTED" in i.index_type.upper() for i in indices),
            indices=indices if include_index_details else [],
            num_fragments=raw["num_fragments"],
            needs_compaction=store.needs_compaction(),
            table_version=raw["version"],
            oldest_memory_date=timestamp(pc.min(table.column("created_at")).as_py()) if total else None,
            newest_memory_date=timestamp(pc.max(table.column("created_at")).as_py()) if total else None,
            avg_content_length=round(float(pc.mean(lengths).as_py()), 2) if total else 0.0,
            embedding_model=store.model_id,
            embedding_dimensions=store.dim,
            storage_path=str(self._settings.path),
        )

    def namespaces(self, *, include_stats: bool = True) -> NamespacesResult:
        infos = self._r.store().namespaces()
        items = [
            NamespaceItem(
                name=n.name,
                memory_count=n.memory_count,
                oldest_memory=timestamp(n.oldest),
                newest_memory=timestamp(n.newest),
            )
            if include_stats
            else NamespaceItem(name=n.name)
            for n in infos
        ]
        return NamespacesResult(
            namespaces=items, total_namespaces=len(infos), total_memories=sum(n.memory_count for n in infos)
        )

    def delete_namespace(self, namespace: str, *, confirm: bool = False, dry_run: bool = True) -> DeleteNamespaceResult:
        store = self._r.store()
        flt = build_filter(namespace=namespace)
        count = store.count(flt)
        if count == 0:
            raise NamespaceNotFoundError(f"Namespace not found: '{namespace}'. Use namespaces to list them.")
        if dry_run:
            return DeleteNamespaceResult(
                namespace=namespace,
                memories_deleted=count,
                success=True,
                message=f"Would delete {count} memories from namespace '{namespace}'",
                dry_run=True,
            )
        if not confirm:
            raise ValidationError("confirm=true is required when dry_run=false: deleting a namespace cannot be undone")
        deleted = store.delete_where(flt)
        self._r.upkeep.poke()
        return DeleteNamespaceResult(
            namespace=namespace,
            memories_deleted=len(deleted),
            success=True,
            message=f"Deleted {len(deleted)} memories from namespace '{namespace}'",
            dry_run=False,
        )

    def rename_namespace(self, old_namespace: str, new_namespace: str) -> RenameNamespaceResult:
        check.namespace(new_namespace, self._settings, field="new_namespace")
        if old_namespace == new_namespace:
            raise ValidationError("old_namespace and new_namespace are the same")
        store = self._r.store()
        count = store.count(build_filter(namespace=old_namespace))
        if count == 0:
            raise NamespaceNotFoundError(f"Namespace not found: '{old_namespace}'. Use namespaces to list them.")
        if store.count(build_filter(namespace=new_namespace)) > 0:
            raise NamespaceOperationError(
                f"Namespace '{new_namespace}' already exists; choose another name or merge deliberately"
            )
        # One update = one commit: every memory moves, or none does.
        renamed = store.update_where(build_filter(namespace=old_namespace), {"namespace": new_namespace})
        self._r.upkeep.poke()
        return RenameNamespaceResult(
            old_namespace=old_namespace,
            new_namespace=new_namespace,
            memories_renamed=renamed or count,
            success=True,
            message=f"Renamed {renamed or count} memories from '{old_namespace}' to '{new_namespace}'",
        )

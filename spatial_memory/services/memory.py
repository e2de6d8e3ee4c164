"""Storing, reading and forgetting memories: remember, remember_batch, forget, forget_batch, one memory, the newest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import validation as check
from ..errors import (
    MemoryNotFoundError,
    ValidationError,
)
from ..storage.filters import build_filter
from ..storage.records import MemoryRecord, NewMemory, new_id, utc_now
from .base import Service
from .results import (
    ForgetResult,
    MemoryDetail,
    RecentMemories,
    RememberBatchResult,
    RememberResult,
    timestamp,
)


class MemoryService(Service):
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
                conversation=check.conversation(item.conversation),
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
                conversation=v.conversation,
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

    def memory(self, memory_id: str) -> MemoryDetail:
        """One memory, whole (without its vector)."""
        record = self._r.store().get(memory_id)
        if record is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id[:64]}. Use recall to find memory ids.")
        return MemoryDetail.of(record)

    def recent(self, namespace: str, *, limit: int = 20) -> RecentMemories:
        """The newest memories of a namespace, newest first."""
        import pyarrow.compute as pc

        namespace = check.namespace(namespace, self._settings)
        store = self._r.store()
        table = store.scan_arrow(["id", "created_at"], build_filter(namespace=namespace))
        if table.num_rows == 0:
            return RecentMemories(namespace=namespace, memories=[], total_in_namespace=0)
        order = pc.sort_indices(table, sort_keys=[("created_at", "descending")])[:limit]
        ids = table.column("id").take(order).to_pylist()
        records = store.get_many(ids)
        return RecentMemories(
            namespace=namespace, memories=[MemoryDetail.of(r) for r in records], total_in_namespace=table.num_rows
        )

"""Store statistics and namespaces: stats, namespaces, delete_namespace, rename_namespace."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import validation as check
from ..errors import (
    NamespaceNotFoundError,
    NamespaceOperationError,
    ValidationError,
)
from ..storage.filters import build_filter
from .base import Service
from .results import (
    DeleteNamespaceResult,
    IndexInfo,
    NamespaceItem,
    NamespacesResult,
    RenameNamespaceResult,
    StatsResult,
    timestamp,
)
from .tiers import TIER_COLUMNS, tier_counts

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store


def _directory_size(path) -> int:
    """Bytes under path; files another process removes mid-walk are skipped, not fatal."""
    total = 0
    for root, _dirs, files in os.walk(path, onerror=lambda _exc: None):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _condition(store: Store) -> dict:
    """Whether the store can be written, and why not: read-only storage, or a damaged newest
    version that it is served around (storage/repair/recovery.py)."""
    damage = store.damage
    if damage is not None:
        newest = max(damage.damaged_versions)
        reason = (
            f"its newest version ({newest}) is damaged; it serves version {damage.opened_version}. "
            "Run `spatial-memory doctor --repair`"
        )
        return {"read_only": True, "read_only_reason": reason, "damaged_versions": damage.damaged_versions}
    return {"read_only": store.read_only, "read_only_reason": store.read_only_reason}


class NamespaceService(Service):
    def stats(self, *, namespace: str | None = None, include_index_details: bool = True) -> StatsResult:
        # Not at the top: pyarrow.compute loads with the heavy imports before the first tool call
        # (runtime/imports.py), not while the App is built at start-up.
        import pyarrow.compute as pc

        store = self._resources.store()
        flt = build_filter(namespace=namespace)
        table = store.scan_arrow(list(dict.fromkeys(["content", "created_at", *TIER_COLUMNS])), flt)
        total = table.num_rows
        by_namespace = {n.name: n.memory_count for n in store.namespaces()}
        if namespace is not None:
            by_namespace = {k: v for k, v in by_namespace.items() if k == namespace}
        raw = store.stats()
        indices = [IndexInfo(**i) for i in raw["indices"]]
        lengths = pc.call_function("utf8_length", [table.column("content")]) if total else None
        # A store on object storage: the bytes of its current version (older ones await cleanup).
        remote = self._settings.remote_store is not None
        storage_bytes = int(raw["total_bytes"]) if remote else _directory_size(self._settings.db_path)
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
            oldest_memory_date=timestamp(pc.call_function("min", [table.column("created_at")]).as_py())
            if total
            else None,
            newest_memory_date=timestamp(pc.call_function("max", [table.column("created_at")]).as_py())
            if total
            else None,
            avg_content_length=round(float(pc.call_function("mean", [lengths]).as_py()), 2) if total else 0.0,
            embedding_model=store.model_id,
            embedding_dimensions=store.dim,
            storage_path=str(self._settings.path),
            memories_by_tier=tier_counts(table, self._resources.clock()),
            **_condition(store),
        )

    def namespaces(self, *, include_stats: bool = True) -> NamespacesResult:
        infos = self._resources.store().namespaces()
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
        store = self._resources.store()
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
        self._resources.upkeep.poke()
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
        store = self._resources.store()
        # Checks and update under the store lock: no other process adds to either name in between.
        with store.exclusive():
            count = store.count(build_filter(namespace=old_namespace))
            if count == 0:
                raise NamespaceNotFoundError(f"Namespace not found: '{old_namespace}'. Use namespaces to list them.")
            if store.count(build_filter(namespace=new_namespace)) > 0:
                raise NamespaceOperationError(
                    f"Namespace '{new_namespace}' already exists; choose another name or merge deliberately"
                )
            # One update = one commit: every memory moves, or none does.
            renamed = store.update_where(build_filter(namespace=old_namespace), {"namespace": new_namespace})
        self._resources.upkeep.poke()
        return RenameNamespaceResult(
            old_namespace=old_namespace,
            new_namespace=new_namespace,
            memories_renamed=renamed or count,
            success=True,
            message=f"Renamed {renamed or count} memories from '{old_namespace}' to '{new_namespace}'",
        )

"""Core memory operations: remember, recall, nearby, forget, and namespace upkeep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import validation as check
from ..errors import (
    MemoryImportError,
    MemoryNotFoundError,
    NamespaceNotFoundError,
    NamespaceOperationError,
    ValidationError,
)
from ..limits import DUPLICATE_SIMILARITY
from ..runtime.resources import Resources
from ..storage.filters import build_filter
from ..storage.records import MemoryRecord, NewMemory, ScoredMemory, new_id, utc_now
from .results import (
    DeleteNamespaceResult,
    ExportResult,
    ForgetResult,
    HybridMemoryItem,
    HybridRecallResult,
    ImportedMemoryPreview,
    ImportResult,
    ImportValidationError,
    IndexInfo,
    MemoryDetail,
    MemoryItem,
    MemoryRef,
    NamespaceItem,
    NamespacesResult,
    NearbyResult,
    RecallResult,
    RecentMemories,
    RememberBatchResult,
    RememberResult,
    RenameNamespaceResult,
    StatsResult,
    timestamp,
)


def _directory_size(path) -> int:
    """Bytes under path; files another process removes mid-walk are skipped, not fatal."""
    import os

    total = 0
    for root, _dirs, files in os.walk(path, onerror=lambda _exc: None):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
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
        hybrid_alpha: float | None = None,
    ) -> RecallResult:
        if hybrid_alpha is not None:
            # Same memories and fields as recall, ranked by hybrid_recall's fusion with this alpha.
            hits = [
                ScoredMemory(h.record, h.similarity)
                for h in self.hybrid_search(
                    query,
                    alpha=hybrid_alpha,
                    limit=limit,
                    namespace=namespace,
                    tags=tags,
                    filters=filters,
                    min_similarity=min_similarity,
                )
            ]
        else:
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
        self._r.upkeep.poke()
        return RenameNamespaceResult(
            old_namespace=old_namespace,
            new_namespace=new_namespace,
            memories_renamed=renamed or count,
            success=True,
            message=f"Renamed {renamed or count} memories from '{old_namespace}' to '{new_namespace}'",
        )

    # ---- search and portability --------------------------------------------------------

    def hybrid_search(
        self,
        query: str,
        *,
        alpha: float = 0.5,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> list[HybridHit]:
        """Vector and keyword (BM25) results fused by weighted reciprocal rank fusion.

        alpha weights the vector ranking and 1 - alpha the keyword ranking (1.0 = vector only,
        0.0 = keyword only). Each side contributes its best `hybrid_depth(limit)` candidates.
        `similarity` is always the cosine similarity to the query (computed from the stored
        vector for keyword-only hits), so min_similarity means the same thing as in recall.
        """
        from ..algorithms.fusion import reciprocal_rank_fusion

        if not isinstance(query, str) or not query.strip():
            raise ValidationError("Query cannot be empty")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValidationError("alpha must be a number from 0.0 (keyword only) to 1.0 (vector only)")
        alpha = float(alpha)
        flt = build_filter(namespace=namespace, tags=tags, filters=filters)
        query_vector = np.asarray(self._r.embedder.embed_query(query), dtype=np.float32)
        store = self._r.store()
        depth = hybrid_depth(limit)
        by_vector = store.search(query_vector, depth, flt) if alpha > 0.0 else []
        by_keyword = store.fts_search(query, depth, flt, with_vectors=True) if alpha < 1.0 else []
        fused = reciprocal_rank_fusion(
            [[h.record.id for h in by_vector], [record.id for record, _ in by_keyword]],
            [alpha, 1.0 - alpha],
            k=RRF_K,
        )
        vector_hits = {h.record.id: h for h in by_vector}
        keyword_hits = {record.id: (record, score) for record, score in by_keyword}
        best_bm25 = max((score for _, score in by_keyword), default=0.0)
        hits: list[HybridHit] = []
        for memory_id, fused_score in fused:
            from_vector = vector_hits.get(memory_id)
            from_keyword = keyword_hits.get(memory_id)
            if from_vector is not None:
                record, similarity = from_vector.record, from_vector.similarity
            else:
                record = from_keyword[0]
                similarity = min(1.0, max(0.0, float(np.dot(record.vector, query_vector))))
            if similarity < min_similarity:
                continue
            record.vector = None
            hits.append(
                HybridHit(
                    record=record,
                    similarity=similarity,
                    vector_score=from_vector.similarity if from_vector is not None else None,
                    fts_score=from_keyword[1] / best_bm25 if from_keyword is not None and best_bm25 > 0 else None,
                    score=fused_score,
                )
            )
            if len(hits) >= limit:
                break
        return hits

    def hybrid_recall(
        self,
        query: str,
        *,
        alpha: float = 0.5,
        limit: int = 5,
        namespace: str | None = None,
        tags: list[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        min_similarity: float = 0.0,
    ) -> HybridRecallResult:
        hits = self.hybrid_search(
            query,
            alpha=alpha,
            limit=limit,
            namespace=namespace,
            tags=tags,
            filters=filters,
            min_similarity=min_similarity,
        )
        self._r.upkeep.record_access(h.record.id for h in hits)
        items = [
            HybridMemoryItem(
                similarity=round(h.similarity, 6),
                vector_score=None if h.vector_score is None else round(h.vector_score, 6),
                fts_score=None if h.fts_score is None else round(h.fts_score, 6),
                score=round(h.score, 8),
                **h.record.summary(),
            )
            for h in hits
        ]
        search_type = "vector" if alpha >= 1.0 else "keyword" if alpha <= 0.0 else "hybrid"
        return HybridRecallResult(
            query=query, alpha=float(alpha), memories=items, total=len(items), search_type=search_type
        )

    def export_memories(
        self,
        output_path: str,
        *,
        format: str | None = None,
        namespace: str | None = None,
        include_vectors: bool | None = None,
    ) -> ExportResult:
        """Write memories (all, or one namespace) to a file in an allowed export directory.

        Vectors are included by default for parquet and json, and left out of csv unless
        include_vectors=true. The file is written beside the target and renamed into place.
        """
        import time

        from ..portability import formats as portability
        from ..portability import paths
        from ..storage.store import SUMMARY_COLUMNS

        started = time.perf_counter()
        if not isinstance(output_path, str) or not output_path.strip():
            raise ValidationError("output_path cannot be empty")
        target = paths.resolve_export_path(output_path, self._settings.allowed_export_dirs)
        fmt = portability.format_for(target, format, for_export=True)
        with_vectors = bool(include_vectors) if include_vectors is not None else fmt != "csv"
        store = self._r.store()
        # Recalls' access counts wait for a pause before they are written; the export must
        # carry every one made before it.
        self._r.upkeep.flush()
        flt = build_filter(namespace=namespace) if namespace is not None else None
        table = store.scan_arrow(SUMMARY_COLUMNS + (["vector"] if with_vectors else []), flt)
        if namespace is not None and table.num_rows == 0:
            raise NamespaceNotFoundError(f"Namespace not found: '{namespace}'. Use namespaces to list them.")
        table = table.sort_by([("created_at", "ascending"), ("id", "ascending")])
        header = portability.ExportHeader(store.model_id, store.dim, with_vectors)
        size = portability.write_export(target, table, fmt, header)
        return ExportResult(
            format=fmt,
            output_path=str(target),
            memories_exported=table.num_rows,
            file_size_bytes=size,
            file_size_mb=round(size / 1_048_576, 6),
            namespaces_included=sorted(set(table.column("namespace").to_pylist())),
            duration_seconds=round(time.perf_counter() - started, 4),
            compression="zstd" if fmt == "parquet" else None,
            include_vectors=with_vectors,
        )

    def import_memories(
        self,
        source_path: str,
        *,
        format: str | None = None,
        namespace_override: str | None = None,
        deduplicate: bool = False,
        dedup_threshold: float = 0.95,
        validate: bool = True,
        regenerate_embeddings: bool = False,
        dry_run: bool = True,
    ) -> ImportResult:
        """Import memories from a parquet, json or csv file in an allowed import directory.

        All or nothing: every record is read and checked before anything is stored, and the
        import is one commit. With validate=true (default) one invalid record fails the whole
        import (run dry_run=true to list every problem); with validate=false invalid records
        are skipped and reported. Ids are kept when they are UUIDs not already in the store
        (else new ids); timestamps, importance, tags, metadata, source and access counts are
        kept. deduplicate skips records whose cosine similarity to a memory of the same
        namespace, already stored or earlier in the file, is at least dedup_threshold.
        """
        import contextlib
        import time

        from ..portability import formats as portability
        from ..portability import paths

        started = time.perf_counter()
        s = self._settings
        if not isinstance(source_path, str) or not source_path.strip():
            raise ValidationError("source_path cannot be empty")
        if namespace_override is not None:
            check.namespace(namespace_override, s, field="namespace_override")
        low, high = DUPLICATE_SIMILARITY
        if isinstance(dedup_threshold, bool) or not low <= dedup_threshold <= high:
            raise ValidationError(f"dedup_threshold must be between {low} and {high}")
        source = paths.resolve_import_path(source_path, s.allowed_import_dirs)
        fmt = portability.format_for(source, format, for_export=False)
        data = paths.read_regular_file(source, source_path, int(s.max_import_file_mb * 1_048_576))
        parsed = portability.parse_file(data, fmt, max_records=s.max_import_records)
        del data
        store = self._r.store()
        if not regenerate_embeddings and parsed.total:
            _check_import_vectors(parsed, store.model_id, store.dim)
        candidates, problems = portability.check_rows(
            parsed,
            s,
            namespace_override=namespace_override,
            dim=None if regenerate_embeddings else store.dim,
            need_vectors=not regenerate_embeddings,
        )
        failed = len({p.row_number for p in problems})
        if problems and validate and not dry_run:
            listed = "; ".join(
                f"row {p.row_number} {p.field}: {p.error}" + (f" (value: {p.value[:40]})" if p.value else "")
                for p in problems[:5]
            )
            raise MemoryImportError(
                f"{failed} of {parsed.total} records are invalid, nothing was imported. {listed}"
                + (" ..." if len(problems) > 5 else "")
                + ". Run with dry_run=true to list every problem, or validate=false to skip invalid records."
            )
        if regenerate_embeddings and candidates and (deduplicate or not dry_run):
            vectors = self._r.embedder.embed_documents([c.content for c in candidates])
            for candidate, vector in zip(candidates, vectors, strict=True):
                candidate.vector = np.asarray(vector, dtype=np.float32)
        duplicates = _import_duplicates(candidates, store, dedup_threshold) if deduplicate and candidates else set()
        keep = [c for i, c in enumerate(candidates) if i not in duplicates]
        # The id check and the write under the store lock: no other writer takes an id in between.
        with contextlib.nullcontext() if dry_run else store.exclusive():
            taken = _existing_ids(store, [c.id for c in keep if c.id])
            records, new_ids = _import_records(keep, taken)
            if not dry_run and records:
                store.add(records)  # one commit: every record or none
        if not dry_run and records:
            self._r.upkeep.poke()
        preview = [] if dry_run else records[:10]
        return ImportResult(
            source_path=str(source),
            format=fmt,
            total_records_in_file=parsed.total,
            memories_imported=0 if dry_run else len(records),
            memories_skipped=len(duplicates),
            memories_failed=failed,
            validation_errors=[
                ImportValidationError(row_number=p.row_number, field=p.field, error=p.error, value=p.value)
                for p in problems[:MAX_REPORTED_PROBLEMS]
            ],
            namespace_override=namespace_override,
            duration_seconds=round(time.perf_counter() - started, 4),
            dry_run=dry_run,
            imported_memories=[
                ImportedMemoryPreview(
                    id=r.id,
                    content_preview=r.content if len(r.content) <= 100 else r.content[:100] + "...",
                    namespace=r.namespace,
                )
                for r in preview
            ],
            would_import=len(records),
            new_ids_assigned=new_ids,
        )


# ---- search and portability: helpers -------------------------------------------------------

# RRF's k: 60 (the textbook value, tuned for fusing deep TREC runs) nearly flattens ranks within
# the top-50 candidates each side contributes here, so memories that both sides rank mediocre
# beat the best hit of either side. A small k keeps the top ranks decisive: on LoCoMo dev
# (benchmarks/hybrid_locomo.py) k=1 beats k=60 at every alpha and in each of the 5
# conversations, and k from 0 to 3 give the same results within noise.
RRF_K = 1
MAX_REPORTED_PROBLEMS = 100


def hybrid_depth(limit: int) -> int:
    """Candidates taken from each side of a hybrid search before fusion."""
    return min(max(limit * 5, 50), 500)


@dataclass
class HybridHit:
    record: MemoryRecord
    similarity: float
    vector_score: float | None
    fts_score: float | None
    score: float


def _same_model(a: str, b: str) -> bool:
    from ..embeddings.router import canonical_model_id

    return canonical_model_id(a).lower() == canonical_model_id(b).lower()


def _check_import_vectors(parsed, model_id: str, dim: int) -> None:
    """File-level checks on imported vectors before any record is looked at."""
    from ..errors import DimensionMismatchError
    from ..portability.formats import vector_lengths

    if parsed.vectors is None or all(v is None or (isinstance(v, str) and not v.strip()) for v in parsed.vectors):
        raise ValidationError(
            "The file has no embedding vectors: pass regenerate_embeddings=true to embed the imported "
            "content with this server's model."
        )
    lengths = vector_lengths(parsed.vectors)
    found = parsed.dim if parsed.dim and parsed.dim != dim else (next(iter(lengths)) if len(lengths) == 1 else dim)
    if found != dim:
        raise DimensionMismatchError(
            f"The file's vectors have {found} dimensions but this store uses {dim} ({model_id}). "
            "Pass regenerate_embeddings=true to re-embed the content with this server's model."
        )
    if parsed.model_id and not _same_model(str(parsed.model_id), model_id):
        raise ValidationError(
            f"The file's vectors come from the model '{parsed.model_id}' but this store uses '{model_id}'; "
            "vectors of different models cannot be mixed. Pass regenerate_embeddings=true to re-embed the content."
        )


def _import_records(candidates, taken: set[str]) -> tuple[list[MemoryRecord], int]:
    """Records for the checked candidates; an id is kept when it is free (not stored, not repeated)."""
    records: list[MemoryRecord] = []
    seen: set[str] = set()
    new_ids = 0
    for c in candidates:
        memory_id = c.id
        if memory_id is None or memory_id in taken or memory_id in seen:
            memory_id = new_id()
            new_ids += 1
        seen.add(memory_id)
        records.append(
            MemoryRecord(
                id=memory_id,
                content=c.content,
                namespace=c.namespace,
                tags=c.tags,
                importance=c.importance,
                source=c.source,
                metadata=c.metadata,
                created_at=c.created_at,
                updated_at=c.updated_at,
                last_accessed=c.last_accessed,
                access_count=c.access_count,
                vector=c.vector,
            )
        )
    return records, new_ids


def _existing_ids(store, ids: list[str]) -> set[str]:
    found: set[str] = set()
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 1000):
        chunk = build_filter(ids=unique[start : start + 1000])
        found.update(store.scan_arrow(["id"], chunk).column("id").to_pylist())
    return found


def _import_duplicates(candidates, store, threshold: float, block: int = 512) -> set[int]:
    """Indexes of candidates at least `threshold` similar to a memory of the same namespace,
    already stored or kept earlier in the file (the first of a group of near-copies is kept)."""
    from ..storage.store import vectors_of

    skip: set[int] = set()
    by_namespace: dict[str, list[int]] = {}
    for i, candidate in enumerate(candidates):
        by_namespace.setdefault(candidate.namespace, []).append(i)
    for namespace, indexes in by_namespace.items():
        stored = store.scan_arrow(["vector"], build_filter(namespace=namespace))
        kept: list[np.ndarray] = [vectors_of(stored)] if stored.num_rows else []
        matrix = np.stack([candidates[i].vector for i in indexes]).astype(np.float32)
        for start in range(0, len(indexes), block):
            chunk = matrix[start : start + block]
            duplicate = np.zeros(len(chunk), dtype=bool)
            for earlier in kept:
                for offset in range(0, len(earlier), 8192):
                    duplicate |= (chunk @ earlier[offset : offset + 8192].T).max(axis=1) >= threshold
            within = chunk @ chunk.T
            kept_here: list[int] = []
            for j in range(len(chunk)):
                if not duplicate[j] and kept_here and within[j, kept_here].max() >= threshold:
                    duplicate[j] = True
                if not duplicate[j]:
                    kept_here.append(j)
            skip.update(indexes[start + j] for j in np.flatnonzero(duplicate))
            if kept_here:
                kept.append(chunk[kept_here])
    return skip

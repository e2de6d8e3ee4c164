"""Export to files and import from them (ours or the reference implementation's)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import validation as check
from ..embeddings.router import canonical_model_id
from ..errors import (
    DimensionMismatchError,
    MemoryImportError,
    NamespaceNotFoundError,
    ValidationError,
)
from ..limits import DUPLICATE_SIMILARITY
from ..portability import export_file, formats, import_file, import_records, paths
from ..portability.import_records import vector_lengths
from ..records import MemoryRecord, Provenance, iso, new_id
from ..storage.filters import build_filter
from ..storage.side_tables.history import RetiredState
from ..storage.side_tables.relations import Relation
from ..storage.table.schema import SUMMARY_COLUMNS
from ..transport.progress import report_progress
from .base import Service
from .duplicates import near_copies
from .results import (
    ExportResult,
    ImportedMemoryPreview,
    ImportResult,
    ImportValidationError,
    content_preview,
)

MAX_REPORTED_PROBLEMS = 100


def _same_model(a: str, b: str) -> bool:
    return canonical_model_id(a).lower() == canonical_model_id(b).lower()


def _check_import_vectors(parsed, model_id: str, dim: int) -> None:
    """File-level checks on imported vectors before any record is looked at."""
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


def _import_records(
    candidates, taken: set[str], provenance: Provenance
) -> tuple[list[MemoryRecord], int, dict[str, str]]:
    """Records for the checked candidates; an id is kept when it is free (not stored, not repeated).
    Also the ids given: file id -> stored id."""
    records: list[MemoryRecord] = []
    seen: set[str] = set()
    given: dict[str, str] = {}
    new_ids = 0
    for c in candidates:
        memory_id = c.id
        if memory_id is None or memory_id in taken or memory_id in seen:
            memory_id = new_id()
            new_ids += 1
        seen.add(memory_id)
        if c.id is not None:
            given.setdefault(c.id, memory_id)
        records.append(
            _record(c, memory_id, provenance.but(derived_from=() if c.id == memory_id else (c.id,) if c.id else ()))
        )
    return records, new_ids, given


def _record(c, memory_id: str, provenance: Provenance | None) -> MemoryRecord:
    return MemoryRecord(
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
        conversation=c.conversation,
        memory_type=c.memory_type,
        expires_at=c.expires_at,
        pinned=c.pinned,
        version=c.version,
        provenance=provenance,
        vector=c.vector,
    )


def _retired_states(retired, given: dict[str, str], skipped: set[str], taken: set[str]) -> list[RetiredState]:
    """The retired versions of the file, attached to the ids their memories were given (a memory
    skipped as a duplicate takes its history with it; a retired row without an id is dropped)."""
    states = []
    for c in retired:
        if c.id is None or c.id in skipped:
            continue
        if c.id not in given:  # a memory closed before the export: its own id when free
            given[c.id] = c.id if c.id not in taken else new_id()
        successor = c.retired.superseded_by
        states.append(
            RetiredState(
                _record(c, given[c.id], c.provenance),
                c.retired.valid_until,
                c.retired.retired_by,
                given.get(successor, successor) if successor else None,
            )
        )
    return states


def _outgoing(relations) -> dict[str, list[dict]]:
    """Relations by source id, as the export's `relations` field lists them."""
    by_source: dict[str, list[dict]] = {}
    for r in sorted(relations, key=lambda r: (r.source_id, r.created_at, r.target_id, r.relation)):
        by_source.setdefault(r.source_id, []).append(
            {
                "target_id": r.target_id,
                "relation": r.relation,
                "weight": round(float(r.weight), 6),
                "created_at": iso(r.created_at),
            }
        )
    return by_source


def _json_or_none(value) -> str | None:
    return None if not value else json.dumps(value, ensure_ascii=False)


def _import_relations(store, keep, records, given: dict[str, str], provenance: Provenance) -> list:
    """The relations of the imported records, their ends under the ids the memories were given; a
    target neither in the file nor in the store is dropped."""
    wanted = [link for c in keep for link in c.relations]
    if not wanted:
        return []
    outside = [link.target_id for link in wanted if link.target_id not in given]
    present = {r.id for r in store.get_many(outside)} if outside else set()
    found: dict[str, Relation] = {}
    for candidate, record in zip(keep, records, strict=True):
        for link in candidate.relations:
            target = given.get(link.target_id) or (link.target_id if link.target_id in present else None)
            if target is None or target == record.id:
                continue
            made = Relation(record.id, target, link.relation, link.weight, link.created_at, provenance)
            found[made.key] = made
    return list(found.values())


def _existing_ids(store, ids: list[str]) -> set[str]:
    found: set[str] = set()
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 1000):
        chunk = build_filter(ids=unique[start : start + 1000])
        found.update(store.scan_arrow(["id"], chunk).column("id").to_pylist())
    return found


def _invalid_import(problems, failed: int, total: int) -> MemoryImportError:
    listed = "; ".join(
        f"row {p.row_number} {p.field}: {p.error}" + (f" (value: {p.value[:40]})" if p.value else "")
        for p in problems[:5]
    )
    return MemoryImportError(
        f"{failed} of {total} records are invalid, nothing was imported. {listed}"
        + (" ..." if len(problems) > 5 else "")
        + ". Run with dry_run=true to list every problem, or validate=false to skip invalid records."
    )


def _duplicates(store, candidates, threshold: float, embedder: object) -> set[int]:
    """The candidates that are near copies of a memory of their namespace (stored or earlier in the file)."""
    vectors = np.stack([c.vector for c in candidates])
    copies = near_copies(
        store, [c.namespace for c in candidates], vectors, threshold, [c.content for c in candidates], embedder
    )
    return {i for i, copy in enumerate(copies) if copy is not None}


@dataclass
class _ImportPlan:
    """What an import writes: the memories, their retired versions and their relations."""

    records: list[MemoryRecord]
    new_ids: int
    states: list[RetiredState]
    links: list


def _plan_import(store, keep, retired, skipped: set[str], provenance: Provenance) -> _ImportPlan:
    """The records, history and relations to write, under the ids they will have (read under the lock)."""
    taken = _existing_ids(store, [c.id for c in (*keep, *retired) if c.id])
    records, new_ids, given = _import_records(keep, taken, provenance)
    states = _retired_states(retired, given, skipped, taken)
    links = _import_relations(store, keep, records, given, provenance)
    return _ImportPlan(records, new_ids, states, links)


class PortabilityService(Service):
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
        started = time.perf_counter()
        if not isinstance(output_path, str) or not output_path.strip():
            raise ValidationError("output_path cannot be empty")
        target = paths.resolve_export_path(output_path, self._settings.allowed_export_dirs)
        fmt = formats.format_for(target, format, for_export=True)
        with_vectors = bool(include_vectors) if include_vectors is not None else fmt != "csv"
        store = self._resources.store()
        # Recalls' access counts wait for a pause before they are written; the export must
        # carry every one made before it.
        self._resources.upkeep.flush()
        flt = build_filter(namespace=namespace) if namespace is not None else None
        columns = SUMMARY_COLUMNS + (["vector"] if with_vectors else [])
        table = store.scan_arrow(columns, flt)
        if namespace is not None and table.num_rows == 0:
            raise NamespaceNotFoundError(f"Namespace not found: '{namespace}'. Use namespaces to list them.")
        current = table.num_rows
        report_progress(1, 3, "memories read", source="steps")  # read, with history and links, written
        history = store.history_arrow(flt)
        for name in formats.HISTORY_FIELDS:
            table = table.append_column(name, pa.nulls(table.num_rows, history.schema.field(name).type))
        outgoing = _outgoing(store.current_relations())
        ids = table.column("id").to_pylist()
        relations = [outgoing.get(i) for i in ids]
        exported_relations = sum(len(outgoing[i]) for i in set(ids) if i in outgoing)
        table = table.append_column("relations", pa.array([_json_or_none(r) for r in relations], pa.string()))
        history = history.append_column("relations", pa.nulls(history.num_rows, pa.string()))
        table = pa.concat_tables([table, history.select(table.column_names).cast(table.schema)])
        table = table.sort_by([("created_at", "ascending"), ("id", "ascending"), ("version", "ascending")])
        report_progress(2, 3, "history and links added", source="steps")
        header = export_file.ExportHeader(store.model_id, store.dim, with_vectors)
        size = export_file.write_export(target, table, fmt, header)
        return ExportResult(
            format=fmt,
            output_path=str(target),
            memories_exported=current,
            versions_exported=table.num_rows - current,
            relations_exported=exported_relations,
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
        provenance: Provenance | None = None,
    ) -> ImportResult:
        """Import memories from a parquet, json or csv file in an allowed import directory.

        All or nothing: every record is read and checked before anything is stored, and the
        import's writes (memories, their versions, their relations) stand or fall together.
        With validate=true (default) one invalid record fails the whole import (run
        dry_run=true to list every problem); with validate=false invalid records are skipped
        and reported. Ids are kept when they are UUIDs not already in the store
        (else new ids); timestamps, importance, tags, metadata, source and access counts are
        kept. deduplicate skips records whose cosine similarity to a memory of the same
        namespace, already stored or earlier in the file, is at least dedup_threshold.
        """
        started = time.perf_counter()
        source, fmt, parsed = self._read_import_file(source_path, format, namespace_override, dedup_threshold)
        store = self._resources.store()
        candidates, problems = self._checked_records(
            parsed, store.model_id, store.dim, namespace_override, regenerate_embeddings
        )
        failed = len({p.row_number for p in problems})
        if problems and validate and not dry_run:
            raise _invalid_import(problems, failed, parsed.total)
        if regenerate_embeddings and candidates and (deduplicate or not dry_run):
            self._embed(candidates)
        retired = [c for c in candidates if c.retired is not None]
        candidates = [c for c in candidates if c.retired is None]
        duplicates = (
            _duplicates(store, candidates, dedup_threshold, self._resources.embedder)
            if deduplicate and candidates
            else set()
        )
        keep = [c for i, c in enumerate(candidates) if i not in duplicates]
        skipped = {cid for i in duplicates if (cid := candidates[i].id)}
        provenance = provenance or Provenance(via="import")
        # The id check and the writes under the store lock: no other writer takes an id in between.
        with contextlib.nullcontext() if dry_run else store.all_or_nothing():
            planned = _plan_import(store, keep, retired, skipped, provenance)
            if not dry_run:
                store.add_imported(planned.records, planned.states, planned.links)
        if not dry_run and planned.records:
            self._resources.upkeep.poke()
        return ImportResult(
            source_path=str(source),
            format=fmt,
            total_records_in_file=parsed.total,
            memories_imported=0 if dry_run else len(planned.records),
            memories_skipped=len(duplicates),
            versions_imported=0 if dry_run else len(planned.states),
            relations_imported=0 if dry_run else len(planned.links),
            memories_failed=failed,
            validation_errors=[
                ImportValidationError(row_number=p.row_number, field=p.field, error=p.error, value=p.value)
                for p in problems[:MAX_REPORTED_PROBLEMS]
            ],
            namespace_override=namespace_override,
            duration_seconds=round(time.perf_counter() - started, 4),
            dry_run=dry_run,
            imported_memories=[
                ImportedMemoryPreview(id=r.id, content_preview=content_preview(r.content), namespace=r.namespace)
                for r in ([] if dry_run else planned.records[:10])
            ],
            would_import=len(planned.records),
            new_ids_assigned=planned.new_ids,
        )

    def _read_import_file(self, source_path, format, namespace_override, dedup_threshold):
        """The arguments checked, the file found in an allowed directory, read and parsed."""
        s = self._settings
        if not isinstance(source_path, str) or not source_path.strip():
            raise ValidationError("source_path cannot be empty")
        if namespace_override is not None:
            check.namespace(namespace_override, s, field="namespace_override")
        low, high = DUPLICATE_SIMILARITY
        if isinstance(dedup_threshold, bool) or not low <= dedup_threshold <= high:
            raise ValidationError(f"dedup_threshold must be between {low} and {high}")
        source = paths.resolve_import_path(source_path, s.allowed_import_dirs)
        fmt = formats.format_for(source, format, for_export=False)
        data = paths.read_regular_file(source, source_path, int(s.max_import_file_mb * 1_048_576))
        return source, fmt, import_file.parse_file(data, fmt, max_records=s.max_import_records)

    def _checked_records(self, parsed, model_id: str, dim: int, namespace_override, regenerate_embeddings: bool):
        """Every row checked field by field: the valid ones as candidates, the others as problems."""
        if not regenerate_embeddings and parsed.total:
            _check_import_vectors(parsed, model_id, dim)
        return import_records.check_rows(
            parsed,
            self._settings,
            namespace_override=namespace_override,
            dim=None if regenerate_embeddings else dim,
            need_vectors=not regenerate_embeddings,
        )

    def _embed(self, candidates) -> None:
        vectors = self._resources.embedder.embed_documents([c.content for c in candidates])
        for candidate, vector in zip(candidates, vectors, strict=True):
            candidate.vector = np.asarray(vector, dtype=np.float32)

"""Storing, reading and forgetting memories: remember, remember_batch (with what they resemble, and
the memories they supersede), forget, forget_batch, one memory, the newest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Unpack

import numpy as np

from .. import validation as check
from ..errors import (
    AmbiguousIdError,
    MemoryNotFoundError,
    ValidationError,
)
from ..records import MemoryRecord, NewMemory, Provenance, new_id
from ..storage.filters import build_filter
from .base import Service
from .cache import VersionedCache
from .expiry import expiry_for, memory_type_of
from .recall_filters import MemoryFilters
from .results import (
    ForgetResult,
    MemoryDetail,
    RecentMemories,
    RememberBatchResult,
    RememberResult,
    SimilarMemory,
    content_preview,
    timestamp,
)
from .write_checks import CONTRADICTION, DUPLICATE, LookAlike, look_alikes

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

ON_DUPLICATE = ("store", "skip", "supersede")
# The look-alikes decided as the fp32 path would (embeddings/decisions.py), per on_duplicate: a
# near-duplicate always (a near-copy decision, reported or acted on); a contradiction when it
# changes the store (supersede closes every look-alike), else it is a report on the store's vectors.
_DECIDED_AS_FP32: dict[str, frozenset[str]] = {
    "store": frozenset({DUPLICATE}),
    "skip": frozenset({DUPLICATE}),
    "supersede": frozenset({DUPLICATE, CONTRADICTION}),
}


class MemoryService(Service):
    def __init__(self, resources) -> None:
        super().__init__(resources)
        # The store's ids, sorted, per table version (full_ids): a scan per write, not per call.
        self._ids_cache = VersionedCache(size=2)

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
                memory_type=memory_type_of(item.memory_type),
                expires_at=item.expires_at,
                pinned=check.flag("pinned", item.pinned),
            )
        except ValidationError as exc:
            raise ValidationError(f"{field_prefix}{exc.message}") from None

    def build_records(
        self,
        items: Sequence[NewMemory],
        *,
        source: str = "manual",
        vectors: np.ndarray | None = None,
        provenance: Provenance | None = None,
    ) -> list[MemoryRecord]:
        """Validate every item first, then embed them all: a bad item stores nothing."""
        many = len(items) > 1
        valid = [self._validated(it, field_prefix=f"memories[{i}]: " if many else "") for i, it in enumerate(items)]
        now = self._resources.clock()
        expiries = []
        for i, v in enumerate(valid):
            try:
                expiries.append(expiry_for(v.memory_type, v.expires_at, now, self._settings))
            except ValidationError as exc:
                raise ValidationError(f"{f'memories[{i}]: ' if many else ''}{exc.message}") from None
        if vectors is None:
            vectors = self._resources.embedder.embed_documents([v.content for v in valid])
        origin = provenance or Provenance(via="remember")
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
                memory_type=v.memory_type or "fact",
                expires_at=expires,
                pinned=v.pinned,
                provenance=origin.but(session_id=v.conversation.session_id or origin.session_id),
                vector=vec,
            )
            for v, vec, expires in zip(valid, vectors, expiries, strict=True)
        ]

    def store_records(self, records: list[MemoryRecord]) -> None:
        self._resources.store().add(records)
        self._resources.upkeep.poke()

    # ---- tools -------------------------------------------------------------------------

    def remember(
        self,
        item: NewMemory,
        *,
        supersedes: Sequence[str] | None = None,
        on_duplicate: str = "store",
        allow_duplicate: bool = False,
        provenance: Provenance | None = None,
    ) -> RememberResult:
        """Store one memory, reporting the stored memories it duplicates or contradicts; with
        `supersedes` (or on_duplicate=supersede) it closes those memories in the same write. An
        exact copy of a stored memory (same content, same namespace) is not stored again unless
        `allow_duplicate`: the stored one is returned, and counted as used."""
        check.one_of("on_duplicate", on_duplicate, ON_DUPLICATE)
        allow_duplicate = check.flag("allow_duplicate", allow_duplicate)
        (record,) = self.build_records([item], provenance=provenance or Provenance(via="remember"))
        closes = self._superseded_ids(supersedes)
        # A memory that names what it replaces is written whatever it repeats: the replacement is the point.
        written = self._write([record], on_duplicate, closes, allow_duplicate or bool(closes))
        (alike,) = written.alike
        if written.skipped:
            existing = written.copies.get(0) or next(a.memory_id for a in alike if a.relation == DUPLICATE)
            record = replace(record, id=existing)
        return RememberResult(
            id=record.id,
            content=record.content,
            namespace=record.namespace,
            created_at=timestamp(record.created_at),
            stored=not written.skipped,
            similar_existing=[_similar(a) for a in alike],
            superseded=written.closed,
        )

    def remember_batch(
        self,
        items: Sequence[NewMemory],
        *,
        on_duplicate: str = "store",
        allow_duplicate: bool = False,
        provenance: Provenance | None = None,
    ) -> RememberBatchResult:
        if not items:
            raise ValidationError("Memory list is empty: pass at least one memory")
        if len(items) > self._settings.max_batch_size:
            raise ValidationError(
                f"{len(items)} memories in one batch; the maximum is {self._settings.max_batch_size}. Split the batch."
            )
        check.one_of("on_duplicate", on_duplicate, ON_DUPLICATE)
        allow_duplicate = check.flag("allow_duplicate", allow_duplicate)
        records = self.build_records(items, provenance=provenance or Provenance(via="remember_batch"))
        written = self._write(records, on_duplicate, [], allow_duplicate)
        return RememberBatchResult(
            ids=[r.id for r in written.stored],
            count=len(written.stored),
            # An item's closest look-alike only (remember lists up to LOOK_ALIKES): a batch of notes
            # alike each other would otherwise return several per item, for the model to read and
            # every client to validate.
            similar_existing=[_similar(found[0], index=i) for i, found in enumerate(written.alike) if found],
            skipped=written.skipped,
            superseded=written.closed,
        )

    def _write(
        self, records: list[MemoryRecord], on_duplicate: str, supersedes: list[str], allow_duplicate: bool = False
    ) -> _Written:
        """Store records in one commit, after looking for their stored look-alikes under the write
        lock: an exact copy of a stored memory or of an earlier record is left out (unless
        `allow_duplicate`), and so is a record with a duplicate (on_duplicate=skip); the memories
        named by `supersedes` (for the first record) and with on_duplicate=supersede every
        look-alike are closed, each linked to the record that replaces it."""
        store = self._resources.store()
        with store.exclusive():
            embedder = self._resources.embedder
            alike = look_alikes(store, records, self._settings, embedder, _DECIDED_AS_FP32[on_duplicate])
            copies = {} if allow_duplicate else _exact_copies(records, alike)
            skipped = [
                i
                for i, found in enumerate(alike)
                if i in copies or (on_duplicate == "skip" and any(a.relation == DUPLICATE for a in found))
            ]
            stored = [r for i, r in enumerate(records) if i not in set(skipped)]
            successor_of: dict[str, str] = dict.fromkeys(supersedes, stored[0].id) if stored else {}
            if on_duplicate == "supersede":
                for i, (record, found) in enumerate(zip(records, alike, strict=True)):
                    for a in found if i not in copies else ():
                        successor_of.setdefault(a.memory_id, record.id)
            if successor_of:
                closed = self._closing(store, list(successor_of))
                stored = [_successor(r, [i for i, s in successor_of.items() if s == r.id]) for r in stored]
                store.supersede(stored, closed, successor_of, self._settings.max_versions)
            elif stored:
                store.add(stored)
        # The copies' originals were used again: their access counts grow (decay spares them).
        self._resources.upkeep.record_access(set(copies.values()) - {r.id for r in stored})
        self._resources.upkeep.poke()
        return _Written(stored, alike, skipped, list(successor_of), copies)

    def _superseded_ids(self, supersedes: Sequence[str] | None) -> list[str]:
        if supersedes is None:
            return []
        if not isinstance(supersedes, (list, tuple)) or not all(isinstance(i, str) for i in supersedes):
            raise ValidationError("supersedes must be a list of memory ids")
        if len(supersedes) > self._settings.max_batch_size:
            raise ValidationError(f"supersedes takes at most {self._settings.max_batch_size} ids")
        return list(dict.fromkeys(supersedes))

    @staticmethod
    def _closing(store: Store, ids: list[str]) -> list[MemoryRecord]:
        """The current memories about to be closed, with vectors; every id must be one."""
        found = store.get_many(ids, with_vectors=True)
        missing = [i for i in ids if i not in {r.id for r in found}]
        if missing:
            raise MemoryNotFoundError(
                f"cannot supersede {', '.join(m[:64] for m in missing[:5])}: no current memory has that id "
                "(already superseded, expired or forgotten?). Use recall or get_memories to find current ids."
            )
        return found

    def full_ids(self, short: Sequence[str]) -> dict[str, str]:
        """Each short id (the start of a memory's id, as tool results show ids) that begins exactly
        one memory's id, mapped to that id; one that begins none is left out (the tool then reports
        it unknown), one that begins several is an AmbiguousIdError listing them."""
        ids = self._sorted_ids()
        found: dict[str, str] = {}
        for prefix in dict.fromkeys(short):
            key = prefix.encode()
            place = int(np.searchsorted(ids, key))
            matches = []
            while place < len(ids) and ids[place].startswith(key):
                matches.append(ids[place].decode())
                place += 1
            if prefix in matches or len(matches) == 1:
                found[prefix] = prefix if prefix in matches else matches[0]
            elif matches:
                shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
                raise AmbiguousIdError(
                    f"The id '{prefix}' begins {len(matches)} memories' ids ({shown}): send more of it or the whole id."
                )
        return found

    def _sorted_ids(self) -> np.ndarray:
        """Every memory id, as sorted bytes (compact: 36 bytes an id), read once per table version."""
        store = self._resources.store()
        key = store.data_version
        ids = self._ids_cache.get(key)
        if ids is None:
            column = store.scan_arrow(["id"]).column("id").to_pylist()
            ids = np.sort(np.array([i.encode() for i in column], dtype=bytes))
            self._ids_cache.put(key, ids)
        return ids

    def forget(self, memory_id: str | None = None, **where: Unpack[MemoryFilters]) -> ForgetResult:
        """Forget one memory by id (within `where` when given), or every memory matching `where`."""
        namespace, filters = where.get("namespace"), where.get("filters")
        if memory_id is None and namespace is None and not filters:
            raise ValidationError("Give memory_id, or namespace and/or filters, to say what to forget")
        store = self._resources.store()
        if memory_id is not None:
            if namespace is not None or filters:
                flt = build_filter(ids=[memory_id], namespace=namespace, filters=filters)
                deleted = store.delete_where(flt)
            else:
                deleted = store.delete_ids([memory_id])
        else:
            deleted = store.delete_where(build_filter(namespace=namespace, filters=filters))
        self._resources.upkeep.poke()
        return ForgetResult.of(deleted, asked=[] if memory_id is None else [memory_id])

    def forget_batch(self, memory_ids: Sequence[str]) -> ForgetResult:
        if not memory_ids:
            raise ValidationError("Memory ID list is empty")
        if len(memory_ids) > self._settings.max_batch_size:
            raise ValidationError(f"at most {self._settings.max_batch_size} ids per call")
        deleted = self._resources.store().delete_ids(memory_ids)
        self._resources.upkeep.poke()
        return ForgetResult.of(deleted, asked=memory_ids)

    def memory(self, memory_id: str) -> MemoryDetail:
        """One memory, whole (without its vector)."""
        record = self._resources.store().get(memory_id)
        if record is None:
            raise MemoryNotFoundError(f"Memory not found: {memory_id[:64]}. Use recall to find memory ids.")
        return MemoryDetail.of(record)

    def recent(self, namespace: str, *, limit: int = 20) -> RecentMemories:
        """The newest memories of a namespace, newest first."""
        # Not at the top: pyarrow.compute loads with the heavy imports before the first tool call
        # (runtime/imports.py), not while the App is built at start-up.
        import pyarrow.compute as pc

        namespace = check.namespace(namespace, self._settings)
        store = self._resources.store()
        table = store.scan_arrow(["id", "created_at"], build_filter(namespace=namespace))
        if table.num_rows == 0:
            return RecentMemories(namespace=namespace, memories=[], total_in_namespace=0)
        order = pc.call_function("sort_indices", [table], pc.SortOptions(sort_keys=[("created_at", "descending")]))[
            :limit
        ]
        ids = table.column("id").take(order).to_pylist()
        records = store.get_many(ids)
        return RecentMemories(
            namespace=namespace, memories=[MemoryDetail.of(r) for r in records], total_in_namespace=table.num_rows
        )


@dataclass
class _Written:
    stored: list[MemoryRecord]
    alike: list[list[LookAlike]]  # per record given
    skipped: list[int]  # indexes of records not stored
    closed: list[str]  # ids of the memories superseded
    copies: dict[int, str]  # index of a record not stored as an exact copy -> the memory it copies


def _exact_copies(records: list[MemoryRecord], alike: list[list[LookAlike]]) -> dict[int, str]:
    """Records whose content and namespace a stored memory (among its look-alikes), or an earlier
    record of the same batch, has already: index -> that memory's id. A copy of an earlier record
    joins its look-alikes (similarity 1), so the answer names the memory it repeats."""
    copies: dict[int, str] = {}
    first: dict[tuple[str, str], MemoryRecord] = {}
    for i, record in enumerate(records):
        stored = next((a.memory_id for a in alike[i] if a.content == record.content), None)
        earlier = first.get((record.namespace, record.content))
        if stored is not None:
            copies[i] = stored
        elif earlier is not None:
            copies[i] = earlier.id
            alike[i].insert(0, LookAlike(earlier.id, 1.0, DUPLICATE, earlier.content))
        else:
            first[(record.namespace, record.content)] = record
    return copies


def _successor(record: MemoryRecord, closes: list[str]) -> MemoryRecord:
    """The record with its provenance naming the memories it closes."""
    if not closes or record.provenance is None:
        return record
    origin = record.provenance
    via = "supersede" if origin.via in ("remember", "remember_batch") else origin.via
    return replace(record, provenance=origin.but(via=via, derived_from=(*origin.derived_from, *closes)))


def _similar(found, *, index: int | None = None) -> SimilarMemory:
    return SimilarMemory(
        id=found.memory_id,
        similarity=round(found.similarity, 6),
        relation=found.relation,
        content_preview=content_preview(found.content),
        index=index,
    )

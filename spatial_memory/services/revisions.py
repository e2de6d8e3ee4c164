"""Memories that change: get_memories, update_memory, memory_history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from .. import validation as check
from ..errors import MemoryNotFoundError, ValidationError
from ..records import MemoryRecord, Provenance, is_uuid
from ..storage.side_tables.history import RetiredState
from ..text.wordiff import word_diff
from .base import Service
from .connections import relation_item
from .expiry import expiry_for, memory_type_of
from .results import (
    DiffPart,
    FullMemory,
    GetMemoriesResult,
    MemoryDetail,
    MemoryHistoryResult,
    MemoryVersion,
    ProvenanceInfo,
    RelationItem,
    UpdateMemoryResult,
    timestamp,
)

# The fields update_memory may change, in the order results list them.
CHANGEABLE = ("content", "tags", "importance", "metadata", "pinned", "memory_type", "expires_at")
# The fields of a version memory_history's diff compares (MemoryVersion's names).
COMPARED = ("content", "tags", "importance", "metadata", "pinned", "memory_type", "expires_at")
_UNSET: Any = object()


class RevisionService(Service):
    def get_memories(self, memory_ids: Sequence[str]) -> GetMemoriesResult:
        """Memories by id, whole: current ones, and closed ones (superseded) marked as such."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            raise ValidationError("memory_ids is empty: give at least one id")
        if len(ids) > self._settings.max_batch_size:
            raise ValidationError(f"at most {self._settings.max_batch_size} ids per call")
        store = self._resources.store()
        current = {r.id: r for r in store.get_many(ids)}
        counts: dict[str, int] = {}
        closed: dict[str, RetiredState] = {}  # memories a successor closed: their last state
        for state in store.retired([i for i in ids if is_uuid(i)]):  # newest version first
            memory_id = state.record.id
            counts[memory_id] = counts.get(memory_id, 0) + 1
            if memory_id not in current and state.superseded_by:
                closed.setdefault(memory_id, state)
        links: dict[str, list[RelationItem]] = {}
        for r in store.relations_of(list(current)):
            for end in dict.fromkeys((r.source_id, r.target_id)):
                links.setdefault(end, []).append(relation_item(r))
        found: list[FullMemory] = []
        for memory_id in ids:
            if memory_id in current:
                detail = MemoryDetail.of(current[memory_id]).model_dump()
                found.append(
                    FullMemory(**detail, versions=counts.get(memory_id, 0) + 1, relations=links.get(memory_id, []))
                )
            elif memory_id in closed:
                state = closed[memory_id]
                detail = MemoryDetail.of(state.record).model_dump()
                found.append(
                    FullMemory(
                        **detail,
                        current=False,
                        valid_until=timestamp(state.valid_until),
                        superseded_by=state.superseded_by,
                        versions=counts.get(memory_id, 0),
                    )
                )
        return GetMemoriesResult(memories=found, not_found=[i for i in ids if i not in current and i not in closed])

    def update_memory(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        pinned: bool | None = None,
        memory_type: str | None = None,
        expires_at: datetime | None = _UNSET,
        provenance: Provenance | None = None,
        revert_to: int | None = None,
    ) -> UpdateMemoryResult:
        """Change a memory in place; its previous version goes to its history (one commit to the
        memories table, under the store lock, so two writers never lose each other's version).
        `revert_to`: that version's content and fields become a new current version."""
        if revert_to is not None:
            given = [
                f
                for f, v in (
                    ("content", content),
                    ("tags", tags),
                    ("importance", importance),
                    ("metadata", metadata),
                    ("pinned", pinned),
                    ("memory_type", memory_type),
                )
                if v is not None
            ]
            if given or expires_at is not _UNSET:
                raise ValidationError(
                    f"revert_to replaces every field: leave out {', '.join(given) or 'expires_at'}, "
                    "or change them in a second call"
                )
            return self._revert(memory_id, revert_to, provenance)
        s = self._settings
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = check.content(content, s)
        if tags is not None:
            changes["tags"] = check.tags(tags, s)
        if importance is not None:
            changes["importance"] = check.importance(importance)
        if metadata is not None:
            changes["metadata"] = check.metadata(metadata, s)
        if pinned is not None:
            changes["pinned"] = check.flag("pinned", pinned)
        if memory_type is not None:
            changes["memory_type"] = memory_type_of(memory_type)
        if not changes and expires_at is _UNSET:
            raise ValidationError(f"nothing to change: give at least one of {', '.join(CHANGEABLE)}")
        # Embed before taking the lock: the model is the slow part, and the content is known.
        vector = self._resources.embedder.embed_documents([changes["content"]])[0] if "content" in changes else None
        store = self._resources.store()
        with store.exclusive():
            previous = store.get(memory_id, with_vector=True)
            if previous is None:
                raise MemoryNotFoundError(
                    f"Memory not found: {memory_id[:64]}. It may have been superseded, expired or forgotten; "
                    "use recall or get_memories to find current ids."
                )
            now = self._resources.clock()
            if "memory_type" in changes or expires_at is not _UNSET:
                new_type = changes.get("memory_type", previous.memory_type)
                explicit = None if expires_at is _UNSET else expires_at
                changes["expires_at"] = expiry_for(new_type, explicit, now, s)
            changed = [f for f in CHANGEABLE if f in changes and changes[f] != getattr(previous, f)]
            if not changed:
                return UpdateMemoryResult(memory=MemoryDetail.of(previous), changed=[], re_embedded=False)
            origin = (provenance or Provenance(via="update")).but(session_id=previous.conversation.session_id)
            record = replace(
                previous,
                **{f: changes[f] for f in changed},
                vector=vector if "content" in changed else previous.vector,
                version=previous.version + 1,
                updated_at=now,
                provenance=origin,
            )
            store.rewrite(record, previous, s.max_versions)
        self._resources.upkeep.poke()
        return UpdateMemoryResult(memory=MemoryDetail.of(record), changed=changed, re_embedded="content" in changed)

    def _revert(self, memory_id: str, version: int, provenance: Provenance | None) -> UpdateMemoryResult:
        store = self._resources.store()
        if store.get(memory_id) is None:
            raise MemoryNotFoundError(
                f"Memory not found: {memory_id[:64]}. Only a current memory can be reverted; "
                "use recall or get_memories to find current ids."
            )
        old = next((state.record for state in store.retired([memory_id]) if state.record.version == version), None)
        if old is None:
            current = store.get(memory_id)
            if current is not None and current.version == version:
                return UpdateMemoryResult(memory=MemoryDetail.of(current), changed=[], re_embedded=False)
            raise ValidationError(
                f"memory {memory_id[:64]} has no version {version}: memory_history lists the versions kept"
            )
        origin = (provenance or Provenance(via="update")).but(via="revert")
        return self.update_memory(
            memory_id,
            content=old.content,
            tags=list(old.tags),
            importance=float(old.importance),
            metadata=dict(old.metadata),
            pinned=bool(old.pinned),
            memory_type=old.memory_type,
            expires_at=old.expires_at,
            provenance=origin,
        )

    def memory_history(self, memory_id: str, *, limit: int = 20, diff: bool = False) -> MemoryHistoryResult:
        """A memory's versions, newest first: the current one (if any), then the retired ones;
        `diff`: each with what changed against the version before it."""
        store = self._resources.store()
        current = store.get(memory_id)
        retired = store.retired([memory_id])
        if current is None and not retired:
            raise MemoryNotFoundError(f"Memory not found: {memory_id[:64]}. Use recall to find memory ids.")
        versions = ([_version(current, None)] if current is not None else []) + [
            _version(state.record, state) for state in retired
        ]
        if diff:
            versions = [_with_changes(v, older) for v, older in zip(versions, [*versions[1:], None])]
        return MemoryHistoryResult(memory_id=memory_id, versions=versions[:limit], total=len(versions))


def _with_changes(version: MemoryVersion, older: MemoryVersion | None) -> MemoryVersion:
    """The version with its changes against the one before it (none before the oldest kept)."""
    if older is None:
        return version
    changed = [f for f in COMPARED if getattr(version, f) != getattr(older, f)]
    parts = [DiffPart(op=op, text=text) for op, text in word_diff(older.content, version.content)]
    return version.model_copy(update={"changed": changed, "diff": parts})


def _version(record: MemoryRecord, state: RetiredState | None) -> MemoryVersion:
    return MemoryVersion(
        version=record.version,
        content=record.content,
        tags=list(record.tags),
        importance=round(float(record.importance), 6),
        metadata=record.metadata,
        memory_type=record.memory_type,
        pinned=record.pinned,
        expires_at=timestamp(record.expires_at),
        valid_from=timestamp(record.updated_at),
        valid_until=None if state is None else timestamp(state.valid_until),
        current=state is None,
        retired_by=None if state is None else state.retired_by,
        superseded_by=None if state is None else state.superseded_by,
        provenance=ProvenanceInfo.of(record.provenance),
    )

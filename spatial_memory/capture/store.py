"""Captured memories into the store: the one place that turns spool records into memories.

Records keep the ids the hook gave them, and ids already stored are skipped, so a claim retried
after a crash between the commit and the deletion of its file stores nothing twice. Captures keep
their conversation structure (session_id, sequence, speaker, occurred_at) and provenance via
"hook" naming the client, its version and its session; what they established is a fact (no
expiry), what only narrates a session expires (memory_type_of).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, NamedTuple

from ..config import BUNDLED_MODEL
from ..errors import ValidationError
from ..records import Conversation, NewMemory, Provenance
from . import memorable

log = logging.getLogger(__name__)


def new_memory(record: dict[str, Any]):
    """The NewMemory a spool record asks for."""

    occurred = record.get("occurred_at")
    try:
        occurred_at = datetime.fromisoformat(occurred.replace("Z", "+00:00")) if isinstance(occurred, str) else None
    except ValueError:
        occurred_at = None
    return NewMemory(
        content=record["content"],
        namespace=record["namespace"],
        tags=list(record.get("tags") or []),
        importance=float(record.get("importance", 0.5)),
        metadata=dict(record.get("metadata") or {}),
        conversation=Conversation(
            session_id=record.get("session_id"),
            sequence=record.get("sequence"),
            speaker=record.get("speaker"),
            occurred_at=occurred_at,
        ),
        memory_type=memory_type_of(record),
    )


def provenance(record: dict[str, Any]):

    text = lambda key: record[key] if isinstance(record.get(key), str) else None  # noqa: E731
    return Provenance(
        via=VIA, client=text("client"), client_version=text("client_version"), session_id=text("session_id")
    )


class Stored(NamedTuple):
    """What storing captures did: new memories (procedures included) and procedures confirmed
    (a run seen again: a new version of a memory, not a new one)."""

    memories: int = 0
    confirmed: int = 0


def store_captured(app: Any, records: list[dict[str, Any]]) -> Stored:
    """Store the spool records not stored yet, in one commit. Records that are not valid memories
    are dropped (logged by id, never by content)."""
    records = list({r["id"]: r for r in records if _well_formed(r)}.values())
    proposals = [r for r in records if isinstance(r.get("procedure"), dict)]
    records = [r for r in records if not isinstance(r.get("procedure"), dict)]
    new, confirmed = app.procedures.capture_proposals([(p, provenance(p)) for p in proposals]) if proposals else (0, 0)
    return Stored(new + _store_memories(app, records), confirmed)


def _store_memories(app: Any, records: list[dict[str, Any]]) -> int:
    if not records:
        return 0
    store = app.resources.store()
    known = {r.id for r in store.get_many([r["id"] for r in records])}
    records = [r for r in records if r["id"] not in known]
    if not records:
        return 0
    built = _build(app, records)
    if not built:
        return 0
    with store.exclusive():  # nothing lands between the check and the write
        known = {r.id for r in store.get_many([r.id for r in built])}
        built = [r for r in built if r.id not in known]
        if built:
            app.memory.store_records(built)
    return len(built)


def _build(app: Any, records: list[dict[str, Any]]) -> list:
    """Validated, embedded MemoryRecords carrying the spool ids (one embedding call)."""
    memory = app.memory
    items = [new_memory(r) for r in records]
    try:
        built = memory.build_records(items, source=SOURCE)
        kept = records
    except ValidationError:
        built, kept = [], []
        for record, item in zip(records, items):
            try:
                built += memory.build_records([item], source=SOURCE)
                kept.append(record)
            except ValidationError as exc:
                log.warning("dropping captured memory %s: %s", record["id"], exc.message)
    for memory_record, record in zip(built, kept, strict=True):
        memory_record.id = record["id"]
        memory_record.provenance = provenance(record)  # one embedding call for the batch, origins per record
    bundled = getattr(getattr(app.resources, "settings", None), "embedding_model", BUNDLED_MODEL) == BUNDLED_MODEL
    return [r for r, record in zip(built, kept, strict=True) if _admitted(r, record, bundled)]


def _admitted(memory_record: Any, record: dict[str, Any], bundled: bool) -> bool:
    """A candidate statement (a turn the rules left) is stored only when the classifier finds it
    worth keeping (memorable.ADMIT), which needs the bundled model's vectors; everything else the
    rules chose is stored."""
    tags = record.get("tags") or []
    candidate = next((t for t in tags if t.startswith("candidate")), None)
    if candidate is None:
        return True
    if not bundled or memory_record.vector is None or not memorable.available():
        return False
    answer = candidate.endswith("-answer")
    chance = memorable.probability(memory_record.vector, record["content"], record.get("speaker") or "", answer)
    return chance is not None and chance >= memorable.ADMIT


# Captures are statements found in a session, as extract finds them in a text.
SOURCE = "extracted"
VIA = "hook"
# Retention (docs/CAPTURE.md): what a session established - what the person said, the assistant's
# answers and conclusions, fixes, edits, the session's summary - is a fact and does not expire by
# default; what only narrates the session's course - a failed command, a command run - is a
# conversation memory and expires after conversation_ttl_days unless pinned.
TRANSIENT_KINDS = frozenset({"command_failed", "command"})


def memory_type_of(record: dict[str, Any]) -> str:
    kind = (record.get("metadata") or {}).get("capture_kind")
    return "conversation" if kind in TRANSIENT_KINDS or kind is None else "fact"


def _well_formed(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("content"), str)
        and isinstance(record.get("namespace"), str)
    )

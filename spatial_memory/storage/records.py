"""The memory row as the store holds it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

SOURCES = ("manual", "extracted", "consolidated", "imported")


@dataclass
class Conversation:
    """Where a memory sits in a conversation, all optional: the session (conversation or episode)
    it belongs to, its order within it, who said or wrote it, and when it happened (distinct from
    when it was stored, e.g. for an imported old conversation)."""

    session_id: str | None = None
    sequence: int | None = None
    speaker: str | None = None
    occurred_at: datetime | None = None


@dataclass
class NewMemory:
    """A memory a client asked to store, before validation."""

    content: str
    namespace: str = "default"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    metadata: dict[str, Any] = field(default_factory=dict)
    conversation: Conversation = field(default_factory=Conversation)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime | None) -> datetime:
    """The moment in UTC (naive = UTC); now when None."""
    moment = moment or utc_now()
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def new_id() -> str:
    return str(uuid.uuid4())


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except (ValueError, AttributeError, TypeError):
        return False


def iso(value: datetime) -> str:
    """ISO 8601 in UTC with a Z suffix."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class MemoryRecord:
    id: str
    content: str
    namespace: str = "default"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    source: str = "manual"
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=utc_now)
    updated_at: datetime = field(default_factory=utc_now)
    last_accessed: datetime = field(default_factory=utc_now)
    access_count: int = 0
    conversation: Conversation = field(default_factory=Conversation)
    vector: Any = None  # np.ndarray (float32, unit norm) when loaded

    def summary(self) -> dict[str, Any]:
        """The standard memory fields tools return."""
        c = self.conversation
        return {
            "id": self.id,
            "content": self.content,
            "namespace": self.namespace,
            "tags": list(self.tags),
            "importance": round(float(self.importance), 6),
            "created_at": iso(self.created_at),
            "metadata": self.metadata,
            "session_id": c.session_id,
            "sequence": c.sequence,
            "speaker": c.speaker,
            "occurred_at": iso(c.occurred_at) if c.occurred_at is not None else None,
        }


@dataclass
class ScoredMemory:
    record: MemoryRecord
    similarity: float

"""The memory row as the store holds it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, NamedTuple

SOURCES = ("manual", "extracted", "consolidated", "imported")
# What a memory is, and so when it expires by default (Settings: conversation_ttl_days,
# context_ttl_hours): facts never, conversation turns after a month, working context at the
# end of the day. An explicit expires_at wins; pinned memories never expire. A procedure (how a
# task is done, services/procedures.py) never expires; only its own tools write one.
MEMORY_TYPES = ("fact", "conversation", "context", "procedure")
DEFAULT_MEMORY_TYPE = "fact"
# The paths that write a memory, as its provenance records them.
WRITERS = (
    "remember",
    "remember_batch",
    "extract",
    "import",
    "consolidate",
    "update",
    "revert",
    "supersede",
    "hook",
    "build_skill",
    "execute_skill",
    "deprecate_skill",
    "distill",
    "backfill",
)


class ContentMatch(NamedTuple):
    """A stored memory near a vector as the write checks read it (id, cosine similarity, content,
    namespace), without the rest of its record."""

    id: str
    similarity: float
    content: str
    namespace: str


@dataclass
class Conversation:
    """Where a memory sits in a conversation, all optional: the session (conversation or episode)
    it belongs to, its order within it, who said or wrote it, and when it happened (distinct from
    when it was stored, e.g. for an imported old conversation)."""

    session_id: str | None = None
    sequence: int | None = None
    speaker: str | None = None
    occurred_at: datetime | None = None


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: the path that wrote it (one of WRITERS), the MCP client that
    asked (name and version from `initialize`), its conversation session when given, and for a
    derived memory (extracted, consolidated, superseding) the ids it came from."""

    via: str = "remember"
    client: str | None = None
    client_version: str | None = None
    session_id: str | None = None
    derived_from: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "via": self.via,
            "client": self.client,
            "client_version": self.client_version,
            "session_id": self.session_id,
            "derived_from": list(self.derived_from),
        }

    @classmethod
    def from_dict(cls, value: Any) -> Provenance | None:
        if not isinstance(value, dict) or not isinstance(value.get("via"), str):
            return None
        text = lambda key: value[key] if isinstance(value.get(key), str) else None  # noqa: E731
        derived = value.get("derived_from")
        return cls(
            via=value["via"],
            client=text("client"),
            client_version=text("client_version"),
            session_id=text("session_id"),
            derived_from=tuple(i for i in derived if isinstance(i, str)) if isinstance(derived, list) else (),
        )

    def but(self, **changes: Any) -> Provenance:
        return replace(self, **changes)


@dataclass
class NewMemory:
    """A memory a client asked to store, before validation."""

    content: str
    namespace: str = "default"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    metadata: dict[str, Any] = field(default_factory=dict)
    conversation: Conversation = field(default_factory=Conversation)
    memory_type: str | None = None  # None: DEFAULT_MEMORY_TYPE
    expires_at: datetime | None = None  # None: the type's default
    pinned: bool = False


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
    memory_type: str = DEFAULT_MEMORY_TYPE
    expires_at: datetime | None = None
    pinned: bool = False
    version: int = 1  # 1 when written, +1 at each update_memory
    provenance: Provenance | None = None  # None for memories written before provenance existed
    vector: Any = None  # np.ndarray (float32, unit norm) when loaded

    def expired(self, now: datetime) -> bool:
        """Past its expiry (pinned memories never are)."""
        return not self.pinned and self.expires_at is not None and self.expires_at <= now

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
            "pinned": bool(self.pinned),
        }


@dataclass
class ScoredMemory:
    record: MemoryRecord
    similarity: float

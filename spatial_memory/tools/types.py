"""The argument types tools share: static `Annotated` types whose constraints become the JSON
schema a client reads. Limits come from limits.py; a `SettingLimit` among them is replaced with
the setting's value when a server builds its tools (registry.py). Words are short on purpose: a
tool's description says what its parameters are for (every client sends them to the model).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..limits import (
    DUPLICATE_SIMILARITY,
    MAX_BATCH,
    MAX_CONTENT,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAMESPACE_CHARS,
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from ..services.recall_filters import NamespaceFilter as NamespaceFilter
from ..storage.records import Conversation, NewMemory

MemoryId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
MemoryIds = Annotated[list[MemoryId], Field(min_length=1), MAX_BATCH]
Namespace = Annotated[str, Field(min_length=1), MAX_NAMESPACE_CHARS]
Content = Annotated[str, Field(min_length=1), MAX_CONTENT]
Tags = Annotated[list[Annotated[str, MAX_TAG_CHARS]], MAX_TAGS] | None
Importance = Annotated[float, Field(ge=0, le=1)]
Metadata = dict[str, Any] | None
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
Limit = Annotated[int, Field(ge=1, le=MAX_RESULTS)]
Similarity = Annotated[float, Field(ge=0, le=1)]
DedupThreshold = Annotated[float, Field(ge=DUPLICATE_SIMILARITY[0], le=DUPLICATE_SIMILARITY[1])]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)] | None
Position = Annotated[int, Field(ge=0)] | None
MemoryType = Literal["fact", "conversation", "context"] | None
OnDuplicate = Annotated[
    Literal["store", "skip", "supersede"],
    Field(description="If a near-duplicate is stored: store anyway, skip, or supersede the look-alikes."),
]
DryRun = Annotated[bool, Field(description="Preview only; false applies.")]


class MemoryInput(BaseModel):
    """A memory to store: remember's arguments, one item of remember_batch (unknown keys refused)."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    namespace: Namespace = "default"
    tags: Tags = None
    importance: Importance = 0.5
    metadata: Metadata = None
    session_id: Label = None
    sequence: Position = None
    speaker: Label = None
    occurred_at: datetime | None = None
    memory_type: MemoryType = None
    expires_at: datetime | None = None
    pinned: bool | None = None

    def new_memory(self) -> NewMemory:
        return NewMemory(
            content=self.content,
            namespace=self.namespace,
            tags=list(self.tags or []),
            importance=self.importance,
            metadata=dict(self.metadata or {}),
            conversation=Conversation(
                session_id=self.session_id,
                sequence=self.sequence,
                speaker=self.speaker,
                occurred_at=self.occurred_at,
            ),
            memory_type=self.memory_type,
            expires_at=self.expires_at,
            pinned=bool(self.pinned),
        )

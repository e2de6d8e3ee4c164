"""The argument types tools share: static `Annotated` types whose constraints become the JSON
schema a client reads. Limits come from limits.py; a `SettingLimit` among them is replaced with
the setting's value when a server builds its tools (registry.py).

Every client sends the input schemas to the model in every conversation, so they list what
changes what a model should send: types, choices, defaults, ranges of numbers and every limit a
user can set. Fixed guards against oversized or empty strings (ids, labels, queries, paths) are
`Unlisted`: enforced all the same, and named in the error a call that breaks one gets. A tool's
description says what its parameters are for; a parameter has words of its own only when shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core.core_schema import CoreSchema

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
from ..records import Conversation, NewMemory
from ..services.recall_filters import NamespaceFilter as NamespaceFilter

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context as SdkContext

    from ..app import App

    # A tool's context: its lifespan context is the server's App (server/app.py's typed lifespan).
    Context: TypeAlias = SdkContext[App, Any]
else:
    # At run time the SDK's class itself: the SDK finds a tool's context parameter by it.
    from mcp.server.mcpserver import Context as Context


@dataclass(frozen=True)
class Unlisted:
    """A string that must not be empty nor longer than `max_length`: validated as pydantic's own
    min_length/max_length (the same errors), left out of the JSON schema."""

    max_length: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        limits = {"min_length": 1} if self.max_length is None else {"min_length": 1, "max_length": self.max_length}
        return cast(CoreSchema, {**handler(source), **limits})

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        mine = {"minLength": 1, "maxLength": self.max_length}
        # A limit set on top (a setting's, limits.py) differs from this guard's and stays listed.
        return {k: v for k, v in schema.items() if k not in mine or mine[k] != v}


@dataclass(frozen=True)
class IdArgument:
    """Marks a memory id parameter: a short id (its start, as results show ids) is resolved to the
    full id before the tool runs (registry.py, calls.full_ids). Not part of the JSON schema."""


Text = Annotated[str, Unlisted()]
MemoryId = Annotated[str, Unlisted(MAX_ID_CHARS), IdArgument()]
MemoryIds = Annotated[list[MemoryId], Field(min_length=1), MAX_BATCH]
Namespace = Annotated[Text, MAX_NAMESPACE_CHARS]
Content = Annotated[Text, MAX_CONTENT]
Tags = Annotated[list[Annotated[str, MAX_TAG_CHARS]], MAX_TAGS] | None
Importance = Annotated[float, Field(ge=0, le=1)]
Metadata = dict[str, Any] | None
Query = Annotated[str, Unlisted(MAX_QUERY_CHARS)]
Limit = Annotated[int, Field(ge=1, le=MAX_RESULTS)]
Similarity = Annotated[float, Field(ge=0, le=1)]
DedupThreshold = Annotated[float, Field(ge=DUPLICATE_SIMILARITY[0], le=DUPLICATE_SIMILARITY[1])]
Label = Annotated[str, Unlisted(MAX_LABEL_CHARS)] | None
Position = Annotated[int, Field(ge=0)] | None
MemoryType = Literal["fact", "conversation", "context"] | None
OnDuplicate = Literal["store", "skip", "supersede"]


class MemoryInput(BaseModel):
    # A memory to store: remember's arguments, one item of remember_batch (unknown keys refused).
    # No docstring: it would be the items' description in remember_batch's schema.
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

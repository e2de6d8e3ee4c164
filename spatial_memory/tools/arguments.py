"""The tools' argument types, built from the settings.

Every limit a client reads in a tool's input schema comes from the same setting the services
enforce (one source): raising SPATIAL_MEMORY_MAX_CONTENT_LENGTH raises both.
"""

# No `from __future__ import annotations` in the tool modules: their signatures refer to the
# types built here per server, so annotations must be evaluated when the tools are defined.
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from ..config import Settings
from ..limits import DUPLICATE_SIMILARITY, MAX_ID_CHARS, MAX_QUERY_CHARS, MAX_RESULTS
from ..storage.filters import end_of_day_if_date
from ..storage.records import Conversation, NewMemory
from ..validation import MAX_LABEL_CHARS

FILTERS_DESCRIPTION = (
    "Conditions combined with AND: {column: value} for equality or {column: {op: value}} with op in "
    "eq, ne, gt, gte, lt, lte, in, nin, contains. Columns: id, content, namespace, tags, importance, source, "
    "created_at, updated_at, last_accessed, access_count, session_id, sequence, speaker, occurred_at, memory_type, "
    "expires_at, version, or metadata.<key>."
)


class MemoryFields(BaseModel):
    """The fields of a memory to store (remember's arguments, remember_batch's items)."""

    def new_memory(self) -> NewMemory:
        fields: Any = self
        return NewMemory(
            content=fields.content,
            namespace=fields.namespace,
            tags=list(fields.tags or []),
            importance=fields.importance,
            metadata=dict(fields.metadata or {}),
            conversation=Conversation(
                session_id=fields.session_id,
                sequence=fields.sequence,
                speaker=fields.speaker,
                occurred_at=fields.occurred_at,
            ),
            memory_type=fields.memory_type,
            expires_at=fields.expires_at,
            pinned=bool(fields.pinned),
        )


@dataclass(frozen=True)
class Arguments:
    """Annotated argument types shared by the tools of one server."""

    memory_id: Any
    namespace: Any
    namespace_filter: Any
    content: Any
    tags: Any
    tag_filter: Any
    importance: Any
    metadata: Any
    query: Any
    limit: Any
    min_similarity: Any
    filters: Any
    dedup_threshold: Any
    session_id: Any
    sequence: Any
    speaker: Any
    occurred_at: Any
    since: Any
    until: Any
    as_of: Any
    memory_type: Any
    expires_at: Any
    pinned: Any
    on_duplicate: Any
    memory_ids: Any
    memory_input: type[MemoryFields]
    max_batch: int
    max_namespace: int


def build_arguments(settings: Settings) -> Arguments:
    namespace_chars = settings.max_namespace_length
    content = Annotated[
        str,
        Field(
            min_length=1,
            max_length=settings.max_content_length,
            description=f"The text to remember (at most {settings.max_content_length:,} characters).",
        ),
    ]
    namespace = Annotated[str, Field(min_length=1, max_length=namespace_chars, description="Namespace name.")]
    tags = Annotated[
        list[Annotated[str, Field(max_length=settings.max_tag_length)]] | None,
        Field(max_length=settings.max_tags, description="Tags."),
    ]
    importance = Annotated[float, Field(ge=0.0, le=1.0, description="Importance from 0.0 to 1.0.")]
    metadata = Annotated[dict[str, Any] | None, Field(description="Arbitrary JSON metadata.")]
    label = {"min_length": 1, "max_length": MAX_LABEL_CHARS}
    session_id = Annotated[
        str | None, Field(**label, description="The conversation or episode it belongs to (optional).")
    ]
    sequence = Annotated[
        int | None,
        Field(ge=0, description="Its order within the session (default: after the session's last memory)."),
    ]
    speaker = Annotated[str | None, Field(**label, description="Who said or wrote it (optional).")]
    occurred_at = Annotated[
        datetime | None,
        Field(description="When it happened, ISO 8601 (optional; e.g. for an old conversation; UTC if no zone)."),
    ]
    memory_type = Annotated[
        Literal["fact", "conversation", "context"] | None,
        Field(
            description=f"fact (default: never expires), conversation (expires after "
            f"{settings.conversation_ttl_days:g} days) or context (expires at the end of the day)."
        ),
    ]
    expires_at = Annotated[datetime | None, Field(description="Explicit expiry, ISO 8601 (overrides the type's).")]
    pinned = Annotated[
        bool | None, Field(description="Pinned: recall always lists it first (a profile, standing instructions).")
    ]
    # One item of remember_batch: refuses unknown keys like the tools themselves.
    memory_input = create_model(
        "MemoryInput",
        __base__=MemoryFields,
        __config__=ConfigDict(extra="forbid"),
        content=(content, ...),
        namespace=(namespace, "default"),
        tags=(tags, None),
        importance=(importance, 0.5),
        metadata=(metadata, None),
        session_id=(session_id, None),
        sequence=(sequence, None),
        speaker=(speaker, None),
        occurred_at=(occurred_at, None),
        memory_type=(memory_type, None),
        expires_at=(expires_at, None),
        pinned=(pinned, None),
    )
    low, high = DUPLICATE_SIMILARITY
    return Arguments(
        memory_id=Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, description="Memory UUID.")],
        namespace=namespace,
        namespace_filter=Annotated[
            str | None, Field(max_length=namespace_chars, description="Only memories in this namespace.")
        ],
        content=content,
        tags=tags,
        tag_filter=Annotated[
            list[str] | None, Field(max_length=settings.max_tags, description="Only memories with any of these tags.")
        ],
        importance=importance,
        metadata=metadata,
        query=Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to search for.")],
        limit=Annotated[int, Field(ge=1, le=MAX_RESULTS, description=f"Maximum number of results (1-{MAX_RESULTS}).")],
        min_similarity=Annotated[float, Field(ge=0.0, le=1.0, description="Minimum cosine similarity (0.0-1.0).")],
        filters=Annotated[dict[str, Any] | None, Field(description=FILTERS_DESCRIPTION)],
        dedup_threshold=Annotated[
            float,
            Field(
                ge=low,
                le=high,
                description=f"Cosine similarity from which a record counts as a duplicate ({low}-{high}).",
            ),
        ],
        session_id=session_id,
        sequence=sequence,
        speaker=speaker,
        occurred_at=occurred_at,
        since=Annotated[
            datetime | None,
            Field(description="Only memories that happened at or after this time (occurred_at, else created_at)."),
        ],
        until=Annotated[
            datetime | None,
            BeforeValidator(end_of_day_if_date),
            Field(
                description="Only memories that happened at or before this time (occurred_at, else created_at); "
                "a date alone (YYYY-MM-DD) includes that whole day."
            ),
        ],
        as_of=Annotated[
            datetime | None,
            Field(description="Answer with the memories current at this time (versions then, superseded ones)."),
        ],
        memory_type=memory_type,
        expires_at=expires_at,
        pinned=pinned,
        on_duplicate=Annotated[
            Literal["store", "skip", "supersede"],
            Field(
                description="When a near-duplicate is already stored: store anyway (default), skip, or supersede "
                "the look-alikes (duplicates and contradictions)."
            ),
        ],
        memory_ids=Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]],
            Field(min_length=1, max_length=settings.max_batch_size, description="Memory UUIDs."),
        ],
        memory_input=memory_input,
        max_batch=settings.max_batch_size,
        max_namespace=namespace_chars,
    )

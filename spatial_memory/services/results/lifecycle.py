"""The results of decay, reinforce, extract and consolidate."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DecayedMemory(BaseModel):
    id: str
    content_preview: str = Field(description="The first 100 characters of the content.")
    old_importance: float
    new_importance: float
    decay_factor: float = Field(description="Value of the decay curve at days_since_access (1.0 = no decay).")
    days_since_access: float = Field(description="Days since the memory was last accessed (or created).")
    access_count: int


class DecayResult(BaseModel):
    memories_analyzed: int
    memories_decayed: int = Field(
        description="Memories whose importance drops (or would drop, in a dry run); drops under 0.001 are ignored."
    )
    avg_decay_factor: float = Field(description="Mean decay_factor over the decayed memories (1.0 if none).")
    decayed_memories: list[DecayedMemory] = Field(
        description="The decayed memories, largest importance drop first (at most 100; see details_truncated)."
    )
    dry_run: bool
    details_truncated: bool = Field(default=False, description="True when decayed_memories lists only the first 100.")


class ReinforcedMemory(BaseModel):
    id: str
    content_preview: str
    old_importance: float
    new_importance: float
    boost_applied: float = Field(description="new_importance - old_importance, after clamping to 0-1.")


class ReinforceResult(BaseModel):
    memories_reinforced: int
    avg_boost: float
    reinforced: list[ReinforcedMemory]
    not_found: list[str]


class Extraction(BaseModel):
    content: str
    confidence: float
    pattern_matched: str
    start_pos: int = Field(description="Start offset of the statement in the source text.")
    end_pos: int = Field(description="End offset (exclusive) of the statement in the source text.")
    stored: bool
    memory_id: str | None = Field(default=None, description="Id of the stored memory, when stored.")
    duplicate_of: str | None = Field(
        default=None, description="When skipped as a duplicate: the id of the existing (or just-stored) similar memory."
    )


class ExtractResult(BaseModel):
    candidates_found: int
    memories_created: int
    deduplicated_count: int
    extractions: list[Extraction]


class ConsolidationGroup(BaseModel):
    representative_id: str = Field(description="Id of the memory that is kept (holding the merged content).")
    member_ids: list[str] = Field(description="All members, the representative first.")
    avg_similarity: float
    action_taken: str = Field(
        description="merged (merge_content), deleted (keep_* strategies: the others were deleted), preview "
        "(dry run), or skipped (the merged memory would break a size limit; nothing changed)."
    )
    reason: str | None = Field(default=None, description="Why a group was skipped.")
    statement: str | None = Field(default=None, description="distill: the semantic memory the episodes become.")


class ConsolidateResult(BaseModel):
    groups_found: int = Field(description="Duplicate groups found in the namespace.")
    memories_merged: int = Field(description="Memories kept, one per processed group.")
    memories_deleted: int
    groups: list[ConsolidationGroup] = Field(description="The processed groups (at most max_groups), largest first.")
    dry_run: bool

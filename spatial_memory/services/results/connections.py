"""The results of relate, unrelate, discover_connections, corpus_bridges and health."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .memories import RelationItem


class HealthCheck(BaseModel):
    name: str
    status: str = Field(description="ok, warning or error.")
    message: str
    latency_ms: float


class HealthResult(BaseModel):
    status: str = Field(description="healthy, degraded (a warning) or unhealthy (an error).")
    ready: bool = Field(description="The store is open and the model loaded: a call waits for neither.")
    alive: bool
    version: str
    timestamp: str
    checks: list[HealthCheck] | None = Field(default=None, description="Each check (only with verbose).")


class Connection(BaseModel):
    id: str
    content: str
    namespace: str
    similarity: float = Field(description="Cosine similarity to the memory.")
    score: float = Field(description="What connections are ordered by: similarity plus shared terms.")
    shared_terms: list[str]
    relations: list[str] = Field(default_factory=list, description="Relations already linking the two.")


class DiscoverConnectionsResult(BaseModel):
    memory_id: str
    namespace: str
    connections: list[Connection]
    total: int


class BridgeEnd(BaseModel):
    id: str
    namespace: str
    content_preview: str


class Bridge(BaseModel):
    similarity: float
    a: BridgeEnd
    b: BridgeEnd


class CorpusBridgesResult(BaseModel):
    bridges: list[Bridge] = Field(description="Closest first.")
    total_bridges: int = Field(description="Pairs at or above min_similarity (bridges lists max_bridges of them).")
    memories_compared: int
    namespaces: list[str]


class RelateResult(BaseModel):
    relation: RelationItem
    created: bool = Field(description="False when the relation existed (its weight was updated).")


class UnrelateResult(BaseModel):
    removed: int
    relations: list[RelationItem]

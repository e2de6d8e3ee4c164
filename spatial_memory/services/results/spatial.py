"""The results of journey, wander, regions and visualize."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from .memories import MemoryItem
from .visibility import BY_ID, FOR_PROGRAMS


class PathMemory(BaseModel):
    id: str
    content: str
    namespace: str
    similarity: float = Field(description="Cosine similarity to this point of the path.")


class JourneyStep(BaseModel):
    step: int
    t: float
    position: list[float] | None = Field(
        default=None, description="The interpolated vector (only with include_positions)."
    )
    nearby_memories: list[PathMemory]
    distance_to_path: float = Field(description="Cosine distance from the nearest memory to this path point.")


class JourneyResult(BaseModel):
    start_id: str
    end_id: str
    steps: list[JourneyStep]
    path_coverage: float = Field(description="Fraction of steps with a memory within the coverage radius.")
    start_end_similarity: float
    coverage_similarity: float = Field(description="Similarity a memory needs to a path point to cover it.")


class WanderStep(BaseModel):
    step: int
    memory: MemoryItem
    similarity_to_previous: float
    selection_probability: float
    via: str | None = Field(default=None, description="relation:<label> when the step followed a relation.")


class WanderResult(BaseModel):
    start_id: str
    steps: list[WanderStep]
    total_distance: float = Field(description="Sum of cosine distances between consecutive memories.")
    ended_early: bool = False
    end_reason: str | None = None


class ClusterSample(BaseModel):
    id: str
    content: str
    similarity: Annotated[float, FOR_PROGRAMS] = Field(description="Cosine similarity to the cluster centroid.")


class Cluster(BaseModel):
    cluster_id: int
    size: int
    keywords: list[str]
    representative_memory: ClusterSample
    sample_memories: Annotated[list[ClusterSample], BY_ID] = Field(
        description="The members nearest the centroid after the representative."
    )
    coherence: Annotated[float, FOR_PROGRAMS]
    member_ids: list[str] | None = Field(default=None, description="Every member's id (only with include_members).")


class RegionsResult(BaseModel):
    clusters: list[Cluster]
    total_memories: int
    noise_count: int
    clustering_quality: float = Field(description="Silhouette score over clustered memories (-1 to 1).")
    sampled: bool = Field(default=False, description="True when a random sample of the namespace was analyzed.")
    note: str | None = Field(default=None, description="Why a small store's answer looks as it does, and what to do.")


class VisualNode(BaseModel):
    id: str
    x: float
    y: float
    z: float | None = None
    label: str
    cluster: int
    importance: float
    highlighted: bool = False
    tier: str | None = Field(default=None, description="working, episodic, semantic or procedural.")


class VisualEdge(BaseModel):
    from_id: str
    to_id: str
    weight: float


class VisualCluster(BaseModel):
    id: int
    label: str
    color: str
    size: int
    center_x: float
    center_y: float
    center_z: float | None = None


class VisualizeResult(BaseModel):
    format: str
    node_count: int
    nodes: list[VisualNode] | None = None
    edges: list[VisualEdge] | None = None
    clusters: list[VisualCluster] | None = None
    bounds: dict[str, float] | None = None
    output: str | None = Field(default=None, description="The mermaid or svg text (for those formats).")
    cached: bool = False

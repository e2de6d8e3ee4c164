"""visualize: project memories to 2-D/3-D (UMAP on cosine geometry) and draw them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import algorithms as alg
from ..errors import InsufficientMemoriesError, MemoryNotFoundError, VisualizationError
from ..records import MemoryRecord
from ..runtime.resources import Resources
from ..storage.filters import build_filter
from ..transport.progress import report_progress
from . import render
from .cache import VersionedCache
from .results import VisualCluster, VisualEdge, VisualizeResult, VisualNode
from .tiers import record_tiers

EDGE_NEIGHBORS = 3
MIN_EDGE_SIMILARITY = 0.3


def _select(records: list[MemoryRecord], limit: int, pinned: set[str]) -> list[MemoryRecord]:
    """At most `limit` memories: pinned (highlighted) first, then by importance, then recency."""
    if len(records) <= limit:
        return records
    ranked = sorted(records, key=lambda r: (r.id not in pinned, -r.importance, -r.created_at.timestamp()))
    return ranked[:limit]


# Progress of a drawing: the memories read, laid out (UMAP), clustered, then drawn.
DRAW_STEPS = 4


@dataclass(frozen=True)
class _Drawing:
    """A map before its format: what every format of the same selection shares."""

    nodes: list[VisualNode]
    edges: list[VisualEdge]
    clusters: list[VisualCluster]
    bounds: dict[str, float]
    contents: dict[str, str]


class VisualizationService:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources
        self._cache = VersionedCache()
        self._drawings = VersionedCache(size=4)
        self._projected = False

    @property
    def projection_ready(self) -> bool:
        """False until the map's code has been imported in this process (first call, or the warm-up)."""
        return self._projected or self._resources.projection_warm

    def visualize(
        self,
        *,
        memory_ids: list[str] | None = None,
        namespace: str | None = None,
        format: str = "json",
        dimensions: int = 2,
        include_edges: bool = True,
        max_memories: int = 500,
        highlight_ids: list[str] | None = None,
    ) -> VisualizeResult:
        store = self._resources.store()
        highlights = set(highlight_ids or [])
        # One drawing per store state and selection, whatever the format: the layout and the
        # clustering are the slow part, and a client often asks for json, then svg.
        drawing_key = (
            store.data_version,
            tuple(memory_ids) if memory_ids is not None else None,
            namespace,
            dimensions,
            include_edges,
            max_memories,
            tuple(sorted(highlights)),
        )
        key = (*drawing_key, format)
        cached = self._cache.get(key)
        if cached is not None:
            return cached.model_copy(update={"cached": True})
        drawing = self._drawings.get(drawing_key)
        if drawing is None:
            drawing = self._draw(store, memory_ids, namespace, dimensions, include_edges, max_memories, highlights)
            self._drawings.put(drawing_key, drawing)

        nodes, edges, clusters = drawing.nodes, drawing.edges, drawing.clusters
        if format == "json":
            result = VisualizeResult(
                format="json", node_count=len(nodes), nodes=nodes, edges=edges, clusters=clusters, bounds=drawing.bounds
            )
        elif format == "mermaid":
            result = VisualizeResult(
                format="mermaid", node_count=len(nodes), output=render.mermaid(nodes, edges, clusters)
            )
        else:
            result = VisualizeResult(
                format="svg",
                node_count=len(nodes),
                output=render.svg(nodes, edges, clusters, contents=drawing.contents),
            )
        self._cache.put(key, result)
        return result

    def _draw(
        self,
        store,
        memory_ids: list[str] | None,
        namespace: str | None,
        dimensions: int,
        include_edges: bool,
        max_memories: int,
        highlights: set[str],
    ) -> _Drawing:
        if memory_ids:
            records = store.get_many(memory_ids, with_vectors=True)
            if not records:
                raise MemoryNotFoundError("None of the memory_ids exist. Use recall to find memory ids.")
        else:
            records = store.scan(build_filter(namespace=namespace), with_vectors=True)
        report_progress(1, DRAW_STEPS, "memories read", source="steps")
        if not records:
            where = f" in namespace '{namespace}'" if namespace else ""
            raise InsufficientMemoriesError(f"visualize needs at least 1 memory{where}; found 0")
        records = _select(records, max_memories, highlights)
        vectors = np.stack([r.vector for r in records])

        try:
            coords = alg.normalize_coordinates(alg.project(vectors, dimensions))
            self._projected = True
            report_progress(2, DRAW_STEPS, "laid out", source="steps")
            labels = alg.find_regions(vectors, 3)[0]
        except Exception as exc:
            raise VisualizationError(f"projection failed: {exc}") from exc
        report_progress(3, DRAW_STEPS, "clustered", source="steps")

        tiers = record_tiers(records, self._resources.clock())
        nodes = [
            VisualNode(
                id=r.id,
                x=round(float(coords[i, 0]), 5),
                y=round(float(coords[i, 1]), 5) if dimensions > 1 else 0.0,
                z=round(float(coords[i, 2]), 5) if dimensions > 2 else None,
                label=render.truncate(r.content, 60),
                cluster=int(labels[i]),
                importance=round(float(r.importance), 4),
                highlighted=r.id in highlights,
                tier=tiers[i],
            )
            for i, r in enumerate(records)
        ]
        bounds = {
            "x_min": float(coords[:, 0].min()),
            "x_max": float(coords[:, 0].max()),
            "y_min": float(coords[:, 1].min()) if dimensions > 1 else 0.0,
            "y_max": float(coords[:, 1].max()) if dimensions > 1 else 0.0,
        }
        if dimensions > 2:
            bounds |= {"z_min": float(coords[:, 2].min()), "z_max": float(coords[:, 2].max())}
        return _Drawing(
            nodes=nodes,
            edges=self._edges(records, vectors) if include_edges else [],
            clusters=self._clusters(records, labels, coords, dimensions),
            bounds=bounds,
            contents={r.id: r.content for r in records},
        )

    def _clusters(
        self, records: list[MemoryRecord], labels: np.ndarray, coords: np.ndarray, dimensions: int
    ) -> list[VisualCluster]:
        ids = sorted(set(labels.tolist()) - {-1})
        keywords = alg.class_tfidf_keywords(
            [[records[i].content for i in np.flatnonzero(labels == c)] for c in ids], top_n=3
        )
        clusters = []
        for c, words in zip(ids, keywords):
            members = labels == c
            center = coords[members].mean(axis=0)
            clusters.append(
                VisualCluster(
                    id=c,
                    label=", ".join(words[:3]) or f"region {c}",
                    color=render.cluster_color(c),
                    size=int(members.sum()),
                    center_x=round(float(center[0]), 5),
                    center_y=round(float(center[1]), 5) if dimensions > 1 else 0.0,
                    center_z=round(float(center[2]), 5) if dimensions > 2 else None,
                )
            )
        return clusters

    def _edges(self, records: list[MemoryRecord], vectors: np.ndarray) -> list[VisualEdge]:
        """Each memory's strongest links, deduplicated and capped at 2 per node overall."""
        if len(records) < 2:
            return []
        indices, sims = alg.cosine_knn(vectors, EDGE_NEIGHBORS)
        pairs: dict[tuple[int, int], float] = {}
        for i in range(len(records)):
            for j, s in zip(indices[i], sims[i]):
                if s >= MIN_EDGE_SIMILARITY:
                    pairs[(min(i, int(j)), max(i, int(j)))] = float(s)
        strongest = sorted(pairs.items(), key=lambda kv: -kv[1])[: 2 * len(records)]
        return [
            VisualEdge(from_id=records[a].id, to_id=records[b].id, weight=round(min(1.0, w), 4))
            for (a, b), w in strongest
        ]

"""Spatial navigation: journey (SLERP paths), wander (random walks) and regions (clusters)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import algorithms as alg
from .. import validation as check
from ..errors import (
    JourneyError,
    MemoryNotFoundError,
    ValidationError,
    WanderError,
)
from ..records import MemoryRecord, ScoredMemory
from ..runtime.resources import Resources
from ..storage.filters import both, build_filter
from .cache import VersionedCache
from .results import (
    Cluster,
    ClusterSample,
    JourneyResult,
    JourneyStep,
    MemoryItem,
    PathMemory,
    RegionsResult,
    WanderResult,
    WanderStep,
)

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

# A path point counts as covered when a memory lies this close to it. For MiniLM,
# sentences on the same subject are typically above 0.5 and paraphrases above 0.8.
COVERAGE_SIMILARITY = 0.6
WANDER_CANDIDATES = 10
REGION_SAMPLES = 3
MAX_REGION_MEMORIES = 20_000


def _path_memory(hit: ScoredMemory) -> PathMemory:
    r = hit.record
    return PathMemory(id=r.id, content=r.content, namespace=r.namespace, similarity=round(hit.similarity, 6))


def _regions_note(memories: int, regions: int, min_size: int, grouped: bool, namespace: str | None) -> str | None:
    """What a small store's answer means, for the model to relay; None for an ordinary answer."""
    where = f" in namespace '{namespace}'" if namespace else ""
    if memories == 0:
        return f"No memories{where} yet: regions form once some are stored."
    if memories < min_size:
        return (
            f"Only {memories} memor{'y' if memories == 1 else 'ies'}{where}: a region needs at least {min_size} "
            "(min_cluster_size) memories on one topic. Store more, or ask again with a lower min_cluster_size."
        )
    if grouped and regions:
        return (
            f"A small store ({memories} memories{where}): these regions are groups of memories similar to each "
            "other, not yet dense topics; they firm up as memories are added. Memories outside them are noise."
        )
    if not regions:
        return (
            f"No region yet among {memories} memories{where}: no {min_size} or more of them (min_cluster_size) "
            "are on one topic. Regions appear as topics gather memories; a lower min_cluster_size finds smaller ones."
        )
    return None


class SpatialService:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources
        self._regions_cache = VersionedCache()

    def _fetch_with_vectors(self, ids: list[str]) -> dict[str, MemoryRecord]:
        return {r.id: r for r in self._resources.store().get_many(ids, with_vectors=True)}

    # ---- journey -----------------------------------------------------------------------

    def journey(
        self,
        start_id: str,
        end_id: str,
        *,
        steps: int = 10,
        namespace: str | None = None,
        neighbors_per_step: int = 3,
        include_positions: bool = False,
    ) -> JourneyResult:
        found = self._fetch_with_vectors([start_id, end_id])
        missing = [i for i in (start_id, end_id) if i not in found]
        if missing:
            raise MemoryNotFoundError(f"Memory not found: {', '.join(missing)}. Use recall to find memory ids.")
        v0, v1 = found[start_id].vector, found[end_id].vector
        try:
            ts = alg.interpolation_ts(steps)
            points = alg.slerp(v0, v1, ts)
        except ValueError as exc:
            raise JourneyError(f"cannot interpolate between these memories: {exc}") from exc
        store = self._resources.store()
        flt = build_filter(namespace=namespace)
        journey_steps = []
        covered = 0
        for i, (t, point) in enumerate(zip(ts, points)):
            hits = store.search(point, neighbors_per_step, flt)
            nearest = hits[0].similarity if hits else 0.0
            covered += nearest >= COVERAGE_SIMILARITY
            journey_steps.append(
                JourneyStep(
                    step=i,
                    t=round(float(t), 6),
                    position=[round(float(x), 6) for x in point] if include_positions else None,
                    nearby_memories=[_path_memory(h) for h in hits],
                    distance_to_path=round(1.0 - nearest, 6),
                )
            )
        return JourneyResult(
            start_id=start_id,
            end_id=end_id,
            steps=journey_steps,
            path_coverage=round(covered / len(journey_steps), 6),
            start_end_similarity=round(float(np.clip(np.dot(v0, v1), -1.0, 1.0)), 6),
            coverage_similarity=COVERAGE_SIMILARITY,
        )

    # ---- wander ------------------------------------------------------------------------

    def _wander_start(
        self, start_id: str | None, seed: str | None, namespace: str | None, rng: np.random.Generator
    ) -> tuple[MemoryRecord, float]:
        store = self._resources.store()
        flt = build_filter(namespace=namespace)
        if start_id is not None and seed is not None:
            raise ValidationError("give start_id or seed, not both")
        if start_id is not None:
            record = store.get(start_id, with_vector=True)
            if record is None:
                raise MemoryNotFoundError(f"Memory not found: {start_id}. Use recall to find memory ids.")
            return record, 1.0
        total = store.count(flt)
        if total == 0:
            where = f" in namespace '{namespace}'" if namespace else ""
            raise ValidationError(f"No memories available for wander{where}; remember something first")
        if seed is not None:
            check.query_text(seed, field="seed")
            hits = store.search(self._resources.embedder.embed_query(seed), 1, flt, with_vectors=True)
            return hits[0].record, hits[0].similarity
        record = store.nth(int(rng.integers(total)), flt, with_vector=True)
        if record is None:
            raise WanderError("the store changed while picking a random start; try again")
        return record, 1.0

    def wander(
        self,
        *,
        start_id: str | None = None,
        seed: str | None = None,
        steps: int = 10,
        temperature: float = 0.5,
        namespace: str | None = None,
        random_seed: int | None = None,
    ) -> WanderResult:
        if random_seed is not None and random_seed < 0:
            raise ValidationError("random_seed must be 0 or more")
        rng = np.random.default_rng(random_seed)
        current, start_similarity = self._wander_start(start_id, seed, namespace, rng)
        store = self._resources.store()
        flt = build_filter(namespace=namespace)
        visited = {current.id}
        walk = [
            WanderStep(
                step=0,
                memory=MemoryItem.of(ScoredMemory(current, start_similarity)),
                similarity_to_previous=1.0,
                selection_probability=1.0,
            )
        ]
        total_distance = 0.0
        end_reason = None
        for step in range(1, steps + 1):
            hits = store.search(current.vector, WANDER_CANDIDATES + len(visited), flt, with_vectors=True)
            candidates = [h for h in hits if h.record.id not in visited][:WANDER_CANDIDATES]
            # A related memory is a step too, at least as close as the relation's weight.
            related = self._related(store, current, flt, visited)
            pull = {h.record.id: h.similarity for h in candidates}
            for hit, weight, _via in related:
                if hit.record.id not in pull:
                    candidates.append(hit)
                pull[hit.record.id] = max(pull.get(hit.record.id, 0.0), weight, hit.similarity)
            vias = {hit.record.id: via for hit, _, via in related}
            if not candidates:
                end_reason = "no unvisited memories left to wander to"
                break
            scores = np.array([pull[h.record.id] for h in candidates])
            probabilities = alg.softmax_probabilities(scores, temperature)
            chosen = alg.choose(probabilities, rng)
            hit = candidates[chosen]
            total_distance += 1.0 - hit.similarity
            visited.add(hit.record.id)
            walk.append(
                WanderStep(
                    step=step,
                    memory=MemoryItem.of(hit),
                    similarity_to_previous=round(hit.similarity, 6),
                    selection_probability=round(float(probabilities[chosen]), 6),
                    via=vias.get(hit.record.id),
                )
            )
            current = hit.record
        return WanderResult(
            start_id=walk[0].memory.id,
            steps=walk,
            total_distance=round(total_distance, 6),
            ended_early=end_reason is not None,
            end_reason=end_reason,
        )

    @staticmethod
    def _related(store: Store, current, flt, visited: set[str]) -> list[tuple[ScoredMemory, float, str]]:
        """The unvisited memories related to `current` (either direction) under the filter: each
        with its similarity to it, the relation's weight and how it is linked."""
        links: dict[str, tuple[float, str]] = {}
        for r in store.relation_graph().of([current.id]):
            other, label = (
                (r.target_id, f"relation:{r.relation}")
                if r.source_id == current.id
                else (r.source_id, f"relation:{r.relation} (reverse)")
            )
            if other not in visited and r.weight > links.get(other, (0.0, ""))[0]:
                links[other] = (float(r.weight), label)
        if not links:
            return []
        records = store.scan(both(flt, build_filter(ids=list(links))), with_vectors=True)
        found = []
        for record in records:
            similarity = float(np.clip(np.dot(record.vector, current.vector), 0.0, 1.0))
            weight, via = links[record.id]
            found.append((ScoredMemory(record, similarity), weight, via))
        return found

    # ---- regions -----------------------------------------------------------------------

    def regions(
        self,
        *,
        namespace: str | None = None,
        min_cluster_size: int = 3,
        max_clusters: int | None = None,
        include_members: bool = False,
    ) -> RegionsResult:
        store = self._resources.store()
        key = (store.data_version, namespace, min_cluster_size, max_clusters, include_members)
        cached = self._regions_cache.get(key)
        if cached is not None:
            return cached
        flt = build_filter(namespace=namespace)
        records = store.scan(flt, with_vectors=True)
        sampled = len(records) > MAX_REGION_MEMORIES
        if sampled:
            keep = np.random.default_rng(0).choice(len(records), MAX_REGION_MEMORIES, replace=False)
            records = [records[i] for i in sorted(keep)]
        if records:
            vectors = np.stack([r.vector for r in records])
            found, grouped = alg.find_regions(vectors, min_cluster_size)
            labels = alg.limit_clusters(found, max_clusters)
        else:
            vectors, labels, grouped = np.zeros((0, 0)), np.zeros(0, dtype=np.int64), False
        cluster_ids = sorted(set(labels.tolist()) - {-1})
        keywords = alg.class_tfidf_keywords(
            [[records[i].content for i in np.flatnonzero(labels == c)] for c in cluster_ids], top_n=5
        )
        clusters = []
        for c, words in zip(cluster_ids, keywords):
            members = np.flatnonzero(labels == c)
            member_vectors = vectors[members]
            centroid = member_vectors.mean(axis=0)
            centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
            sims = member_vectors @ centroid
            order = np.argsort(-sims, kind="stable")
            samples = [
                ClusterSample(
                    id=records[members[j]].id,
                    content=records[members[j]].content,
                    similarity=round(float(sims[j]), 6),
                )
                for j in order[: REGION_SAMPLES + 1]
            ]
            clusters.append(
                Cluster(
                    cluster_id=c,
                    size=len(members),
                    keywords=words,
                    representative_memory=samples[0],
                    sample_memories=samples[1:],
                    coherence=round(alg.coherence(member_vectors), 6),
                    member_ids=[records[m].id for m in members] if include_members else None,
                )
            )
        regions = RegionsResult(
            clusters=clusters,
            total_memories=len(records),
            noise_count=int((labels == -1).sum()),
            clustering_quality=round(alg.silhouette(vectors, labels), 6) if len(records) > 1 else 0.0,
            sampled=sampled,
            note=_regions_note(len(records), len(clusters), min_cluster_size, grouped, namespace),
        )
        self._regions_cache.put(key, regions)
        return regions

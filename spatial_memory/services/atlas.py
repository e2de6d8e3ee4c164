"""The atlas's map: every readable memory placed on one 2-D layout, kept per data version.

A first map lays out at most LANDMARKS memories (a deterministic sample) with UMAP and clusters
them; every other memory is placed from its nearest landmarks (algorithms/placement.py) and takes
its nearest landmark's region. After a write, memories already on the map keep their places and
the new or re-embedded ones are placed from their neighbours on it, so the map does not move;
the layout is redone when placed points outnumber REPLACED_SHARE of the map. Closed (superseded)
memories are drawn beside their successor.

The layout of the whole store (not a team principal's part of it) is also kept on disk beside a
local store (`<path>/atlas/layout.npz`), so the first map after a restart places what changed
since instead of laying everything out again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from .. import algorithms as alg
from ..algorithms.placement import place
from ..records import DEFAULT_MEMORY_TYPE
from ..storage.search.blas import OneBlasThread
from . import render
from .base import Service

log = logging.getLogger(__name__)

LANDMARKS = 1_500
# Wider than visualize's 0.1: a person reads the map, and tight clumps hide their points.
MIN_DIST = 0.5
REPLACED_SHARE = 0.25
MIN_REGION = 5
LABEL_CHARS = 80
# What a hook's memories name as their writer (records.py's WRITERS; capture/records.py
# writes it, a layer above this one).
CAPTURED_BY = "hook"
# Flags of a point (AtlasMap.flags): bits a page can test.
PINNED, CAPTURED, REVISED = 1, 2, 4


class AtlasRegion(BaseModel):
    id: int
    label: str
    color: str
    size: int
    x: float
    y: float


class AtlasSuperseded(BaseModel):
    id: str
    label: str
    successor: str


class AtlasMap(BaseModel):
    """The map in columns (one entry per memory in each list): 10,000 memories in one compact answer.
    namespace, memory_type and session hold indices into namespaces, memory_types and sessions."""

    version: int
    layout: str = Field(description="laid out, placed (new memories placed from neighbours) or kept.")
    count: int
    ids: list[str]
    x: list[float]
    y: list[float]
    importance: list[float]
    region: list[int]
    flags: list[int] = Field(description="1 pinned, 2 captured by a hook, 4 edited (version > 1).")
    label: list[str]
    namespace: list[int]
    memory_type: list[int]
    session: list[int]
    tags: list[list[str]]
    created: list[int] = Field(description="Unix seconds.")
    namespaces: list[str]
    memory_types: list[str]
    sessions: list[str]
    regions: list[AtlasRegion]
    superseded: list[AtlasSuperseded]
    cached: bool = False


@dataclass
class _Layout:
    """One map: where each memory is, its region, and what it was when placed."""

    version: int
    ids: list[str]
    versions: list[int]
    coords: np.ndarray  # (n, 2) in [-1, 1]
    regions: np.ndarray  # (n,) region id, -1 for none
    region_labels: dict[int, str]
    placed: int = 0  # memories placed from neighbours since the layout
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {memory_id: i for i, memory_id in enumerate(self.ids)}


def _save(path: Path | None, layout: _Layout) -> None:
    """The layout to disk (written aside, then renamed in: a crash leaves the old file or none)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"layout-{os.getpid()}-{threading.get_ident()}.tmp.npz")
        np.savez(
            temporary,
            ids=np.array(layout.ids, dtype=np.str_),
            versions=np.array(layout.versions, dtype=np.int64),
            coords=layout.coords,
            regions=layout.regions,
            labels=np.array(json.dumps({str(k): v for k, v in layout.region_labels.items()})),
            meta=np.array([layout.version, layout.placed], dtype=np.int64),
        )
        os.replace(temporary, path)
    except OSError as exc:  # a map that is not kept on disk is still a map
        log.warning("could not keep the atlas layout in %s: %s", path, exc)


def _load(path: Path | None) -> _Layout | None:
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as saved:
            ids = saved["ids"].tolist()
            coords = saved["coords"].astype(np.float64)
            regions = saved["regions"].astype(np.int64)
            versions = saved["versions"].tolist()
            labels = {int(k): str(v) for k, v in json.loads(str(saved["labels"])).items()}
            version, placed = (int(v) for v in saved["meta"])
    except (OSError, ValueError, KeyError) as exc:
        log.warning("ignoring the atlas layout in %s: %s", path, exc)
        return None
    if not (len(ids) == len(versions) == len(coords) == len(regions)) or coords.shape[1:] != (2,):
        return None
    return _Layout(version, ids, versions, coords, regions, labels, placed=placed)


# The columns the map reads: no record objects are built for 10,000 rows (that was a second of a map).
COLUMNS = [
    "id", "content", "vector", "created_at", "importance", "namespace", "tags", "metadata",
    "session_id", "memory_type", "pinned", "version", "provenance",
]  # fmt: skip


@dataclass(slots=True)
class _Row:
    """What the map shows of a memory, read straight from its Arrow columns."""

    id: str
    version: int
    content: str
    namespace: str
    tags: list[str]
    importance: float
    memory_type: str
    pinned: bool
    session: str | None
    created: int
    captured: bool
    vector: np.ndarray


def _captured(metadata: str | None, provenance: str | None) -> bool:
    """Written by a hook: the provenance says so, or (captures before provenance) the metadata."""
    for text, key in ((provenance, "via"), (metadata, "captured_by")):
        if text and CAPTURED_BY in text:  # parse only the few that can say so
            try:
                if json.loads(text).get(key) == CAPTURED_BY:
                    return True
            except (ValueError, AttributeError):
                pass
    return False


def _rows(table) -> list[_Row]:
    n = table.num_rows
    if n == 0:
        return []
    vectors = table.column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(n, -1)
    created = table.column("created_at").combine_chunks()
    seconds = (created.cast("int64").to_numpy(zero_copy_only=False) // 1_000_000).tolist()
    columns = {name: table.column(name).to_pylist() for name in COLUMNS if name not in ("vector", "created_at")}
    return [
        _Row(
            id=columns["id"][i],
            version=columns["version"][i] or 1,
            content=columns["content"][i],
            namespace=columns["namespace"][i],
            tags=columns["tags"][i] or [],
            importance=float(columns["importance"][i]),
            memory_type=columns["memory_type"][i] or DEFAULT_MEMORY_TYPE,
            pinned=bool(columns["pinned"][i]),
            session=columns["session_id"][i],
            created=seconds[i],
            captured=_captured(columns["metadata"][i], columns["provenance"][i]),
            vector=matrix[i],
        )
        for i in range(n)
    ]


class AtlasService(Service):
    def __init__(self, resources) -> None:
        super().__init__(resources)
        self._layout: _Layout | None = None
        self._maps: tuple[int, AtlasMap] | None = None
        self._lock = threading.Lock()  # one layout at a time; a second caller waits and reuses it

    @property
    def _saved(self) -> Path | None:
        """Where the whole store's layout is kept: beside a local store, never for a principal."""
        path = self._settings.path
        if getattr(self._resources, "scope", None) is not None or not isinstance(path, Path):
            return None
        return path / "atlas" / "layout.npz"

    def map(self) -> AtlasMap:
        store = self._resources.store()
        version = store.data_version
        with self._lock:
            if self._maps is not None and self._maps[0] == version:
                return self._maps[1].model_copy(update={"cached": True})
            if self._layout is None:
                self._layout = _load(self._saved)
            records = _rows(store.scan_arrow(COLUMNS))
            # One BLAS thread: on a busy host a split product waits for a core (storage/search/blas.py,
            # docs/BENCHMARKS.md).
            with OneBlasThread()():
                layout, how = self._follow(records, version)
            if layout is not self._layout:
                _save(self._saved, layout)
            self._layout = layout
            result = self._result(records, layout, self._superseded(store, layout), how)
            self._maps = (version, result)
            return result

    def _follow(self, records: list[_Row], version: int) -> tuple[_Layout, str]:
        """The layout for these records: the last one with changes placed, or a new one."""
        old = self._layout
        if old is not None and records:
            kept = [r for r in records if r.id in old.index and old.versions[old.index[r.id]] == r.version]
            fresh = [r for r in records if not (r.id in old.index and old.versions[old.index[r.id]] == r.version)]
            if kept and old.placed + len(fresh) <= REPLACED_SHARE * len(records):
                return self._extend(old, kept, fresh, version), "placed" if fresh else "kept"
        return self._lay_out(records, version), "laid out"

    def _lay_out(self, records: list[_Row], version: int) -> _Layout:
        n = len(records)
        if n == 0:
            return _Layout(version, [], [], np.zeros((0, 2)), np.zeros(0, dtype=np.int64), {})
        unit = np.stack([r.vector for r in records]).astype(np.float32)
        sample = np.sort(np.random.default_rng(0).permutation(n)[:LANDMARKS]) if n > LANDMARKS else np.arange(n)
        coords = np.zeros((n, 2))
        regions = np.full(n, -1, dtype=np.int64)
        coords[sample] = alg.normalize_coordinates(alg.project(unit[sample], 2, min_dist=MIN_DIST))
        if len(sample) >= MIN_REGION:  # a small store gets the regions it has (find_regions)
            regions[sample] = alg.find_regions(unit[sample], MIN_REGION)[0]
        rest = np.setdiff1d(np.arange(n), sample)
        if len(rest):
            coords[rest], nearest = place(unit[rest], unit[sample], coords[sample])
            regions[rest] = regions[sample][nearest]
        # Keywords from the laid-out sample: the regions' words, at a fraction of the text to read.
        labels = self._region_labels([records[i] for i in sample], regions[sample])
        return _Layout(version, [r.id for r in records], [r.version for r in records], coords, regions, labels)

    def _extend(self, old: _Layout, kept: list[_Row], fresh: list[_Row], version: int) -> _Layout:
        at = np.array([old.index[r.id] for r in kept], dtype=np.int64)
        coords, regions = old.coords[at], old.regions[at]
        if fresh:
            anchors = np.stack([r.vector for r in kept]).astype(np.float32)
            new_unit = np.stack([r.vector for r in fresh]).astype(np.float32)
            new_coords, nearest = place(new_unit, anchors, coords, seed=version)
            coords = np.vstack([coords, new_coords])
            regions = np.concatenate([regions, regions[nearest]])
        records = [*kept, *fresh]
        return _Layout(
            version,
            [r.id for r in records],
            [r.version for r in records],
            coords,
            regions,
            old.region_labels,
            placed=old.placed + len(fresh),
        )

    def _region_labels(self, records: list[_Row], regions: np.ndarray) -> dict[int, str]:
        ids = sorted(set(regions.tolist()) - {-1})
        words = alg.class_tfidf_keywords(
            [[records[i].content for i in np.flatnonzero(regions == c)] for c in ids], top_n=3
        )
        return {c: ", ".join(w[:3]) or f"region {c}" for c, w in zip(ids, words)}

    def _superseded(self, store, layout: _Layout) -> list[AtlasSuperseded]:
        """Closed memories whose successor is on the map."""
        table = store.history_arrow(None)
        if table.num_rows == 0:
            return []
        rows = table.select(["id", "content", "superseded_by", "version"]).to_pylist()
        latest: dict[str, dict] = {}
        for row in rows:
            if row["superseded_by"] and row["superseded_by"] in layout.index and row["id"] not in layout.index:
                if row["id"] not in latest or row["version"] > latest[row["id"]]["version"]:
                    latest[row["id"]] = row
        return [
            AtlasSuperseded(id=r["id"], label=render.truncate(r["content"], LABEL_CHARS), successor=r["superseded_by"])
            for r in latest.values()
        ]

    def _result(self, records: list[_Row], layout: _Layout, superseded: list[AtlasSuperseded], how: str) -> AtlasMap:
        by_id = {r.id: r for r in records}
        ordered = [by_id[i] for i in layout.ids]
        namespaces = sorted({r.namespace for r in ordered})
        types = sorted({r.memory_type for r in ordered})
        sessions = sorted({r.session for r in ordered if r.session})
        ns_at = {name: i for i, name in enumerate(namespaces)}
        type_at = {name: i for i, name in enumerate(types)}
        session_at = {name: i for i, name in enumerate(sessions)}
        regions = []
        for c, label in sorted(layout.region_labels.items()):
            members = layout.regions == c
            if not members.any():
                continue
            centre = layout.coords[members].mean(axis=0)
            regions.append(
                AtlasRegion(
                    id=c,
                    label=label,
                    color=render.cluster_color(c),
                    size=int(members.sum()),
                    x=round(float(centre[0]), 4),
                    y=round(float(centre[1]), 4),
                )
            )
        return AtlasMap(
            version=layout.version,
            layout=how,
            count=len(ordered),
            ids=layout.ids,
            x=[round(float(v), 4) for v in layout.coords[:, 0]],
            y=[round(float(v), 4) for v in layout.coords[:, 1]],
            importance=[round(float(r.importance), 3) for r in ordered],
            region=layout.regions.tolist(),
            flags=[
                (PINNED if r.pinned else 0) | (CAPTURED if r.captured else 0) | (REVISED if r.version > 1 else 0)
                for r in ordered
            ],
            label=[render.truncate(r.content, LABEL_CHARS) for r in ordered],
            namespace=[ns_at[r.namespace] for r in ordered],
            memory_type=[type_at[r.memory_type] for r in ordered],
            session=[session_at[r.session] if r.session else -1 for r in ordered],
            tags=[list(r.tags) for r in ordered],
            created=[r.created for r in ordered],
            namespaces=namespaces,
            memory_types=types,
            sessions=sessions,
            regions=regions,
            superseded=superseded,
        )

"""Threshold decisions on int8-row are fp32's (embeddings/decisions.py): a similarity within the
measured band of its threshold is decided again on fp32 vectors, one outside it is not, and the
near-copy pairs of benchmarks/near_copies.py nearest the default thresholds are decided through the
services as fp32 decides them by cosine."""

from __future__ import annotations

import time

import numpy as np
import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.embeddings import EmbeddingRouter
from spatial_memory.embeddings.decisions import SAFETY, at_least, band_at, decide, load_shifts
from spatial_memory.evaluation.near_copies import pairs
from spatial_memory.server import create_server

from .conftest import data
from .hash_embedder import HashEmbedder


class _Reference:
    """An embedder whose reference vectors say every pair is identical, and counts what it is asked."""

    def __init__(self, band: float) -> None:
        self.band = band
        self.asked: list[list[str]] = []

    def decision_band(self, threshold: float) -> float:
        return self.band

    def reference_vectors(self, texts: list[str]) -> np.ndarray:
        self.asked.append(texts)
        return np.tile(np.eye(1, 4), (len(texts), 1))

    def decision_note(self) -> str:
        return ""


def test_only_similarities_within_the_band_are_decided_again():
    judge = _Reference(0.05)
    sims = [0.80, 0.86, 0.899, 0.96, 0.951]
    reached, decided = decide(judge, sims, 0.9, lambda i: (f"a{i}", f"b{i}"))
    # 0.86 and 0.899 are within 0.05 of 0.9: their reference cosine (1.0) decides; the rest as they are
    assert reached.tolist() == [False, True, True, True, True]
    assert decided.tolist() == [0.80, 1.0, 1.0, 0.96, 0.951]
    assert judge.asked == [["a1", "b1", "a2", "b2"]]
    # No band (fp32, another model, a test's embedder): compared as they are, nothing asked.
    assert at_least(_Reference(0.0), sims, 0.9, lambda i: pytest.fail("asked")).tolist() == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert at_least(object(), sims, 0.9, lambda i: pytest.fail("asked")).tolist() == [False, False, False, True, True]


def test_the_band_covers_every_measured_shift_near_the_threshold():
    shifts = load_shifts()
    maxima = {float(k): v for k, v in shifts["max_shift"].items()}
    assert shifts["pairs"] > 1_000_000 and max(maxima.values()) < shifts["near"]
    for threshold in (0.2, 0.5, 0.6, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99):
        near = [
            v
            for low, v in maxima.items()
            if low < threshold + shifts["near"] and low + shifts["bin"] > threshold - shifts["near"]
        ]
        assert band_at(shifts, threshold) == pytest.approx(SAFETY * max(near)), threshold
    assert band_at(shifts, -0.99) == pytest.approx(SAFETY * max(maxima.values()))  # not measured: the largest


@pytest.fixture(scope="module")
def paths(bundled_models):
    return {path: EmbeddingRouter(precision=path, cache_dir=bundled_models) for path in ("fp32", "int8-row")}


async def _decisions(root, embedder, corpus, chosen) -> list[tuple]:
    """Per chosen pair, through a server: consolidate's groups (both texts stored) and extract's
    duplicates (the second text extracted where the first is stored)."""
    out = []
    async with Client(create_server(Settings(path=root, preload=False), embedder=embedder)) as client:
        for i in chosen:
            a, b = corpus[i]
            memories = [{"content": a, "namespace": f"pair-{i}"}, {"content": b, "namespace": f"pair-{i}"}]
            data(await client.call_tool("remember_batch", {"memories": memories}))
            merged = data(await client.call_tool("consolidate", {"namespace": f"pair-{i}"}))
            assert "groups_found" in merged, merged
            data(await client.call_tool("remember", {"content": a, "namespace": f"extract-{i}"}))
            extracted = data(await client.call_tool("extract", {"text": b, "namespace": f"extract-{i}"}))
            out.append((merged["groups_found"], [e.get("duplicate_of") is not None for e in extracted["extractions"]]))
        out.append(data(await client.call_tool("health", {"verbose": True})))
    return out


@pytest.mark.model
@pytest.mark.anyio
async def test_extract_and_consolidate_decide_the_closest_pairs_as_fp32(tmp_path, paths):
    """The corpus pairs nearest remember's / extract's 0.9 and consolidate's 0.85 in fp32 (within
    the band, so decided again): a server on int8-row groups and deduplicates them as one on fp32."""
    corpus = [(a, b) for a, b, _ in pairs()]
    texts = list(dict.fromkeys(t for pair in corpus for t in pair))
    fp32 = dict(zip(texts, paths["fp32"].embed_documents(texts), strict=True))
    cosine = np.array([fp32[a] @ fp32[b] for a, b in corpus])
    chosen = sorted(set(np.argsort(np.abs(cosine - 0.9))[:5].tolist() + np.argsort(np.abs(cosine - 0.85))[:5].tolist()))
    row = paths["int8-row"]
    *mine, health = await _decisions(tmp_path / "row", row, corpus, chosen)
    *theirs, _ = await _decisions(tmp_path / "fp32", paths["fp32"], corpus, chosen)
    assert mine == theirs
    assert row.reference_asks > 0  # these pairs were within the band
    model = next(c for c in health["checks"] if c["name"] == "model")
    assert "decided on fp32 vectors" in model["message"], model


class _SaysAllAlike(HashEmbedder):
    """Hash vectors, and a 'reference path' that finds every two texts identical, with a band
    wider than any cosine: each site's decision is then the reference's, so a site that compares
    its own cosine with its threshold shows."""

    def __init__(self, band: float) -> None:
        super().__init__()
        self.band = band
        self.asked = 0

    def decision_band(self, threshold: float) -> float:
        return self.band

    def reference_vectors(self, texts: list[str]) -> np.ndarray:
        self.asked += 1
        return np.tile(np.eye(1, self.dimension, dtype=np.float32), (len(texts), 1))

    def decision_note(self) -> str:
        return ""


UNRELATED = ["The cat sleeps on the radiator.", "The hallway light flickers.", "Tulips need cold winters."]
SKILL = {
    "trajectory": [{"action": "Pin the random seed"}, {"action": "Run the flaky test 50 times"}],
    "outcome_score": 0.9,
    "domain": "coding",
    "trigger_pattern": "a test fails now and then",
}


@pytest.mark.anyio
@pytest.mark.parametrize("band", [0.0, 3.0])
async def test_every_write_decides_near_its_threshold_through_the_routine(tmp_path, band):
    """With a band every pair is decided again (here: found identical) where the decision is a
    near-copy's or changes the store; a read or a report is decided on the store's own vectors
    (here: all unrelated)."""
    embedder = _SaysAllAlike(band)
    alike = band > 0
    async with Client(create_server(Settings(path=tmp_path / "store", preload=False), embedder=embedder)) as client:
        first = data(await client.call_tool("remember", {"content": UNRELATED[0], "namespace": "a"}))
        # remember's near-duplicates (0.9): a near-copy decision, reported or acted on ...
        second = data(await client.call_tool("remember", {"content": UNRELATED[1], "namespace": "a"}))
        assert [s["relation"] for s in second.get("similar_existing", [])] == (["duplicate"] if alike else [])
        # ... its contradictions (0.75, the numbers differ): a report with on_duplicate=store
        asked = embedder.asked
        data(await client.call_tool("remember", {"content": "Deploys take 5 minutes.", "namespace": "n"}))
        report = data(await client.call_tool("remember", {"content": "The backup keeps 9 copies.", "namespace": "n"}))
        assert not report.get("similar_existing"), report
        assert embedder.asked == asked
        # extract's near-copies (0.9)
        extracted = data(await client.call_tool("extract", {"text": "We decided to use PostgreSQL.", "namespace": "a"}))
        assert any(e.get("duplicate_of") for e in extracted["extractions"]) == alike, extracted
        # consolidate's groups (0.85)
        merged = data(await client.call_tool("consolidate", {"namespace": "a"}))
        assert (merged["groups_found"] > 0) == alike, merged
        asked_by_writes = embedder.asked
        # reads: discover_connections (0.5), corpus_bridges (0.8), how_to (0.2)
        data(await client.call_tool("remember", {"content": "Glaciers carve valleys slowly.", "namespace": "b"}))
        connections = data(await client.call_tool("discover_connections", {"memory_id": first["id"]}))
        assert connections["total"] == 0, connections
        bridges = data(await client.call_tool("corpus_bridges", {}))
        assert bridges["total_bridges"] == 0, bridges
        data(await client.call_tool("build_skill", {**SKILL, "namespace": "c"}))
        found = data(await client.call_tool("how_to", {"task": "zebra migration routes", "namespace": "c"}))
        assert not found["procedures"], found
        assert embedder.asked == asked_by_writes
        # distill (0.6): three episodes of one session that share nothing
        episodes = [{"content": t, "namespace": "d", "memory_type": "conversation"} for t in UNRELATED]
        data(await client.call_tool("remember_batch", {"memories": episodes}))
        distilled = data(await client.call_tool("consolidate", {"namespace": "d", "strategy": "distill"}))
        assert (distilled["groups_found"] > 0) == alike, distilled
        data(await client.call_tool("remember", {"content": "Rain fell on the harbour.", "namespace": "s"}))
        # remember's look-alikes as writes: skip (duplicates), supersede (every look-alike: here a contradiction)
        skipped = data(
            await client.call_tool(
                "remember", {"content": "The kettle whistles.", "namespace": "s", "on_duplicate": "skip"}
            )
        )
        assert skipped["stored"] is not alike, skipped
        closing = data(
            await client.call_tool(
                "remember", {"content": "Owls hunt at dusk.", "namespace": "n", "on_duplicate": "supersede"}
            )
        )
        assert bool(closing.get("superseded")) == alike, closing
    assert (embedder.asked > 0) == alike


def test_the_fp32_path_is_released_when_idle(monkeypatch, bundled_models):
    """The fp32 model that decides writes near a threshold is dropped once idle, and loads again
    when needed, with the same vectors."""
    from spatial_memory.embeddings import router as router_module

    monkeypatch.setattr(router_module, "REFERENCE_IDLE_SECONDS", 0.3)
    router = EmbeddingRouter(precision="int8-row", cache_dir=bundled_models)
    first = router.reference_vectors(["the deploy runs at noon", "the deploy runs at midnight"])
    assert router.reference_loaded
    deadline = time.monotonic() + 10
    while router.reference_loaded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not router.reference_loaded
    again = router.reference_vectors(["the deploy runs at noon", "a text not seen before"])
    assert router.reference_loaded
    np.testing.assert_allclose(again[0], first[0], atol=1e-6)

"""journey, wander, regions and visualize: quality with the real model, plumbing at 2,000 memories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from . import browser
from .conftest import data

pytestmark = pytest.mark.anyio
TOPICS = json.loads((Path(__file__).parent / "fixtures" / "topics.json").read_text())


async def store_topics(client) -> tuple[list[str], list[str], list[str]]:
    contents, labels = [], []
    for topic, sentences in TOPICS.items():
        contents += sentences
        labels += [topic] * len(sentences)
    batch = [{"content": c, "namespace": "topics", "importance": 0.3 + 0.04 * (i % 15)} for i, c in enumerate(contents)]
    ids = data(await client.call_tool("remember_batch", {"memories": batch}))["ids"]
    return ids, contents, labels


@pytest.mark.model
async def test_regions_recovers_topics(model_client):
    from sklearn.metrics import adjusted_rand_score

    ids, contents, labels = await store_topics(model_client)
    assert len(ids) >= 60 and len(TOPICS) >= 4
    result = data(
        await model_client.call_tool("regions", {"namespace": "topics", "min_cluster_size": 4, "include_members": True})
    )
    found = {m: -1 for m in ids}
    for cluster in result["clusters"]:
        assert cluster["size"] >= 4 and 0 <= cluster["coherence"] <= 1
        assert cluster["keywords"] and all(k not in {"the", "and", "for", "with"} for k in cluster["keywords"])
        assert len(cluster["sample_memories"]) <= 3
        assert cluster["representative_memory"]["id"] in cluster["member_ids"]
        for member in cluster["member_ids"]:
            found[member] = cluster["cluster_id"]
    ari = adjusted_rand_score(labels, [found[i] for i in ids])
    assert ari >= 0.6, ari
    assert result["total_memories"] == len(ids)
    assert result["noise_count"] + sum(c["size"] for c in result["clusters"]) == len(ids)
    assert -1 <= result["clustering_quality"] <= 1 and len(result["clusters"]) >= 4
    words = " ".join(k for c in result["clusters"] for k in c["keywords"])
    assert any(w in words for w in ("kubernetes", "pods", "deployment", "cluster"))


@pytest.mark.model
async def test_regions_direct_assignment_ari(model_client, real_embedder):
    """regions' own clusters, as the tool reports them by default (no member lists: a representative
    and samples each), assign every memory directly - to the cluster whose reported memories it is
    nearest to - and that assignment agrees with the topics."""
    from sklearn.metrics import adjusted_rand_score

    ids, contents, labels = await store_topics(model_client)
    result = data(await model_client.call_tool("regions", {"namespace": "topics", "min_cluster_size": 4}))
    clusters = result["clusters"]
    assert len(clusters) >= 4 and result["total_memories"] == len(ids)
    vectors = real_embedder.embed_documents(contents)  # what the server stored: same model, same texts
    row = {memory_id: n for n, memory_id in enumerate(ids)}
    centres = []
    for cluster in clusters:
        assert not cluster.get("member_ids")  # matched through what a client sees by default
        shown = [cluster["representative_memory"], *cluster["sample_memories"]]
        assert all(m["id"] in row and m["content"] == contents[row[m["id"]]] for m in shown), shown
        centre = vectors[[row[m["id"]] for m in shown]].mean(axis=0)
        centres.append(centre / np.linalg.norm(centre))
    predicted = np.argmax(vectors @ np.stack(centres).T, axis=1)
    ari = adjusted_rand_score(labels, predicted)
    assert ari >= 0.6, ari


@pytest.mark.model
async def test_journey_moves_toward_the_end(model_client, real_embedder):
    ids, contents, labels = await store_topics(model_client)
    start, end = ids[labels.index("cooking")], ids[labels.index("astronomy")]
    result = data(await model_client.call_tool("journey", {"start_id": start, "end_id": end, "steps": 10}))
    assert [s["step"] for s in result["steps"]] == list(range(10))
    assert result["steps"][0]["t"] == 0.0 and result["steps"][-1]["t"] == 1.0
    assert result["steps"][0]["nearby_memories"][0]["id"] == start
    assert result["steps"][-1]["nearby_memories"][0]["id"] == end
    assert all(s["position"] is None for s in result["steps"])
    assert 0.0 <= result["path_coverage"] <= 1.0
    end_vec = real_embedder.embed_query(contents[ids.index(end)])
    by_id = dict(zip(ids, contents))
    sims = [float(real_embedder.embed_query(by_id[s["nearby_memories"][0]["id"]]) @ end_vec) for s in result["steps"]]
    assert np.corrcoef(np.arange(len(sims)), sims)[0, 1] > 0.7, sims
    assert np.mean(sims[5:]) > np.mean(sims[:5])
    with_pos = data(
        await model_client.call_tool(
            "journey", {"start_id": start, "end_id": end, "steps": 2, "include_positions": True}
        )
    )
    assert len(with_pos["steps"][0]["position"]) == 384


@pytest.mark.model
async def test_wander_temperature_controls_focus(model_client):
    ids, _, labels = await store_topics(model_client)
    topic_of = dict(zip(ids, labels))

    async def focus(temperature: float) -> float:
        fractions = []
        for seed in range(12):
            start = ids[(seed * 7) % len(ids)]
            walk = data(
                await model_client.call_tool(
                    "wander",
                    {
                        "start_id": start,
                        "steps": 12,
                        "temperature": temperature,
                        "random_seed": seed,
                        "namespace": "topics",
                    },
                )
            )
            visited = [s["memory"]["id"] for s in walk["steps"]]
            assert len(set(visited)) == len(visited)
            fractions.append(np.mean([topic_of[v] == topic_of[start] for v in visited[1:]]))
        return float(np.mean(fractions))

    cold, hot = await focus(0.0), await focus(1.0)
    assert cold > hot, (cold, hot)


async def test_wander_contract(client):
    ids = data(
        await client.call_tool("remember_batch", {"memories": [{"content": f"word{i} shared"} for i in range(6)]})
    )["ids"]
    walk = data(
        await client.call_tool("wander", {"start_id": ids[0], "steps": 20, "temperature": 0.3, "random_seed": 1})
    )
    assert walk["ended_early"] and "no unvisited" in walk["end_reason"]
    assert len(walk["steps"]) == 6 and walk["steps"][0]["selection_probability"] == 1.0
    assert all(0 < s["selection_probability"] <= 1 for s in walk["steps"])
    again = data(
        await client.call_tool("wander", {"start_id": ids[0], "steps": 20, "temperature": 0.3, "random_seed": 1})
    )
    assert [s["memory"]["id"] for s in again["steps"]] == [s["memory"]["id"] for s in walk["steps"]]
    cold = data(await client.call_tool("wander", {"start_id": ids[0], "steps": 3, "temperature": 0}))
    assert all(s["selection_probability"] == 1.0 for s in cold["steps"])
    seeded = data(await client.call_tool("wander", {"seed": "word3 shared", "steps": 1}))
    assert seeded["steps"][0]["memory"]["id"] == ids[3]
    rand = data(await client.call_tool("wander", {"steps": 2}))
    assert rand["start_id"] in ids
    err = await client.call_tool("wander", {"start_id": ids[0], "seed": "x"})
    assert data(err)["error"] == "ValidationError"
    err = await client.call_tool("wander", {"namespace": "empty"})
    assert data(err)["error"] == "ValidationError"
    err = await client.call_tool("wander", {"start_id": "00000000-0000-4000-8000-000000000000"})
    assert data(err)["error"] == "MemoryNotFoundError"
    err = await client.call_tool("wander", {"temperature": 1.5})
    assert data(err)["error"] == "ValidationError"


async def test_spatial_errors(client):
    ids = data(await client.call_tool("remember_batch", {"memories": [{"content": f"m{i}"} for i in range(3)]}))["ids"]
    missing = "00000000-0000-4000-8000-000000000000"
    assert (
        data(await client.call_tool("journey", {"start_id": ids[0], "end_id": missing}))["error"]
        == "MemoryNotFoundError"
    )
    assert data(await client.call_tool("journey", {"start_id": ids[0], "end_id": ids[1], "steps": 1}))["error"] == (
        "ValidationError"
    )
    few = data(await client.call_tool("regions", {"min_cluster_size": 3, "namespace": "none"}))
    assert few["clusters"] == [] and "No memories in namespace 'none'" in few["note"]
    assert data(await client.call_tool("regions", {"min_cluster_size": 51}))["error"] == "ValidationError"
    assert data(await client.call_tool("visualize", {"namespace": "none"}))["error"] == "InsufficientMemoriesError"
    assert data(await client.call_tool("visualize", {"format": "png"}))["error"] == "ValidationError"
    tiny = data(await client.call_tool("visualize", {"memory_ids": ids[:2]}))
    assert tiny["node_count"] == 2 and all(-1 <= n["x"] <= 1 for n in tiny["nodes"])
    one = data(await client.call_tool("visualize", {"memory_ids": ids[:1], "format": "svg"}))
    assert one["node_count"] == 1 and one["output"].startswith("<?xml")
    same = data(await client.call_tool("journey", {"start_id": ids[0], "end_id": ids[0], "steps": 3}))
    assert len(same["steps"]) == 3


@pytest.mark.model
async def test_visualize_formats_and_browser_checks(model_client, tmp_path):
    ids, _, _ = await store_topics(model_client)
    args = {"namespace": "topics", "highlight_ids": ids[:2]}
    first = data(await model_client.call_tool("visualize", {**args, "format": "json"}))
    assert first["node_count"] == len(ids) and not first["cached"]
    assert set(first["bounds"]) == {"x_min", "x_max", "y_min", "y_max"}
    assert sum(n["highlighted"] for n in first["nodes"]) == 2
    assert first["edges"] and len(first["edges"]) <= 2 * len(ids)
    assert all(0 <= e["weight"] <= 1 for e in first["edges"])
    assert {c["id"] for c in first["clusters"]} == {n["cluster"] for n in first["nodes"]} - {-1}
    again = data(await model_client.call_tool("visualize", {**args, "format": "json"}))
    assert again["cached"] and again["nodes"] == first["nodes"]
    three = data(await model_client.call_tool("visualize", {"namespace": "topics", "dimensions": 3}))
    assert all(n["z"] is not None for n in three["nodes"]) and "z_min" in three["bounds"]

    await model_client.call_tool(
        "remember", {"content": 'Tricky <label> & "quotes" #hash `tick` \u2014 ünï 中文', "namespace": "topics"}
    )
    svg = data(await model_client.call_tool("visualize", {**args, "format": "svg"}))["output"]
    root = ET.fromstring(svg.encode())
    assert root.tag.endswith("svg")
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t and "Tricky <label>" in t for t in titles)
    mermaid = data(await model_client.call_tool("visualize", {**args, "format": "mermaid"}))["output"]
    assert mermaid.startswith("flowchart")

    browser.require_chromium()
    page = tmp_path / "map.svg"
    page.write_text(svg)
    png = tmp_path / "map.png"
    browser.screenshot(page, png)
    from PIL import Image

    image = np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)
    colourful = (np.abs(image - image.mean(axis=2, keepdims=True)).sum(axis=2) > 60).mean()
    assert image.std() > 10 and colourful > 0.002, (image.std(), colourful)
    assert browser.mermaid_parse(mermaid, tmp_path) == "OK"


async def test_all_spatial_tools_on_2000_memories(client):
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]
    ids = []
    for start in range(0, 2000, 500):
        batch = [
            {"content": " ".join(rng.choice(words, 3)) + f" item{start + i}", "importance": float(rng.random())}
            for i in range(500)
        ]
        ids += data(await client.call_tool("remember_batch", {"memories": batch}))["ids"]
    assert data(await client.call_tool("stats", {}))["total_memories"] == 2000
    journey = await client.call_tool("journey", {"start_id": ids[0], "end_id": ids[-1]})
    assert not journey.is_error and len(data(journey)["steps"]) == 10
    wander = await client.call_tool("wander", {"steps": 20, "random_seed": 3})
    assert not wander.is_error and len(data(wander)["steps"]) == 21
    regions = await client.call_tool("regions", {"min_cluster_size": 10, "max_clusters": 5})
    assert not regions.is_error and len(data(regions)["clusters"]) <= 5
    assert data(regions)["total_memories"] == 2000
    viz = await client.call_tool("visualize", {"max_memories": 2000, "format": "svg"})
    assert not viz.is_error and data(viz)["node_count"] == 2000


async def test_first_visualize_reports_progress(client):
    await client.call_tool("remember_batch", {"memories": [{"content": f"note number {i}"} for i in range(20)]})
    updates = []

    async def on_progress(progress, total, message):
        updates.append(message)

    first = await client.call_tool("visualize", {}, progress_callback=on_progress)
    assert not first.is_error
    assert updates and "UMAP" in updates[0]
    updates.clear()
    await client.call_tool("remember", {"content": "one more"})
    second = await client.call_tool("visualize", {}, progress_callback=on_progress)
    # No loading heartbeat any more; the drawing's own steps (tests/test_progress.py).
    assert not second.is_error and updates and not any("UMAP" in u for u in updates)


def test_every_format_of_one_map_shares_its_layout_until_the_memories_change(settings, fake_embedder, monkeypatch):
    """json, then svg, then mermaid of the same selection lay the map out once; a compaction
    keeps it (same memories), a write does not."""
    from spatial_memory import algorithms
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App

    app = App(Resources(settings, fake_embedder))
    app.memory.remember_batch([NewMemory(content=f"{TOPICS[k][0]} ({k})") for k in sorted(TOPICS)])
    layouts = []
    project = algorithms.project
    monkeypatch.setattr(algorithms, "project", lambda *a, **k: layouts.append(1) or project(*a, **k))
    first = app.visualization.visualize(format="json")
    svg = app.visualization.visualize(format="svg")
    app.visualization.visualize(format="mermaid")
    assert len(layouts) == 1 and not svg.cached
    assert all(node.id in svg.output for node in first.nodes)
    app.resources.store().compact()
    assert app.visualization.visualize(format="json").cached and len(layouts) == 1
    app.memory.remember(NewMemory(content="something new"))
    assert not app.visualization.visualize(format="json").cached and len(layouts) == 2

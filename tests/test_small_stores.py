"""A small store still makes sense (issue 43), through the Python SDK client with the real model:
regions names the topics of a new store (or says why there is none), and an exact copy of a
memory is not stored twice; recall never shows two identical contents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import call

pytestmark = pytest.mark.anyio

TOPICS = json.loads((Path(__file__).parent / "fixtures" / "topics.json").read_text())
# Not the sentences the similarity floor was chosen on (algorithms/clustering.py).
DEPLOYS = [
    "Production deploys go out through the release pipeline after the smoke tests pass.",
    "A failed deploy is rolled back by redeploying the previous build.",
    "We only deploy the API on weekdays before 4 pm.",
    "The deploy script runs database migrations before the new containers start.",
    "Every deploy to production needs a reviewer's approval in the pipeline.",
    "Canary deploys send five percent of traffic to the new version first.",
]
OTHERS = [
    "Anna's favourite tea is jasmine green tea.",
    "The printer on the third floor jams with thick paper.",
    "Our team lunch is on the first Friday of the month.",
    "The company retreat will be in Lisbon this year.",
    "Use British spelling in the user documentation.",
    "The parking garage closes at midnight.",
    "Tom is allergic to peanuts.",
    "The quarterly all-hands is recorded for people in other time zones.",
    "Water the office plants on Mondays.",
]

# The kind of store, where HDBSCAN alone finds nothing (all 15 noise); the similarity floor
# was chosen with these among others.
DEPLOYS_SPARSE = [
    "We deploy to production on Tuesdays only.",
    "The deploy pipeline runs the migrations before switching traffic.",
    "Roll back a bad deploy with the previous release tag.",
    "Deploys need a green CI run and one approval.",
    "The staging deploy happens automatically on every merge to main.",
    "Never deploy on Fridays after 3 pm.",
]
OTHERS_SPARSE = [
    "My sister's birthday is on March 3rd.",
    "The office wifi password changes every month.",
    "I prefer dark roast coffee.",
    "The quarterly report is due next Thursday.",
    "Our cat is called Miso.",
    "Use black for formatting Python code.",
    "The dentist appointment moved to 10 am.",
    "Read 'The Pragmatic Programmer' next.",
    "The meeting room on floor 2 has a broken projector.",
]


async def _remember(client, namespace: str, contents: list[str]) -> list[str]:
    stored = await call(client, "remember_batch", memories=[{"content": c, "namespace": namespace} for c in contents])
    return stored["ids"]


@pytest.mark.parametrize(("deploys", "others"), [(DEPLOYS, OTHERS), (DEPLOYS_SPARSE, OTHERS_SPARSE)])
async def test_six_deploy_memories_among_nine_others_form_a_deploys_region(model_client, deploys, others):
    await _remember(model_client, "new", deploys[:3] + others[:5] + deploys[3:] + others[5:])
    regions = await call(model_client, "regions", namespace="new", include_members=True)
    assert regions["total_memories"] == 15
    assert regions["clusters"], regions
    best = regions["clusters"][0]
    members = {m["content"] for m in best["sample_memories"]} | {best["representative_memory"]["content"]}
    assert members <= set(deploys), best
    assert best["size"] >= 5 and "deploy" in best["keywords"], best
    assert all(c["size"] < 5 for c in regions["clusters"][1:]), regions
    drawn = await call(model_client, "visualize", namespace="new", format="json")  # the map draws it too
    assert any(c["size"] >= 5 for c in drawn["clusters"]), drawn["clusters"]


async def test_fifteen_memories_of_three_topics_form_at_least_two_regions(model_client):
    names = ("devops", "football", "cooking")
    ids = await _remember(model_client, "three", [c for t in names for c in TOPICS[t][5:10]])
    topic_of = {memory_id: names[i // 5] for i, memory_id in enumerate(ids)}
    regions = await call(model_client, "regions", namespace="three", include_members=True)
    dominant = set()
    for cluster in regions["clusters"]:
        topics = [topic_of[m] for m in cluster["member_ids"]]
        top = max(set(topics), key=topics.count)
        if topics.count(top) >= 0.75 * len(topics):  # ("The transfer window closes ..." reads like devops)
            dominant.add(top)
    assert len(dominant) >= 2, regions


async def test_two_memories_get_an_answer_not_an_error(model_client):
    await _remember(model_client, "two", DEPLOYS[:2])
    regions = await call(model_client, "regions", namespace="two")
    assert regions["clusters"] == [] and regions["total_memories"] == 2
    assert "min_cluster_size" in regions["note"]
    paired = await call(model_client, "regions", namespace="two", min_cluster_size=2)
    assert len(paired["clusters"]) == 1 and paired["clusters"][0]["size"] == 2


async def test_an_exact_copy_is_not_stored_again_unless_asked(model_client):
    first = await call(model_client, "remember", content="We deploy on Tuesdays only.", namespace="dup")
    again = await call(model_client, "remember", content="We deploy on Tuesdays only.", namespace="dup")
    assert again["id"] == first["id"] and again["stored"] is False
    assert again["similar_existing"][0]["id"] == first["id"] and again["similar_existing"][0]["relation"] == "duplicate"
    elsewhere = await call(model_client, "remember", content="We deploy on Tuesdays only.", namespace="other")
    assert elsewhere["stored"] is True and elsewhere["id"] != first["id"]
    stats = await call(model_client, "namespaces")
    counts = {n["name"]: n["memory_count"] for n in stats["namespaces"]}
    assert counts["dup"] == 1
    detail = await call(model_client, "get_memories", memory_ids=[first["id"]])
    kept = await call(
        model_client, "remember", content="We deploy on Tuesdays only.", namespace="dup", allow_duplicate=True
    )
    assert kept["stored"] is True and kept["id"] != first["id"]
    assert detail["memories"][0]["id"] == first["id"]

    batch = await call(
        model_client,
        "remember_batch",
        memories=[
            {"content": "We deploy on Tuesdays only.", "namespace": "dup"},
            {"content": "Staging runs PostgreSQL 16 on port 5433.", "namespace": "dup"},
            {"content": "Staging runs PostgreSQL 16 on port 5433.", "namespace": "dup"},
        ],
    )
    assert batch["count"] == 1 and batch["skipped"] == [0, 2], batch
    repeats = {s["index"]: s["id"] for s in batch["similar_existing"] if s["similarity"] >= 0.999999}
    assert repeats[2] == batch["ids"][0] and repeats[0] in {first["id"], kept["id"]}

    hits = await call(model_client, "recall", query="which day do we deploy?", namespace="dup", limit=5)
    contents = [m["content"] for m in hits["memories"]]
    assert len(contents) == len(set(contents)) and "We deploy on Tuesdays only." in contents
    hybrid = await call(model_client, "hybrid_recall", query="deploy Tuesdays", limit=5)
    contents = [m["content"] for m in hybrid["memories"]]
    assert len(contents) == len(set(contents)), contents

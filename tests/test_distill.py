"""consolidate(strategy="distill") and memory tiers, through the Python SDK client."""

from __future__ import annotations

import pytest

from .conftest import data

pytestmark = pytest.mark.anyio

EPISODES = [
    "The nightly deploy failed because the staging database migration timed out",
    "Again the nightly deploy failed because the staging database migration timed out",
    "The nightly deploy failed: the staging database migration timed out",
    "The nightly deploy failed because the staging database migration timed out once more",
]
OTHER = ["Alice likes green tea in the morning", "The office plants need water on Mondays"]


async def seed(client, texts, session: str, namespace: str = "ops") -> list[str]:
    ids = []
    for i, text in enumerate(texts):
        stored = data(
            await client.call_tool(
                "remember",
                {
                    "content": text,
                    "namespace": namespace,
                    "session_id": f"{session}-{i}",
                    "memory_type": "conversation",
                },
            )
        )
        ids.append(stored["id"])
    return ids


async def test_distill_turns_near_duplicate_episodes_into_one_semantic_memory(model_client):
    client = model_client
    episodes = await seed(client, EPISODES, "night")
    await seed(client, OTHER, "misc")
    await client.call_tool("remember", {"content": "The nightly deploy runs at 02:00", "namespace": "ops"})
    args = {"namespace": "ops", "strategy": "distill", "similarity_threshold": 0.8}
    preview = data(await client.call_tool("consolidate", args))
    assert preview["dry_run"] is True and preview["memories_merged"] == 0
    (group,) = preview["groups"]
    assert sorted(group["member_ids"]) == sorted(episodes) and group["statement"] in EPISODES
    assert data(await client.call_tool("stats", {}))["total_memories"] == 7  # a preview writes nothing

    done = data(await client.call_tool("consolidate", {**args, "dry_run": False}))
    (group,) = done["groups"]
    assert done["memories_merged"] == 1 and done["memories_deleted"] == 0 and group["action_taken"] == "distilled"
    semantic_id = group["representative_id"]
    (memory,) = data(await client.call_tool("get_memories", {"memory_ids": [semantic_id]}))["memories"]
    assert memory["content"] == group["statement"] and "distilled" in memory["tags"]
    assert memory["provenance"]["via"] == "distill" and sorted(memory["provenance"]["derived_from"]) == sorted(episodes)
    assert sorted(r["target_id"] for r in memory["relations"] if r["relation"] == "derived_from") == sorted(episodes)
    kept = data(await client.call_tool("get_memories", {"memory_ids": episodes}))
    assert kept["not_found"] == [] and all(m["current"] for m in kept["memories"])  # the episodes stay

    again = data(await client.call_tool("consolidate", {**args, "dry_run": False}))
    assert again["groups"] == [] and again["memories_merged"] == 0  # already distilled

    tiers = data(await client.call_tool("stats", {}))["memories_by_tier"]
    assert tiers == {"working": 0, "episodic": 6, "semantic": 2, "procedural": 0}
    drawn = data(await client.call_tool("visualize", {"namespace": "ops", "format": "json"}))
    by_id = {n["id"]: n["tier"] for n in drawn["nodes"]}
    assert by_id[semantic_id] == "semantic" and by_id[episodes[0]] == "episodic"
    drawn = data(await client.call_tool("visualize", {"namespace": "ops", "format": "svg"}))
    assert 'data-tier="semantic"' in drawn["output"] and "[episodic] " in drawn["output"]


FRIDAY = [
    "Deploy rule: no production deploys on Fridays.",
    "Reminder from standup: we do not deploy to production on a Friday.",
    "Friday deploys to production are forbidden by the team.",
    "Never ship a production deploy on Friday afternoons or evenings.",
]


async def test_restatements_in_other_words_become_one_semantic_memory(model_client):
    """Four episodes stating one rule four ways (MiniLM cosines 0.62-0.77, far below
    consolidate's near-copy threshold) are one group; one on the same topic that says the
    opposite, and one about another day, stay out of it."""
    client = model_client
    episodes = await seed(client, FRIDAY, "standup")
    (fine,) = await seed(client, ["Deploys are fine on Fridays."], "later")
    (monday,) = await seed(client, ["No production deploys on Mondays before the incident review."], "review")
    done = data(await client.call_tool("consolidate", {"namespace": "ops", "strategy": "distill", "dry_run": False}))
    (group,) = done["groups"]
    assert sorted(group["member_ids"]) == sorted(episodes) and fine not in group["member_ids"]
    assert monday not in group["member_ids"] and group["statement"] in FRIDAY
    (memory,) = data(await client.call_tool("get_memories", {"memory_ids": [group["representative_id"]]}))["memories"]
    assert memory["content"] == group["statement"] and memory["memory_type"] == "fact"
    assert sorted(memory["provenance"]["derived_from"]) == sorted(episodes)
    assert "friday" in memory["metadata"]["shared_specifics"] and "production" in memory["metadata"]["shared_specifics"]


def test_claims_that_disagree():
    from spatial_memory.text.claims import claims, disagreement

    def why(a: str, b: str) -> str | None:
        first, second = claims([a, b])
        return disagreement(first, second)

    assert why("The API listens on port 8080.", "Port 8080 is where the API accepts requests.") is None
    assert why("The API listens on port 8080.", "The API listens on port 9090.") == "numbers"
    assert why("Backups run every Sunday night.", "Backups run every Wednesday night.") == "days"
    assert why("We never deploy on Fridays.", "Friday deploys are forbidden.") is None
    assert why("We never deploy on Fridays.", "Deploys are fine on Fridays.") == "negation"
    assert why("Evan moved to Canada in 2022.", "Evan moved to Australia in 2022.") == "names"
    assert why("Melanie has three kids.", "Melanie has 3 children.") is None
    assert why("Maria ran her first marathon.", "Maria ran her third marathon.") == "ordinals"
    assert why("Calvin bought a red Ferrari.", "Calvin sold his red Ferrari.") == "opposite words"
    assert why("Logs are kept for 14 days.", "Logs are kept for 14 months.") == "units"


def test_a_member_on_the_topic_but_not_the_claim_is_dropped_and_two_groups_are_split():
    import numpy as np

    from spatial_memory.algorithms.grouping import split_in_two, without_outliers

    def unit(*angles: float) -> np.ndarray:
        return np.array([[np.cos(a), np.sin(a), 0.0] for a in angles])

    # four close together, one that is near them all but less so than they are to each other
    assert without_outliers(unit(0.0, 0.05, 0.1, 0.15, 0.7), 0.08) == [0, 1, 2, 3]
    assert without_outliers(unit(0.0, 0.05, 0.1, 0.15, 0.3), 0.08) == [0, 1, 2, 3, 4]
    # two tight pairs 0.6 rad apart: two groups; one spread group stays one
    assert split_in_two(unit(0.0, 0.05, 0.6, 0.65), 0.1) == [[0, 1], [2, 3]]
    assert split_in_two(unit(0.0, 0.2, 0.4, 0.6), 0.1) == [[0, 1, 2, 3]]


def test_the_labelled_restatements_are_grouped_precisely(real_embedder):
    """The shipped figures on the whole labelled set (48 groups, 96 hard negatives); the
    out-of-sample figures come from `python -m benchmarks.restatements` (docs/BENCHMARKS.md)."""
    from spatial_memory.evaluation.restatements import SHIPPED, labelled, score

    texts, gold, _ = labelled()
    result = score(texts, gold, real_embedder.embed_documents(texts), *SHIPPED)
    assert result["gold_groups"] >= 40 and result["negatives"] >= 40
    assert result["precision"] >= 0.9 and result["recall"] >= 0.7, result


async def test_two_episodes_are_not_enough(client):
    await seed(client, EPISODES[:2], "short")
    result = data(await client.call_tool("consolidate", {"namespace": "ops", "strategy": "distill", "dry_run": False}))
    assert result["groups"] == [] and result["memories_merged"] == 0


def test_tier_rules():
    import numpy as np

    from spatial_memory.algorithms.tiers import tier_indexes, tier_names

    day = 86_400.0
    now = 100 * day
    types = ["fact", "conversation", "conversation", "context", "procedure", "fact", "fact", "fact"]
    kinds = {k: np.array([t == k for t in types]) for k in ("conversation", "context", "procedure")}
    names = tier_names(
        tier_indexes(
            kinds,
            in_session=np.array([False, True, True, False, False, True, False, False]),
            derived=np.array([False, False, True, False, False, False, False, False]),
            created_s=np.array([now - 2 * day] * 7 + [now - 60 * day]),
            accessed_s=np.array([now - day] * 8),
            access_count=np.array([0, 0, 0, 0, 9, 0, 5, 9]),
            now_s=now,
        )
    )
    assert names == [
        "semantic",  # a stated fact
        "episodic",  # a conversation turn
        "semantic",  # distilled from episodes
        "working",  # today's context
        "procedural",  # a procedure, however used
        "episodic",  # a fact placed in a session
        "working",  # recalled 5 times this week, created 2 days ago
        "semantic",  # recalled often, but created 60 days ago
    ]

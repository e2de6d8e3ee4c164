"""Conversation-aware recall through an MCP client, on one LoCoMo dev conversation (real model).

It fails if the fusion of meaning and keywords, the use of conversation structure, context or the
conversation fields break. The thresholds are regression floors on this one conversation, well under
what the ranking measures here; the published figures are the benchmarks' (out of sample).
"""

from __future__ import annotations

import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.evaluation import locomo
from spatial_memory.server import create_server

from .conftest import data

pytestmark = [pytest.mark.anyio, pytest.mark.model]

CONVERSATION = "conv-30"  # the shortest dev conversation


async def _recall_at_10(client, conv, namespace: str, extra: dict) -> float:
    scores = []
    for q in conv.questions:
        if q.category in (1, 2, 3, 4):
            body = data(
                await client.call_tool("recall", {"query": q.question, "limit": 10, "namespace": namespace, **extra})
            )
            ranked = [m["metadata"]["dia_id"] for m in body["memories"]]
            scores.append(locomo.recall_at(ranked, q.evidence, 10))
    return sum(scores) / len(scores)


async def test_conversation_structure_fusion_and_context_through_mcp(tmp_path, cached_embedder, locomo_dev):
    (conv,) = [c for c in locomo.load(locomo_dev) if c.sample_id == CONVERSATION]
    settings = Settings(path=tmp_path / "store", preload=False, access_flush_seconds=3600)
    async with Client(create_server(settings, embedder=cached_embedder)) as client:
        for namespace, structure in (("with", True), ("without", False)):
            items = [t.memory(namespace, structure=structure) for t in conv.turns]
            for start in range(0, len(items), 500):
                assert not (await client.call_tool("remember_batch", {"memories": items[start : start + 500]})).is_error

        # The fields come back as stored.
        first = conv.turns[0]
        where = {"session_id": first.session_id, "sequence": first.sequence}
        hit = data(await client.call_tool("recall", {"query": "hello", "namespace": "with", "filters": where}))
        assert hit["total"] == 1
        memory = hit["memories"][0]
        assert memory["metadata"]["dia_id"] == first.dia_id
        assert (memory["session_id"], memory["sequence"], memory["speaker"]) == (
            first.session_id,
            first.sequence,
            first.speaker,
        )
        assert memory["occurred_at"] == first.occurred_at

        meaning = await _recall_at_10(client, conv, "with", {"hybrid_alpha": 1.0})
        fused_plain = await _recall_at_10(client, conv, "without", {})
        fused = await _recall_at_10(client, conv, "with", {})
        print(
            f"\n{CONVERSATION} recall@10: meaning only {meaning:.3f}, fused {fused_plain:.3f}, + structure {fused:.3f}"
        )
        assert fused_plain > meaning + 0.05  # fusion of meaning and keywords works
        assert fused > fused_plain  # conversation structure is used
        assert fused >= 0.7

        # Context: each hit with its neighbours, in order, marked by offset.
        body = data(
            await client.call_tool("recall", {"query": conv.questions[0].question, "namespace": "with", "context": 2})
        )
        for item in body["memories"]:
            offsets = [c["offset"] for c in item["context"]]
            assert offsets == sorted(offsets) and 0 not in offsets and all(abs(o) <= 2 for o in offsets)
            assert all(c["sequence"] == item["sequence"] + c["offset"] for c in item["context"])
            assert len(item["context"]) >= 2  # no hit is alone in a session of this conversation
        plain = data(await client.call_tool("recall", {"query": conv.questions[0].question, "namespace": "with"}))
        assert all("context" not in m for m in plain["memories"])

        # since / until select by when the memory happened.
        last = conv.turns[-1].occurred_at
        late = data(
            await client.call_tool(
                "recall", {"query": "what happened", "namespace": "with", "since": last, "limit": 20}
            )
        )
        assert late["memories"] and all(m["occurred_at"] >= last for m in late["memories"])
        early = data(
            await client.call_tool(
                "recall", {"query": "what happened", "namespace": "with", "until": first.occurred_at}
            )
        )
        assert early["memories"] and all(m["occurred_at"] <= first.occurred_at for m in early["memories"])


async def test_a_dated_stamp_in_the_text_stands_in_for_occurred_at(tmp_path, cached_embedder):
    """Memories stored without structure whose text opens with its date: a question naming a period
    prefers the memory stamped within it, and an occurred_at, when given, wins over the stamp."""
    settings = Settings(path=tmp_path / "store", preload=False, access_flush_seconds=3600)
    others = [
        "The quarterly budget review moved to Thursday.",
        "Our team switched the CI runners to ARM machines.",
        "Grandma's recipe needs two cups of flour.",
        "The hiking trail near the lake is closed for repairs.",
        "We adopted a grey cat named Pixel.",
        "The router firmware update fixed the dropped calls.",
    ]
    stamped = {
        "May": "(2023-05-08) Mel painted a sunrise over the lake.",
        "March": "(2023-03-08) Mel painted a sunrise over the lake.",
    }
    async with Client(create_server(settings, embedder=cached_embedder)) as client:
        items = [{"content": c} for c in [*others, *stamped.values()]]
        assert not (await client.call_tool("remember_batch", {"memories": items})).is_error
        for month, text in stamped.items():
            body = data(await client.call_tool("recall", {"query": f"What did Mel paint in {month} 2023?"}))
            assert body["memories"][0]["content"] == text

        # occurred_at, when known, is the date the cue reads: each text now occurred in the other month
        swapped = (("May", "2023-03-08T00:00:00Z"), ("March", "2023-05-08T00:00:00Z"))
        items = [{"content": c, "namespace": "dated"} for c in others]
        items += [{"content": stamped[m], "namespace": "dated", "occurred_at": when} for m, when in swapped]
        assert not (await client.call_tool("remember_batch", {"memories": items})).is_error
        for month, text in (("March", stamped["May"]), ("May", stamped["March"])):
            query = {"query": f"What did Mel paint in {month} 2023?", "namespace": "dated"}
            assert data(await client.call_tool("recall", query))["memories"][0]["content"] == text

"""On LoCoMo dev, recall by meaning alone (hybrid_alpha=1.0) gives exactly the brute-force MiniLM cosine
top 10 (issue 2 acceptance)."""

from __future__ import annotations

import numpy as np
import pytest

from spatial_memory.evaluation import locomo

from .conftest import data

pytestmark = [pytest.mark.anyio, pytest.mark.model, pytest.mark.slow]


async def test_recall_top10_equals_brute_force(settings, cached_embedder, locomo_dev):
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=cached_embedder)) as model_client:
        await _agrees_with_brute_force(model_client, cached_embedder, locomo_dev)


async def _agrees_with_brute_force(model_client, embedder, path) -> None:
    """Recall by meaning alone against brute-force cosine over the same model's vectors."""
    conversations = locomo.load(path)[:2]
    queries = agreed = 0
    for conv in conversations:
        texts = [t.text for t in conv.turns]
        ids: list[str] = []
        for start in range(0, len(texts), 200):
            batch = [{"content": t, "namespace": conv.sample_id} for t in texts[start : start + 200]]
            ids += data(await model_client.call_tool("remember_batch", {"memories": batch}))["ids"]
        matrix = embedder.embed_documents(texts)
        for q in conv.questions:
            result = data(
                await model_client.call_tool(
                    "recall", {"query": q.question, "limit": 10, "namespace": conv.sample_id, "hybrid_alpha": 1.0}
                )
            )
            got = [m["id"] for m in result["memories"]]
            expected = [ids[i] for i in np.argsort(-(matrix @ embedder.embed_query(q.question)), kind="stable")[:10]]
            queries += 1
            agreed += got == expected or (set(got) == set(expected))
    assert queries > 250
    assert agreed / queries >= 0.99, f"{agreed}/{queries}"

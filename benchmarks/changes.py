"""Memories that change (issue 17), measured through the protocol at 10,000 memories: the size of
tools/list, update_memory latency (with and without a new embedding), remember latency with its
duplicate / contradiction check, and recall latency without and with pinned memories, A/B in
one server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.soak import short_texts

from .common import call, listing_size, percentiles, print_table, server


async def changes(root: Path, n: int, build_store, fresh_store, queries: int = 100) -> dict[str, Any]:
    models = root / "cold-first" / "models"
    store = root / f"latency-{n}"
    if not store.exists():
        store = fresh_store(root, f"latency-{n}", models if models.exists() else None)
        build_store(store, n)
    questions = short_texts(queries, seed=4242)
    rows: list[dict[str, Any]] = []
    async with server(store) as (client, _pid):
        listing_row = listing_size((await client.list_tools()).tools)
        await call(client, "recall", {"query": "warm-up", "namespace": "ns3"})

        async def timed(name: str, args_of) -> dict[str, float]:
            samples = []
            for i in range(queries):
                t = time.perf_counter()
                await call(client, name, args_of(i))
                samples.append((time.perf_counter() - t) * 1000)
            return percentiles(samples)

        def recall_args(i: int) -> dict[str, Any]:
            return {"query": questions[i], "limit": 10, "namespace": "ns3"}

        plain = await timed("recall", recall_args)
        targets = [
            m["id"]
            for m in (await call(client, "recall", {"query": "deploy", "limit": 50, "namespace": "ns3"}))["memories"]
        ]
        for memory_id in targets[:5]:
            await call(client, "update_memory", {"memory_id": memory_id, "pinned": True})
        await call(client, "recall", {"query": "warm-up", "namespace": "ns3"})
        pinned = await timed("recall", recall_args)
        content = await timed(
            "update_memory",
            lambda i: {"memory_id": targets[10 + i % 40], "content": f"{questions[i]} (revised {i})"},
        )
        metadata = await timed("update_memory", lambda i: {"memory_id": targets[10 + i % 40], "metadata": {"rev": i}})
        remember = await timed("remember", lambda i: {"content": questions[i], "namespace": "ns3"})
    rows = [
        {"measure": "recall (ns3, limit 10), no pinned memories", **plain},
        {"measure": "recall (ns3, limit 10), 5 pinned memories", **pinned},
        {"measure": "update_memory, new content (embedded again)", **content},
        {"measure": "update_memory, metadata only", **metadata},
        {"measure": "remember with the duplicate / contradiction check", **remember},
    ]
    print_table(f"Memories that change at {n:,} memories (ms, {queries} calls each)", rows)
    print_table("tools/list size", [listing_row])
    return {"memories": n, "rows": rows, "tools_list": listing_row}

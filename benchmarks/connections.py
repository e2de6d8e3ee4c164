"""Connections (issue 20), measured through the protocol at 10,000 memories (10 namespaces of
1,000, synthetic MiniLM-like vectors): health (brief and verbose, warm), corpus_bridges (every
cross-namespace pair compared), discover_connections and relate; and the size of tools/list."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .common import call, percentiles, print_table, server


async def connections(root: Path, n: int, build_store, fresh_store, calls: int = 50) -> dict[str, Any]:
    models = root / "cold-first" / "models"
    store = root / f"latency-{n}"
    if not store.exists():
        store = fresh_store(root, f"latency-{n}", models if models.exists() else None)
        build_store(store, n)
    async with server(store) as (client, _pid):
        listing = (await client.list_tools()).tools
        dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing]
        size = len(json.dumps({"tools": dumped}, separators=(",", ":")))
        await call(client, "health", {"verbose": True})  # opens the store

        async def timed(name: str, args: dict[str, Any], count: int) -> dict[str, float]:
            samples = []
            for _ in range(count):
                t = time.perf_counter()
                await call(client, name, args)
                samples.append((time.perf_counter() - t) * 1000)
            return percentiles(samples)

        brief = await timed("health", {}, calls)
        verbose = await timed("health", {"verbose": True}, calls)
        await call(client, "corpus_bridges", {"min_similarity": 0.8, "max_bridges": 50})
        bridges = await timed("corpus_bridges", {"min_similarity": 0.8, "max_bridges": 50}, 10)
        found = await call(client, "corpus_bridges", {"min_similarity": 0.8, "max_bridges": 50})
        some = [b["a"]["id"] for b in found["bridges"]][:10] or [
            m["id"] for m in (await call(client, "recall", {"query": "deploy", "limit": 10}))["memories"]
        ]
        samples = []
        for i in range(calls):
            t = time.perf_counter()
            await call(client, "discover_connections", {"memory_id": some[i % len(some)], "min_similarity": 0.3})
            samples.append((time.perf_counter() - t) * 1000)
        discover = percentiles(samples)
    rows = [
        {"measure": "health", **brief},
        {"measure": "health verbose=true", **verbose},
        {"measure": f"corpus_bridges (all 10 namespaces, {found['memories_compared']:,} memories)", **bridges},
        {"measure": "discover_connections (limit 10)", **discover},
    ]
    print_table(f"Connections at {n:,} memories (ms)", rows)
    listing_row = {"tools": len(dumped), "tools_list_chars": size, "approx_tokens": size // 4}
    print_table("tools/list size", [listing_row])
    return {
        "memories": n,
        "rows": rows,
        "tools_list": listing_row,
        "bridges_found": found["total_bridges"],
    }

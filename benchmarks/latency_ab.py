"""recall / hybrid_recall latency through the protocol, A/B: two source trees, interleaved in one run.

    python -m benchmarks.latency_ab --trees /tmp/base,. --store-root /tmp/ab   # 10,000 memories

The store is the latency section's synthetic one (benchmarks.run.build_synthetic_store, built once under
--store-root and reused); each tree gets its own copy of it and its own server (PYTHONPATH=tree), and the
calls alternate between the servers query by query, so a slower minute of the shared host costs both
alike. The queries and timing are those of benchmarks.run.latency.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
from contextlib import AsyncExitStack
from pathlib import Path

from spatial_memory.evaluation.soak import short_texts

from .common import call, call_result, percentiles, print_table, server
from .run import latency_store


async def measure(root: Path, trees: list[Path], n: int, queries: int, rounds: int) -> list[dict[str, object]]:
    source = latency_store(root, n)
    questions = short_texts(queries, seed=12345)
    timings: dict[tuple[int, str], list[float]] = {}
    async with AsyncExitStack() as stack:
        clients = []
        for k, tree in enumerate(trees):
            copy = root / f"ab-{k}-{n}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy, symlinks=True)
            client, _pid = await stack.enter_async_context(server(copy, PYTHONPATH=str(tree.resolve())))
            await call(client, "recall", {"query": "warm-up"})
            clients.append(client)
        for r in range(rounds):
            for i, q in enumerate(questions):
                order = list(range(len(clients)))
                if (i + r) % 2:
                    order.reverse()
                for name in ("recall", "hybrid_recall"):
                    for k in order:
                        t = time.perf_counter()
                        await call_result(clients[k], name, {"query": q, "limit": 10})
                        timings.setdefault((k, name), []).append((time.perf_counter() - t) * 1000)
    rows = []
    for k, tree in enumerate(trees):
        row: dict[str, object] = {"tree": str(tree), "memories": n}
        for name in ("recall", "hybrid_recall"):
            stats = percentiles(timings[(k, name)])
            row[f"{name}_p50_ms"] = stats["p50_ms"]
            row[f"{name}_p95_ms"] = stats["p95_ms"]
        rows.append(row)
    print_table(f"A/B latency through the protocol (ms), {rounds} x {queries} queries each", rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", required=True, help="comma-separated source trees (each holds spatial_memory/)")
    parser.add_argument("--store-root", required=True, help="where the synthetic store is built or found")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = [Path(t) for t in args.trees.split(",")]
    asyncio.run(measure(Path(args.store_root), trees, args.memories, args.queries, args.rounds))


if __name__ == "__main__":
    main()

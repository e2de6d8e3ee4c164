"""recall / hybrid_recall latency, ingest and cold start through the protocol, A/B: two source trees,
interleaved in one run.

    python -m benchmarks.latency_ab --trees /tmp/base,. --store-root /tmp/ab   # 10,000 memories
    python -m benchmarks.latency_ab --trees /tmp/base,. --store-root /tmp/ab --sections ingest,cold_start

recall: the store is the latency section's synthetic one (benchmarks.run.build_synthetic_store, built
once under --store-root and reused); each tree gets its own copy of it and its own server
(PYTHONPATH=tree), and the calls alternate between the servers query by query, so a slower minute of
the shared host costs both alike. The queries and timing are those of benchmarks.run.latency.
ingest: each tree's server fills an empty store of its own with remember_batch calls of 100 (the
ingest section's texts and namespaces), the servers taking turns batch by batch.
cold_start: spawn -> initialize -> tools/list -> first remember -> first recall on an empty store
(the ONNX graph already built, as every start after the first), the trees taking turns run by run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from contextlib import AsyncExitStack
from pathlib import Path

from spatial_memory.evaluation.soak import short_texts

from .common import call, call_result, percentiles, print_table, server
from .run import _fresh_store, _shared_models, latency_store

SECTIONS = ("recall", "ingest", "cold_start")


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


async def ingest(root: Path, trees: list[Path], n: int) -> list[dict[str, object]]:
    texts = short_texts(n, seed=n)
    models = _shared_models(root)
    batches: dict[int, list[float]] = {k: [] for k in range(len(trees))}
    async with AsyncExitStack() as stack:
        clients = []
        for k, tree in enumerate(trees):
            store = _fresh_store(root, f"ab-ingest-{k}-{n}", models)
            client, _pid = await stack.enter_async_context(server(store, PYTHONPATH=str(tree.resolve())))
            await call(client, "remember", {"content": "warm-up"})
            clients.append(client)
        for b, start in enumerate(range(0, n, 100)):
            batch = [
                {"content": c, "namespace": f"ns{(start + i) % 10}"} for i, c in enumerate(texts[start : start + 100])
            ]
            order = list(range(len(clients)))
            if b % 2:
                order.reverse()
            for k in order:
                t = time.perf_counter()
                await call(clients[k], "remember_batch", {"memories": batch})
                batches[k].append(time.perf_counter() - t)
    rows: list[dict[str, object]] = []
    for k, tree in enumerate(trees):
        # The same batch on each tree, one right after the other: the median of their ratios
        # leaves out most of what the shared host's load does to both.
        paired = statistics.median(t / b for t, b in zip(batches[k], batches[0], strict=True))
        rows.append(
            {
                "tree": str(tree),
                "memories": n,
                "remember_batch_per_s": round(n / sum(batches[k]), 1),
                "batch_p50_ms": round(1000 * statistics.median(batches[k]), 1),
                "batch_time_vs_first_tree": round(paired, 3),
            }
        )
    print_table("A/B ingest through the protocol (memories per second, batches of 100)", rows)
    return rows


async def cold_start(root: Path, trees: list[Path], runs: int) -> list[dict[str, object]]:
    models = _shared_models(root)
    steps = ("initialize_s", "tools_list_s", "first_remember_s", "first_recall_s")
    samples: dict[tuple[int, str], list[float]] = {}
    for run in range(runs + 1):  # run 0 compiles each tree's bytecode: not counted
        order = list(range(len(trees)))
        if run % 2:
            order.reverse()
        for k in order:
            store = _fresh_store(root, f"ab-cold-{k}", models)
            t0 = time.perf_counter()
            async with server(store, PYTHONPATH=str(trees[k].resolve())) as (client, _pid):
                marks = [time.perf_counter() - t0]
                await client.list_tools()
                marks.append(time.perf_counter() - t0)
                await call(client, "remember", {"content": "The first memory of this store."})
                marks.append(time.perf_counter() - t0)
                await call(client, "recall", {"query": "first memory"})
                marks.append(time.perf_counter() - t0)
            if run:
                for step, mark in zip(steps, marks, strict=True):
                    samples.setdefault((k, step), []).append(mark)
    rows: list[dict[str, object]] = []
    for k, tree in enumerate(trees):
        row: dict[str, object] = {"tree": str(tree), "runs": runs}
        row.update({step: round(statistics.median(samples[(k, step)]), 3) for step in steps})
        pairs = zip(samples[(k, "first_recall_s")], samples[(0, "first_recall_s")], strict=True)
        row["first_recall_vs_first_tree"] = round(statistics.median(t / b for t, b in pairs), 3)
        rows.append(row)
    print_table(f"A/B cold start (spawn -> ..., seconds, median of {runs} runs each)", rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", required=True, help="comma-separated source trees (each holds spatial_memory/)")
    parser.add_argument("--store-root", required=True, help="where the synthetic store is built or found")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="cold-start runs per tree (median reported)")
    parser.add_argument("--sections", default="recall", help=f"comma-separated, of {', '.join(SECTIONS)}")
    args = parser.parse_args()
    trees = [Path(t) for t in args.trees.split(",")]
    root = Path(args.store_root)
    sections = args.sections.split(",")
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if "recall" in sections:
        asyncio.run(measure(root, trees, args.memories, args.queries, args.rounds))
    if "ingest" in sections:
        asyncio.run(ingest(root, trees, args.memories))
    if "cold_start" in sections:
        asyncio.run(cold_start(root, trees, args.runs))


if __name__ == "__main__":
    main()

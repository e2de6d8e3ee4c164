"""Resident memory of a server session (issue 39), through the Python SDK client.

    python -m benchmarks.footprint                         # 3 interleaved rounds, this checkout
    python -m benchmarks.footprint --before /tmp/before    # and another checkout of ours beside it

The session: spawn -> initialize, `stats` (the store opens), one `remember` (the model loads),
1,000 memories by `remember_batch` in calls of 100, 50 recalls, a 500-point `visualize`,
`regions`, then 5 s idle. After each step the server's VmRSS and VmHWM (its peak so far) are
read from /proc. Each server runs the session twice per round: on a fresh store with an empty
model cache (its first start ever: the ONNX graph is built), then on a fresh store whose model
cache holds the graph. Servers: this checkout on its default path (int8-row) and with
SPATIAL_MEMORY_EMBEDDING_PRECISION=fp32, and `--before` when given; the order alternates by round.
Results: benchmarks/results/footprint.json.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.soak import rss_mb, short_texts

from .common import keep_row, print_table, write_json
from .reference import call, ours_command, spawn

N = 1000
RECALLS = 50
VIZ = 500
SETTLE_SECONDS = 5.0
STEPS = ("initialize", "stats", "first_remember", "ingest_1000", "recalls_50", "visualize_500", "regions", "idle_5s")


async def session(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    row: dict[str, Any] = {}
    texts = short_texts(N, seed=N)

    def mark(step: str, pid: int | None) -> None:
        memory = rss_mb(pid) if pid else {}
        row[f"{step}_rss_mb"] = memory.get("rss_mb")
        row[f"{step}_peak_mb"] = memory.get("peak_rss_mb")

    async with spawn(argv, env, cwd) as (client, pid):
        mark("initialize", pid)
        await call(client, "stats", {})
        mark("stats", pid)
        await call(client, "remember", {"content": "warm-up"})
        mark("first_remember", pid)
        t = time.perf_counter()
        for start in range(0, N, 100):
            await call(client, "remember_batch", {"memories": [{"content": c} for c in texts[start : start + 100]]})
        row["ingest_per_s"] = round(N / (time.perf_counter() - t), 1)
        mark("ingest_1000", pid)
        for q in short_texts(RECALLS, seed=12345):
            await call(client, "recall", {"query": q, "limit": 10})
        mark("recalls_50", pid)
        await call(client, "visualize", {"format": "json", "max_memories": VIZ})
        mark("visualize_500", pid)
        await call(client, "regions", {})
        mark("regions", pid)
        await asyncio.sleep(SETTLE_SECONDS)
        mark("idle_5s", pid)
    return row


async def compare(rounds: int, before: Path | None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sm-footprint-"))
    servers: list[tuple[str, Path | None, dict[str, str]]] = [
        ("int8-row (default)", None, {}),
        ("fp32", None, {"SPATIAL_MEMORY_EMBEDDING_PRECISION": "fp32"}),
    ]
    if before is not None:
        servers.insert(0, ("before", before, {}))
    rows = []
    try:
        for round_ in range(1, rounds + 1):
            for name, source, extra in servers if round_ % 2 else servers[::-1]:
                cache = root / f"user-cache-{name.split()[0]}"  # handshake cache: shared by a server's runs
                models = root / f"models-{name.split()[0]}-{round_}"
                for graph in ("built", "cached"):
                    store = root / f"store-{round_}-{name.split()[0]}-{graph}"
                    shutil.rmtree(store, ignore_errors=True)
                    store.mkdir(parents=True)
                    if graph == "cached":
                        (store / "models").symlink_to(models)
                    argv, env = ours_command(store, cache, source)
                    env.update(extra)
                    row = {"server": name, "graph": graph, "round": round_, **await session(argv, env, root)}
                    if graph == "built":
                        shutil.move(str(store / "models"), models)
                    keep_row(rows, row)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = summarize(rows)
    print_table(f"Server session footprint, MB (medians of {rounds} rounds; VmRSS / VmHWM after each step)", summary)
    return {"n": N, "recalls": RECALLS, "visualize": VIZ, "rounds": rows, "summary": summary}


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name in dict.fromkeys(r["server"] for r in rows):
        for graph in ("built", "cached"):
            mine = [r for r in rows if r["server"] == name and r["graph"] == graph]
            entry: dict[str, Any] = {"server": name, "model graph": graph}
            for step in STEPS:
                rss = statistics.median(r[f"{step}_rss_mb"] for r in mine)
                peak = statistics.median(r[f"{step}_peak_mb"] for r in mine)
                entry[step] = f"{rss:g} / {peak:g}"
            peaks = [r["idle_5s_peak_mb"] for r in mine]
            entry["session peak (range)"] = f"{statistics.median(peaks):g} ({min(peaks):g}-{max(peaks):g})"
            entry["ingest/s"] = round(statistics.median(r["ingest_per_s"] for r in mine), 1)
            out.append(entry)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="", help="another checkout of this project, measured too")
    args = parser.parse_args()
    from .reference import host_load

    result = asyncio.run(compare(args.rounds, Path(args.before) if args.before else None))
    write_json("footprint", {**result, "host": host_load()})


if __name__ == "__main__":
    main()

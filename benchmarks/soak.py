"""Leak soak: drive one server with many mixed calls and watch its RSS and open file count.

    python -m benchmarks.soak                  # 10,000 calls, the real server and bundled model
    python -m benchmarks.soak --calls 2000 --fake   # the fake embedder (plumbing only, fast)

Prints a table (one row per sample) and writes benchmarks/results/soak.json. "Flat" means: after
the warm-up (caches filled, the first compactions done) RSS and file descriptors stop growing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.soak import MixedWorkload, open_fds, rss_mb, summarize

from .common import print_table, write_json


def _sample(pid: int, calls: int, started: float, memories: int) -> dict[str, Any]:
    memory = rss_mb(pid)
    return {
        "calls": calls,
        "rss_mb": memory.get("rss_mb"),
        "peak_rss_mb": memory.get("peak_rss_mb"),
        "open_fds": open_fds(pid),
        "memories": memories,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


async def soak(calls: int, *, fake: bool, sample_every: int, warm_up: int) -> dict[str, Any]:
    from mcp import Client

    from .common import child_pids, server, server_params

    root = Path(tempfile.mkdtemp(prefix="soak-"))
    store = root / "store"
    store.mkdir()
    if fake:  # the same server with the fake embedder (tests.reliability_server)
        params = server_params(store, SPATIAL_MEMORY_WARM_UP_PROJECTION="false")
        params.args = ["-m", "tests.reliability_server"]
        params.env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        before = set(child_pids())
        context = Client(params, read_timeout_seconds=600)
    else:
        context = server(store, SPATIAL_MEMORY_WARM_UP_PROJECTION="false")
    samples: list[dict[str, Any]] = []
    errors: dict[str, int] = {}
    async with context as opened:
        if fake:
            client = opened
            pid = next(p for p in child_pids() if p not in before)
        else:
            client, pid = opened
        workload = MixedWorkload(tools={t.name for t in (await client.list_tools()).tools})
        started = time.perf_counter()
        samples.append(_sample(pid, 0, started, 0))
        for i in range(1, calls + 1):
            name, args = workload.next_call()
            result = await client.call_tool(name, args)
            data = dict(result.structured_content or {})
            data["isError"] = result.is_error
            if result.is_error:
                errors[data.get("error", "?")] = errors.get(data.get("error", "?"), 0) + 1
            workload.observe(name, data)
            if i % sample_every == 0 or i == calls:
                samples.append(_sample(pid, i, started, len(workload.ids)))
                print(f"  {i} calls: rss {samples[-1]['rss_mb']} MB, fds {samples[-1]['open_fds']}", file=sys.stderr)
    summary = summarize(samples, warm_up)
    print_table(f"Soak: {calls} mixed calls ({'fake embedder' if fake else 'bundled model'})", samples)
    print_table("Soak summary", [summary])
    return {"calls": calls, "fake_embedder": fake, "samples": samples, "summary": summary, "error_results": errors}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--fake", action="store_true", help="use the fake embedder (no model)")
    parser.add_argument("--sample-every", type=int, default=500)
    parser.add_argument("--warm-up", type=int, default=1_000, help="calls before the baseline sample")
    args = parser.parse_args(argv)
    result = asyncio.run(soak(args.calls, fake=args.fake, sample_every=args.sample_every, warm_up=args.warm_up))
    path = write_json("soak" if not args.fake else "soak_fake", result)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

"""Leak soak: drive one server with many mixed calls and watch its RSS and open file count.

    python -m benchmarks.soak                  # 10,000 calls, the real server and bundled model
    python -m benchmarks.soak --calls 2000 --fake   # the fake embedder (plumbing only, fast)

Prints a table (one row per sample) and writes benchmarks/results/soak.json. "Flat" means: after
the warm-up (caches filled, the first compactions done) RSS and file descriptors stop growing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import open_fds, print_table, rss_mb, short_texts, write_json


class MixedWorkload:
    """The next tool call of a realistic mix (writes, reads, searches, spatial tools, deletes),
    keeping the store at a steady size so growth can only come from the server itself."""

    def __init__(self, seed: int = 0, tools: set[str] | None = None, target_size: int = 400) -> None:
        self.rng = random.Random(seed)
        self.tools = tools or set()
        self.target = target_size
        self.ids: list[str] = []
        self.texts = short_texts(5000, seed)
        self.n = 0

    def _text(self) -> str:
        self.n += 1
        return f"{self.rng.choice(self.texts)} #{self.n}"

    def next_call(self) -> tuple[str, dict[str, Any]]:
        rng, have = self.rng, len(self.ids)
        grow = have < self.target
        choices: list[tuple[str, float]] = [
            ("remember", 20 if grow else 8),
            ("remember_batch", 4 if grow else 1),
            ("forget", 2 if grow else 10),
            ("recall", 22),
            ("hybrid_recall", 8),
            ("nearby", 8),
            ("stats", 4),
            ("namespaces", 4),
            ("wander", 3),
            ("journey", 2),
            ("forget_batch", 0 if grow else 2),
            ("reinforce", 2),
            ("bad_input", 3),
        ]
        names, weights = zip(*[(n, w) for n, w in choices if n in self.tools or n == "bad_input" or not self.tools])
        name = rng.choices(names, weights)[0]
        if name in ("nearby", "forget", "journey", "wander", "forget_batch", "reinforce") and have < 3:
            name = "remember"
        namespace = rng.choice(["work", "home", "ideas"])
        if name == "remember":
            return name, {"content": self._text(), "namespace": namespace, "tags": [namespace]}
        if name == "remember_batch":
            return name, {"memories": [{"content": self._text(), "namespace": namespace} for _ in range(10)]}
        if name in ("recall", "hybrid_recall"):
            limit, where = rng.choice([1, 5, 10]), rng.choice([None, namespace])
            return name, {"query": self._text(), "limit": limit, "namespace": where}
        if name == "nearby":
            return name, {"memory_id": rng.choice(self.ids), "limit": 5}
        if name == "forget":
            return name, {"memory_id": self.ids.pop(rng.randrange(have))}
        if name == "forget_batch":
            return name, {"memory_ids": [self.ids.pop(rng.randrange(len(self.ids))) for _ in range(3)]}
        if name == "wander":
            return name, {"start_id": rng.choice(self.ids), "steps": 3, "random_seed": rng.randrange(1000)}
        if name == "journey":
            a, b = rng.sample(self.ids, 2)
            return name, {"start_id": a, "end_id": b, "steps": 4}
        if name == "reinforce":
            return name, {"memory_ids": rng.sample(self.ids, 2)}
        if name == "bad_input":  # errors must not leak either
            return rng.choice(
                [
                    ("remember", {"content": ""}),
                    ("recall", {"query": "x", "limit": 0}),
                    ("nearby", {"memory_id": "not-a-uuid"}),
                    ("recall", {"query": "x", "filters": {"nope": 1}}),
                ]
            )
        return name, {}

    def observe(self, name: str, data: dict[str, Any]) -> None:
        if data.get("isError"):
            return
        if name == "remember" and "id" in data:
            self.ids.append(data["id"])
        elif name == "remember_batch":
            self.ids.extend(data.get("ids", []))


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


def summarize(samples: list[dict[str, Any]], warm_up_calls: int) -> dict[str, Any]:
    after = [s for s in samples if s["calls"] >= warm_up_calls] or samples
    first, last = after[0], samples[-1]
    return {
        "warm_up_calls": warm_up_calls,
        "rss_after_warm_up_mb": first["rss_mb"],
        "rss_end_mb": last["rss_mb"],
        "rss_growth_after_warm_up_mb": round(last["rss_mb"] - first["rss_mb"], 1),
        "rss_max_after_warm_up_mb": max(s["rss_mb"] for s in after),
        "fds_after_warm_up": first["open_fds"],
        "fds_end": last["open_fds"],
        "fds_max_after_warm_up": max(s["open_fds"] for s in after),
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

"""What deciding near-threshold similarities on fp32 costs an ingest on int8-row (embeddings/decisions.py).

    python -m benchmarks.decision_cost [--rounds 2]

Ingests, through a server in this process (remember_batch of 100; its look-alike checks at 0.9
and 0.75 are the decisions an ingest makes): every LoCoMo dev turn (a namespace per conversation)
and 2,000 short notes (benchmarks.run's generator). Three embedders, in alternating order per
round: int8-row as served (decisions near a threshold on fp32), int8-row with no band (every
decision on int8-row cosines: the speed the band could cost), fp32. Reported: memories per second
(median of rounds), and how often the fp32 reference was asked and how many texts it embedded.

Results: benchmarks/results/decision_cost.json.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.embeddings import EmbeddingRouter
from spatial_memory.evaluation import locomo
from spatial_memory.evaluation.soak import short_texts
from spatial_memory.server import create_server

from .common import print_table, write_json
from .reference import host_load


class NoBand(EmbeddingRouter):
    """int8-row deciding every similarity on its own cosines: the baseline the band is measured against."""

    def decision_band(self, threshold: float) -> float:
        return 0.0


def workloads() -> dict[str, list[dict[str, str]]]:
    turns = [{"content": t.text, "namespace": c.sample_id} for c in locomo.load() for t in c.turns]
    return {
        f"LoCoMo dev turns ({len(turns):,})": turns,
        "short notes (2,000)": [{"content": t} for t in short_texts(2000, seed=45)],
    }


async def ingest(embedder: EmbeddingRouter, memories: list[dict[str, str]], root: Path) -> float:
    """Memories per second, remember_batch of 100 into a fresh store."""
    async with Client(create_server(Settings(path=root, preload=False), embedder=embedder)) as client:
        await client.call_tool("remember", {"content": "warm-up", "namespace": "warm-up"})
        started = time.perf_counter()
        for start in range(0, len(memories), 100):
            result = await client.call_tool("remember_batch", {"memories": memories[start : start + 100]})
            assert not result.is_error, result
        return len(memories) / (time.perf_counter() - started)


async def main_async(rounds: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sm-decisions-"))
    models = root / "models"
    makers = {
        "int8-row (default, as served)": lambda: EmbeddingRouter(precision="int8-row", cache_dir=models),
        "int8-row, no band": lambda: NoBand(precision="int8-row", cache_dir=models),
        "fp32": lambda: EmbeddingRouter(precision="fp32", cache_dir=models),
    }
    for make in makers.values():
        make().load()  # graphs built before anything is timed
    rows = []
    stores = itertools.count()
    for name, memories in workloads().items():
        rates: dict[str, list[float]] = {label: [] for label in makers}
        asks: dict[str, tuple[int, int]] = {}
        for r in range(rounds):
            for label in list(makers) if r % 2 == 0 else list(makers)[::-1]:
                embedder = makers[label]()
                rates[label].append(await ingest(embedder, memories, root / f"store-{next(stores)}"))
                asks[label] = (embedder.reference_asks, embedder.reference_texts)
        for label in makers:
            rows.append(
                {
                    "workload": name,
                    "embedder": label,
                    "memories/s (median)": round(statistics.median(rates[label]), 1),
                    "rounds": ", ".join(f"{x:.1f}" for x in rates[label]),
                    "fp32 asked (times, texts)": f"{asks[label][0]}, {asks[label][1]}",
                }
            )
    print_table(f"Ingest with and without fp32 decisions near a threshold ({host_load()})", rows)
    return {"rows": rows, "rounds": rounds, "host": host_load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    write_json("decision_cost", asyncio.run(main_async(parser.parse_args().rounds)))


if __name__ == "__main__":
    main()

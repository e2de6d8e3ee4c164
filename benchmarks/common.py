"""Shared benchmark plumbing: spawn the real server over stdio, time calls, read RSS."""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def server_params(store: Path, **env: str):
    from mcp.client.stdio import StdioServerParameters

    # An installed package runs from cached bytecode; this sandbox sets PYTHONDONTWRITEBYTECODE,
    # which would make every spawn recompile the project's modules (~0.3 s), so it is dropped.
    base = {
        k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    base.update({"SPATIAL_MEMORY_PATH": str(store), "HF_HUB_OFFLINE": "1"}, **env)
    return StdioServerParameters(command=sys.executable, args=["-m", "spatial_memory"], env=base, cwd=str(store.parent))


def child_pids() -> list[int]:
    me = os.getpid()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                pids.append(int(entry.name))
    return pids


@asynccontextmanager
async def server(store: Path, **env: str) -> AsyncIterator[tuple[Any, int | None]]:
    """An initialized client session to a freshly spawned server, and the server's pid."""
    from mcp import Client

    before = set(child_pids())
    async with Client(server_params(store, **env), read_timeout_seconds=600) as client:
        spawned = [p for p in child_pids() if p not in before]
        yield client, (spawned[0] if spawned else None)


async def call_result(client, name: str, args: dict[str, Any]):
    """The whole CallToolResult of a call that must succeed."""
    result = await client.call_tool(name, args)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.structured_content}")
    return result


async def call(client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return (await call_result(client, name, args)).structured_content


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(pct(95), 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
        "n": len(ordered),
    }


def listing_size(tools: list[Any]) -> dict[str, int]:
    """What a tools/list answer (the SDK's Tool objects) costs a model: compact JSON characters,
    and about a quarter as many tokens."""
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    size = len(json.dumps({"tools": dumped}, separators=(",", ":")))
    return {"tools": len(dumped), "tools_list_chars": size, "approx_tokens": size // 4}


def markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows (dicts, columns in first-seen order) as the lines of an aligned markdown table."""
    if not rows:
        return []
    columns = list(dict.fromkeys(k for row in rows for k in row))
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    lines = ["| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |"]
    lines.append("|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|")
    lines += ["| " + " | ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns) + " |" for row in rows]
    return lines


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    print(f"\n## {title}\n")
    print("\n".join(markdown_table(rows)))
    sys.stdout.flush()


def keep_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """A run's row kept, and shown on stderr as it lands (a long run's progress)."""
    rows.append(row)
    print(json.dumps(row), file=sys.stderr, flush=True)


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {"generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def machine() -> dict[str, Any]:
    import platform

    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "memory_mb": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


# A typical latency-section query (short_texts' kind, 22 tokens).
PROBE_QUERY = "The mobile app was rewritten for gRPC streaming until further notice. (note 0)"


@functools.cache
def _probe_model(models: Path) -> Any:
    from spatial_memory.embeddings.onnx_encoder import OnnxSentenceEncoder, bundled_model_dir
    from spatial_memory.embeddings.router import NEW_STORE_PATH

    return OnnxSentenceEncoder(bundled_model_dir(), models, precision=NEW_STORE_PATH)


def host_probe_ms(models: Path, runs: int = 200) -> float:
    """How fast this host is right now: the median time of the bundled model (a new store's path)
    embedding PROBE_QUERY in this process, warm, in ms. Shared hosts swing by a third within
    minutes, and every latency scales with them: a figure read beside its probe can be compared
    with one taken at another moment."""
    model = _probe_model(models)
    for _ in range(20):
        model.encode([PROBE_QUERY])
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        model.encode([PROBE_QUERY])
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 2)

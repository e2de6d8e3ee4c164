"""Beside the reference: this server and spatial-memory-mcp 1.11.4 (PyPI), measured in one run.

    python -m benchmarks.reference                    # 3 interleaved rounds, N = 1,000
    python -m benchmarks.reference --venv /tmp/ref-venv --rounds 5
    python -m benchmarks.run --only cold_start --reference   # the same, inside the suite
    python -m benchmarks.reference -n 10000 --fp32 --ingest-only    # backfill-sized ingest, both paths

The reference is installed into a scratch virtualenv on first use (torch first, then the
package; several minutes) and driven through the same MCP client as ours. Each round, for
each server in turn: a fresh store, spawn -> tools/list, remember_batch of N short texts in
calls of 100, recall latency (after 15 s without calls); then a fresh process on that store whose first call is
visualize (500 memories, json), then visualize over all N, and the process's peak RSS.
Round 1 runs ours with an empty layout cache (its first map ever); later rounds share one.
Results: benchmarks/results/reference.json, rendered by `python -m benchmarks.report`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.soak import rss_mb, short_texts

from .common import child_pids, keep_row, print_table, write_json

REFERENCE_VERSION = "1.11.4"
# The reference imports torch through sentence-transformers; pip would otherwise pick a CUDA build.
TORCH_VERSION = "2.13.0"
VIZ_MEMORIES = 500
RECALL_QUERIES = 50
SETTLE_SECONDS = 15.0


def ensure_reference(venv: Path) -> Path:
    """The python of a virtualenv with the reference installed (created when missing)."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import importlib.metadata as m; print(m.version('spatial-memory-mcp'))"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip() == REFERENCE_VERSION:
            return python
    print(f"installing spatial-memory-mcp {REFERENCE_VERSION} into {venv} (several minutes)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"torch=={TORCH_VERSION}"], check=True)
    subprocess.run([*pip, f"spatial-memory-mcp=={REFERENCE_VERSION}"], check=True)
    return python


def _env(**extra: str) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPATIAL_MEMORY_", "NUMBA_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    return {**base, "HF_HUB_OFFLINE": "1", **extra}


def ours_command(store: Path, cache: Path, source: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """This checkout's server, or the one in `source` (another checkout: a before/after run)."""
    env = _env(SPATIAL_MEMORY_PATH=str(store), XDG_CACHE_HOME=str(cache))
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return [sys.executable, "-m", "spatial_memory"], env


def reference_command(python: Path, store: Path) -> tuple[list[str], dict[str, str]]:
    from spatial_memory.embeddings.onnx_encoder import bundled_model_dir

    env = _env(
        SPATIAL_MEMORY_MEMORY_PATH=str(store),
        # The same MiniLM weights from a local path: this sandbox cannot reach the Hugging Face hub.
        SPATIAL_MEMORY_EMBEDDING_MODEL=str(bundled_model_dir()),
        SPATIAL_MEMORY_MAX_VISUALIZE_MEMORIES=str(VIZ_MEMORIES),
    )
    env.pop("PYTHONPATH", None)  # it would import our package instead
    return [str(python), "-m", "spatial_memory"], env


@asynccontextmanager
async def spawn(command: list[str], env: dict[str, str], cwd: Path) -> AsyncIterator[tuple[Any, int | None]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))
    before = set(child_pids())
    async with Client(params, read_timeout_seconds=900) as client:
        spawned = [p for p in child_pids() if p not in before]
        yield client, (spawned[0] if spawned else None)


async def call(client, name: str, args: dict[str, Any]) -> Any:
    """A tool call that must succeed, on either server (the reference answers in JSON text only)."""
    result = await client.call_tool(name, args)
    payload = result.structured_content
    if payload is None and result.content:
        try:
            payload = json.loads(result.content[0].text)
        except (AttributeError, ValueError):
            payload = None
    if result.is_error or (isinstance(payload, dict) and payload.get("isError")):
        raise RuntimeError(f"{name} failed: {payload or result.content}")
    return payload


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time a process has used so far (Linux /proc; all its threads). Less
    sensitive than wall time to other work on a shared host."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_server(name: str, command, root: Path, n: int, ingest_only: bool = False) -> dict[str, Any]:
    store = root / f"{name}-store"
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    argv, env = command(store)
    texts = short_texts(n, seed=n)
    row: dict[str, Any] = {"server": name}
    t0 = time.perf_counter()
    async with spawn(argv, env, root) as (client, pid):
        await client.list_tools()
        row["spawn_to_tools_list_s"] = round(time.perf_counter() - t0, 2)
        await call(client, "remember", {"content": "warm-up"})
        row["spawn_to_first_remember_s"] = round(time.perf_counter() - t0, 2)
        t, cpu = time.perf_counter(), cpu_seconds(pid)
        for start in range(0, n, 100):
            await call(client, "remember_batch", {"memories": [{"content": c} for c in texts[start : start + 100]]})
        wall = time.perf_counter() - t
        row["ingest_wall_s"] = round(wall, 2)
        row["remember_batch_per_s"] = round(n / wall, 1)
        row["remember_batch_cpu_ms_per_memory"] = round((cpu_seconds(pid) - cpu) * 1000 / n, 2)
        row["peak_rss_after_ingest_mb"] = (rss_mb(pid) if pid else {}).get("peak_rss_mb")
        # Recall is timed in the steady state, once a pause after the burst let upkeep fold the
        # writes into the indexes (storage/table/maintenance.py IDLE_COMPACT_SECONDS, 10 s), as
        # after an import; both servers wait alike.
        await asyncio.sleep(SETTLE_SECONDS)
        samples = []
        for q in short_texts(RECALL_QUERIES, seed=12345):
            t = time.perf_counter()
            await call(client, "recall", {"query": q, "limit": 10})
            samples.append((time.perf_counter() - t) * 1000)
        row["recall_p50_ms"] = round(statistics.median(samples), 1)
        row["recall_p95_ms"] = round(float(sorted(samples)[round(0.95 * (len(samples) - 1))]), 1)
        row["host_load"] = host_load()
    if ingest_only:
        return row
    viz_all = {"max_memories": n} if name != "reference" else {}  # the reference caps maps by a setting
    async with spawn(argv, env, root) as (client, pid):
        t, cpu = time.perf_counter(), cpu_seconds(pid)
        await call(client, "visualize", {"format": "json", **({"max_memories": VIZ_MEMORIES} if viz_all else {})})
        row[f"first_visualize_{VIZ_MEMORIES}_s"] = round(time.perf_counter() - t, 2)
        # The whole process's CPU meanwhile, the background warm-up (model, store) included.
        row[f"first_visualize_{VIZ_MEMORIES}_process_cpu_s"] = round(cpu_seconds(pid) - cpu, 2)
        if viz_all:
            await call(client, "remember", {"content": "one more"})  # a new table version: no cached map
            await call(client, "visualize", {"format": "json", **viz_all})
        row["peak_rss_after_visualize_mb"] = (rss_mb(pid) if pid else {}).get("peak_rss_mb")
        row["visualize_memories_for_rss"] = n if viz_all else VIZ_MEMORIES
    return row


async def compare(
    venv: Path,
    rounds: int = 3,
    n: int = 1000,
    before: Path | None = None,
    *,
    fp32: bool = False,
    ingest_only: bool = False,
) -> dict[str, Any]:
    """Both servers (and `before`, another checkout of ours, and ours on the fp32 path, when asked),
    interleaved rounds with the order alternating; prints the table, returns the JSON."""
    python = ensure_reference(venv)
    root = Path(tempfile.mkdtemp(prefix="sm-ref-"))
    layout_cache = root / "user-cache"  # ours: empty in round 1, its first map ever
    rows = []
    try:
        for round_ in range(1, rounds + 1):
            servers = [
                ("ours", lambda store: ours_command(store, layout_cache)),
                ("reference", lambda store: reference_command(python, store)),
            ]
            if fp32:
                servers.insert(1, ("ours-fp32", lambda store: ours_fp32_command(store, root / "fp32-cache")))
            if before is not None:
                servers.insert(1, ("before", lambda store: ours_command(store, root / "before-cache", before)))
            for name, command in servers if round_ % 2 else servers[::-1]:
                row = await one_server(name, command, root, n, ingest_only)
                row["round"] = round_
                keep_row(rows, row)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = summarize(rows)
    print_table(f"Beside spatial-memory-mcp {REFERENCE_VERSION} (N = {n:,}; medians of {rounds} rounds)", summary)
    return {"reference_version": REFERENCE_VERSION, "n": n, "host": host_load(), "rounds": rows, "summary": summary}


def ours_fp32_command(store: Path, cache: Path) -> tuple[list[str], dict[str, str]]:
    """This checkout's server on the bundled model's fp32 path (sentence-transformers' vectors)."""
    argv, env = ours_command(store, cache)
    return argv, {**env, "SPATIAL_MEMORY_EMBEDDING_PRECISION": "fp32"}


def host_load() -> str:
    """The 1/5/15-minute load averages and the core count when the run ended: a busy host's figures
    are noisier (ratios measured in one run hold up better than absolute times)."""
    try:
        return f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])} on {os.cpu_count()} cores"
    except OSError:
        return ""


METRICS = (
    "spawn_to_tools_list_s",
    "spawn_to_first_remember_s",
    "remember_batch_per_s",
    "ingest_wall_s",
    "remember_batch_cpu_ms_per_memory",
    "peak_rss_after_ingest_mb",
    "recall_p50_ms",
    "recall_p95_ms",
    f"first_visualize_{VIZ_MEMORIES}_s",
    f"first_visualize_{VIZ_MEMORIES}_process_cpu_s",
    "peak_rss_after_visualize_mb",
)


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per metric: both servers' medians (and range) over the rounds, and ours / the reference's."""
    out = []
    for metric in METRICS:
        entry: dict[str, Any] = {"metric": metric}
        medians = {}
        for name in ("before", "ours-fp32", "ours", "reference"):
            values = [r[metric] for r in rows if r["server"] == name and r.get(metric) is not None]
            if metric.startswith("first_visualize") and name != "reference":
                values = values[1:] or values  # round 1: its first map with an empty user cache, on its own
            if values:
                medians[name] = statistics.median(values)
                entry[name] = f"{medians[name]:g} ({min(values):g}-{max(values):g})"
        for name in ("ours", "ours-fp32", "before"):
            if medians.get(name) is not None and medians.get("reference"):
                entry[f"{name} / reference"] = f"{medians[name] / medians['reference']:.2f}x"
        # Per round, then the median: both servers of a round saw the same host load.
        paired = [
            (r, next((o for o in rows if o["server"] == "reference" and o["round"] == r["round"]), None))
            for r in rows
            if r["server"] == "ours"
        ]
        ratios = [r[metric] / o[metric] for r, o in paired if o and r.get(metric) and o.get(metric)]
        if ratios:
            entry["ours / reference per round (median)"] = f"{statistics.median(ratios):.2f}x"
        out.append(entry)
    key = f"first_visualize_{VIZ_MEMORIES}_s"
    firsts = {r["server"]: f"{r[key]:g}" for r in rows if r["server"] != "reference" and r["round"] == 1 and key in r}
    if firsts:
        out.append({"metric": f"{key}, first map ever (round 1)", **firsts})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=str(Path(tempfile.gettempdir()) / "ref-venv"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-n", type=int, default=1000, help="memories stored per round")
    parser.add_argument("--before", default="", help="another checkout of this project, measured too")
    parser.add_argument("--fp32", action="store_true", help="ours on the fp32 path too")
    parser.add_argument("--ingest-only", action="store_true", help="no visualize step (backfill-sized runs)")
    parser.add_argument("--name", default="reference", help="results file name (benchmarks/results/<name>.json)")
    args = parser.parse_args()
    before = Path(args.before) if args.before else None
    result = compare(Path(args.venv), args.rounds, args.n, before, fp32=args.fp32, ingest_only=args.ingest_only)
    write_json(args.name, asyncio.run(result))


if __name__ == "__main__":
    main()

"""Backfill on a synthetic Claude Code history: wall time, memories per second, peak RSS.

The history is written the way Claude Code keeps it (~/.claude/projects/<project>/<session>.jsonl):
user prompts (decisions, preferences, plain requests), assistant answers, tool uses with their
results (commands that pass, fail and pass again after edits, edits, reads) and a secret now and
then. Each run backfills it twice into a fresh store (the second run must store nothing) in a
child process, so its peak RSS is the backfill's own.

    python -m benchmarks.backfill [--turns 10000]    # table + benchmarks/results/backfill.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.history import synthetic_history

from .common import print_table, write_json


def _env(home: Path, store: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "SPATIAL_MEMORY_PATH": str(store),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


def run_once(home: Path, store: Path) -> dict[str, Any]:
    """One `spatial-memory backfill` in a child process: wall time, its stderr, its peak RSS."""
    env = _env(home, store)
    command = [sys.executable, "-c", _CHILD, "--client", "claude-code"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall, 2), **report}


# The child: the CLI's backfill, then its own peak RSS (ru_maxrss, KiB on Linux) on stdout.
_CHILD = """
import json, resource, sys
from spatial_memory.cli import main
try:
    main(["backfill", *sys.argv[1:]])
finally:
    print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def embed_only(home: Path, store: Path, contents: Path) -> dict[str, Any]:
    """The baseline, in the same run and the same kind of child: only embedding the memories
    backfill stored (the model, as the server loads it for that store), in batches of 500."""
    env = _env(home, store)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _EMBED, str(contents)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return {"wall_s": round(time.perf_counter() - started, 2), **json.loads(done.stdout.strip().splitlines()[-1])}


_EMBED = """
import json, resource, sys
from spatial_memory.config import Settings
from spatial_memory.runtime.resources import Resources
texts = json.load(open(sys.argv[1]))
embedder = Resources(Settings()).embedder
for start in range(0, len(texts), 500):
    embedder.embed_documents(texts[start:start + 500])
print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def bundled_models(directory: Path) -> Path:
    """The bundled model's ONNX graph, built into `directory` (what a store's models/ holds)."""
    from spatial_memory.embeddings import EmbeddingRouter

    EmbeddingRouter(cache_dir=directory).load()
    return directory


def stored_contents(store: Path) -> list[str]:
    from spatial_memory.storage.store import MemoryStore

    return [r.content for r in MemoryStore(store / "lancedb", "all-MiniLM-L6-v2", 384).scan()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        home = Path(root) / "home"
        synthetic_history(home, args.turns)
        store = Path(root) / "store"
        store.mkdir()
        (store / "models").symlink_to(bundled_models(Path(root) / "models"))  # built once, not timed
        first = run_once(home, store)
        contents = stored_contents(store)
        second = run_once(home, store)
        again = len(stored_contents(store))
        texts = Path(root) / "contents.json"
        texts.write_text(json.dumps(contents))
        baseline = embed_only(home, store, texts)
    memories = len(contents)
    rows = [
        {"run": "first", **first, "memories": memories, "memories_per_s": round(memories / first["wall_s"], 1)},
        {"run": "again (idempotent)", **second, "memories": again - memories, "memories_per_s": None},
        {
            "run": "baseline: embedding them only",
            **baseline,
            "memories": memories,
            "memories_per_s": round(memories / baseline["wall_s"], 1),
        },
    ]
    for row in rows:
        row["x_baseline"] = round(row["wall_s"] / baseline["wall_s"], 2)
    print_table(f"backfill of a synthetic Claude Code history ({args.turns:,} turns)", rows)
    print(f"\nwrote {write_json('backfill', {'turns': args.turns, 'rows': rows})}")


if __name__ == "__main__":
    main()

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
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import print_table, write_json

PROMPTS = [
    "We decided to use {tool} for the {area} because it is faster to set up.",
    "I prefer {tool} over the old setup for {area}, please keep it that way.",
    "Can you look at the {area} code and tell me what it does?",
    "The root cause of the {area} outage was a missing index on the {table} table.",
    "Remember that the {area} deploy must run the migrations before the workers restart.",
    "Please refactor the {area} module, it has grown too big.",
    "Our {area} API key is sk-live-{secret} do not lose it",
]
ANSWERS = [
    "I read the {area} module: it loads the {table} rows and renders them.",
    "Done: the {area} tests pass now.",
    "The {area} service keeps its state in the {table} table, which is why the restart matters.",
    "Noted, {tool} is now the default for {area}.",
]
TOOLS = ["pytest", "ruff", "uv", "poetry", "docker", "make", "vite", "alembic"]
AREAS = ["billing", "search", "auth", "reporting", "ingest", "frontend", "export", "scheduler"]
TABLES = ["invoices", "users", "events", "sessions", "payments", "jobs"]


def _entry(kind: str, content: Any, at: str, cwd: str, session: str, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"{session}-{n}",
        "sessionId": session,
        "timestamp": at,
        "cwd": cwd,
        "message": {"role": kind, "content": content},
        **extra,
    }


def synthetic_history(home: Path, turns: int, *, sessions: int | None = None, seed: int = 7) -> Path:
    """Write `turns` transcript entries over several projects and sessions under home/.claude;
    returns the first project's directory."""
    rng = random.Random(seed)
    sessions = sessions or max(1, turns // 100)
    projects = [home / "src" / name for name in ("shop", "atlas", "ledger")]
    for project in projects:
        (project / ".git").mkdir(parents=True, exist_ok=True)
    per_session = max(1, turns // sessions)
    written = 0
    for s in range(sessions):
        project = projects[s % len(projects)]
        directory = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(project))
        directory.mkdir(parents=True, exist_ok=True)
        session = f"{s:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
        day = 1 + s % 28
        lines: list[dict[str, Any]] = []
        n = 0
        failing: str | None = None
        while n < per_session and written + n < turns:
            at = f"2026-10-{day:02d}T{9 + n // 60 % 10:02d}:{n % 60:02d}:00Z"
            words = {
                "tool": rng.choice(TOOLS),
                "area": rng.choice(AREAS),
                "table": rng.choice(TABLES),
                "secret": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(32)),
            }
            roll = rng.random()
            if roll < 0.3:
                lines.append(_entry("user", rng.choice(PROMPTS).format(**words), at, str(project), session, n))
            elif roll < 0.5:
                text = [{"type": "text", "text": rng.choice(ANSWERS).format(**words)}]
                lines.append(_entry("assistant", text, at, str(project), session, n))
            else:
                tool_id = f"toolu_{session[:8]}_{n}"
                if roll < 0.7 or failing is not None:
                    command = failing or f"{words['tool']} run {words['area']}"
                    fails = failing is None and rng.random() < 0.25
                    stdout = f"{words['area']}: 12 passed" if not fails else ""
                    stderr = (
                        f"E   ImportError: cannot import name '{words['table']}' from '{words['area']}'"
                        if fails
                        else ""
                    )
                    use = [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}]
                    result = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
                    failing = command if fails else None
                else:
                    path = f"{project}/{words['area']}/{words['table']}.py"
                    new = f"from .{words['table']} import {words['table'].title()}Model"
                    use = [
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Edit",
                            "input": {"file_path": path, "old_string": "pass", "new_string": new},
                        }
                    ]
                    result = {"filePath": path}
                lines.append(_entry("assistant", use, at, str(project), session, n))
                n += 1
                block = [{"type": "tool_result", "tool_use_id": tool_id, "content": json.dumps(result)}]
                lines.append(_entry("user", block, at, str(project), session, n, toolUseResult=result))
            n += 1
        written += n
        (directory / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        if written >= turns:
            break
    return projects[0]


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

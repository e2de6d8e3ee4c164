"""Hook latency: wall time of `python -m spatial_memory hook <event>` as the client sees it (a
new process fed the recorded payload on stdin), p50 / p95 over --runs runs per event; and the
time from a hook's exit to its memory being found by `recall` (an edit's memory is spooled when
its turn ends: from the Stop hook that follows it).

Two settings: no server running (SessionStart / UserPromptSubmit then open the store, and for a
prompt load the model, in the hook, within its time budget), and a real server running on the
store (spawned over stdio: it answers the hooks' context requests and ingests the spool). The
store holds the sample captures (bundled model) so that there is context to find. Background
ingesters are off in the first setting so that runs do not compete with them. The floor is a
bare `python -c pass` on the same interpreter: what any Python hook costs on this machine.

    python -m benchmarks.hook_latency [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import RESULTS_DIR

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hooks"
CASES = [  # (label, fixture file, fixture key, event name)
    ("claude-code PostToolUse (Edit)", "claude_code", "PostToolUse_Edit", "PostToolUse"),
    ("claude-code PostToolUse (Bash, failed)", "claude_code", "PostToolUse_Bash_failed", "PostToolUse"),
    ("claude-code UserPromptSubmit", "claude_code", "UserPromptSubmit", "UserPromptSubmit"),
    ("claude-code SessionStart", "claude_code", "SessionStart", "SessionStart"),
    ("claude-code PreCompact", "claude_code", "PreCompact", "PreCompact"),
    ("claude-code Stop", "claude_code", "Stop", "Stop"),
    ("claude-code SessionEnd", "claude_code", "SessionEnd", "SessionEnd"),
    ("cursor afterFileEdit", "cursor", "afterFileEdit", "afterFileEdit"),
    ("cursor afterShellExecution", "cursor", "afterShellExecution", "afterShellExecution"),
    ("cursor beforeSubmitPrompt", "cursor", "beforeSubmitPrompt", "beforeSubmitPrompt"),
    ("cursor afterAgentResponse", "cursor", "afterAgentResponse", "afterAgentResponse"),
    ("cursor sessionStart", "cursor", "sessionStart", "sessionStart"),
]


def env_for(store: Path) -> dict[str, str]:
    # An installed package runs from cached bytecode; this sandbox sets PYTHONDONTWRITEBYTECODE,
    # which would make every hook recompile the modules it imports, so it is dropped.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(SPATIAL_MEMORY_PATH=str(store), SPATIAL_MEMORY_CAPTURE_INGEST="false", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


CPU_TIMES: list[float] = []  # CPU seconds (user + system) of each timed process, in order


def timed(command: list[str], body: bytes, env: dict[str, str]) -> float:
    """Wall time of one hook process; its CPU time goes to CPU_TIMES (on a shared host the wall
    time is the CPU time stretched by everyone else's load)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, input=body, capture_output=True, env=env, timeout=120)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_TIMES.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{command}: {done.stderr.decode()[-500:]}")
    return elapsed


def percentiles(samples: list[float], cpu: list[float] | None = None) -> dict[str, float]:
    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 1)

    out = {"p50_ms": round(statistics.median(samples) * 1000, 1), "p95_ms": pct(samples, 0.95)}
    if cpu:
        out["cpu_p50_ms"] = round(statistics.median(cpu) * 1000, 1)
    return out


def seed(store: Path, project: Path, transcript: Path) -> None:
    """Store the sample session's captures with the bundled model (what SessionStart will read)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from spatial_memory.capture.ingest import ingest_all
    from spatial_memory.capture.spool import Spool
    from spatial_memory.config import Settings
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App

    env = env_for(store)
    for key in (
        "UserPromptSubmit",
        "PostToolUse_Edit",
        "PostToolUse_Bash_failed",
        "PostToolUse_Bash_fixed",
        "SessionEnd",
    ):
        payload = load("claude_code", key, project, transcript)
        payload["session_id"] = "an-earlier-session"
        subprocess.run(
            [sys.executable, "-m", "spatial_memory", "hook", key.split("_")[0]],
            input=json.dumps(payload).encode(),
            env=env,
            check=True,
            capture_output=True,
        )
    app = App(Resources(Settings(path=store, preload=False)))
    ingest_all(app, Spool(store))
    app.resources.close(30)


def load(client: str, key: str, project: Path, transcript: Path) -> dict:
    text = (FIXTURES / f"{client}.json").read_text()
    return json.loads(text.replace("$CWD", str(project)).replace("$TRANSCRIPT", str(transcript)))[key]


def run_cases(cases, runs: int, project: Path, transcript: Path, env: dict[str, str], tag: str) -> dict:
    results = {}
    for label, client, key, event in cases:
        payload = load(client, key, project, transcript)
        samples = []
        for i in range(runs):
            payload["session_id" if client == "claude_code" else "conversation_id"] = f"bench-{tag}-{i}"
            command = [sys.executable, "-m", "spatial_memory", "hook", event]
            samples.append(timed(command, json.dumps(payload).encode(), env))
        results[label] = percentiles(samples, CPU_TIMES[-runs:])
        r = results[label]
        print(
            f"[{tag}] {label:42s} p50 {r['p50_ms']:7.1f} ms  p95 {r['p95_ms']:7.1f} ms  cpu {r['cpu_p50_ms']:6.1f} ms"
        )
    return results


async def with_server(runs: int, store: Path, project: Path, transcript: Path) -> tuple[dict, dict]:
    """Context events and tool uses with a real server on the store, and capture-to-recall times."""
    import anyio

    from .common import call, server

    env = env_for(store)
    with_context = [c for c in CASES if c[3] in ("SessionStart", "UserPromptSubmit", "sessionStart", "PostToolUse")]
    async with server(store, HF_HUB_OFFLINE="1") as (client, _pid):
        await call(client, "recall", {"query": "warm up", "limit": 1})  # the store and model are loaded
        await anyio.sleep(2.0)  # the context socket and spool watcher are up
        results = await anyio.to_thread.run_sync(run_cases, with_context, runs, project, transcript, env, "server")
        visible = []
        for i in range(10):
            payload = load("claude_code", "PostToolUse_Edit", project, transcript)
            marker = f"marker_{i}_{os.urandom(3).hex()}"
            payload["tool_input"]["new_string"] = f"value = compute_{marker}()"
            command = [sys.executable, "-m", "spatial_memory", "hook", "PostToolUse"]
            await anyio.to_thread.run_sync(timed, command, json.dumps(payload).encode(), env)
            # An edit is one memory per file per turn, spooled when the turn ends: time from the Stop.
            stop = load("claude_code", "Stop", project, transcript)
            command = [sys.executable, "-m", "spatial_memory", "hook", "Stop"]
            await anyio.to_thread.run_sync(timed, command, json.dumps(stop).encode(), env)
            start = time.perf_counter()
            while True:
                found = await call(client, "hybrid_recall", {"query": marker, "alpha": 0.0, "limit": 3})
                if any(marker in m["content"] for m in found["memories"]):
                    break
                if time.perf_counter() - start > 30:
                    raise RuntimeError("a capture was not recallable within 30 s")
                await anyio.sleep(0.05)
            visible.append(time.perf_counter() - start)
    return results, percentiles(visible)


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project, store, transcript = root / "project", root / "store", root / "transcript.jsonl"
        (project / ".git").mkdir(parents=True)
        transcript.write_text(
            json.dumps({"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": "ok"}}) + "\n"
        )
        seed(store, project, transcript)
        env = env_for(store)
        floor = [timed([sys.executable, "-c", "pass"], b"", env) for _ in range(args.runs)]
        no_server = {"python -c pass (floor)": percentiles(floor, CPU_TIMES[-args.runs :])}
        no_server.update(run_cases(CASES, args.runs, project, transcript, env, "no server"))
        server_results, visible = anyio.run(with_server, args.runs, store, project, transcript)
        with open("/proc/loadavg") as handle:
            load_average = handle.read().split()[:3]
    out = {
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "load_average_at_end": load_average,
        "no_server": no_server,
        "server_running": server_results,
        "hook_exit_to_recallable": visible,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "hook_latency.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

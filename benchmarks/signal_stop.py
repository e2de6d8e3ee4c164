"""How long one signal takes to stop the stdio server (issue 43), with stdin held open.

For each stdout (a pipe, a regular file, a terminal), each signal (SIGTERM, SIGINT) and each state
(idle; busy: batches of 50 memories being embedded and written), the seconds from the signal to
the process's exit, median of the rounds; then SIGTERM while the model's graph is first built (a
store with no cached graph, a batch waiting for it). The real bundled model, its graph built once
beforehand for the other rows.

    python -m benchmarks.signal_stop [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import print_table, write_json

REPO = Path(__file__).resolve().parents[1]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(SPATIAL_MEMORY_PATH=str(store), HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    return env


def _stop_seconds(store: Path, stdout: str, signum: int, busy: bool, wait_for: str | None = None) -> float:
    """Start a server, initialize, optionally send batches, signal once; seconds until it exits."""
    err_path = store.parent / f"{store.name}-{time.monotonic_ns()}.err"
    out: Any
    master = None
    if stdout == "pipe":
        out = subprocess.PIPE
    elif stdout == "file":
        out = open(store.parent / "stdout.jsonl", "ab")  # noqa: SIM115 - closed below
    else:
        master, out = pty.openpty()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "spatial_memory"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            env=_env(store),
            cwd=str(store.parent),
            start_new_session=True,
        )
    if stdout == "file":
        out.close()
    elif master is not None:
        os.close(out)
    lines = [json.dumps(INITIALIZE), '{"jsonrpc":"2.0","method":"notifications/initialized"}']
    if busy:
        for n in range(1, 4):
            items = [{"content": f"benchmark note {n} {i} {time.time_ns()}", "namespace": "b"} for i in range(50)]
            call = {"name": "remember_batch", "arguments": {"memories": items}}
            lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call}))
    proc.stdin.write(("\n".join(lines) + "\n").encode())
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    if wait_for is not None:
        while wait_for not in err_path.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        time.sleep(4.0 if not busy else 3.0)
    start = time.monotonic()
    proc.send_signal(signum)
    try:
        proc.wait(30)
        took = time.monotonic() - start
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        took = float("inf")
    proc.stdin.close()
    if proc.stdout is not None:
        proc.stdout.close()
    if master is not None:
        os.close(master)
    return took


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm = root / "warm"
        _stop_seconds(warm, "pipe", signal.SIGTERM, busy=True)  # builds the graph once, fills the store a little
        for stdout in ("pipe", "file", "terminal"):
            for signum in (signal.SIGTERM, signal.SIGINT):
                for busy in (False, True):
                    times = [_stop_seconds(warm, stdout, signum, busy) for _ in range(args.rounds)]
                    rows.append(
                        {
                            "stdout": stdout,
                            "signal": signal.Signals(signum).name,
                            "state": "busy" if busy else "idle",
                            "median_s": round(statistics.median(times), 3),
                            "max_s": round(max(times), 3),
                        }
                    )
        building = [
            _stop_seconds(root / f"fresh{i}", "file", signal.SIGTERM, True, wait_for="building the fp32 ONNX graph")
            for i in range(args.rounds)
        ]
        rows.append(
            {
                "stdout": "file",
                "signal": "SIGTERM",
                "state": "graph being built",
                "median_s": round(statistics.median(building), 3),
                "max_s": round(max(building), 3),
            }
        )
    load = os.getloadavg()
    print_table(f"one signal to exit, stdin open (load {load[0]:.1f})", rows)
    write_json("signal_stop", {"rows": rows, "rounds": args.rounds, "load_average": load})


if __name__ == "__main__":
    main()

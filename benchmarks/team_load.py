"""Team load (issue 21): two replicas of the HTTP server on one store on S3, many clients at once.

A local S3 server (moto, a subprocess on 127.0.0.1) holds the store; two `spatial-memory serve
--transport http` processes (the bundled model) serve it, each with its own local directory, both
behind bearer tokens from one tokens file. --clients concurrent MCP clients (the SDK's streamable-HTTP
client), spread over --principals principals and alternating between the replicas, run a mix of
remember, recall, hybrid_recall, get_memories, update_memory, forget, namespaces and stats for
--duration seconds, plus hostile calls naming another principal's namespace.

Checked: every acknowledged write that was not forgotten is readable at the end through both
replicas (lost writes); no response carries a memory of a namespace the caller may not read
(cross-principal reads), and every hostile call is refused. Measured: p50 / p95 per tool as the
client sees it, errors per tool, resident memory per replica (sampled every few seconds), and the
host's load average before and after.

    python -m benchmarks.team_load [--duration 150] [--clients 20] [--principals 4] [--think 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from spatial_memory.evaluation.soak import rss_mb, short_texts

from .common import percentiles, print_table, write_json

BUCKET = "team-memory"
STORE = f"s3://{BUCKET}/memories"
REPO = Path(__file__).resolve().parents[1]
# The mix of calls: (tool, weight). Hostile calls name another principal's namespace.
MIX = [
    ("remember", 30),
    ("recall", 22),
    ("hybrid_recall", 14),
    ("get_memories", 10),
    ("update_memory", 6),
    ("forget", 3),
    ("namespaces", 5),
    ("stats", 3),
    ("hostile_recall", 4),
    ("hostile_remember", 3),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout:g} s")


class Team:
    """The S3 server, the tokens file and the two replicas, in `root`; stopped in reverse order."""

    def __init__(self, root: Path, principals: list[str], replicas: int) -> None:
        self.root = root
        self.principals = principals
        self.replica_count = replicas
        self.procs: list[subprocess.Popen] = []
        self.ports: list[int] = []
        self.tokens: dict[str, str] = {}
        self.env: dict[str, str] = {}

    def start(self) -> None:
        import boto3

        s3_port = free_port()
        moto = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "moto.log", "w"),  # noqa: SIM115 - closed with the process
        )
        self.procs.append(moto)
        wait_for_port(s3_port, moto, "the S3 server")
        endpoint = f"http://127.0.0.1:{s3_port}"
        aws = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
        }
        credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **credentials)
        s3.create_bucket(Bucket=BUCKET)
        from spatial_memory.auth.tokens import mint

        tokens_file = self.root / "tokens.json"
        for name in self.principals:
            self.tokens[name] = mint(tokens_file, name, [name])
        # An installed package runs from cached bytecode; this sandbox sets PYTHONDONTWRITEBYTECODE.
        dropped = ("SPATIAL_MEMORY_", "AWS_", "PYTHONDONTWRITEBYTECODE")
        base = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
        base.update(aws, SPATIAL_MEMORY_PATH=STORE, SPATIAL_MEMORY_TOKENS_FILE=str(tokens_file), HF_HUB_OFFLINE="1")
        base["PYTHONPATH"] = os.pathsep.join([str(REPO), *(p for p in sys.path if p)])
        self.env = base
        # One after the other: the first creates the tables, the second finds them.
        for k in range(self.replica_count):
            port = free_port()
            local = self.root / f"replica-{k}"
            local.mkdir()
            env = {**base, "SPATIAL_MEMORY_LOCAL_PATH": str(local)}
            proc = subprocess.Popen(
                [sys.executable, "-m", "spatial_memory", "serve", "--transport", "http", "--port", str(port)],
                env=env,
                cwd=str(local),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=open(self.root / f"replica-{k}.log", "w"),  # noqa: SIM115 - closed with the process
            )
            self.procs.append(proc)
            self.ports.append(port)
            wait_for_port(port, proc, f"replica {k}")

    @property
    def replica_pids(self) -> list[int]:
        return [p.pid for p in self.procs[1:]]

    def url(self, k: int) -> str:
        return f"http://127.0.0.1:{self.ports[k % len(self.ports)]}/mcp"

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def connect(url: str, token: str):
    """An MCP client over streamable HTTP presenting `token`."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=300), http


class Tally:
    """Everything the clients saw."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[str] = Counter()
        self.error_samples: dict[str, str] = {}
        self.acknowledged: dict[str, set[str]] = defaultdict(set)  # principal -> ids written and not forgotten
        self.forgotten: set[str] = set()
        self.cross_reads = 0
        self.cross_samples: list[str] = []
        self.hostile_refused = 0
        self.hostile_allowed = 0
        self.unreadable_at_once = 0  # acknowledged ids a get_memories on either replica did not return

    def error(self, tool: str, body: Any) -> None:
        self.errors[tool] += 1
        self.error_samples.setdefault(tool, str(body)[:300])


def memories_in(body: Any) -> list[dict[str, Any]]:
    """Every memory-like dict (one with an id and a namespace) anywhere in a response."""
    found = []
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "id" in item and "namespace" in item:
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


async def client_loop(
    k: int, team: Team, principal: str, others: list[str], deadline: float, think: float, tally: Tally
) -> None:
    rng = random.Random(k)
    texts = short_texts(400, seed=k)
    tools, weights = zip(*MIX)
    client_cm, http = connect(team.url(k), team.tokens[principal])
    mine: list[str] = []  # ids this client wrote and has not forgotten
    async with http, client_cm as client:
        i = 0
        while time.monotonic() < deadline:
            if think:
                await asyncio.sleep(think * rng.uniform(0.5, 1.5))
                if time.monotonic() >= deadline:
                    break
            i += 1
            op = rng.choices(tools, weights)[0]
            text = texts[i % len(texts)]
            if op in ("get_memories", "update_memory", "forget") and not mine:
                op = "remember"
            if op == "remember":
                name, args = "remember", {"content": f"{principal} client {k} note {i}: {text}", "namespace": principal}
            elif op in ("recall", "hybrid_recall"):
                name, args = op, {"query": text, "limit": 5}
                if rng.random() < 0.5:
                    args["namespace"] = principal  # else: every namespace the principal may read
            elif op == "get_memories":
                shared = sorted(tally.acknowledged[principal])  # the principal's writes through either replica
                name, args = "get_memories", {"memory_ids": rng.sample(shared, min(5, len(shared)))}
            elif op == "update_memory":
                name, args = (
                    "update_memory",
                    {"memory_id": rng.choice(mine), "content": f"{principal} edited {i}: {text}"},
                )
            elif op == "forget":
                name, args = "forget", {"memory_id": mine[0]}
            elif op in ("namespaces", "stats"):
                name, args = op, {}
            elif op == "hostile_recall":
                name, args = "recall", {"query": text, "namespace": rng.choice(others), "limit": 5}
            else:
                name, args = "remember", {"content": f"{principal} intrudes: {text}", "namespace": rng.choice(others)}
            started = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
            except Exception as exc:  # noqa: BLE001 - a transport failure is an error of this call
                tally.error(op, repr(exc))
                continue
            elapsed = (time.perf_counter() - started) * 1000
            body = result.structured_content
            if op.startswith("hostile"):
                if result.is_error:
                    tally.hostile_refused += 1
                else:
                    tally.hostile_allowed += 1
                continue
            if result.is_error:
                tally.error(op, body or " ".join(getattr(c, "text", "") for c in result.content))
                continue
            tally.latency[op].append(elapsed)
            leaked = [m for m in memories_in(body) if m["namespace"] != principal]
            if leaked:
                tally.cross_reads += len(leaked)
                tally.cross_samples.append(f"{principal} got {leaked[0]['namespace']}/{leaked[0]['id']} from {op}")
            if op in ("namespaces", "stats"):
                seen = [n["name"] for n in body.get("namespaces", [])] + list(body.get("memories_by_namespace", {}))
                foreign = [n for n in seen if n != principal]
                if foreign:
                    tally.cross_reads += len(foreign)
                    tally.cross_samples.append(f"{principal} saw namespaces {foreign} in {op}")
            if op == "remember":
                mine.append(body["id"])
                tally.acknowledged[principal].add(body["id"])
            elif op == "forget":
                gone = mine.pop(0)
                tally.acknowledged[principal].discard(gone)
                tally.forgotten.add(gone)
            elif op == "get_memories":
                missing = set(body["not_found"]) - tally.forgotten
                tally.unreadable_at_once += len(missing)


async def final_check(team: Team, tally: Tally) -> dict[str, Any]:
    """Every acknowledged id that was not forgotten, read back by its principal through each replica."""
    lost: dict[int, int] = {}
    for k in range(len(team.ports)):
        missing = 0
        for principal, ids in tally.acknowledged.items():
            client_cm, http = connect(team.url(k), team.tokens[principal])
            async with http, client_cm as client:
                wanted = sorted(ids)
                for start in range(0, len(wanted), 50):
                    batch = wanted[start : start + 50]
                    result = await client.call_tool("get_memories", {"memory_ids": batch})
                    if result.is_error:
                        raise RuntimeError(f"the final read failed: {result.structured_content}")
                    found = {m["id"] for m in result.structured_content["memories"]}
                    missing += len(set(batch) - found)
        lost[k] = missing
    return {"acknowledged_kept": sum(len(v) for v in tally.acknowledged.values()), "lost_per_replica": lost}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    principals = [f"team-{chr(ord('a') + p)}" for p in range(args.principals)]
    root = Path(tempfile.mkdtemp(prefix="team-load-"))
    team = Team(root, principals, replicas=2)
    load_before = os.getloadavg()
    rss: dict[int, list[float]] = defaultdict(list)
    try:
        started = time.monotonic()
        team.start()
        print(f"S3 server and {len(team.ports)} replicas up in {time.monotonic() - started:.1f} s ({root})")
        # Each replica opens the store and loads the model before the clock starts (a first call waits for both).
        for k in range(len(team.ports)):
            client_cm, http = connect(team.url(k), team.tokens[principals[0]])
            async with http, client_cm as client:
                await client.call_tool("recall", {"query": "warm up", "namespace": principals[0]})
        print(f"warm in {time.monotonic() - started:.1f} s")
        tally = Tally()
        deadline = time.monotonic() + args.duration

        async def sample_rss() -> None:
            while time.monotonic() < deadline:
                for k, pid in enumerate(team.replica_pids):
                    rss[k].append(rss_mb(pid).get("rss_mb", 0.0))
                await asyncio.sleep(5)

        clients = []
        for k in range(args.clients):
            principal = principals[k % len(principals)]
            others = [p for p in principals if p != principal]
            clients.append(client_loop(k, team, principal, others, deadline, args.think, tally))
        await asyncio.gather(sample_rss(), *clients)
        load_during = os.getloadavg()
        check = await final_check(team, tally)
        peaks = {k: rss_mb(pid).get("peak_rss_mb") for k, pid in enumerate(team.replica_pids)}
    finally:
        team.stop()
    rows = []
    for tool, _ in MIX:
        samples = tally.latency.get(tool)
        if samples or tally.errors[tool]:
            row = {"tool": tool, **(percentiles(samples) if samples else {"n": 0})}
            row["errors"] = tally.errors[tool]
            rows.append(row)
    replicas = [
        {
            "replica": k,
            "rss_mb_median": round(sorted(v)[len(v) // 2], 1) if v else None,
            "rss_mb_last": v[-1] if v else None,
            "peak_rss_mb": peaks.get(k),
        }
        for k, v in sorted(rss.items())
    ]
    calls = sum(len(v) for v in tally.latency.values())
    summary = {
        "duration_s": args.duration,
        "think_s": args.think,
        "clients": args.clients,
        "principals": len(principals),
        "calls_ok": calls,
        "calls_per_second": round(calls / args.duration, 1),
        "errors": sum(tally.errors.values()),
        "acknowledged_writes_kept": check["acknowledged_kept"],
        "lost_writes": max(check["lost_per_replica"].values()),
        "lost_per_replica": check["lost_per_replica"],
        "unreadable_during_run": tally.unreadable_at_once,
        "cross_principal_reads": tally.cross_reads,
        "hostile_refused": tally.hostile_refused,
        "hostile_allowed": tally.hostile_allowed,
        "load_before": [round(x, 2) for x in load_before],
        "load_at_end": [round(x, 2) for x in load_during],
    }
    return {
        "summary": summary,
        "rows": rows,
        "replicas": replicas,
        "error_samples": tally.error_samples,
        "cross_samples": tally.cross_samples[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=150.0, help="seconds of load (default 150)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--principals", type=int, default=4)
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a client waits before each call (0: back to back, the most load the clients can make)",
    )
    parser.add_argument("--name", default="team_load", help="results file name (benchmarks/results/<name>.json)")
    parser.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/team_load.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print_table("Team load: summary", [{k: v for k, v in result["summary"].items() if not isinstance(v, dict)}])
    print_table("Team load: latency per tool as the clients saw it (ms)", result["rows"])
    print_table("Team load: resident memory per replica (MB)", result["replicas"])
    if result["error_samples"]:
        print("\nerror samples:", result["error_samples"])
    if not args.no_write:
        print(f"\nwrote {write_json(args.name, result)}")


if __name__ == "__main__":
    main()

"""Shared plumbing for the reliability tests (test_reliability_*.py): server processes on a
shared store, a raw JSON-RPC driver that can SIGKILL its server at any moment, direct store
checks, and the time budget (`SPATIAL_MEMORY_SOAK_SECONDS` stretches every loop)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FAKE_MODEL_ID = "test-hash-embedder"
FAKE_DIM = 64


def soak_seconds() -> float:
    try:
        return max(float(os.environ.get("SPATIAL_MEMORY_SOAK_SECONDS", "0") or 0), 0.0)
    except ValueError:
        return 0.0


def budget(ci_seconds: float) -> float:
    """How long a loop runs: its CI bound, or the soak duration when that is longer."""
    return max(ci_seconds, soak_seconds())


def server_env(store: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(
        {
            "SPATIAL_MEMORY_PATH": str(store),
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "SPATIAL_MEMORY_WARM_UP_PROJECTION": "false",
            # Keep the 2 shared cores for the processes under test.
            "OMP_NUM_THREADS": "1",
            "SPATIAL_MEMORY_EMBEDDING_THREADS": "1",
        }
    )
    env.update(extra)
    return env


def server_args(*, fake: bool) -> list[str]:
    """The shipped entry point, or the same server with the fast fake embedder."""
    return ["-m", "tests.reliability_server"] if fake else ["-m", "spatial_memory"]


def stdio_params(store: Path, *, fake: bool = True, **env: str):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=server_args(fake=fake), env=server_env(store, **env), cwd=str(store.parent)
    )


def stdio_transport(store: Path, errlog, *, fake: bool = True, **env: str):
    """A stdio transport for `mcp.Client` whose server writes its stderr to `errlog` (an open file)."""
    from mcp.client.stdio import stdio_client

    return stdio_client(stdio_params(store, fake=fake, **env), errlog=errlog)


def new_store(root: Path, name: str, models: Path | None = None) -> Path:
    store = root / name
    store.mkdir(parents=True)
    if models is not None:
        (store / "models").symlink_to(models)  # the once-built ONNX graph
    return store


def open_store(store: Path, *, fake: bool = True):
    """Open the store directly, as a restarted server would (raises if it does not open cleanly)."""
    from spatial_memory.storage.store import MemoryStore

    if fake:
        return MemoryStore(store / "lancedb", FAKE_MODEL_ID, FAKE_DIM)
    from spatial_memory.embeddings.router import NEW_STORE_PATH, PATH_IDS

    return MemoryStore(store / "lancedb", PATH_IDS[NEW_STORE_PATH], 384)  # what a new store's server records


class ServerDied(Exception):
    pass


class RawServer:
    """A server process driven with raw JSON-RPC lines, so a test can send anything (raw NaN,
    unparseable JSON) and kill the process at any moment. Every stdout line must be JSON-RPC;
    anything else is recorded in `stray_stdout`."""

    def __init__(self, store: Path, *, fake: bool = True, **env: str) -> None:
        self.store = store
        self.stderr_path = store.parent / f"{store.name}-stderr-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in wait/kill
        self.proc = subprocess.Popen(
            [sys.executable, *server_args(fake=fake)],
            env=server_env(store, **env),
            cwd=str(store.parent),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.pid = self.proc.pid
        self._ids = itertools.count(1)
        self._responses: dict[Any, dict] = {}
        self._cond = threading.Condition()
        self.stray_stdout: list[bytes] = []
        self.lines = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines += 1
            try:
                message = json.loads(line)
                assert message.get("jsonrpc") == "2.0"
            except (ValueError, AssertionError, AttributeError):
                self.stray_stdout.append(line[:500])
                continue
            with self._cond:
                if "id" in message:
                    self._responses[message["id"]] = message
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    # ---- sending -----------------------------------------------------------------------

    def send_line(self, raw: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise ServerDied(f"server stdin closed: {exc}; stderr: {self.stderr_tail()}") from exc

    def send(self, method: str, params: dict | None = None) -> int:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))
        return request_id

    def notify(self, method: str, params: dict | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))

    def wait(self, request_id: Any, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self._responses:
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise ServerDied(f"server exited ({self.proc.returncode}); stderr: {self.stderr_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {request_id!r} in {timeout} s")
                self._cond.wait(min(left, 0.5))
            return self._responses.pop(request_id)

    def initialize(self, timeout: float = 120.0) -> dict:
        answer = self.wait(
            self.send(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "reliability-test", "version": "0"},
                },
            ),
            timeout,
        )
        self.notify("notifications/initialized")
        return answer

    def call_id(self, name: str, arguments: dict) -> int:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def result(self, request_id: int, timeout: float = 120.0) -> dict:
        """The tool result of a request: structuredContent plus isError (raises on a JSON-RPC error)."""
        answer = self.wait(request_id, timeout)
        if "error" in answer:
            raise RuntimeError(f"JSON-RPC error: {answer['error']}")
        return wire_body(answer["result"])

    def call(self, name: str, arguments: dict, timeout: float = 120.0) -> dict:
        return self.result(self.call_id(name, arguments), timeout)

    def ok(self, name: str, arguments: dict, timeout: float = 120.0) -> dict:
        data = self.call(name, arguments, timeout)
        assert not data["isError"], (name, data)
        return data

    def tool_names(self) -> set[str]:
        return {t["name"] for t in self.wait(self.send("tools/list"))["result"]["tools"]}

    # ---- ending ------------------------------------------------------------------------

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._finish()

    def close(self, timeout: float = 60.0) -> int:
        """Close stdin (the client goes away) and wait for the server to exit."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            self._finish()

    def _finish(self) -> None:
        self._reader.join(5)
        if not self._stderr.closed:
            self._stderr.close()

    def stderr_tail(self, n: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:
            self._finish()


def assert_typed(data: dict, *, allow_internal: bool = False) -> None:
    """A tool result is a success or a typed error {"error", "message", "isError": true}."""
    if data.get("isError"):
        assert isinstance(data.get("error"), str) and data["error"], data
        assert isinstance(data.get("message"), str), data
        assert "Traceback" not in data["message"], data
        if not allow_internal:
            assert data["error"] != "InternalError", data


def wire_body(result: dict) -> dict:
    """The JSON body of a tools/call result as it came over the wire, plus isError: the structured
    content of a success, or the typed body an error carries as text (errors have no structuredContent)."""
    if result.get("isError"):
        assert "structuredContent" not in result, result
        data = json.loads(result["content"][0]["text"])
    else:
        data = dict(result.get("structuredContent") or {})
    data["isError"] = bool(result.get("isError"))
    return data

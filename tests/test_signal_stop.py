"""One signal stops the stdio server (issue 43): SIGTERM or SIGINT ends it within 2 s with stdin
still open, whatever stdout is (a pipe, a terminal, a file), idle or in the middle of a batch
write, or while the model's graph is first being built; every batch it acknowledged is in the
store, none half-written. On a terminal it says once that it is ready and how to stop it."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .reliability import new_store, open_store, server_args, server_env

STOP_SECONDS = 2.0
BATCH = 20


class Wire:
    """A server process with stdin on a pipe held open and stdout on a pipe, a terminal or a
    file; the JSON-RPC answers it wrote, read from whichever it is."""

    def __init__(self, store: Path, stdout: str, *, fake: bool = True, stderr_terminal: bool = False) -> None:
        self.answers: dict[int, dict] = {}
        self.text = b""
        self._lock = threading.Lock()
        self._master = None
        self._file = None
        out: object
        if stdout == "pipe":
            out = subprocess.PIPE
        elif stdout == "file":
            self._file = store.parent / f"{store.name}-stdout.jsonl"
            out = open(self._file, "wb")  # noqa: SIM115 - closed below, once the process runs
        else:
            self._master, out = pty.openpty()
        err = out if stderr_terminal else open(store.parent / f"{store.name}-stderr.log", "wb")  # noqa: SIM115
        self.stderr_path = None if stderr_terminal else store.parent / f"{store.name}-stderr.log"
        self.proc = subprocess.Popen(
            [sys.executable, *server_args(fake=fake)],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            env=server_env(store),
            cwd=str(store.parent),
            start_new_session=True,  # a signal to the server alone, not to this test's group
        )
        if stdout != "pipe":
            os.close(out) if isinstance(out, int) else out.close()
        if not stderr_terminal:
            err.close()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            if self.proc.stdout is not None:
                chunk = self.proc.stdout.read1(65536)
            elif self._master is not None:
                if not select.select([self._master], [], [], 0.05)[0]:
                    if self.proc.poll() is not None:
                        return
                    continue
                try:
                    chunk = os.read(self._master, 65536)
                except OSError:  # the terminal's other side closed: the server is gone
                    return
            else:
                time.sleep(0.05)
                chunk = self._file.read_bytes()[len(self.text) :]
                if not chunk and self.proc.poll() is None:
                    continue
            if not chunk:
                return
            with self._lock:
                self.text += chunk
                for line in self.text.replace(b"\r\n", b"\n").split(b"\n"):
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(message, dict) and "id" in message:
                        self.answers[message["id"]] = message

    def send(self, request_id: int, method: str, params: dict) -> None:
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def wait(self, request_id: int, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if request_id in self.answers:
                    return self.answers[request_id]
            assert self.proc.poll() is None, f"server exited: {self.stderr()}"
            time.sleep(0.02)
        raise TimeoutError(f"no answer to {request_id}: {self.stderr()}")

    def initialize(self) -> None:
        self.send(
            0,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "signal", "version": "0"}},
        )
        self.wait(0)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def stop(self, signum: int) -> tuple[int, float]:
        """Send one signal with stdin still open: (exit code, seconds it took)."""
        start = time.monotonic()
        self.proc.send_signal(signum)
        try:
            code = self.proc.wait(STOP_SECONDS + 8)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        took = time.monotonic() - start
        self.proc.stdin.close()
        return code, took

    def acknowledged(self, ids: list[int], settle: float = 0.2) -> int:
        time.sleep(settle)  # the last bytes it wrote, read
        with self._lock:
            return sum(1 for i in ids if i in self.answers and not self.answers[i]["result"].get("isError"))

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-3000:] if self.stderr_path else self.text.decode()[-3000:]


def _batch(request: int) -> dict:
    return {
        "name": "remember_batch",
        "arguments": {
            "memories": [{"content": f"signal note {request} {i}", "namespace": "signal"} for i in range(BATCH)]
        },
    }


@pytest.mark.parametrize(
    ("stdout", "signum"),
    [("pipe", signal.SIGTERM), ("file", signal.SIGINT), ("terminal", signal.SIGTERM)],
)
def test_one_signal_during_batch_writes_stops_the_server_and_keeps_what_it_acknowledged(tmp_path, stdout, signum):
    store = new_store(tmp_path, "store")
    wire = Wire(store, stdout)
    wire.initialize()
    writes = list(range(1, 9))
    for request in writes:
        wire.send(request, "tools/call", _batch(request))
    while wire.acknowledged(writes, settle=0) < 2:  # busy: the later batches are in flight
        assert wire.proc.poll() is None, wire.stderr()
        time.sleep(0.01)
    code, took = wire.stop(signum)
    assert code == 0, wire.stderr()
    assert took <= STOP_SECONDS, f"{took:.2f} s to stop on {signal.Signals(signum).name} ({stdout})"
    acknowledged = wire.acknowledged(writes)
    count = open_store(store).count()
    assert count % BATCH == 0, f"{count} memories: a batch was half-written"
    assert count >= acknowledged * BATCH >= 2 * BATCH, (count, acknowledged)


def test_idle_server_on_a_terminal_says_it_is_ready_and_stops_on_ctrl_c(tmp_path):
    store = new_store(tmp_path, "store")
    master, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, *server_args(fake=True)],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=server_env(store),
        cwd=str(tmp_path),
        start_new_session=True,
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"Ctrl-C" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                seen += os.read(master, 65536)
        line = next(x for x in seen.decode().splitlines() if "ready" in x)
        assert str(store) in line and "0 memories" in line and "test-hash-embedder" in line, line
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(STOP_SECONDS + 8) == 0
        assert time.monotonic() - start <= STOP_SECONDS
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


@pytest.mark.slow
def test_sigterm_while_the_model_graph_is_first_built_stops_the_server_and_the_builder(tmp_path):
    """The real model on a store with no cached graph: the first batch waits for the graph builder
    (a child process); SIGTERM ends the server within 2 s, and the builder with it."""
    store = new_store(tmp_path, "fresh")
    wire = Wire(store, "file", fake=False)
    wire.initialize()
    wire.send(1, "tools/call", _batch(1))
    deadline = time.monotonic() + 60
    while "building the fp32 ONNX graph" not in wire.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "building" in wire.stderr(), wire.stderr()
    code, took = wire.stop(signal.SIGTERM)
    assert code == 0, wire.stderr()
    assert took <= STOP_SECONDS, f"{took:.2f} s"
    time.sleep(0.3)
    builders = subprocess.run(["pgrep", "-f", f"graph_build .*{store}"], capture_output=True, text=True).stdout
    assert builders.strip() == "", f"graph builder still running: {builders}"
    assert wire.acknowledged([1]) == 0 or open_store(store, fake=False).count() == BATCH

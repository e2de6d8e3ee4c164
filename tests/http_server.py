"""The HTTP server as shipped (`python -m spatial_memory --transport http`, or the same server with
the fast fake embedder: tests/reliability_server.py) in a subprocess on a free port, for the tests
that drive it over streamable HTTP."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .reliability import server_args, server_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    def __init__(self, root: Path, *, fake: bool = True, **env: str) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log_path = root / "server.log"
        self.env = {"SPATIAL_MEMORY_TRANSPORT": "http", "SPATIAL_MEMORY_PORT": str(self.port), **env}
        self.fake = fake

    def __enter__(self) -> HttpServer:
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, *server_args(fake=self.fake)],
            env=server_env(self.root / "store", **self.env),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        deadline = time.monotonic() + 120
        try:
            while True:
                assert self.process.poll() is None, self.log()
                assert time.monotonic() < deadline, f"the HTTP server did not start:\n{self.log()}"
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=5).close()  # listening
                    return self
                except OSError:
                    time.sleep(0.1)
        except BaseException:  # __exit__ is not called when __enter__ fails: leave no server behind
            self.process.kill()
            self.process.wait(30)
            self._log.close()
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(60)
        finally:
            self._log.close()
        assert code == 0, self.log()

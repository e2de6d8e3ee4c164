"""A running server answers the hooks' context requests, so a prompt's recall costs a round trip
instead of opening the store and loading the model in the hook process (seconds on a busy host).

POSIX only (a Unix socket, private to the user); elsewhere, or with no server listening, the
hook builds the context itself (context.py). The socket's name is derived from the store's path,
so hooks find the server of their own store; one server per store listens, and a socket file
left by a killed server is replaced. Protocol: one JSON line each way,
`{"namespace", "session_id", "prompt"}` then `{"context": "..."}`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 1 << 20


def socket_path(store_path: Path) -> Path | None:
    """Where the server of this store listens (None where Unix sockets are not used)."""
    if os.name != "posix" or not hasattr(socket, "AF_UNIX"):
        return None
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()  # short: sun_path holds ~100 bytes
    digest = hashlib.sha256(str(Path(store_path).resolve()).encode()).hexdigest()[:16]
    return Path(base) / f"spatial-memory-{os.getuid()}-{digest}.sock"


def ask(store_path: Path, namespace: str, session_id: str, prompt: str | None, timeout: float) -> str | None:
    """The context from the store's running server; None when none answers (build it here then)."""
    path = socket_path(store_path)
    if path is None or not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(path))
            request = {"namespace": namespace, "session_id": session_id, "prompt": prompt}
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = conn.makefile("rb").readline(MAX_REQUEST_BYTES)
        return str(json.loads(reply)["context"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class ContextServer:
    """The server side: a daemon thread accepting one request per connection."""

    def __init__(self, app: Any, budget_seconds: float = 10.0) -> None:
        self._app = app
        self._budget = budget_seconds
        self._path = socket_path(app.resources.settings.local_dir)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Listen, unless another live server of this store already does; returns whether it listens."""
        if self._path is None:
            return False
        if ask(self._app.resources.settings.local_dir, "", "", None, 0.5) is not None:
            return False  # another server of this store answers
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                self._path.unlink()  # a socket file whose server died
            except FileNotFoundError:
                pass
            old_umask = os.umask(0o177)  # the socket is created owner-only
            try:
                sock.bind(str(self._path))
            finally:
                os.umask(old_umask)
            sock.listen(16)
        except OSError as exc:
            sock.close()
            log.info("not serving hook context: %s", exc)
            return False
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="spatial-memory-hook-context", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            if self._path is not None and self._path.exists():
                self._path.unlink()
        except OSError:
            pass
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

    def _serve(self) -> None:
        while self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # stopped
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        # The answering side runs in a server, which has these already; the hook's asking side
        # (this module's `ask`) must not import them.
        from ..runtime.imports import import_heavy_modules
        from .context import parts_for, render

        with conn:
            try:
                conn.settimeout(self._budget)
                request = json.loads(conn.makefile("rb").readline(MAX_REQUEST_BYTES) or b"{}")
                parts: list[str] = []
                namespace, session_id = request.get("namespace"), request.get("session_id") or ""
                if namespace:
                    with self._app.resources.workers.running():
                        import_heavy_modules()
                        parts_for(parts, self._app, namespace, session_id, request.get("prompt"))
                conn.sendall(json.dumps({"context": render(namespace or "", parts)}).encode() + b"\n")
            except Exception as exc:  # noqa: BLE001 - a hook asking must never hurt the server
                log.debug("hook context request failed: %s", exc)

"""The client going away, at any moment of the server's life, is a clean exit.

Closing stdin (or SIGTERM) during start-up, while the model graph is built or loaded, in the
middle of a call or of a write must end the process with code 0, never SIGABRT from native
threads torn down at interpreter exit ("terminate called without an active exception"), and
must leave the store whole: every acknowledged batch there, no batch half-written.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from .reliability import RawServer, new_store, open_store

BATCH = 20
ABORT_MARKERS = ("terminate called", "Traceback", "Fatal Python error", "core dumped")


def _round(store: Path, rng: random.Random, *, fake: bool, how: str) -> tuple[int, int]:
    """Start a server, fire requests (a batch write among them), and go away at a random moment.
    Returns (acknowledged batches, exit code)."""
    server = RawServer(store, fake=fake)
    acknowledged = 0
    try:
        opening = server.send(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "exit-test", "version": "0"}},
        )
        server.notify("notifications/initialized")
        server.send("tools/list")
        stats = server.call_id("stats", {})
        if how == "sigterm":  # a session is running: before it, SIGTERM has its default meaning
            server.wait(opening, timeout=120)
            server.wait(stats, timeout=120)
        writes = [
            server.call_id(
                "remember_batch",
                {
                    "memories": [
                        {"content": f"round note {rng.random():.6f} {i}", "namespace": "exit"} for i in range(BATCH)
                    ]
                },
            )
            for _ in range(3)
        ]
        server.call_id("recall", {"query": "round note", "limit": 3})
        time.sleep(rng.choice([0.0, rng.uniform(0.0, 0.5), rng.uniform(0.5, 3.0)]))
        if how == "sigterm":
            server.proc.send_signal(signal.SIGTERM)
            code = server.proc.wait(90)
            server._finish()
        else:
            code = server.close(timeout=90)
        for request_id in writes:  # answers that reached us before the server left
            try:
                if not server.result(request_id, timeout=0.01)["isError"]:
                    acknowledged += 1
            except Exception:  # noqa: BLE001 - not answered before it left: not acknowledged
                pass
        stderr = server.stderr_tail(20_000)
    finally:
        if server.proc.poll() is None:
            server.kill()
    assert code == 0, f"exit code {code} ({how}); stderr:\n{stderr[-3000:]}"
    for marker in ABORT_MARKERS:
        assert marker not in stderr, f"{marker!r} on stderr ({how}):\n{stderr[-3000:]}"
    return acknowledged, code


def _check_store(store: Path, acknowledged: int, *, fake: bool) -> None:
    count = open_store(store, fake=fake).count()
    assert count % BATCH == 0, f"{count} memories: a batch was half-written"
    assert count >= acknowledged * BATCH, f"{count} memories, {acknowledged} batches acknowledged"


@pytest.mark.slow
def test_closing_the_pipe_at_random_moments_exits_cleanly_with_the_real_model(tmp_path, bundled_models):
    """The bundled model: a first-ever start (the ONNX graph built from the weights), then starts
    that load the cached graph; the client leaves at a random moment of each."""
    rng = random.Random(1)
    fresh = new_store(tmp_path, "fresh")  # no cached graph: this round builds it
    got, _ = _round(fresh, rng, fake=False, how="close")
    _check_store(fresh, got, fake=False)
    warm = new_store(tmp_path, "warm", bundled_models)
    acknowledged = 0
    for i in range(4):
        got, _ = _round(warm, rng, fake=False, how="sigterm" if i % 2 == 1 else "close")
        acknowledged += got
        _check_store(warm, acknowledged, fake=False)


def test_closing_the_pipe_at_random_moments_exits_cleanly(tmp_path):
    """Many short lives on one store (fast fake model): every exit clean, every acknowledged batch
    kept, none half-written."""
    rng = random.Random(2)
    store = new_store(tmp_path, "store")
    acknowledged = 0
    for i in range(6):
        got, _ = _round(store, rng, fake=True, how="sigterm" if i % 3 == 2 else "close")
        acknowledged += got
        _check_store(store, acknowledged, fake=True)

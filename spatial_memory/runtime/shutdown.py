"""Leaving the process cleanly, at any moment of its life.

Native libraries here run threads of their own: onnxruntime's thread pools, LanceDB's Rust
runtime, and Python threads that may be inside either (the warm-up loading the model, a
worker committing a write, upkeep compacting). When the interpreter finalizes while one of
them is alive, C++ static destructors tear down objects those threads still use, and the
process dies with SIGABRT ("terminate called without an active exception"). A client that
closes the pipe must never see that. So the server leaves in two steps:

1. drain (the lifespan's end): wait, bounded, for tool work already running in worker threads
   and for a store being opened; stop upkeep (it writes pending access counts). A request
   whose client went away stops before any commit it had not started (cancellation.py), so
   the store holds each write whole or not at all.
2. `exit_process`: flush stdout/stderr and the logs, then `os._exit`: no finalization, no
   native destructors, whatever thread is still alive. Every store write is an atomic
   commit, so there is nothing left to finish.

A signal (SIGTERM, SIGINT) must stop the server at once, whatever it is doing (a batch being
embedded, the model's graph being built): the drain then waits at most SIGNAL_DRAIN_SECONDS, and
`exit_after` ends the process SIGNAL_EXIT_SECONDS after the signal even if something still runs.
A write whose request was cancelled starts no commit (cancellation.py); one already committing is
atomic; what the client was told is stored was committed before the answer went out.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

log = logging.getLogger(__name__)

SIGNAL_DRAIN_SECONDS = 1.0  # the longest wait for running work after a signal
SIGNAL_EXIT_SECONDS = 1.8  # the process is gone this long after a signal, whatever still runs


class WorkerCalls:
    """Tool work running in worker threads, counted so shutdown can wait for it to finish."""

    def __init__(self) -> None:
        self._running = 0
        self._idle = threading.Condition()

    @contextmanager
    def running(self) -> Iterator[None]:
        with self._idle:
            self._running += 1
        try:
            yield
        finally:
            with self._idle:
                self._running -= 1
                if self._running == 0:
                    self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """True once no tool work runs; False if some still did after `timeout` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout=timeout)


def serve_then_exit(serve: Callable[[], None]) -> NoReturn:
    """Run `serve` until the client goes away, then `exit_process`: 0 for an ordinary end (SIGTERM
    and SIGINT end a running session that way too: server/mcp_server.py), 130 for Ctrl-C before
    the session ran, the code of a SystemExit, 1 after an unexpected error (logged)."""
    code = 0
    try:
        serve()
    except KeyboardInterrupt:
        log.info("interrupted: shutting down")
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported, then the same clean exit
        log.exception("the server stopped on an error")
        code = 1
    exit_process(code)


def exit_process(code: int) -> NoReturn:
    """End the process now with `code`, after flushing what it wrote (see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed pipe: nothing left to flush into
            pass
    try:
        logging.shutdown()
    except Exception:  # noqa: BLE001, S110
        pass
    os._exit(code)


def exit_after(seconds: float, code: int = 0) -> None:
    """End the process `seconds` from now (exit_process), unless it has ended by then."""

    def stop() -> None:
        time.sleep(seconds)
        log.warning("still running %.1f s after the signal: leaving now", seconds)
        exit_process(code)

    threading.Thread(target=stop, name="spatial-memory-exit", daemon=True).start()

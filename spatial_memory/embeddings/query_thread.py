"""One thread that runs model calls begun from the event loop (runtime/early_queries.py).

A recall's query can be embedded while the SDK is still dispatching its request, if some other
thread runs the model. Any Python thread needs the interpreter lock to enter the model (which lets
go of it inside), and the event loop holds that lock while it dispatches, in calls that do not let
it go (pydantic's validation): a woken thread would start no earlier than the tool itself. So
`submit` waits, the lock released, until this thread has taken the work (a wake-up, some
microseconds; at most `HANDOVER_SECONDS`), and the model starts at once. Nothing else changes: the
model, its session and the arguments are the caller's, so the result is the same bit for bit.

Where the system lets a thread choose its cores (Linux), each piece of work runs on a core other
than the caller's. Linux places a woken thread on its waker's core when it can (wake-affine), and the
caller here is the event loop, which goes on dispatching the same request: the model and the
dispatch then queue for one core while another idles (docs/BENCHMARKS.md, 45, round seven).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")

HANDOVER_SECONDS = 0.002  # the longest `submit` waits for the thread to take the work


class QueryThread(Generic[T]):
    """`submit(fn)`: `fn()` on this object's one thread (started by the first call), as a Future."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._work: queue.SimpleQueue[tuple[Callable[[], T], Future[T], threading.Event]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._outstanding = 0  # submitted and not finished
        self._beside = BesideCaller()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        taken = threading.Event()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            idle = self._outstanding == 0
            self._outstanding += 1
        self._beside.move(self._thread)
        self._work.put((fn, future, taken))
        if idle:  # (a thread still busy with earlier work would keep the caller waiting)
            taken.wait(HANDOVER_SECONDS)  # the interpreter lock is free meanwhile: the thread takes it
        return future

    def _serve(self) -> None:
        while True:
            fn, future, taken = self._work.get()
            taken.set()
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - the taker decides what a failure means
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._outstanding -= 1


class BesideCaller:
    """`move(thread)`: lets `thread` run on any core this process may use except the caller's
    current one, where there are two or more (Linux; elsewhere nothing is done). Best effort: a
    system that refuses is left to place the thread itself."""

    def __init__(self) -> None:
        self._current_cpu: Callable[[], int] | None = None
        self._allowed: frozenset[int] = frozenset()
        if sys.platform.startswith("linux"):
            try:
                import ctypes  # a libc call per request: Python has no sched_getcpu

                self._current_cpu = ctypes.CDLL(None).sched_getcpu
                self._allowed = frozenset(os.sched_getaffinity(0))
            except (OSError, AttributeError):
                self._current_cpu = None

    def move(self, thread: threading.Thread | None) -> None:
        tid = thread.native_id if thread is not None else None
        if self._current_cpu is None or len(self._allowed) < 2 or tid is None:
            return
        cpu = self._current_cpu()
        try:
            os.sched_setaffinity(tid, self._allowed - {cpu})
        except OSError:  # the process's cores changed (a cpuset): ask again next time
            self._allowed = frozenset(os.sched_getaffinity(0))

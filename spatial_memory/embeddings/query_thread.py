"""One thread that runs model calls begun from the event loop (runtime/early_queries.py).

A recall's query can be embedded while the SDK is still dispatching its request, if some other
thread runs the model. Any Python thread needs the interpreter lock to enter the model (which lets
go of it inside), and the event loop holds that lock while it dispatches: a woken thread would
wait until the loop next idles or the switch interval (5 ms by default) runs out, i.e. start no
earlier than the tool itself. So a call handed over here shortens the switch interval until this
thread has taken its work; the loop then gives the lock up within `HURRIED_SWITCH_INTERVAL`, for
the few microseconds this thread holds it. Nothing else changes: the model, its session and the
arguments are the caller's, so the result is the same bit for bit.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")

HURRIED_SWITCH_INTERVAL = 0.0001  # seconds; the default is 0.005


class QueryThread(Generic[T]):
    """`submit(fn)`: `fn()` on this object's one thread (started by the first call), as a Future."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._work: queue.SimpleQueue[tuple[Callable[[], T], Future[T]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._usual_interval: float | None = None  # set while hurried: the interval to go back to

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            if self._usual_interval is None:
                self._usual_interval = sys.getswitchinterval()
                sys.setswitchinterval(min(self._usual_interval, HURRIED_SWITCH_INTERVAL))
            self._work.put((fn, future))
        return future

    @property
    def hurried(self) -> bool:
        """Whether the switch interval is shortened (work handed over and not taken yet)."""
        return self._usual_interval is not None

    def _serve(self) -> None:
        while True:
            fn, future = self._work.get()
            with self._lock:
                if self._usual_interval is not None and self._work.empty():
                    sys.setswitchinterval(self._usual_interval)
                    self._usual_interval = None
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - the taker decides what a failure means
                future.set_exception(exc)

"""How far a request's work has got, for the client's `notifications/progress`.

Bound to each tool request like the cancellation token (contextvars follow the work into its
worker thread). The work reports `done` of `total` where it knows them; the tool layer
(tools/calls.py) sends what changed, at most every PROGRESS_INTERVAL seconds, only to a client that
asked for progress. Outside a request `report_progress` does nothing.

One scale per request: the first part of the work to report owns it (`source`), and reports from
other parts are ignored - so consolidation's "groups done" is not interleaved with the embedding
model's "texts embedded" of one group, and every value sent grows, as MCP requires.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Reported:
    done: float
    total: float | None
    message: str | None


class Progress:
    """`on_first_report`, if given, is called (in the reporting thread) when the work first reports."""

    def __init__(self, on_first_report: Callable[[], object] | None = None) -> None:
        self._lock = threading.Lock()
        self._source: str | None = None
        self._latest: Reported | None = None
        self._on_first_report = on_first_report

    def report(self, done: float, total: float | None, message: str | None, source: str) -> None:
        with self._lock:
            if self._source is None:
                self._source = source
            elif source != self._source:
                return
            if self._latest is not None and done <= self._latest.done:
                return  # progress only grows
            first = self._latest is None
            self._latest = Reported(float(done), None if total is None else float(total), message)
        if first and self._on_first_report is not None:
            self._on_first_report()

    @property
    def latest(self) -> Reported | None:
        with self._lock:
            return self._latest


_progress: ContextVar[Progress | None] = ContextVar("spatial_memory_request_progress", default=None)


@contextmanager
def progress_scope(on_first_report: Callable[[], object] | None = None) -> Iterator[Progress]:
    """Bind a fresh Progress to the current context (and the threads it runs work in)."""
    progress = Progress(on_first_report)
    reset = _progress.set(progress)
    try:
        yield progress
    finally:
        _progress.reset(reset)


def report_progress(done: float, total: float | None, message: str | None = None, *, source: str) -> None:
    """`done` of `total` units of the current request's work (no-op outside a request)."""
    progress = _progress.get()
    if progress is not None:
        progress.report(done, total, message, source)

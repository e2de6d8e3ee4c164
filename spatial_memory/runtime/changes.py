"""The store's writes, announced: the one hook resource subscriptions listen on.

The store calls `committed()` after every commit to its memories table (from the writing worker
thread); listeners must be quick and must not raise (the resource watch only schedules a check on
the event loop: server/subscriptions.py). Nothing here knows what changed - a listener that needs
to know re-reads what it watches and compares.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class StoreChanges:
    def __init__(self) -> None:
        self._listeners: dict[object, Callable[[], None]] = {}
        self._lock = threading.Lock()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` after every commit; returns the call that stops it."""
        token = object()
        with self._lock:
            self._listeners[token] = listener

        def stop() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return stop

    def committed(self) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
        for listener in listeners:
            try:
                listener()
            except Exception:  # noqa: BLE001 - a listener never fails the write that has landed
                log.exception("a store change listener failed")

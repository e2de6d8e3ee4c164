"""Results cached per table version: spatial maps and regions are recomputed only after a write."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class VersionedCache:
    """A small LRU of results keyed by (table version, arguments): a changed store misses."""

    def __init__(self, size: int = 8) -> None:
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

"""Query vectors begun as soon as their request arrives.

A recall's first step is its query's embedding, and nothing in it depends on what the server does
before the tool runs: reading the JSON-RPC message, the SDK's dispatch, argument validation, the
hop to a worker thread (about a millisecond on 2 cores, docs/BENCHMARKS.md). The stdio transport
hands every incoming line to `QueryLines`, which begins the embedding of a tools/call's `query`;
the tool then takes the vector (`EarlyQueries.take`) instead of computing it. The model runs it on
its query thread (embeddings/query_thread.py), in the same session as every other call, so the
vector is the same bit for bit and nothing downstream can tell. A request that never takes its
vector (rejected arguments, a cancelled call) leaves it to be dropped by a later one.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from concurrent.futures import Future
from typing import Protocol

import numpy as np

from ..limits import MAX_QUERY_CHARS

log = logging.getLogger(__name__)

# Vectors begun and not yet taken; beyond this many (or this old) the oldest are dropped.
PENDING = 8
MAX_AGE_SECONDS = 30.0


class EarlyEmbedder(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def begin_query(self, text: str) -> Future[np.ndarray] | None:
        """`embed_query(text)` as rows (1 x dimension), begun without blocking; None when it cannot be."""
        ...


class EarlyQueries:
    """Query embeddings begun before their tool runs, taken by it."""

    def __init__(
        self, embedder: EarlyEmbedder | None, *, pending: int = PENDING, max_age: float = MAX_AGE_SECONDS
    ) -> None:
        self._embedder = embedder
        self._capacity = pending
        self._max_age = max_age
        self._pending: OrderedDict[str, tuple[float, str, Future[np.ndarray]]] = OrderedDict()
        self._lock = threading.Lock()
        self.begun = 0
        self.taken = 0

    def begin(self, text: str) -> None:
        """Begin embedding `text` as a query, unless the model cannot yet (still loading: the request
        will embed it then) or it is already under way. Called from the event loop: waits at most
        for the model's query thread to take the work (embeddings/query_thread.py), never for it."""
        embedder = self._embedder
        if embedder is None or not text or len(text) > MAX_QUERY_CHARS:
            return
        now = time.monotonic()
        with self._lock:
            if text in self._pending:
                return
            while self._pending and (
                len(self._pending) >= self._capacity or now - next(iter(self._pending.values()))[0] > self._max_age
            ):
                self._pending.popitem(last=False)[1][2].cancel()  # not begun yet: never will be
            try:
                future = embedder.begin_query(text)
            except Exception:  # noqa: BLE001 - only a head start: the request embeds it and meets any error
                log.debug("could not begin a query embedding early", exc_info=True)
                return
            if future is not None:
                self._pending[text] = (now, embedder.model_id, future)
                self.begun += 1

    def pending(self, text: str) -> bool:
        """Whether `text`'s embedding was begun and is not taken yet."""
        return text in self._pending

    def take(self, text: str) -> np.ndarray | None:
        """The vector begun for `text` (waiting for it to finish), or None: none was begun, it has not
        started yet (queued behind others: it is withdrawn), the model changed since, or it failed
        (the caller embeds the text itself and meets the error)."""
        if not self._pending:  # read without the lock: a miss costs no more than this
            return None
        with self._lock:
            entry = self._pending.pop(text, None)
        if entry is None or self._embedder is None:
            return None
        _, model_id, future = entry
        if future.cancel():  # still queued behind other queries: embedding it here is as soon
            return None
        if model_id != self._embedder.model_id:
            return None
        try:
            rows = future.result()
        except Exception:  # noqa: BLE001 - embedded again by the caller, whose error is the one reported
            log.debug("an early query embedding failed", exc_info=True)
            return None
        if rows.shape != (1, self._embedder.dimension) or not np.isfinite(rows).all():
            return None
        self.taken += 1
        log.debug("a query embedded from its request's arrival was taken (%d of %d begun)", self.taken, self.begun)
        return rows[0]


class QueryLines:
    """The stdio transport's look at each incoming line: a tools/call of one of `tools` with a
    string `query` argument begins that query's embedding. Anything else is left alone, and
    nothing here raises: the SDK reads the line as it would have."""

    def __init__(self, early: Callable[[], EarlyQueries | None], tools: Collection[str]) -> None:
        self._early = early
        self._tools = frozenset(tools)

    def __call__(self, line: str) -> None:
        if '"tools/call"' not in line or len(line) > 4 * MAX_QUERY_CHARS:
            return
        try:
            early = self._early()
            if early is None:
                return
            message = json.loads(line)
            params = message["params"] if message.get("method") == "tools/call" else None
            query = params["arguments"]["query"] if params and params.get("name") in self._tools else None
            if isinstance(query, str):
                early.begin(query)
        except Exception:  # noqa: BLE001 - a line this cannot read is the SDK's to answer
            return

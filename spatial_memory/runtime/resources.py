"""Shared state wired once per server: settings, embedder, store, background upkeep.

The store and the model open lazily (first use, or the background warm-up started
after the handshake), so `initialize` and `tools/list` never wait for LanceDB, torch
or the model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ..config import Settings
from ..errors import StorageError
from .heap import trim
from .shutdown import WorkerCalls

if TYPE_CHECKING:  # numpy costs 0.1 s of start-up, before tools/list
    import numpy as np

log = logging.getLogger(__name__)


class Embedder(Protocol):
    model_id: str

    @property
    def dimension(self) -> int: ...

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Resources:
    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        if embedder is None:
            from ..embeddings import EmbeddingRouter

            embedder = EmbeddingRouter(
                settings.embedding_model,
                backend=settings.embedding_backend,
                cache_dir=settings.model_cache_dir,
                batch_size=settings.embedding_batch_size,
                threads=settings.embedding_threads,
                openai_api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            )
        self.embedder = embedder
        self._store: Any = None
        self._store_lock = threading.Lock()
        self.upkeep = Upkeep(self)
        self.workers = WorkerCalls()
        self.projection_warm = False

    def store(self):
        """The MemoryStore, opened on first use (blocking; call from a worker thread)."""
        if self._store is None:
            with self._store_lock:
                if self._store is None:
                    from .imports import import_heavy_modules

                    import_heavy_modules()
                    from ..storage.indexing import IndexPolicy
                    from ..storage.store import MemoryStore

                    self._store = MemoryStore(
                        self.settings.db_path,
                        self.embedder.model_id,
                        self.embedder.dimension,
                        compact_fragment_threshold=self.settings.compact_fragment_threshold,
                        version_retention_seconds=self.settings.version_retention_seconds,
                        lock_timeout_seconds=self.settings.lock_timeout_seconds,
                        index_cache_bytes=self.settings.index_cache_mb << 20 or None,
                        index_policy=IndexPolicy(
                            vector_index_threshold=self.settings.vector_index_threshold,
                            scalar_index_threshold=self.settings.vector_index_threshold,
                            ef=self.settings.index_ef,
                            refine_factor=self.settings.index_refine_factor,
                        ),
                    )
        return self._store

    @property
    def store_is_open(self) -> bool:
        return self._store is not None

    def close(self, timeout: float) -> None:
        """The server is ending: let running tool work and a store being opened finish (up to
        `timeout` seconds), then stop upkeep, which writes the access counts still pending."""
        if not self.workers.wait_idle(timeout):
            log.warning("shutting down with tool work still running after %.0f s", timeout)
        if self._store_lock.acquire(timeout=timeout):  # an opening store (a first write) ends first
            self._store_lock.release()
        self.upkeep.stop()

    def warm_up(self) -> None:
        """Open the store, load the model, then compile UMAP; failures resurface, typed, on first use."""
        for step in (self.store, self.embedder.load):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - surfaced again, typed, on first use
                log.warning("background warm-up: %s", exc)
        if self.settings.warm_up_projection:
            _lower_thread_priority()
            try:
                from ..algorithms import warm_up_projection

                warm_up_projection()
                self.projection_warm = True
            except Exception as exc:  # noqa: BLE001
                log.warning("UMAP warm-up failed: %s", exc)


def _lower_thread_priority() -> None:
    """Let request handling win the CPU over background compilation (Linux: per-thread nice)."""
    try:
        import os

        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


class Upkeep:
    """A background thread that writes recorded recall accesses and compacts the table.

    Recall stays fast because access bookkeeping is batched here instead of costing a
    commit per query; compaction keeps fragment counts (and so search latency) low.
    Writing the access counts rewrites rows and takes the CPU for a few hundred ms, so it
    waits for a pause between requests (QUIET_SECONDS) - or, under load that never
    pauses, for at most MAX_DEFER_SECONDS. Writes poke the thread to run at once.
    """

    QUIET_SECONDS = 0.25
    MAX_DEFER_SECONDS = 30.0

    def __init__(self, resources: Resources) -> None:
        self._resources = resources
        self._pending: Counter[str] = Counter()
        self._pending_since: float | None = None
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._poked = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._calls_running = 0
        self._last_call = 0.0

    def record_access(self, ids: Iterable[str]) -> None:
        with self._lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            self._pending.update(ids)

    def call_started(self) -> None:
        with self._lock:
            self._calls_running += 1
            self._last_call = time.monotonic()

    def call_finished(self) -> None:
        with self._lock:
            self._calls_running -= 1
            self._last_call = time.monotonic()

    def _may_run_now(self) -> bool:
        with self._lock:
            now = time.monotonic()
            quiet = self._calls_running == 0 and now - self._last_call >= self.QUIET_SECONDS
            overdue = self._pending_since is not None and now - self._pending_since >= self.MAX_DEFER_SECONDS
            return quiet or overdue

    def poke(self) -> None:
        self._poked = True
        self._wake.set()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="spatial-memory-upkeep", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.run_once(compact=False)

    def _loop(self) -> None:
        interval = max(self._resources.settings.access_flush_seconds, 0.05)
        while not self._stopping.is_set():
            self._wake.wait(timeout=interval)
            self._wake.clear()
            if self._stopping.is_set():
                break
            poked, self._poked = self._poked, False
            if poked or self._may_run_now():
                self.run_once()

    def flush(self) -> None:
        """Write pending recall access counts now, for a caller about to read them (export, the
        lifecycle tools); returns only once counts already being written have landed too."""
        self.run_once(compact=False)

    def run_once(self, *, compact: bool = True) -> None:
        if not self._resources.store_is_open:
            return
        store = self._resources.store()
        try:
            # One access write at a time, so a flush waits for counts the thread has taken but
            # not yet written. Compaction stays outside: an index rebuild it starts can take
            # many minutes at a million rows, and no flush should wait for that.
            with self._flush_lock:
                with self._lock:
                    pending, self._pending, self._pending_since = self._pending, Counter(), None
                if pending:
                    store.record_access(dict(pending))
            compacted = compact and store.needs_compaction()
            if compacted:
                store.compact()
            store.refresh_exact()
            if compacted:
                trim()  # compaction and the reload leave large freed buffers behind
        except StorageError as exc:
            log.warning("upkeep: %s", exc)
        except Exception:  # noqa: BLE001 - the upkeep thread must survive anything
            log.exception("upkeep failed")

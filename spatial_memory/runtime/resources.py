"""Shared state wired once per server: settings, embedder, store, background upkeep.

The store and the model open lazily (first use, or the background warm-up started
after the handshake), so `initialize` and `tools/list` never wait for LanceDB, torch
or the model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol, cast

from ..config import Settings
from .changes import StoreChanges
from .early_queries import EarlyEmbedder, EarlyQueries
from .imports import import_heavy_modules
from .shutdown import WorkerCalls
from .upkeep import KeptStore, Upkeep

if TYPE_CHECKING:  # numpy, pyarrow and LanceDB cost seconds of start-up, before tools/list
    import numpy as np

    from ..storage.protocol import Store
    from ..storage.store import MemoryStore

log = logging.getLogger(__name__)


class Embedder(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Resources:
    def __init__(
        self, settings: Settings, embedder: Embedder | None = None, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.settings = settings
        # What "now" is for expiry and versions (tests pass a clock they can move).
        self.clock: Callable[[], datetime] = clock or _utc_now
        if embedder is None:
            # Imported here, only when no embedder is given (tests give their own): it imports numpy.
            from ..embeddings import EmbeddingRouter

            embedder = EmbeddingRouter(
                settings.embedding_model,
                backend=settings.embedding_backend,
                precision=settings.embedding_precision,
                cache_dir=settings.model_cache_dir,
                batch_size=settings.embedding_batch_size,
                threads=settings.embedding_threads,
                openai_api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            )
        self.embedder: Embedder = embedder
        # Query vectors begun when their request arrives, where the embedder can (the bundled model).
        early = cast("EarlyEmbedder", embedder) if hasattr(embedder, "begin_query") else None
        self.early_queries = EarlyQueries(early)
        self._store: MemoryStore | None = None
        self._store_lock = threading.Lock()
        self.upkeep = Upkeep(
            # MemoryStore is a KeptStore, through its Member descriptors, which the checker does not
            # bind when it matches a protocol (it does on attribute access).
            lambda: cast("KeptStore", self.memory_store()),
            lambda: self.store_is_open,
            flush_seconds=settings.access_flush_seconds,
            clock=self.clock,
        )
        self.workers = WorkerCalls()
        self.changes = StoreChanges()  # every commit to the store, for resource subscriptions
        self.projection_warm = False

    def store(self) -> Store:
        """The store as services see it, opened on first use (blocking; call from a worker thread).
        A team principal's resources (auth/principal.py) answer a confined one instead."""
        return self.memory_store()

    def memory_store(self) -> MemoryStore:
        """The whole store, for the server's own upkeep: opened on first use (blocking)."""
        if self._store is None:
            with self._store_lock:
                if self._store is None:
                    import_heavy_modules()
                    # Imported here, on first use, after the heavy modules: keeps start-up fast (module docstring).
                    from ..storage.search.indexing import IndexPolicy
                    from ..storage.store import MemoryStore

                    self._embed_like_the_store()
                    store = MemoryStore(
                        self.settings.db_path,
                        self.embedder.model_id,
                        self.embedder.dimension,
                        compact_fragment_threshold=self.settings.compact_fragment_threshold,
                        version_retention_seconds=self.settings.version_retention_seconds,
                        lock_timeout_seconds=self.settings.lock_timeout_seconds,
                        index_cache_bytes=self.settings.index_cache_mb << 20 or None,
                        clock=self.clock,
                        index_policy=IndexPolicy(
                            vector_index_threshold=self.settings.vector_index_threshold,
                            scalar_index_threshold=self.settings.vector_index_threshold,
                            ef=self.settings.index_ef,
                            refine_factor=self.settings.index_refine_factor,
                        ),
                        read_only=self.settings.read_only,
                        on_commit=self.changes.committed,
                    )
                    self._store = store
                    if store.fts_lags():
                        # A store left with many rows outside its full-text index (a server that
                        # stopped right after a burst of writes) would scan them in every keyword
                        # search until upkeep found a pause between calls: compact now instead.
                        self.upkeep.poke()
        return self._store

    def _embed_like_the_store(self) -> None:
        """The bundled model embeds with the path (fp32 / int8) an existing store's vectors were
        written with, or refuses, typed, when the settings ask for the other one. Embedders
        without paths (a test's, another model) have no use_store_model."""
        use_store_model = getattr(self.embedder, "use_store_model", None)
        if use_store_model is None or not getattr(self.embedder, "is_bundled", False):
            return
        from ..storage.table.model_record import recorded_model_id  # LanceDB, as the store it precedes

        use_store_model(recorded_model_id(self.settings.db_path))

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
        """Open the store, load the model, then the map's code; failures resurface, typed, on first use."""
        for step in (self.store, self.embedder.load):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - surfaced again, typed, on first use
                log.warning("background warm-up: %s", exc)
        if self.settings.warm_up_projection:
            _lower_thread_priority()
            try:
                # Imported here: the warm-up runs in the background, after the handshake.
                import numpy as np

                from ..algorithms import cluster_vectors, warm_up_projection

                warm_up_projection()
                cluster_vectors(np.eye(6), 3)
                self.projection_warm = True
            except Exception as exc:  # noqa: BLE001
                log.warning("map layout warm-up failed: %s", exc)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _lower_thread_priority() -> None:
    """Let request handling win the CPU over background compilation (Linux: per-thread nice)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass

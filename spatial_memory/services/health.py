"""health: is the server able to work, and if not, what is wrong. Cheap enough to poll."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

from .. import __version__
from ..embeddings.decisions import Redecides
from ..errors import SpatialMemoryError
from .base import Service
from .results import HealthCheck, HealthResult, timestamp

# Free disk space below these is a warning, then an error (a write could fail half way).
DISK_WARNING_BYTES = 1 << 30
DISK_ERROR_BYTES = 100 << 20


class HealthService(Service):
    def health(self, *, verbose: bool = False) -> HealthResult:
        """Each check with its latency; status is the worst of them: unhealthy when one failed
        (error), degraded when one warns, healthy otherwise."""
        checks: list[HealthCheck] = []
        facts: dict = {}

        def run(name: str, check: Callable[[], tuple[str, str]]) -> None:
            started = time.perf_counter()
            try:
                status, message = check()
            except SpatialMemoryError as exc:
                status, message = "error", exc.message
            except Exception as exc:  # noqa: BLE001 - a failed check is a result, not a failed call
                status, message = "error", f"{type(exc).__name__}: {exc}"
            checks.append(HealthCheck(name=name, status=status, message=message, latency_ms=_ms(started)))

        def store() -> tuple[str, str]:
            facts.update(self._resources.store().health_facts())
            text = f"{facts['rows']:,} memories, table version {facts['version']}"
            if facts["read_only"]:
                return "warning", f"{text}; read-only: {facts['read_only'][:300]}"
            return "ok", text

        run("store", store)
        run("model", self._model)
        if facts:
            run("disk", lambda: _disk(facts["path"]))
            run("write_lock", lambda: _lock(facts["lock"]))
            run("upkeep", self._upkeep)
            run("index", lambda: _index(facts))
        run("version", lambda: ("ok", f"spatial-memory-mcp {__version__}"))
        statuses = {c.status for c in checks}
        status = "unhealthy" if "error" in statuses else "degraded" if "warning" in statuses else "healthy"
        store_ok = any(c.name == "store" and c.status != "error" for c in checks)
        return HealthResult(
            status=status,
            ready=store_ok and self._resources.embedder.loaded and status != "unhealthy",
            alive=self._resources.upkeep.running or not store_ok,
            version=__version__,
            timestamp=timestamp(self._resources.clock()),
            checks=checks if verbose else None,
        )

    def _model(self) -> tuple[str, str]:
        embedder = self._resources.embedder
        if not embedder.loaded:
            return "ok", f"{embedder.model_id}: not loaded yet (loads on first use)"
        dim = embedder.dimension
        if self._resources.store_is_open and self._resources.store().dim != dim:
            return "error", f"{embedder.model_id} gives {dim} dimensions, the store holds another size"
        note = embedder.decision_note() if isinstance(embedder, Redecides) else ""
        return "ok", f"{embedder.model_id} loaded ({dim} dimensions){note}"

    def _upkeep(self) -> tuple[str, str]:
        upkeep = self._resources.upkeep
        if not upkeep.running:
            return "warning", "the background upkeep thread is not running: access counts are written at shutdown"
        if upkeep.last_error:
            return "warning", f"the last upkeep pass failed: {upkeep.last_error[:200]}"
        return "ok", f"running, {upkeep.pending} recalled memories waiting to be counted"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _disk(path) -> tuple[str, str]:
    free = shutil.disk_usage(path).free
    text = f"{free / (1 << 30):.2f} GiB free at {path}"
    if free < DISK_ERROR_BYTES:
        return "error", text + ": free space now, writes may fail"
    if free < DISK_WARNING_BYTES:
        return "warning", text + ": running low"
    return "ok", text


def _lock(state: str) -> tuple[str, str]:
    if state == "read-only":
        return "ok", "not taken: the store is read-only"
    if state == "unlocked":
        return "warning", "no file locking on this file system: processes sharing the store are not serialized"
    return "ok", "free" if state == "free" else "held: a write is running"


def _index(facts: dict) -> tuple[str, str]:
    kind = "vector index (approximate, refined)" if facts["vector_indexed"] else "exact search"
    pending = " compaction pending" if facts["needs_compaction"] else " compacted"
    return "ok", f"{kind};{pending} ({facts['writes_since_compaction']} writes since)"

"""Background upkeep of the store: recorded recall accesses written in batches, expired memories
purged, compaction. A thread of the server process, given the store it keeps in its constructor."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Protocol

from ..errors import StorageError
from .heap import trim

log = logging.getLogger(__name__)


class KeptStore(Protocol):
    """What upkeep does to the store (MemoryStore satisfies it)."""

    @property
    def read_only(self) -> bool: ...

    def record_access(self, counts: dict[str, int], when: datetime | None = None) -> None: ...

    def record_co_recall(self, pairs: Mapping[tuple[str, str], int], when: datetime | None = None) -> None: ...

    def purge_expired(self) -> list[str]: ...

    def needs_compaction(self) -> bool: ...

    def compaction_can_wait(self) -> bool: ...

    def compact(self) -> None: ...

    def refresh_exact(self) -> None: ...


class Upkeep:
    """A background thread that writes recorded recall accesses and compacts the table.

    Recall stays fast because access bookkeeping is batched here instead of costing a
    commit per query; compaction keeps fragment counts (and so search latency) low.
    Writing the access counts rewrites rows and takes the CPU for a few hundred ms, so it
    waits for a pause between requests (QUIET_SECONDS) - or, under load that never
    pauses, for at most MAX_DEFER_SECONDS. A compaction after them waits again if calls came
    meanwhile (as long again at most): one running beside recalls moved the table's version under
    them, and each reloaded the exact copy (docs/BENCHMARKS.md, 45, round seven). Writes poke the
    thread to run at once.
    """

    QUIET_SECONDS = 0.25
    MAX_DEFER_SECONDS = 30.0

    def __init__(
        self,
        store: Callable[[], KeptStore],
        store_is_open: Callable[[], bool],
        *,
        flush_seconds: float,
        clock: Callable[[], datetime],
    ) -> None:
        """`store()` opens the store on first use; upkeep runs only once `store_is_open()` (it never
        opens the store itself); recorded accesses are written every `flush_seconds` at most;
        `clock()` stamps co-recall links."""
        self._store = store
        self._store_is_open = store_is_open
        self._flush_seconds = flush_seconds
        self._clock = clock
        self._pending: Counter[str] = Counter()
        self._pairs: Counter[tuple[str, str]] = Counter()  # memories recalled together (co_recall.py)
        self._pending_since: float | None = None
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._poked = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._calls_running = 0
        self._last_call = 0.0
        self._compaction_waits = False  # a compaction due waits for a pause in a burst of writes
        self._compaction_deferred_since: float | None = None  # a pass left it for the next pause
        self.last_error: str | None = None  # of the last pass (health reports it)

    def record_access(self, ids: Iterable[str]) -> None:
        with self._lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            self._pending.update(ids)

    def record_co_recall(self, ids: Iterable[str]) -> None:
        """These memories were recalled together: each pair's link grows at the next pass (in either
        order: the store counts (a, b) and (b, a) as one link)."""
        unique = list(dict.fromkeys(ids))
        pairs = [(a, b) for i, a in enumerate(unique) for b in unique[i + 1 :]]
        if not pairs:
            return
        with self._lock:
            if not self._pending and not self._pairs:
                self._pending_since = time.monotonic()
            self._pairs.update(pairs)

    def call_started(self) -> None:
        with self._lock:
            self._calls_running += 1
            self._last_call = time.monotonic()

    def call_finished(self) -> None:
        with self._lock:
            self._calls_running -= 1
            self._last_call = time.monotonic()

    def _quiet(self, now: float) -> bool:  # under self._lock
        """No call runs, and none ended within QUIET_SECONDS."""
        return self._calls_running == 0 and now - self._last_call >= self.QUIET_SECONDS

    def _may_run_now(self) -> bool:
        with self._lock:
            now = time.monotonic()
            overdue = self._pending_since is not None and now - self._pending_since >= self.MAX_DEFER_SECONDS
            return self._quiet(now) or overdue

    @property
    def running(self) -> bool:
        """The background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def pending(self) -> int:
        """Recalled memories whose access counts are not written yet."""
        with self._lock:
            return len(self._pending)

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
        interval = max(self._flush_seconds, 0.05)
        while not self._stopping.is_set():
            self._wake.wait(timeout=self.QUIET_SECONDS if self._compaction_waits else interval)
            self._wake.clear()
            if self._stopping.is_set():
                break
            poked, self._poked = self._poked, False
            if poked or self._may_run_now():
                self.run_once(beside_calls=poked)
            elif self._compaction_waits:
                self._guarded(self._compact_when_due)

    def flush(self) -> None:
        """Write pending recall access counts now, for a caller about to read them (export, the
        lifecycle tools); returns only once counts already being written have landed too."""
        self.run_once(compact=False)

    @staticmethod
    def _purge(store: KeptStore) -> None:
        """Delete expired memories: no read returns them already, this frees the space. A failure
        here must not stop the compaction after it."""
        try:
            purged = store.purge_expired()
        except StorageError as exc:
            log.warning("upkeep: purging expired memories: %s", exc)
            return
        if purged:
            log.info("upkeep: %d expired memories purged", len(purged))

    def run_once(self, *, compact: bool = True, beside_calls: bool = True) -> None:
        """One pass: accesses and co-recall links written, expired memories purged, then (with
        `compact`) a compaction if one is due; unless `beside_calls`, that compaction waits while
        calls run (MAX_DEFER_SECONDS at most)."""
        self._guarded(lambda: self._pass(compact, beside_calls))

    def _pass(self, compact: bool, beside_calls: bool = True) -> None:
        store = self._store()
        # One access write at a time, so a flush waits for counts the thread has taken but
        # not yet written. Compaction stays outside: an index rebuild it starts can take
        # many minutes at a million rows, and no flush should wait for that.
        with self._flush_lock:
            with self._lock:
                pending, self._pending, self._pending_since = self._pending, Counter(), None
                pairs, self._pairs = self._pairs, Counter()
            # A read-only store cannot record recall accesses or co-recall links: they are dropped.
            if pending and not store.read_only:
                store.record_access(dict(pending))
            if pairs and not store.read_only:
                store.record_co_recall(dict(pairs), self._clock())
        self._purge(store)
        if compact and (beside_calls or self._may_compact_now()):
            self._compact_when_due()
        else:
            store.refresh_exact()

    def _may_compact_now(self) -> bool:
        """No call runs or ran within QUIET_SECONDS, or a compaction was left for a pause
        MAX_DEFER_SECONDS ago already."""
        with self._lock:
            now = time.monotonic()
            if self._quiet(now):
                self._compaction_deferred_since = None
                return True
            if self._compaction_deferred_since is None:
                self._compaction_deferred_since = now
            if now - self._compaction_deferred_since >= self.MAX_DEFER_SECONDS:
                self._compaction_deferred_since = None
                return True
            return False

    def _compact_when_due(self) -> None:
        """Compact if the store needs it, unless the compaction may wait for the pause after a burst
        of writes (then the loop looks again every QUIET_SECONDS); bring the exact copy up to date."""
        store = self._store()
        due = store.needs_compaction()
        self._compaction_waits = due and store.compaction_can_wait()
        compacted = due and not self._compaction_waits
        if compacted:
            store.compact()
        store.refresh_exact()
        if compacted:
            trim()  # compaction and the reload leave large freed buffers behind

    def _guarded(self, work) -> None:
        """Run one pass of upkeep; a failure is kept for health and logged, never raised."""
        if not self._store_is_open():
            return
        try:
            work()
            self.last_error = None
        except StorageError as exc:
            self.last_error = str(exc)
            log.warning("upkeep: %s", exc)
        except Exception as exc:  # noqa: BLE001 - the upkeep thread must survive anything
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("upkeep failed")

"""The write path every change to the store takes: the lock shared by every thread and process, one
LanceDB commit retried when it lost a race, and what this process learns from each of its commits
(the exact copy follows it, the earliest expiry stays known, compaction's counters move on).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import StorageError
from ..search.exact_index import Change, ExactIndex
from ..table.table import MemoryTable
from .expiry import Expiry
from .lease import INDEX_LEASE, WRITE_LEASE, LeaseLock, open_lease_table
from .locking import INDEX_LOCK_FILE, LOCK_FILE, WRITE_ATTEMPTS, ReentrantLock, StoreLock, backoff, is_retryable
from .readonly import ReadOnlyLock, read_only_message

log = logging.getLogger(__name__)

Lock = ReentrantLock | ReadOnlyLock


@dataclass
class Locks:
    """The store's write lock and the lock index builds take (which never blocks writers: a busy
    index lock means another process is building, and this one skips its turn)."""

    write: Lock
    index: Lock

    @classmethod
    def of(cls, path: Path | str, db: Any, *, remote: bool, read_only_reason: str | None, timeout: float) -> Locks:
        """A file lock (StoreLock) on a local path, a lease (lease.py) on object storage; a store that
        cannot be written gets a lock that refuses every write (readonly.py)."""
        if read_only_reason:
            refused = ReadOnlyLock(read_only_message(read_only_reason))
            return cls(refused, refused)
        if remote:
            leases = open_lease_table(db)
            return cls(LeaseLock(leases, WRITE_LEASE, timeout), LeaseLock(leases, INDEX_LEASE, 0.05))
        local = Path(path)
        return cls(StoreLock(local / LOCK_FILE, timeout), StoreLock(local / INDEX_LOCK_FILE, 0.05))


@dataclass
class WriteActivity:
    """What this process wrote since the last compaction, which decides when the next one runs
    (maintenance.py)."""

    compact_threshold: int
    writes: int = 0  # commits to the memories table
    rows: int = 0  # rows written or rewritten (see Maintenance.fts_may_lag)
    keyword_searches: int = 0
    last_write: float = 0.0  # time.monotonic() when the last write landed
    gap: float = math.inf  # seconds between the last two writes (see Maintenance.compaction_can_wait)

    def wrote(self) -> None:
        now = time.monotonic()
        self.writes += 1
        self.gap, self.last_write = now - self.last_write, now

    def compact_soon(self) -> None:
        """Let the next upkeep pass compact (rows left outside the indexes after a bulk write)."""
        self.writes = max(self.writes, self.compact_threshold + 1)

    def compacted(self) -> None:
        self.writes = self.rows = self.keyword_searches = 0


class Writer:
    """Takes the write lock and commits, for every part of the store."""

    def __init__(
        self,
        table: MemoryTable,
        locks: Locks,
        activity: WriteActivity,
        exact: ExactIndex,
        expiry: Expiry,
        on_commit: Callable[[], None] | None = None,
    ) -> None:
        self._table = table
        self._on_commit = on_commit  # told after every commit (runtime/changes.py)
        self.lock: Lock = locks.write
        self.index_lock: Lock = locks.index
        self._activity = activity
        self._exact = exact
        self._expiry = expiry

    @property
    def read_only(self) -> bool:
        return isinstance(self.lock, ReadOnlyLock)

    @property
    def read_only_message(self) -> str | None:
        return self.lock.message if isinstance(self.lock, ReadOnlyLock) else None

    def lock_state(self) -> str:
        """The write lock as health reports it: "read-only", or whether it is free or held."""
        return "read-only" if isinstance(self.lock, ReadOnlyLock) else self.lock.probe()

    def refuse_writes(self, message: str) -> None:
        """From now on every write is refused with this message (a damaged store, served read-only)."""
        self.lock = ReadOnlyLock(message)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the write lock across a read-modify-write (the writes inside re-enter it), so no
        other write - another thread's or another process's - lands between the read and the write."""
        with self.lock:
            yield

    def commit(
        self,
        failure: str,
        action: Callable[[], Any],
        *,
        landed: Callable[[], bool] | None = None,
        change: Change | None = None,
    ) -> Any:
        """Run one commit to the memories table under the lock, retrying (see `attempt`). `change`
        describes it to the exact copy (ExactIndex.committed); without it the copy is dropped and
        reloaded by the next search."""
        with self.lock:
            before = self._table.newest_version if self._exact.has_copy() or self._expiry.known() else None
            try:
                result = self.attempt(failure, action, landed)
            except BaseException:
                self._exact.invalidate()
                raise
            after = self._table.newest_version
            self._expiry.follow(before, after, change)
            if change is not None:
                self._activity.rows += len(change.written) + len(change.moved)
            if change is None or before is None or not self._exact.has_copy():
                self._exact.invalidate()
            else:
                try:
                    self._exact.committed(before, after, change)
                except Exception:  # noqa: BLE001 - the copy only speeds searches up
                    log.debug("exact index update failed", exc_info=True)
                    self._exact.invalidate()
            if self._on_commit is not None:
                self._on_commit()
            return result

    def attempt(
        self, failure: str, action: Callable[[], Any], landed: Callable[[], bool] | None = None, *, counted: bool = True
    ) -> Any:
        """Run one commit (the caller holds the lock), retrying with backoff when it lost a race (a
        commit conflict fails before anything is written). `landed` tells whether a failed attempt
        was committed after all; it is asked before retrying a write that is not idempotent.
        `counted`: a write to the memories table, which compaction tidies (not a side table's)."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                result = action()
            except Exception as exc:
                if attempt + 1 >= WRITE_ATTEMPTS or not is_retryable(exc):
                    raise StorageError(f"{failure}: {exc}") from exc
                log.info("write conflict, retrying (%d): %s", attempt + 1, exc)
                time.sleep(backoff(attempt))
                if landed is not None and landed():
                    result = None
                else:
                    continue
            if counted:
                self._activity.wrote()
            return result
        raise AssertionError("unreachable")  # pragma: no cover

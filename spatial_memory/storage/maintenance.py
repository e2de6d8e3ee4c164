"""Keeping the table fast: compaction, old versions cleaned up, the vector and full-text indexes
kept current. A part of MemoryStore (it uses the store's table, locks and exact index)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from ..errors import StorageError
from .connection import connect
from .indexing import ensure_indexes, vector_index_rows
from .locking import WRITE_ATTEMPTS, backoff, is_retryable
from .schema import TABLE_NAME

log = logging.getLogger(__name__)

KEEP_ALL_VERSIONS = timedelta(days=3650)
CLEANUP_MARGIN_SECONDS = 5.0


# Writes left outside the indexes are folded in once the store has been quiet this long.
IDLE_COMPACT_SECONDS = 10.0
# Rows outside the full-text index are tokenized and scored by a scan in every keyword search:
# at 10,000 rows a keyword search took 4.9 ms with none and 14-21 ms with 1,872. Without a vector
# index, each recall's access counts rewrite its hits' rows, so a busy server that never pauses
# leaves hundreds more outside after each access write; past this many, it compacts (0.24 s at
# 10,000 rows) without waiting for a pause or for the fragment threshold - but only once keyword
# searches have run since the last compaction: a bulk import that nobody searches meanwhile
# would otherwise compact every third batch of 100, beside the model on the same cores
# (remember_batch at 10,000 memories: 55% of the model's throughput).
FTS_UNINDEXED_MAX = 256
# During a burst of writes that nobody searches by keyword (a bulk import: writes landing less
# than BURST_GAP_SECONDS apart), compaction waits for the pause after it, up to this many times
# the fragment threshold: run beside the model on the same cores, it slowed each batch's
# embedding (remember_batch of 10,000 notes in batches of 100 took 8 compactions).
BURST_COMPACT_FACTOR = 8
BURST_GAP_SECONDS = 1.0


class Maintenance:
    """MemoryStore's maintenance methods."""

    def needs_compaction(self) -> bool:
        """After more writes than the threshold; or, once the writes stop for IDLE_COMPACT_SECONDS,
        after any: the rows of the last few writes would otherwise stay outside the indexes (and
        be searched by a scan) until the next burst of writes."""
        if self.read_only or self._writes_since_compaction == 0:
            return False
        idle = time.monotonic() - self._last_write > IDLE_COMPACT_SECONDS
        if self._writes_since_compaction > self._compact_threshold or idle:
            return True
        return self.fts_may_lag()

    def compaction_can_wait(self) -> bool:
        """A compaction due now may wait for the pause after a burst of writes: this process's last
        two writes landed less than BURST_GAP_SECONDS apart and the last one less than that ago,
        no keyword search has run since the last compaction (it would scan the rows outside the
        full-text index), and the writes since are at most BURST_COMPACT_FACTOR times the threshold."""
        return (
            self._keyword_searches_since_compaction == 0
            and self._write_gap < BURST_GAP_SECONDS
            and time.monotonic() - self._last_write < BURST_GAP_SECONDS
            and self._writes_since_compaction <= BURST_COMPACT_FACTOR * self._compact_threshold
        )

    def fts_may_lag(self) -> bool:
        """Keyword searches have run since the last compaction and this process has written or
        rewritten more than FTS_UNINDEXED_MAX rows since (each outside the full-text index until
        the next compaction), on a table without a vector index. No LanceDB call: recall asks it
        after every keyword search, to wake upkeep without waiting for a pause between calls."""
        return (
            self._keyword_searches_since_compaction > 0
            and self._rows_since_compaction > FTS_UNINDEXED_MAX
            and not self.read_only
            and not self._vector_index_ready()
        )

    def fts_lags(self) -> bool:
        """More than FTS_UNINDEXED_MAX rows outside the full-text index, on a table without a vector
        index. With a vector index, recall's counts go to the access ledger and rewrite no rows,
        and every compaction adds an index segment, so only the fragment threshold applies there."""
        return not self.read_only and not self._vector_index_ready() and self.fts_unindexed_rows() > FTS_UNINDEXED_MAX

    def compact(self) -> None:
        """Merge small fragments and drop old versions, keeping search fast as the table grows.

        Runs under the store lock, so one process at a time compacts. LanceDB's cleanup removes
        every version created before its cutoff except the latest - including one that was the
        latest until a moment ago and that another process may be reading right now. So the
        cutoff is moved back to spare every version superseded less than the retention period
        ago (`_cleanup_age`): a read started on any recent version always finds its files.
        """
        with self._write_lock:
            before = self._table.version
            try:
                # optimize() also folds rows written since the last run into the full-text index.
                self._optimize(KEEP_ALL_VERSIONS)
                age = self._cleanup_age()
                if age is not None:
                    self._optimize(age)
            except BaseException:
                self._exact.invalidate()
                raise
            self._writes_since_compaction = 0
            self._keyword_searches_since_compaction = 0
            self._rows_since_compaction = 0
            after = self._table.version
            if after != before:
                recent = dict(list(self._same_data.items())[-7:])  # a few: only the newest is asked
                self._same_data = {**recent, after: self._same_data.get(before, before)}
            self._exact.rebased(before, after)
            if not self._vector_index_ready():
                self.fold_accesses()  # no index to protect (any more): keep the counts in the rows
        self._ensure_fts_index()
        self._maintain_indexes()
        self._reconnect()

    def _reconnect(self) -> None:
        """Swap in a fresh connection. LanceDB keeps the files of every superseded index version
        open for as long as the connection lives - two more descriptors per compaction, until the
        server runs out of them after some thousands of writes; a new connection lets them go.
        Reads and writes already running keep the old table object until they finish."""
        if self.damage is not None:
            return  # served through recovery's view at an older version: nothing to let go
        try:
            db = connect(self._db_path, self._cache_bytes())
            table = db.open_table(TABLE_NAME)
        except Exception as exc:  # noqa: BLE001 - the old connection still works
            log.warning("could not reopen the memory store after compaction: %s", exc)
            return
        self._db, self._table = db, table
        try:
            self._ledger.reconnect(db)
        except Exception as exc:  # noqa: BLE001 - the old handle still works
            log.warning("could not reopen the access ledger: %s", exc)

    def _refresh_index_state(self) -> None:
        try:
            self._vector_indexed = vector_index_rows(self._table) is not None
        except Exception:  # noqa: BLE001 - advisory; searching without ef/refine still works
            self._vector_indexed = False
        self._index_checked_at = time.monotonic()

    def _vector_index_ready(self) -> bool:
        # Another process may have built the index: look again every half minute.
        if time.monotonic() - self._index_checked_at > 30:
            self._refresh_index_state()
        return self._vector_indexed

    def _maintain_indexes(self) -> None:
        """Build or rebuild the ANN and scalar indexes the table's size calls for (upkeep thread only)."""
        policy = self._index_policy
        rows = self._table.count_rows()
        if rows < min(policy.vector_index_threshold, policy.scalar_index_threshold):
            return
        try:
            with self._index_lock:
                done = ensure_indexes(self._table, rows, policy)
        except StorageError:
            return  # another process holds the index lock and is doing this work
        except Exception:  # noqa: BLE001 - exact search keeps working without the index
            log.exception("building indexes failed; searches stay exact (brute force)")
            return
        for action in done:
            log.info("built %s", action)
        self._refresh_index_state()

    def _optimize(self, cleanup_older_than: timedelta) -> None:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self._table.optimize(cleanup_older_than=cleanup_older_than)
                return
            except Exception as exc:
                if attempt + 1 >= WRITE_ATTEMPTS or not is_retryable(exc):
                    raise StorageError(f"compaction failed, nothing was lost: {exc}") from exc
                time.sleep(backoff(attempt))

    def _cleanup_age(self) -> timedelta | None:
        """The cleanup age that removes exactly the versions superseded more than `retention`
        ago, or None when there are none."""
        versions = sorted(self._table.list_versions(), key=lambda v: v["version"])
        # LanceDB reports naive local times; .timestamp() reads them back the same way.
        stamps = [v["timestamp"].timestamp() for v in versions]
        now = time.time()
        horizon = now - self._retention.total_seconds()
        keep_from = 0  # versions before this index were superseded before the horizon
        for i in range(1, len(stamps)):
            if stamps[i] <= horizon:
                keep_from = i
        if keep_from == 0:
            return None
        oldest_kept = min(stamps[keep_from:])
        return timedelta(seconds=max(now - oldest_kept + CLEANUP_MARGIN_SECONDS, self._retention.total_seconds()))

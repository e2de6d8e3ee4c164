"""Keeping the table fast: compaction, old versions cleaned up, the vector and full-text indexes
kept current (run by the server's upkeep thread, runtime/upkeep.py)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from ...errors import StorageError
from ..search.exact_index import ExactIndex
from ..search.fulltext import FullTextSearch
from ..search.indexing import IndexPolicy, VectorIndexState, ensure_indexes
from ..side_tables.access_counts import AccessCounts
from ..writing.locking import WRITE_ATTEMPTS, backoff, is_retryable
from ..writing.writer import WriteActivity, Writer
from .table import MemoryTable

log = logging.getLogger(__name__)

KEEP_ALL_VERSIONS = timedelta(days=3650)
CLEANUP_MARGIN_SECONDS = 5.0


# Writes left outside the indexes are folded in once the store has been quiet this long.
IDLE_COMPACT_SECONDS = 10.0
# Rows outside the full-text index are tokenized and scored by a scan in every keyword search,
# which makes it several times slower once there are a few thousand. Without a vector index, each
# recall's access counts rewrite its hits' rows, so a busy server that never pauses leaves
# hundreds more outside after each access write; past this many, it compacts without waiting for
# a pause or for the fragment threshold - but only once keyword searches have run since the last
# compaction: a bulk import that nobody searches meanwhile would otherwise compact every few
# batches, beside the model on the same cores, and lose much of the model's throughput
# (docs/BENCHMARKS.md, "Figures moved from code comments").
FTS_UNINDEXED_MAX = 256
# During a burst of writes that nobody searches by keyword (a bulk import: writes landing less
# than BURST_GAP_SECONDS apart), compaction waits for the pause after it, up to this many times
# the fragment threshold: run beside the model on the same cores, it slowed each batch's
# embedding.
BURST_COMPACT_FACTOR = 8
BURST_GAP_SECONDS = 1.0


class Maintenance:
    def __init__(
        self,
        table: MemoryTable,
        writer: Writer,
        activity: WriteActivity,
        exact: ExactIndex,
        accesses: AccessCounts,
        fulltext: FullTextSearch,
        indexed: VectorIndexState,
        policy: IndexPolicy,
        retention: timedelta,
    ) -> None:
        self._table = table
        self._writer = writer
        self._activity = activity
        self._exact = exact
        self._accesses = accesses
        self._fulltext = fulltext
        self._indexed = indexed
        self._policy = policy
        self._retention = retention

    def needs_compaction(self) -> bool:
        """After more writes than the threshold; or, once the writes stop for IDLE_COMPACT_SECONDS,
        after any: the rows of the last few writes would otherwise stay outside the indexes (and
        be searched by a scan) until the next burst of writes."""
        activity = self._activity
        if self._writer.read_only or activity.writes == 0:
            return False
        idle = time.monotonic() - activity.last_write > IDLE_COMPACT_SECONDS
        if activity.writes > activity.compact_threshold or idle:
            return True
        return self.fts_may_lag()

    def compaction_can_wait(self) -> bool:
        """A compaction due now may wait for the pause after a burst of writes: this process's last
        two writes landed less than BURST_GAP_SECONDS apart and the last one less than that ago,
        no keyword search has run since the last compaction (it would scan the rows outside the
        full-text index), and the writes since are at most BURST_COMPACT_FACTOR times the threshold."""
        activity = self._activity
        return (
            activity.keyword_searches == 0
            and activity.gap < BURST_GAP_SECONDS
            and time.monotonic() - activity.last_write < BURST_GAP_SECONDS
            and activity.writes <= BURST_COMPACT_FACTOR * activity.compact_threshold
        )

    def fts_may_lag(self) -> bool:
        """Keyword searches have run since the last compaction and this process has written or
        rewritten more than FTS_UNINDEXED_MAX rows since (each outside the full-text index until
        the next compaction), on a table without a vector index. No LanceDB call: recall asks it
        after every keyword search, to wake upkeep without waiting for a pause between calls."""
        return (
            self._activity.keyword_searches > 0
            and self._activity.rows > FTS_UNINDEXED_MAX
            and not self._writer.read_only
            and not self._indexed.ready()
        )

    def fts_lags(self) -> bool:
        """More than FTS_UNINDEXED_MAX rows outside the full-text index, on a table without a vector
        index. With a vector index, recall's counts go to the access ledger and rewrite no rows,
        and every compaction adds an index segment, so only the fragment threshold applies there."""
        return (
            not self._writer.read_only
            and not self._indexed.ready()
            and self._fulltext.unindexed_rows() > FTS_UNINDEXED_MAX
        )

    def compact(self) -> None:
        """Merge small fragments and drop old versions, keeping search fast as the table grows.

        Runs under the store lock, so one process at a time compacts. LanceDB's cleanup removes
        every version created before its cutoff except the latest - including one that was the
        latest until a moment ago and that another process may be reading right now. So the
        cutoff is moved back to spare every version superseded less than the retention period
        ago (`_cleanup_age`): a read started on any recent version always finds its files.
        """
        with self._writer.lock, self._exact.compacting():
            before = self._table.newest_version
            try:
                # optimize() also folds rows written since the last run into the full-text index.
                self.optimize(KEEP_ALL_VERSIONS)
                age = self._cleanup_age()
                if age is not None:
                    self.optimize(age)
            except BaseException:
                self._exact.invalidate()
                raise
            self._activity.compacted()
            after = self._table.newest_version
            self._table.compacted(before, after)
            self._exact.rebased(before, after)
            if not self._indexed.ready():
                self._accesses.fold()  # no index to protect (any more): keep the counts in the rows
        self._fulltext.ensure_index(rebuild_outdated=True)
        self.maintain_indexes()
        self.reconnect()

    def reconnect(self) -> None:
        """A fresh connection for the table and the access ledger (MemoryTable.reconnect says why)."""
        if not self._table.reconnect(vector_indexed=self._indexed.ready()):
            return
        try:
            self._accesses.ledger.reconnect(self._table.db)
        except Exception as exc:  # noqa: BLE001 - the old handle still works
            log.warning("could not reopen the access ledger: %s", exc)

    def maintain_indexes(self) -> None:
        """Build or rebuild the ANN and scalar indexes the table's size calls for (upkeep thread only)."""
        policy = self._policy
        rows = self._table.count_rows()
        if rows < min(policy.vector_index_threshold, policy.scalar_index_threshold):
            return
        try:
            with self._writer.index_lock:
                done = ensure_indexes(self._table.handle, rows, policy)
        except StorageError:
            return  # another process holds the index lock and is doing this work
        except Exception:  # noqa: BLE001 - exact search keeps working without the index
            log.exception("building indexes failed; searches stay exact (brute force)")
            return
        for action in done:
            log.info("built %s", action)
        self._indexed.refresh()

    def optimize(self, cleanup_older_than: timedelta) -> None:
        """LanceDB's optimize (compaction, index folding, cleanup of versions older than the age)."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self._table.handle.optimize(cleanup_older_than=cleanup_older_than)
                return
            except Exception as exc:
                if attempt + 1 >= WRITE_ATTEMPTS or not is_retryable(exc):
                    raise StorageError(f"compaction failed, nothing was lost: {exc}") from exc
                time.sleep(backoff(attempt))

    def _cleanup_age(self) -> timedelta | None:
        """The cleanup age that removes exactly the versions superseded more than `retention`
        ago, or None when there are none."""
        versions = sorted(self._table.handle.list_versions(), key=lambda v: v["version"])
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

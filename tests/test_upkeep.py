"""Recall bookkeeping waits for a pause between calls, never longer than its deadline."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from spatial_memory.runtime.upkeep import Upkeep


class FakeStore:
    read_only = False

    def __init__(self) -> None:
        self.flushed: list[dict[str, int]] = []
        self.flushed_at: list[float] = []  # time.monotonic() of each write

    def record_access(self, counts):
        self.flushed_at.append(time.monotonic())
        self.flushed.append(dict(counts))

    def needs_compaction(self):
        return False

    def compaction_can_wait(self):
        return False

    def purge_expired(self):
        return []

    def refresh_exact(self):
        pass


def make_upkeep(store: FakeStore, *, flush_seconds: float = 0.01) -> Upkeep:
    return Upkeep(lambda: store, lambda: True, flush_seconds=flush_seconds, clock=lambda: datetime.now(timezone.utc))


def wait_for(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_access_counts_wait_for_a_pause_between_calls():
    store = FakeStore()
    upkeep = make_upkeep(store)
    upkeep.QUIET_SECONDS = 0.2
    upkeep.start()
    try:
        upkeep.call_started()
        upkeep.record_access(["a", "b", "a"])
        time.sleep(0.3)
        assert store.flushed == []  # a call is running
        finished = time.monotonic()
        upkeep.call_finished()
        assert wait_for(lambda: store.flushed == [{"a": 2, "b": 1}])
        # Not sooner than the pause after the last call: measured, not sampled after a sleep.
        assert store.flushed_at[0] - finished >= upkeep.QUIET_SECONDS, store.flushed_at[0] - finished
    finally:
        upkeep.stop()


def test_busy_servers_still_write_within_the_deadline():
    store = FakeStore()
    upkeep = make_upkeep(store)
    upkeep.MAX_DEFER_SECONDS = 0.3
    upkeep.start()
    try:
        upkeep.call_started()  # never finishes: no pause ever comes
        upkeep.record_access(["a"])
        assert wait_for(lambda: store.flushed == [{"a": 1}], timeout=3)
    finally:
        upkeep.stop()


def test_a_poke_runs_at_once_and_stop_flushes_what_is_left():
    store = FakeStore()
    upkeep = make_upkeep(store)
    upkeep.start()
    upkeep.call_started()
    upkeep.record_access(["a"])
    upkeep.poke()  # a write happened: no waiting
    assert wait_for(lambda: store.flushed == [{"a": 1}])
    upkeep.record_access(["b"])
    upkeep.stop()
    assert store.flushed == [{"a": 1}, {"b": 1}]


def test_a_flush_before_a_read_waits_for_counts_already_being_written():
    """export and decay flush first; if the thread has just taken the counts and is still
    writing them, the caller's flush must not return before that write lands."""
    import threading

    class SlowStore(FakeStore):
        def __init__(self) -> None:
            super().__init__()
            self.writing = threading.Event()

        def record_access(self, counts):
            self.writing.set()
            time.sleep(0.3)
            super().record_access(counts)

    store = SlowStore()
    upkeep = make_upkeep(store)
    upkeep.record_access(["a"])
    thread = threading.Thread(target=upkeep.run_once)
    thread.start()
    assert store.writing.wait(5)
    upkeep.flush()  # what export does before reading
    assert store.flushed == [{"a": 1}]
    thread.join()


def test_a_flush_never_waits_for_a_compaction():
    """Compaction may start an index rebuild that takes minutes on a big table; a flush
    before an export must not queue behind it."""
    import threading

    class CompactingStore(FakeStore):
        def __init__(self) -> None:
            super().__init__()
            self.compacting, self.release = threading.Event(), threading.Event()

        def needs_compaction(self):
            return not self.compacting.is_set()

        def compact(self):
            self.compacting.set()
            self.release.wait(10)

    store = CompactingStore()
    upkeep = make_upkeep(store)
    compactor = threading.Thread(target=upkeep.run_once)
    compactor.start()
    try:
        assert store.compacting.wait(5)
        upkeep.record_access(["a"])
        flusher = threading.Thread(target=upkeep.flush)
        flusher.start()
        flusher.join(timeout=5)
        assert not flusher.is_alive(), "flush waited for the compaction"
        assert store.flushed == [{"a": 1}]
    finally:
        store.release.set()
        compactor.join()


def test_a_compaction_that_may_wait_for_the_pause_runs_once_the_writes_pause():
    """A write pokes upkeep; while the store says its due compaction can wait (writes still coming),
    none runs; the loop then looks again every QUIET_SECONDS, not only every access_flush_seconds."""
    import threading

    class BurstStore(FakeStore):
        def __init__(self) -> None:
            super().__init__()
            self.writing = threading.Event()
            self.writing.set()
            self.compactions = 0

        def needs_compaction(self):
            return self.compactions == 0

        def compaction_can_wait(self):
            return self.writing.is_set()

        def compact(self):
            self.compactions += 1

    store = BurstStore()
    upkeep = make_upkeep(store, flush_seconds=3600)
    upkeep.QUIET_SECONDS = 0.05
    upkeep.start()
    try:
        upkeep.poke()  # what a write does
        time.sleep(0.3)
        assert store.compactions == 0
        store.writing.clear()  # the writes paused
        assert wait_for(lambda: store.compactions == 1, timeout=2)
    finally:
        upkeep.stop()


class CompactingStore(FakeStore):
    """Compaction always due; writing the accesses lets a call start meanwhile."""

    def __init__(self, upkeep_of) -> None:
        super().__init__()
        self.compactions: list[float] = []
        self._upkeep_of = upkeep_of

    def record_access(self, counts):
        super().record_access(counts)
        self._upkeep_of().call_started()  # a request arrives while the accesses are written

    def needs_compaction(self):
        return True

    def compact(self):
        self.compactions.append(time.monotonic())


def test_a_compaction_waits_for_calls_that_came_while_the_accesses_were_written():
    """A pass begun in a pause writes the accesses, then finds calls running again: the compaction
    after it waits for the next pause (beside recalls it moved the table's version under them)."""
    upkeep: Upkeep | None = None
    store = CompactingStore(lambda: upkeep)
    upkeep = make_upkeep(store)
    upkeep.QUIET_SECONDS = 0.05
    upkeep.start()
    try:
        upkeep.record_access(["a"])
        assert wait_for(lambda: store.flushed == [{"a": 1}])
        time.sleep(0.3)
        assert store.compactions == []  # the call that came is still running
        finished = time.monotonic()
        upkeep.call_finished()
        assert wait_for(lambda: len(store.compactions) >= 1)
        assert store.compactions[0] - finished >= upkeep.QUIET_SECONDS
    finally:
        upkeep.stop()


def test_a_compaction_waits_for_calls_no_longer_than_the_deadline():
    upkeep: Upkeep | None = None
    store = CompactingStore(lambda: upkeep)
    upkeep = make_upkeep(store)
    upkeep.QUIET_SECONDS = 0.05
    upkeep.MAX_DEFER_SECONDS = 0.5
    upkeep.start()
    try:
        upkeep.record_access(["a"])  # then calls never pause
        assert wait_for(lambda: store.flushed == [{"a": 1}])
        upkeep.record_access(["b"])  # the next pass is due by the deadline alone
        assert wait_for(lambda: len(store.compactions) >= 1, timeout=5)
    finally:
        upkeep.stop()

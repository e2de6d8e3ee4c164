"""The table's newest version, read from LanceDB only when its version files may have changed.

Reads check the table version (the store is strongly consistent: another process's commit is seen
at once), and asking LanceDB is a hand-off to its event loop thread and back: 0.2 ms on an idle
process, over a millisecond while a query is being embedded beside it (docs/BENCHMARKS.md, 45).
Every commit, by any process, writes a new manifest into the table's `_versions` directory, which
changes the directory's modification time. So a local table's version is read again only when
that time differs from the one seen with the last version read, or when that read came too soon
after it to be sure: a commit within one tick of the file system's clock (up to 2 s on FAT) leaves
the time as it was, so a time less than `SETTLED_NS` older than the read proves nothing (git's
"racily clean" rule). Remote tables (S3) are always asked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

# How much older than the last version read the directory's time must be for an unchanged time to
# mean an unchanged table: the coarsest common file system clock (FAT's 2 s), with room for the
# kernel's coarse clock and a file system a little behind.
SETTLED_NS = 3_000_000_000


class _Seen(NamedTuple):
    stamp: int  # the directory's st_mtime_ns when the version was read
    version: int
    read_at: int  # time.time_ns() just before the directory's time was taken


class VersionWatch:
    """`current()`: the newest version, as `read()` gives it, re-read only when it may have moved."""

    def __init__(
        self, versions_dir: Path | None, read: Callable[[], int], clock: Callable[[], int] = time.time_ns
    ) -> None:
        self._dir = versions_dir
        self._read = read
        self._clock = clock
        self._seen: _Seen | None = None
        self.reads = 0  # versions asked of LanceDB

    def current(self) -> int:
        if self._dir is None:
            return self._ask()
        read_at = self._clock()  # before the stat: a commit after it moves the time past read_at
        try:
            stamp = os.stat(self._dir).st_mtime_ns
        except OSError:
            return self._ask()
        seen = self._seen
        if seen is not None and seen.stamp == stamp and seen.read_at - stamp > SETTLED_NS:
            return seen.version
        version = self._ask()
        self._seen = _Seen(stamp, version, read_at)
        return version

    def forget(self) -> None:
        """Ask LanceDB next time (the table was reopened)."""
        self._seen = None

    def _ask(self) -> int:
        self.reads += 1
        return self._read()

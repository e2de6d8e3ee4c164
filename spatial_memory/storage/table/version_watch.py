"""The table's newest version, read from LanceDB only when its version files may have changed.

Reads check the table version (the store is strongly consistent: another process's commit is seen
at once), and asking LanceDB is a hand-off to its event loop thread and back: 0.2 ms on an idle
process, over a millisecond while a query is being embedded beside it (docs/BENCHMARKS.md, 45).
Every commit, by any process, writes a new manifest into the table's `_versions` directory. So a
local table's version is asked again only when that directory's entries differ from the ones
listed with the last version read. Listing costs ~20 us; before it, the directory's modification
time is looked at (~3 us): unchanged, and older than the last listing by more than `SETTLED_NS`,
it proves that nothing was added or removed since. (A time less old proves nothing: a commit
within one tick of the file system's clock, up to 2 s on FAT, leaves the time as it was; git's
"racily clean" rule.) Remote tables (S3) are always asked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

# How much older than a listing the directory's time must be for an unchanged time to mean
# unchanged entries: the coarsest common file system clock (FAT's 2 s), with room for the kernel's
# coarse clock and a file system a little behind.
SETTLED_NS = 3_000_000_000
# Beyond this many entries (versions kept long, many commits) the directory is not listed: LanceDB
# is asked whenever its time does not settle the question.
MAX_LISTED = 4096


class _Seen(NamedTuple):
    stamp: int  # the directory's st_mtime_ns, taken before `entries` were listed
    entries: frozenset[str] | None  # None: too many to keep
    version: int  # LanceDB's answer when these entries were there
    listed_at: int  # time.time_ns() just before `stamp` was taken


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
        listed_at = self._clock()  # before the stat: a later commit moves the time past it
        try:
            stamp = os.stat(self._dir).st_mtime_ns
            seen = self._seen
            if seen is not None and seen.stamp == stamp and seen.listed_at - stamp > SETTLED_NS:
                return seen.version
            entries = frozenset(os.listdir(self._dir))
        except OSError:
            return self._ask()
        if len(entries) > MAX_LISTED:
            entries = None
        if seen is not None and entries is not None and seen.entries == entries:
            self._seen = _Seen(stamp, entries, seen.version, listed_at)  # no commit since: the same version
            return seen.version
        version = self._ask()  # after the listing: a commit between the two is seen next time
        self._seen = _Seen(stamp, entries, version, listed_at)
        return version

    def forget(self) -> None:
        """Ask LanceDB next time (the table was reopened)."""
        self._seen = None

    def _ask(self) -> int:
        self.reads += 1
        return self._read()

"""The table's newest version, read from LanceDB only when its version files changed.

Reads check the table version (the store is strongly consistent: another process's commit is seen
at once), and asking LanceDB is a hand-off to its event loop thread and back: 0.2 ms on an idle
process, over a millisecond while a query is being embedded beside it (docs/BENCHMARKS.md, 45).
Every commit, by any process, writes a new manifest into the table's `_versions` directory (and a
cleanup removes old ones). So a local table's version is asked again only when that directory's
entries differ from the ones listed before the last version read: listing them costs ~20 us, and
depends on no file system's clock. Once the directory holds more than `MAX_LISTED` entries
(versions kept long) it is not listed again, and remote tables (S3) are always asked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

MAX_LISTED = 4096


class VersionWatch:
    """`current()`: the newest version, as `read()` gives it, re-read only when it may have moved."""

    def __init__(self, versions_dir: Path | None, read: Callable[[], int]) -> None:
        self._dir = versions_dir
        self._read = read
        self._seen: tuple[frozenset[str], int] | None = None  # entries listed, then the version read
        self.reads = 0  # versions asked of LanceDB

    def current(self) -> int:
        if self._dir is None:
            return self._ask()
        try:
            entries = frozenset(os.listdir(self._dir))
        except OSError:
            return self._ask()
        seen = self._seen
        if seen is not None and seen[0] == entries:
            return seen[1]  # no manifest added or removed since: no commit
        version = self._ask()  # after the listing: a commit between the two is seen next time
        if len(entries) > MAX_LISTED:
            self._dir, self._seen = None, None  # listing would cost what it saves
        else:
            self._seen = (entries, version)
        return version

    def forget(self) -> None:
        """Ask LanceDB next time (the table was reopened)."""
        self._seen = None

    def _ask(self) -> int:
        self.reads += 1
        return self._read()

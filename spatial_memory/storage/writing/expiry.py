"""The first moment a stored memory expires, kept per table version, so a store where nothing has
expired yet is read without an extra where clause."""

from __future__ import annotations

import pyarrow.compute as pc

from ..search.exact_index import Change
from ..table.table import MemoryTable


class Expiry:
    def __init__(self, table: MemoryTable) -> None:
        self._table = table
        self._at_version: tuple[int, float] | None = None  # (version, earliest expiry)

    def earliest(self) -> float:
        """The first expiry (epoch seconds) of a memory not pinned; inf when none expires."""
        version = self._table.version
        cached = self._at_version
        if cached is not None and cached[0] == version:
            return cached[1]
        where = "expires_at IS NOT NULL AND NOT COALESCE(pinned, false)"
        table = self._table.scan(where, ["expires_at"], exact_count=False)
        first = (
            pc.call_function("min", [table.column("expires_at")]).as_py().timestamp()
            if table.num_rows
            else float("inf")
        )
        self._at_version = (version, first)
        return first

    def known(self) -> bool:
        return self._at_version is not None

    def follow(self, before: int | None, after: int, change: Change | None) -> None:
        """Keep the earliest expiry across this process's own commit from `before` to `after` (no
        scan at the next read): the rows it wrote can only bring it forward, and deleted rows can
        only leave it too early, which costs a where clause, never a wrong answer."""
        cached, self._at_version = self._at_version, None
        if cached is None or change is None or cached[0] != before:
            return
        self._at_version = (after, min([cached[1], *(w.expires for w in change.written)]))

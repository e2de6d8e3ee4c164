"""Records built from the exact copy's summary rows, kept for the rows searches show.

Turning summary rows into records (an Arrow take, then a Python value per column) costs about as
much for one row as for ten, and a recall or nearby pays it for every hit. A row of one load of the
copy never changes its summary (commits append rows; a row LanceDB rewrites is marked as no longer
current, and then not read from the summary), so its record can be kept. Kept per load: every row
of a copy of up to `whole` rows, built in the background once it loads (and those of the rows
commits append to it, by upkeep), so that a search builds none; of a larger copy, at most `size`
rows, the least recently shown first to go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ...records import MemoryRecord
from ..table.schema import rows_to_records
from .exact_index import Snapshot

# Rows kept of a copy too big to keep whole: a few MB of records (about 1 KB each), far more than
# the hits of the searches around one topic that bring the same rows back.
ROW_RECORDS = 4096
# Copies of up to this many rows have every row's record kept (about 1 KB each).
WHOLE_COPY_ROWS = 20_000
# Rows built at a time in the background: short enough that a request waiting for the GIL
# is never held up for long.
FILL_CHUNK = 128


class RowRecords:
    def __init__(self, size: int = ROW_RECORDS, whole: int | None = None) -> None:
        self._size = size
        self._whole = WHOLE_COPY_ROWS if whole is None else whole
        self._load = -1
        self._bound = size  # rows kept of the current load
        self._filled = 0  # summary rows of the current load a fill went through
        self._records: OrderedDict[int, MemoryRecord] = OrderedDict()
        self._lock = threading.Lock()
        # One fill at a time: upkeep's refresh can load a copy, whose load starts a fill, then fill
        # itself; both would build the same rows.
        self._filling = threading.Lock()

    def of_rows(self, snap: Snapshot, rows: Sequence[int]) -> list[MemoryRecord]:
        """The records of these rows of `snap`'s summary (rows whose summary is current), in order.
        Shared: callers copy a record before changing it."""
        with self._lock:
            current = self._follow(snap)  # a search of an older load keeps nothing
            kept = {row: self._records.get(row) if current else None for row in rows}
            for row, record in kept.items():
                if record is not None:
                    self._records.move_to_end(row)
        missing = [row for row, record in kept.items() if record is None]
        if missing:
            built = rows_to_records(snap.summary.take(missing))
            kept.update(zip(missing, built, strict=True))
            self._keep(snap, missing, built)
        return [kept[row] for row in rows]  # type: ignore[misc] - every row is filled above

    def fill_in_background(self, snap: Snapshot) -> threading.Thread | None:
        """Start building the record of every current row of a newly loaded copy of up to `whole`
        rows, in a thread of its own (returned; None for a bigger copy)."""
        if snap.n > self._whole:
            return None
        # It waits for a fill of an earlier load (which stops at its next chunk once this load is read).
        thread = threading.Thread(
            target=self.fill, args=(snap,), kwargs={"wait": True}, name="row-records", daemon=True
        )
        thread.start()
        return thread

    def fill(self, snap: Snapshot, *, wait: bool = False) -> None:
        """Build the records of `snap`'s current rows not kept yet (for a copy of up to `whole`
        rows), FILL_CHUNK at a time, while its load is the one kept (a search of a later load ends
        it). Upkeep calls it after writes too, for the rows commits appended. While another fill
        runs this one returns at once (with `wait`, it waits for it): upkeep's next pass builds what
        that one did not reach."""
        if snap.n > self._whole or not self._filling.acquire(blocking=wait):
            return
        try:
            self._fill(snap)
        finally:
            self._filling.release()

    def _fill(self, snap: Snapshot) -> None:
        end = snap.summary.num_rows
        with self._lock:
            if not self._follow(snap):
                return
            self._bound = max(self._bound, snap.n + snap.n // 4)  # and the rows commits append
            first = self._filled
        rows = (np.flatnonzero(snap.current_summary[first:end]) + first).tolist()
        for start in range(0, len(rows), FILL_CHUNK):
            with self._lock:
                if self._load != snap.load:
                    return
                todo = [row for row in rows[start : start + FILL_CHUNK] if row not in self._records]
            if todo and not self._keep(snap, todo, rows_to_records(snap.summary.take(todo))):
                return
        with self._lock:
            if self._load == snap.load:
                self._filled = max(self._filled, end)  # the next fill starts there

    def _follow(self, snap: Snapshot) -> bool:
        """(Under the lock.) Keep `snap`'s load from now on if it is newer than the one kept;
        False when it is older."""
        if snap.load < self._load:
            return False
        if snap.load > self._load:
            self._records.clear()
            self._load, self._bound, self._filled = snap.load, self._size, 0
        return True

    def _keep(self, snap: Snapshot, rows: list[int], built: list[MemoryRecord]) -> bool:
        """Keep records built for `snap`'s rows; False when its load is no longer the one kept."""
        with self._lock:
            if self._load != snap.load:
                return False
            for row, record in zip(rows, built, strict=True):
                self._records.setdefault(row, record)
            while len(self._records) > self._bound:
                self._records.popitem(last=False)
            return True

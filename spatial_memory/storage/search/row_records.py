"""Records built from the exact copy's summary rows, kept for the rows searches show again.

Turning summary rows into records (an Arrow take, then a Python value per column) costs about as
much for one row as for ten, and a recall or nearby pays it for every hit. A row of one load of the
copy never changes its summary (commits append rows; a row LanceDB rewrites is marked as no longer
current, and then not read from the summary), so its record can be kept. Kept per load, at most
`size` rows, the least recently shown first to go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ...records import MemoryRecord
from ..table.schema import rows_to_records
from .exact_index import Snapshot

# Rows kept: a few MB of records (about 1 KB each), far more than the hits of the searches
# around one topic that bring the same rows back.
ROW_RECORDS = 4096


class RowRecords:
    def __init__(self, size: int = ROW_RECORDS) -> None:
        self._size = size
        self._load = -1
        self._records: OrderedDict[int, MemoryRecord] = OrderedDict()
        self._lock = threading.Lock()

    def of_rows(self, snap: Snapshot, rows: Sequence[int]) -> list[MemoryRecord]:
        """The records of these rows of `snap`'s summary (rows whose summary is current), in order.
        Shared: callers copy a record before changing it."""
        with self._lock:
            if self._load != snap.load:
                self._records.clear()
                self._load = snap.load
            kept = {row: self._records.get(row) for row in rows}
            for row, record in kept.items():
                if record is not None:
                    self._records.move_to_end(row)
        missing = [row for row, record in kept.items() if record is None]
        if missing:
            built = rows_to_records(snap.summary.take(missing))
            kept.update(zip(missing, built, strict=True))
            with self._lock:
                if self._load == snap.load:
                    self._records.update(zip(missing, built, strict=True))
                    while len(self._records) > self._size:
                        self._records.popitem(last=False)
        return [kept[row] for row in rows]  # type: ignore[misc] - every row is filled above

"""The columns the ranking reads, of every row of the exact copy's summary, as Python values.

A recall reads them for a hundred or more candidates from two searches; taken from the Arrow
summary each time, that is an Arrow take and a Python value per cell, per search. The summary of
one load of the copy only grows (commits append rows; a row LanceDB rewrites is marked as no
longer current and not read from the summary), so its values are converted once per row, the
rows appended since the last search at the next one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .candidates import RANKING_COLUMNS, Candidates
from .exact_index import Snapshot


@dataclass(frozen=True)
class _Columns:
    load: int
    rows: int  # summary rows converted
    content: np.ndarray  # object
    session_id: np.ndarray  # object
    sequence: np.ndarray  # object
    speaker: np.ndarray  # object
    occurred_at: np.ndarray  # float64 epoch seconds, NaN if unknown


class RankingColumns:
    def __init__(self) -> None:
        self._columns: _Columns | None = None
        self._lock = threading.Lock()

    def candidates(self, snap: Snapshot, rows: np.ndarray) -> Candidates:
        """The copy's rows (each with a current summary) as candidates, in order."""
        columns = self._for(snap)
        return Candidates(
            ids=snap.ids[rows].tolist(),
            content=columns.content[rows].tolist(),
            session_id=columns.session_id[rows].tolist(),
            sequence=columns.sequence[rows].tolist(),
            speaker=columns.speaker[rows].tolist(),
            occurred_at=columns.occurred_at[rows],
            vectors=snap.vectors[rows],
            records=[None] * len(rows),
            addresses=[None] * len(rows),
        )

    def _for(self, snap: Snapshot) -> _Columns:
        summary = snap.summary
        columns = self._columns
        if columns is not None and columns.load == snap.load and columns.rows >= summary.num_rows:
            return columns
        with self._lock:
            columns = self._columns
            if columns is None or columns.load != snap.load:
                columns = _converted(snap, None)
            elif columns.rows < summary.num_rows:
                columns = _converted(snap, columns)
            self._columns = columns
            return columns


def _converted(snap: Snapshot, before: _Columns | None) -> _Columns:
    """`before` with the summary's rows after those it holds converted (Candidates.of_columns's
    values) and appended."""
    start = 0 if before is None else before.rows
    added = snap.summary.select(RANKING_COLUMNS).slice(start)
    part = Candidates.of_columns(
        snap.ids[start : start + added.num_rows].tolist(), added, np.empty((added.num_rows, 0), np.float32)
    )
    new = {
        "content": _objects(part.content),
        "session_id": _objects(part.session_id),
        "sequence": _objects(part.sequence),
        "speaker": _objects(part.speaker),
        "occurred_at": part.occurred_at,
    }
    if before is not None:
        new = {name: np.concatenate([getattr(before, name), values]) for name, values in new.items()}
    return _Columns(load=snap.load, rows=snap.summary.num_rows, **new)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out

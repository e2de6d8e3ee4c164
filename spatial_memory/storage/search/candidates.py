"""Recall's candidates as columns: what the ranking reads of each memory, without a MemoryRecord each.

A ranked recall reads ~150-300 candidates (vector hits, keyword hits, their session neighbours) and
returns ~10. With the exact in-memory copy (exact_index.py) the candidates' columns come straight from
the copy (its vectors and the Arrow table of the other columns), and only the final hits become
MemoryRecords (`CandidateSearch.materialize`, candidate_search.py). When LanceDB answers (no copy,
a filter the copy cannot apply) its rows arrive as records anyway, and the candidates keep them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...records import MemoryRecord
from ..table.connection import ROW_ID

# The columns of the copy's summary table that the ranking reads.
RANKING_COLUMNS = ["content", "session_id", "sequence", "speaker", "occurred_at"]


@dataclass(frozen=True)
class Candidates:
    """One entry per memory, all the same length; `records[i]` is the memory's record when one was read
    (None: build it with `CandidateSearch.materialize`). occurred_at: UTC epoch seconds, NaN if unknown.
    addresses: the LanceDB row address a candidate was read at (None: not read from LanceDB)."""

    ids: list[str]
    content: list[str]
    session_id: list[str | None]
    sequence: list[int | None]
    speaker: list[str | None]
    occurred_at: np.ndarray
    vectors: np.ndarray
    records: list[MemoryRecord | None]
    addresses: list[int | None]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, dim: int) -> Candidates:
        return cls([], [], [], [], [], np.zeros(0), np.zeros((0, dim), np.float32), [], [])

    @classmethod
    def of_records(
        cls, records: Sequence[MemoryRecord], dim: int, *, vectors: np.ndarray | None = None, keep: bool = True
    ) -> Candidates:
        """From records read with their vectors (or with the vectors given). keep: hold on to the records."""
        if not records:
            return cls.empty(dim)
        if vectors is None:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
        conversations = [r.conversation for r in records]
        return cls(
            ids=[r.id for r in records],
            content=[r.content for r in records],
            session_id=[c.session_id for c in conversations],
            sequence=[c.sequence for c in conversations],
            speaker=[c.speaker for c in conversations],
            occurred_at=np.array(
                [float("nan") if c.occurred_at is None else c.occurred_at.timestamp() for c in conversations],
                dtype=np.float64,
            ),
            vectors=vectors,
            records=list(records) if keep else [None] * len(records),
            addresses=[None] * len(records),
        )

    @classmethod
    def of_columns(cls, ids: list[str], table: pa.Table, vectors: np.ndarray) -> Candidates:
        """From a table holding RANKING_COLUMNS (one row per id), and ROW_ID when read from LanceDB,
        and the vectors."""
        occurred = table.column("occurred_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
        return cls(
            ids=ids,
            content=table.column("content").to_pylist(),
            session_id=table.column("session_id").to_pylist(),
            sequence=table.column("sequence").to_pylist(),
            speaker=table.column("speaker").to_pylist(),
            # microseconds / 1e6: the same float as datetime.timestamp() of that moment
            occurred_at=np.asarray(occurred, dtype=np.float64) / 1e6,
            vectors=vectors,
            records=[None] * len(ids),
            addresses=table.column(ROW_ID).to_pylist() if ROW_ID in table.column_names else [None] * len(ids),
        )

    def take(self, indices: Sequence[int] | np.ndarray) -> Candidates:
        idx = list(indices)
        return Candidates(
            ids=[self.ids[i] for i in idx],
            content=[self.content[i] for i in idx],
            session_id=[self.session_id[i] for i in idx],
            sequence=[self.sequence[i] for i in idx],
            speaker=[self.speaker[i] for i in idx],
            occurred_at=self.occurred_at[np.asarray(idx, dtype=np.int64)],
            vectors=self.vectors[np.asarray(idx, dtype=np.int64)],
            records=[self.records[i] for i in idx],
            addresses=[self.addresses[i] for i in idx],
        )

    @staticmethod
    def union(parts: Sequence[Candidates]) -> Candidates:
        """Every memory once, at its first appearance, in order."""
        seen: set[str] = set()
        merged = []
        for part in parts:
            keep = [i for i, memory_id in enumerate(part.ids) if memory_id not in seen and not seen.add(memory_id)]
            if keep:
                merged.append(part if len(keep) == len(part) else part.take(keep))
        return Candidates.concat(merged)

    @staticmethod
    def concat(parts: Sequence[Candidates]) -> Candidates:
        """The parts one after the other."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Candidates.empty(0)
        return Candidates(
            ids=[x for p in parts for x in p.ids],
            content=[x for p in parts for x in p.content],
            session_id=[x for p in parts for x in p.session_id],
            sequence=[x for p in parts for x in p.sequence],
            speaker=[x for p in parts for x in p.speaker],
            occurred_at=np.concatenate([p.occurred_at for p in parts]),
            vectors=np.concatenate([p.vectors for p in parts]),
            records=[x for p in parts for x in p.records],
            addresses=[x for p in parts for x in p.addresses],
        )

    def windows(self, radius: int) -> list[tuple[str, int, int]]:
        """(session_id, low, high): the sequences within `radius` of each memory placed in a session."""
        return [
            (session, sequence - radius, sequence + radius)
            for session, sequence in zip(self.session_id, self.sequence)
            if session is not None and sequence is not None
        ]

"""Co-recall links: memories recalled together repeatedly gain an implicit, bounded, decaying link.

Like the access counts (access_ledger.py), nothing is written per recall:
recall hands the pairs of its top hits to the upkeep thread, which writes them in batches to a
small table of its own, `co_recall` (one row per pair, the two ids in order), never to a memory
row. Each write is one merge-insert commit under the store's write lock that also drops the links
that have decayed away.

A link's strength is bounded by MAX_STRENGTH: each co-recall adds INCREMENT to what is left of it
after decaying with a half-life of HALF_LIFE_DAYS since its last co-recall. Expansion uses links
of at least MIN_STRENGTH, so one co-recall alone links nothing; two close together do.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

from ...errors import StorageError
from ...records import is_uuid, utc_now
from ..filters import any_in
from ..table.table import MemoryTable
from ..writing.writer import Writer

CO_RECALL_TABLE = "co_recall"
INCREMENT = 0.2
MAX_STRENGTH = 1.0
HALF_LIFE_DAYS = 14.0
MIN_STRENGTH = 0.3
# A link left alone this long has decayed under a tenth of MIN_STRENGTH: the next write drops it.
FORGET_AFTER_DAYS = HALF_LIFE_DAYS * math.log2(MAX_STRENGTH / (MIN_STRENGTH / 10))
_TS = pa.timestamp("us", tz="UTC")
CO_RECALL_SCHEMA = pa.schema(
    [
        pa.field("pair_key", pa.string(), nullable=False),  # "<a>#<b>", a < b
        pa.field("a_id", pa.string(), nullable=False),
        pa.field("b_id", pa.string(), nullable=False),
        pa.field("strength", pa.float32(), nullable=False),  # at updated_at
        pa.field("count", pa.int32(), nullable=False),
        pa.field("updated_at", _TS, nullable=False),
    ]
)


# (a, b) -> (strength at its last update, times recalled together, last update)
_Links = dict[tuple[str, str], tuple[float, int, datetime]]


def decayed(strength: float, since: datetime, now: datetime) -> float:
    days = max((now - since).total_seconds() / 86_400, 0.0)
    return strength * 0.5 ** (days / HALF_LIFE_DAYS)


def pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


class CoRecall:
    def __init__(self, table: MemoryTable, writer: Writer, clock: Callable[[], datetime]) -> None:
        self._table = table
        self._writer = writer
        self._clock = clock
        self._lock = threading.Lock()
        # (table version, every link as stored, the links of each memory)
        self._cache: tuple[int, _Links, dict[str, list[tuple[str, str]]]] | None = None

    def _co_recall_table(self, *, create: bool = False) -> Any:
        return self._table.side_table(CO_RECALL_TABLE, lambda: CO_RECALL_SCHEMA, create=create)

    def _links(self) -> tuple[_Links, dict[str, list[tuple[str, str]]]]:
        """Every link as stored (strength at its last update) and the links of each memory, read
        once per table version."""
        table = self._co_recall_table()
        if table is None:
            return {}, {}
        with self._lock:
            try:
                version = table.version
                cached = self._cache
                if cached is not None and cached[0] == version:
                    return cached[1], cached[2]
                data = table.search().select(CO_RECALL_SCHEMA.names).limit(None).to_arrow()
            except Exception as exc:  # noqa: BLE001
                raise StorageError(f"reading co-recall links failed: {exc}") from exc
            rows = {
                (a, b): (float(s), int(n), t)
                for a, b, s, n, t in zip(
                    data.column("a_id").to_pylist(),
                    data.column("b_id").to_pylist(),
                    data.column("strength").to_pylist(),
                    data.column("count").to_pylist(),
                    data.column("updated_at").to_pylist(),
                )
            }
            by_memory: dict[str, list[tuple[str, str]]] = {}
            for key in rows:
                by_memory.setdefault(key[0], []).append(key)
                by_memory.setdefault(key[1], []).append(key)
            self._cache = (version, rows, by_memory)
            return rows, by_memory

    def links(self, ids: Iterable[str], *, minimum: float = MIN_STRENGTH) -> list[tuple[str, str, float]]:
        """(a, b, strength now) of the links of these memories at or above `minimum`."""
        rows, index = self._links()
        if not rows:
            return []
        now = self._clock()
        found = {}
        for memory_id in ids:
            for key in index.get(memory_id, ()):
                strength = decayed(rows[key][0], rows[key][2], now)
                if strength >= minimum:
                    found[key] = strength
        return [(a, b, s) for (a, b), s in found.items()]

    def record(self, pairs: Mapping[tuple[str, str], int], when: datetime | None = None) -> None:
        """Strengthen the links of pairs recalled together (pair, in either order -> how many times),
        one commit that also drops links decayed away."""
        wanted: dict[tuple[str, str], int] = {}
        for (a, b), n in pairs.items():
            if a != b and is_uuid(a) and is_uuid(b) and n > 0:
                key = pair(a, b)
                wanted[key] = wanted.get(key, 0) + int(n)
        if not wanted:
            return
        now = (when or utc_now()).astimezone(timezone.utc)
        with self._writer.lock:
            table = self._co_recall_table(create=True)
            rows, _ = self._links()
            data = _strengthened(rows, wanted, now)
            stale = now - timedelta(days=FORGET_AFTER_DAYS)
            stamp = stale.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
            merge = (
                table.merge_insert("pair_key")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(f"updated_at < CAST('{stamp}' AS TIMESTAMP)")
            )
            self._writer.attempt("recording co-recall failed", lambda: merge.execute(data), counted=False)

    def drop(self, ids: Iterable[str]) -> None:
        """Remove the links of these memories (before they are forgotten)."""
        table = self._co_recall_table()
        wanted = list(dict.fromkeys(ids))
        if table is None or not wanted:
            return
        _, index = self._links()
        if not any(i in index for i in wanted):
            return
        with self._writer.lock:
            for where in any_in(("a_id", "b_id"), wanted):
                self._writer.attempt("co-recall delete failed", lambda w=where: table.delete(w), counted=False)


def _strengthened(rows: _Links, wanted: dict[tuple[str, str], int], now: datetime) -> pa.Table:
    """The rows of the links recalled together (pair -> times), as stored after this co-recall."""
    keys, strengths, counts = [], [], []
    for key, n in wanted.items():
        old = rows.get(key)
        strength = decayed(old[0], old[2], now) if old else 0.0
        for _ in range(n):
            strength = min(MAX_STRENGTH, strength + INCREMENT)
        keys.append(key)
        strengths.append(strength)
        counts.append((old[1] if old else 0) + n)
    return pa.Table.from_arrays(
        [
            pa.array([f"{a}#{b}" for a, b in keys], pa.string()),
            pa.array([a for a, _ in keys], pa.string()),
            pa.array([b for _, b in keys], pa.string()),
            pa.array(strengths, pa.float32()),
            pa.array(counts, pa.int32()),
            pa.array([now] * len(keys), _TS),
        ],
        schema=CO_RECALL_SCHEMA,
    )

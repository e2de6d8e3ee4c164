"""An in-memory copy of the id, namespace, row address and vector of every row, for exact search.

LanceDB's flat (brute-force) search costs many times what the same dot products cost in numpy
plus fetching the winning rows by row address (docs/BENCHMARKS.md). Below the size where the
store builds its approximate (HNSW) index, searches run here instead.

The copy is tied to one table version. The store reports each of its own commits (`committed`)
with the ids it wrote or deleted, and the copy follows in place when that commit was the only
one since its version; any other change (another process's commit, a compaction, a rename)
drops it, and the next search reloads it. Row addresses move when LanceDB rewrites a row, so
rows written by this process carry "unknown" (-1): the copy holds their columns, so no read
needs their address. Rows LanceDB rewrites have theirs looked up by the upkeep thread
(`resolve_addresses`); hits without an address are fetched by id instead. Results are checked
against the ids they should carry, so a copy that went stale between the version check and the
fetch is noticed.

The other columns of the rows loaded are kept as an Arrow table (a few MB at 10,000 rows), so
a search needs no LanceDB call at all for them; the rows this process writes are appended to it
from the Arrow table it commits. Rows rewritten by LanceDB itself (an update's SQL values) are
fetched from LanceDB once and then kept as records, until a commit touches them again; except
recall's access counts, which rewrite only the access columns, whose new values the commit says:
the copy lays them over its summary (`Snapshot.accessed`) and keeps every other column. Each pause
of a session writes them, so losing those rows made the recalls after it read them from LanceDB
(docs/BENCHMARKS.md, 45, round seven).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...algorithms._linalg import below_kth_largest
from ...algorithms.int8_bounds import approximations, bounds, code_query, rows_reaching
from ...records import MemoryRecord
from .blas import OneBlasThread, SplitProduct, product_helpers
from .int8_rows import CodedRows, Int8Rows

log = logging.getLogger(__name__)

UNKNOWN = -1
_NO_CODE = -2  # the code of a namespace the copy has never seen: matches no row
_LOADS = itertools.count(1)


@dataclass(frozen=True)
class Written:
    """A row a commit of this process inserted or replaced, as the copy needs it."""

    id: str
    namespace: str
    vector: np.ndarray
    session_id: str | None = None
    sequence: int | None = None
    expires: float = float("inf")  # epoch seconds; inf: never (pinned, or no expiry)
    pinned: bool = False


@dataclass(frozen=True)
class Change:
    """One commit of this process, as the copy follows it. `removed`: ids deleted; `written`: rows
    inserted or replaced, and `rows` the same rows as written to LanceDB (every column), whose
    summary the copy then holds as current; `moved`: ids rewritten in place by LanceDB (same
    vector, new row address)."""

    written: Sequence[Written] = ()
    rows: pa.Table | None = None
    removed: Sequence[str] = ()
    moved: Sequence[str] = ()
    # What the moved rows' access columns now hold (recall's access counts are what moves rows):
    # per id (access_count, last_accessed), or for every moved id its count plus `counted[0]`,
    # stamped `counted[1]`. Neither: the moved rows' columns are unknown to the copy.
    accesses: Mapping[str, tuple[int, datetime]] | None = None
    counted: tuple[int, datetime] | None = None


@dataclass(frozen=True)
class Snapshot:
    """Rows [0, n) of the shared buffers as of `version`; `alive` hides deleted or rewritten rows."""

    version: int
    n: int
    ids: np.ndarray  # object (str), length n
    addresses: np.ndarray  # int64 row addresses, UNKNOWN when not yet looked up
    namespaces: np.ndarray  # int32 codes into ExactIndex._namespace_codes
    sessions: np.ndarray  # int32 codes into ExactIndex._session_codes, -1 for none
    sequences: np.ndarray  # int64 sequence within the session, -1 for none
    expires: np.ndarray  # float64 epoch seconds of expiry, inf for never
    pinned: np.ndarray  # bool
    vectors: np.ndarray  # (capacity, dim) float32; rows >= n are not part of this snapshot
    alive: np.ndarray  # bool, length n
    positions: dict[str, int]  # id -> row of its live entry
    summary: pa.Table  # the non-vector columns of rows [0, loaded) as of the load, and of rows this process wrote since
    current_summary: np.ndarray  # bool, length n: the row's summary is still what LanceDB holds
    load: int = 0  # which load of the copy this is: snapshots of one load share rows [0, n) (appends only)
    # row -> (access_count, last_accessed) LanceDB holds where the summary's are older (the row's
    # other columns are still the summary's): laid over the records built from it
    accessed: Mapping[int, tuple[int, datetime]] = field(default_factory=dict)


class ExactIndex:
    def __init__(self, dim: int, max_rows: int) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self._namespace_codes: dict[str, int] = {}
        self._session_codes: dict[str, int] = {}
        self._records: dict[str, MemoryRecord] = {}
        self._one_blas_thread = OneBlasThread()
        self._product = SplitProduct(product_helpers())
        self._int8_rows = Int8Rows()  # read first by top (int8_rows.py)
        self._compactions = 0  # this process's compactions under way (`compacting`)
        # The copy's known addresses sorted, and their rows, for the snapshot's addresses array
        # they were built from (`rows_at`): built once per change of the addresses.
        self._by_address: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # ---- reading -------------------------------------------------------------------------

    def has_copy(self) -> bool:
        return self._snapshot is not None

    def current(self, version: int) -> Snapshot | None:
        """The copy if it is at `version`, or if this process is compacting the table (`compacting`):
        the versions a compaction commits hold the same rows, and `rebased` moves the copy to the
        last of them."""
        snap = self._snapshot
        return snap if snap is not None and (snap.version == version or self._compactions > 0) else None

    def load(self, table: pa.Table, version: int) -> Snapshot | None:
        """Build the copy from a scan of every column and _rowid taken at `version`."""
        n = table.num_rows
        if n > self.max_rows:
            self.invalidate()
            return None
        vectors = np.empty((n + n // 4 + 256, self.dim), dtype=np.float32)
        if n:
            column = table.column("vector").combine_chunks()
            vectors[:n] = column.values.to_numpy(zero_copy_only=False).reshape(n, self.dim)
        ids = np.array(table.column("id").to_pylist(), dtype=object)
        addresses = table.column("_rowid").to_numpy().astype(np.int64)
        names = table.column_names
        sessions_in = table.column("session_id").to_pylist() if "session_id" in names else [None] * n
        sequences_in = table.column("sequence").to_pylist() if "sequence" in names else [None] * n
        expires = _expiries(table)
        with self._lock:
            namespaces = np.array([self._code(s) for s in table.column("namespace").to_pylist()], dtype=np.int32)
            snap = Snapshot(
                version=version,
                n=n,
                ids=ids,
                addresses=addresses,
                namespaces=namespaces,
                sessions=np.array([self._session(s) for s in sessions_in], dtype=np.int32),
                sequences=np.array([-1 if q is None else q for q in sequences_in], dtype=np.int64),
                expires=expires,
                pinned=_pinned(table),
                vectors=vectors,
                alive=np.ones(n, dtype=bool),
                positions={memory_id: i for i, memory_id in enumerate(ids)},
                summary=table.drop_columns(["vector", "_rowid"]).combine_chunks(),  # take() is faster on one chunk
                current_summary=np.ones(n, dtype=bool),
                load=next(_LOADS),
            )
            self._snapshot = snap
            self._records = {}
        return snap

    def top(
        self, snap: Snapshot, query: np.ndarray, limit: int, namespace: str | None, now: float
    ) -> list[tuple[int, float]]:
        """(row, similarity) of the best `limit` live rows not expired at `now`, best first."""
        if snap.n == 0 or limit <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        live = self.live(snap, namespace, now)
        coded = self._int8_rows.usable(snap.load, snap.n, snap.vectors)
        with self._one_blas_thread():  # blas.py: BLAS's own split waits for a busy core, ours does not
            if coded is not None:
                found = _top_from_codes(snap, coded, vector, live, limit)
                if found is not None:
                    return found
            scores = self._product(snap.vectors[: snap.n], vector)
        candidates = np.flatnonzero(live)
        return _best(scores[candidates], candidates, limit)

    def top_many(
        self, snap: Snapshot, queries: np.ndarray, limit: int, namespace: str | None, now: float
    ) -> list[list[tuple[int, float]]]:
        """`top` for each of several queries: one matrix product, over every row when most rows
        are candidates (no copy of them), else over the candidate rows only (a batch's queries
        usually search one namespace of several)."""
        candidates = np.flatnonzero(self.live(snap, namespace, now))
        if candidates.size == 0 or limit <= 0:
            return [[] for _ in queries]
        every = 2 * candidates.size >= snap.n
        matrix = snap.vectors[: snap.n] if every else snap.vectors[candidates]
        with self._one_blas_thread():
            by_row = self._product(matrix, np.asarray(queries, dtype=np.float32).T)  # (rows, queries)
        return _best_many(by_row[candidates] if every else by_row, candidates, limit)

    def live(self, snap: Snapshot, namespace: str | None, now: float) -> np.ndarray:
        """Mask of the rows alive, not expired at `now` and in `namespace` (None: any)."""
        mask = snap.alive & (snap.expires > now)
        if namespace is not None:
            mask &= snap.namespaces == self._namespace_codes.get(namespace, _NO_CODE)
        return mask

    def pinned_rows(self, snap: Snapshot, namespace: str | None) -> list[int]:
        """Live pinned rows (of one namespace, or all)."""
        mask = snap.alive & snap.pinned[: snap.n]
        if namespace is not None:
            mask &= snap.namespaces == self._namespace_codes.get(namespace, _NO_CODE)
        return np.flatnonzero(mask).tolist()

    def session_rows(
        self, snap: Snapshot, windows: Sequence[tuple[str, int, int]], namespace: str | None, now: float
    ) -> list[int]:
        """Live rows not expired at `now` whose (session, sequence) lies in one of the windows
        (session, low, high)."""
        mask = np.zeros(snap.n, dtype=bool)
        sessions, sequences = snap.sessions[: snap.n], snap.sequences[: snap.n]
        for session, low, high in windows:
            code = self._session_codes.get(session)
            if code is not None:
                mask |= (sessions == code) & (sequences >= low) & (sequences <= high)
        mask &= self.live(snap, namespace, now)
        return np.flatnonzero(mask).tolist()

    # ---- following this process's own commits ----------------------------------------------

    def invalidate(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:  # under self._lock
        self._snapshot = None
        self._records = {}
        self._int8_rows.release()

    def kept(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        records = self._records
        return {i: records[i] for i in ids if i in records}

    def keep(self, snap: Snapshot, records: Sequence[MemoryRecord]) -> None:
        """Keep rows fetched after checking that the table was at `snap.version`. A commit since
        then has moved the copy to a later version (or dropped it): then nothing is kept, and a
        commit still on its way drops what it touches when it reports in."""
        with self._lock:
            if self._snapshot is not None and self._snapshot.version == snap.version:
                for record in records:
                    self._records[record.id] = record

    def committed(self, before: int, after: int, change: Change) -> None:
        """Apply one commit of this process that took the table from `before` to `after`."""
        with self._lock:
            snap = self._snapshot
            if snap is None:
                return
            if snap.version != before or after not in (before, before + 1):
                self._drop()
                return
            if after == before:
                return
            for memory_id in [*change.removed, *(w.id for w in change.written), *change.moved]:
                self._records.pop(memory_id, None)
            snap = _without(snap, [*change.removed, *(w.id for w in change.written)])
            snap = _moved(snap, change)
            if change.written:
                if len(snap.positions) + len(change.written) > self.max_rows:
                    self._drop()
                    return
                snap = self._appended(snap, change.written, change.rows)
            if snap.n > 2 * max(len(snap.positions), 512):
                self._drop()  # mostly dead rows: cheaper to reload than to keep scanning
                return
            self._snapshot = replace(snap, version=after)

    def _appended(self, snap: Snapshot, written: Sequence[Written], rows: pa.Table | None) -> Snapshot:
        """The snapshot with the rows of a commit appended (as rows n.. of the copy)."""
        n, m = snap.n, len(written)
        vectors = snap.vectors
        if n + m > vectors.shape[0]:
            vectors = np.empty((n + m + (n + m) // 4 + 256, self.dim), dtype=np.float32)
            vectors[:n] = snap.vectors[:n]
        # Rows past n belong to no published snapshot yet, so writing them is safe.
        vectors[n : n + m] = np.stack([np.asarray(w.vector, dtype=np.float32) for w in written])
        added = _columns_of(written, self._code, self._session)
        grown: dict[str, Any] = {name: np.concatenate([getattr(snap, name), values]) for name, values in added.items()}
        summary = _appended_summary(snap.summary, n, rows, m)
        positions = dict(snap.positions)
        positions.update((w.id, n + offset) for offset, w in enumerate(written))
        return replace(
            snap,
            n=n + m,
            vectors=vectors,
            positions=positions,
            summary=summary if summary is not None else snap.summary,
            current_summary=np.concatenate([snap.current_summary, np.full(m, summary is not None)]),
            alive=np.concatenate([snap.alive, np.ones(m, dtype=bool)]),
            addresses=np.concatenate([snap.addresses, np.full(m, UNKNOWN, dtype=np.int64)]),
            **grown,
        )

    @contextmanager
    def compacting(self) -> Iterator[None]:
        """While this process compacts the table (under its write lock: no other commit lands),
        searches keep the copy: one that reloaded it at a version the compaction committed midway
        made `rebased` drop it again, two reloads of every row beside the requests (docs/BENCHMARKS.md,
        45, round seven)."""
        with self._lock:
            self._compactions += 1
        try:
            yield
        finally:
            with self._lock:
                self._compactions -= 1

    def rebased(self, before: int, after: int) -> None:
        """This process compacted the table from `before` to `after`: the same rows with the same
        values at new row addresses. The copy stays (searches keep using it, with no reload on
        the request path); the addresses are looked up again by the upkeep thread."""
        with self._lock:
            snap = self._snapshot
            if snap is None:
                return
            if snap.version != before:
                self._drop()
                return
            self._snapshot = replace(snap, version=after, addresses=np.full_like(snap.addresses, UNKNOWN))

    def unresolved(self, snap: Snapshot) -> list[str]:
        """The live rows a read would fetch from LanceDB and whose address is not known: those
        whose columns the copy's summary no longer holds (rewritten by LanceDB). A row the summary
        holds, such as every row this process writes, is never read by address: looking those
        up after each write took the upkeep thread's time beside the next batch's embedding."""
        rows = np.flatnonzero(snap.alive & (snap.addresses == UNKNOWN) & ~snap.current_summary)
        return [snap.ids[i] for i in rows]

    def rows_at(self, snap: Snapshot, addresses: np.ndarray) -> np.ndarray:
        """The copy's live row at each of these row addresses (read at the copy's version), UNKNOWN
        where the copy does not know the address (a row written or rewritten since the load, until
        upkeep looks it up) or its row is no longer live."""
        cached = self._by_address
        if cached is None or cached[0] is not snap.addresses:
            rows = np.flatnonzero(snap.addresses != UNKNOWN)
            order = np.argsort(snap.addresses[rows], kind="stable")
            cached = self._by_address = (snap.addresses, snap.addresses[rows[order]], rows[order])
        _, known, rows = cached
        wanted = np.asarray(addresses, dtype=np.int64)
        if known.size == 0:
            return np.full(wanted.shape, UNKNOWN, dtype=np.int64)
        at = np.minimum(np.searchsorted(known, wanted), known.size - 1)
        found = rows[at]
        hit = (known[at] == wanted) & snap.alive[found]
        return np.where(hit, found, UNKNOWN)

    def resolve_addresses(self, version: int, found: dict[str, int]) -> None:
        """Record row addresses looked up at `version` (which must still be the copy's)."""
        with self._lock:
            snap = self._snapshot
            if snap is None or snap.version != version or not found:
                return
            addresses = snap.addresses.copy()
            for memory_id, address in found.items():
                row = snap.positions.get(memory_id)
                if row is not None:
                    addresses[row] = address
            self._snapshot = replace(snap, addresses=addresses)

    def _session(self, session_id: str | None) -> int:
        if session_id is None:
            return -1
        code = self._session_codes.get(session_id)
        if code is None:
            code = self._session_codes[session_id] = len(self._session_codes)
        return code

    def _code(self, namespace: str) -> int:
        code = self._namespace_codes.get(namespace)
        if code is None:
            code = self._namespace_codes[namespace] = len(self._namespace_codes)
        return code


def _top_from_codes(
    snap: Snapshot, coded: CodedRows, vector: np.ndarray, live: np.ndarray, limit: int
) -> list[tuple[int, float]] | None:
    """ExactIndex.top's answer, bit for bit, from the codes of rows [0, coded.rows), float32 products
    of the rows they leave in reach (int8_rows.py) and of the rows after them; None when the codes
    leave most rows in reach (the whole product is then cheaper). Under one BLAS thread."""
    query = code_query(vector)
    if query is None:
        return None
    coded_rows = coded.rows
    after = coded_rows + np.flatnonzero(live[coded_rows:])
    after_scores = (snap.vectors[coded_rows : snap.n] @ vector)[after - coded_rows] if after.size else _NO_SCORES
    head = np.flatnonzero(live[:coded_rows])
    approximate = approximations(coded.terms, query, coded.products(query.levels))
    margins = bounds(coded.terms, query)
    if head.size < coded_rows:  # a namespace, expired or replaced rows
        approximate, margins = approximate[head], margins[head]
    reach = rows_reaching(approximate, margins, after_scores, limit)
    if reach.size > max(4 * limit, coded_rows // 4):
        return None
    rows = head[reach]
    # Rows taken four at a time, as the whole product takes them: each row's sum in the same order.
    padded = np.concatenate([rows, np.full(-rows.size % 4, rows[0] if rows.size else 0, dtype=rows.dtype)])
    scores = (snap.vectors[padded] @ vector)[: rows.size] if rows.size else _NO_SCORES
    return _best(np.concatenate([scores, after_scores]), np.concatenate([rows, after]), limit)


_NO_SCORES = np.zeros(0, dtype=np.float32)


def _best(scores: np.ndarray, candidates: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """(row, score) of the best `limit` candidates (`scores[i]` is candidate i's), best first;
    ties broken by row order, so equal scores come back in a stable order."""
    k = min(limit, candidates.size)
    if k <= 0:
        return []
    if k < candidates.size:
        # Every score equal to the k-th best competes for the last places, by row (argpartition
        # would keep an arbitrary few of them).
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        best = np.flatnonzero(scores >= kth)
    else:
        best = np.arange(candidates.size)
    best = best[np.lexsort((candidates[best], -scores[best]))][:k]
    return [(int(candidates[i]), float(scores[i])) for i in best]


def _best_many(scores: np.ndarray, candidates: np.ndarray, limit: int) -> list[list[tuple[int, float]]]:
    """`_best` for each column of `scores` (candidates x queries), ties broken by row order.

    A full selection per query costs as much as the product when the queries are many (a batch's
    write checks). Instead only the few scores at or above a bound no larger than the k-th best
    (`below_kth_largest`: from block maxima) are sorted."""
    m, queries = scores.shape
    k = min(limit, m)
    if k <= 0:
        return [[] for _ in range(queries)]
    bound = below_kth_largest(scores, k)  # one per query
    at, query = np.nonzero(scores >= bound)
    found = scores[at, query]
    order = np.lexsort((candidates[at], -found, query))  # by query, best first, then row
    at, query, found = at[order], query[order], found[order]
    starts = np.searchsorted(query, np.arange(queries + 1))
    return [
        [(int(candidates[i]), float(v)) for i, v in zip(at[a : a + k].tolist(), found[a : a + k].tolist(), strict=True)]
        for a in starts[:-1].tolist()
    ]


def _without(snap: Snapshot, ids: Sequence[str]) -> Snapshot:
    """The snapshot with these ids' rows no longer alive (deleted, or replaced by a row appended)."""
    if not ids:
        return snap
    alive, positions = snap.alive.copy(), dict(snap.positions)
    for memory_id in ids:
        row = positions.pop(memory_id, None)
        if row is not None:
            alive[row] = False
    return replace(snap, alive=alive, positions=positions)


def _moved(snap: Snapshot, change: Change) -> Snapshot:
    """The snapshot after LanceDB rewrote the change's moved rows in place: same vector, new row
    address. Where the change says what their access columns now hold and the copy holds every
    other column, those values are laid over the summary; elsewhere the summary no longer holds
    the row's columns."""
    if not change.moved:
        return snap
    addresses, current_summary = snap.addresses.copy(), snap.current_summary.copy()
    pairs = [(i, snap.positions[i]) for i in change.moved if i in snap.positions]
    rows = [row for _, row in pairs]
    accessed = dict(snap.accessed)
    values: dict[int, tuple[int, datetime]] = {}
    if change.accesses is not None:
        values = {row: change.accesses[i] for i, row in pairs if i in change.accesses}
    elif change.counted is not None:
        added, when = change.counted
        held = [row for row in rows if current_summary[row]]
        before = pc.take(snap.summary.column("access_count"), pa.array(held, pa.int64())).to_pylist() if held else []
        for row, count in zip(held, before, strict=True):
            values[row] = ((accessed[row][0] if row in accessed else count or 0) + added, when)
    for row in rows:
        addresses[row] = UNKNOWN
        if row in values and current_summary[row]:
            accessed[row] = values[row]
        else:
            accessed.pop(row, None)
            current_summary[row] = False
    return replace(snap, addresses=addresses, current_summary=current_summary, accessed=accessed)


def _columns_of(written: Sequence[Written], namespace_code, session_code) -> dict[str, np.ndarray]:
    """The per-row arrays of Snapshot (by field name) for rows a commit wrote."""
    return {
        "ids": np.array([w.id for w in written], dtype=object),
        "namespaces": np.array([namespace_code(w.namespace) for w in written], np.int32),
        "sessions": np.array([session_code(w.session_id) for w in written], np.int32),
        "sequences": np.array([-1 if w.sequence is None else w.sequence for w in written], np.int64),
        "expires": np.array([w.expires for w in written], np.float64),
        "pinned": np.array([w.pinned for w in written], bool),
    }


# Appended summaries are merged into one chunk past this many chunks: take() is several times
# faster on one chunk, and merging every commit would copy the whole summary each time.
_MAX_SUMMARY_CHUNKS = 16


def _appended_summary(summary: pa.Table, n: int, rows: pa.Table | None, m: int) -> pa.Table | None:
    """The summary with the rows of a commit appended (they become rows n.. of the copy), or
    None when it cannot hold them: it no longer covers every row before them, or their columns
    do not match."""
    if rows is None or rows.num_rows != m or summary.num_rows != n:
        return None
    try:
        added = rows.select(summary.column_names).cast(summary.schema)
    except (KeyError, ValueError, pa.ArrowException):
        return None
    table = pa.concat_tables([summary, added])
    return table.combine_chunks() if table.column(0).num_chunks > _MAX_SUMMARY_CHUNKS else table


def _pinned(table: pa.Table) -> np.ndarray:
    if "pinned" not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    return pc.fill_null(table.column("pinned"), False).to_numpy(zero_copy_only=False).astype(bool)


def _expiries(table: pa.Table) -> np.ndarray:
    """Each row's expiry in epoch seconds: inf when it has none or is pinned."""
    n = table.num_rows
    if "expires_at" not in table.column_names:
        return np.full(n, np.inf)
    seconds = pc.cast(table.column("expires_at"), pa.int64()).to_numpy(zero_copy_only=False)
    expires = np.where(
        pc.call_function("is_null", [table.column("expires_at")]).to_numpy(zero_copy_only=False), np.inf, 0.0
    )
    known = ~np.isinf(expires)
    expires[known] = np.asarray(seconds, dtype=np.float64)[known] / 1e6
    if "pinned" in table.column_names:
        pinned = pc.fill_null(table.column("pinned"), False).to_numpy(zero_copy_only=False)
        expires[pinned] = np.inf
    return expires

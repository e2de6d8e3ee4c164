"""An in-memory copy of the id, namespace, row address and vector of every row, for exact search.

LanceDB's flat (brute-force) search costs ~12 ms over 10,000 rows here; the same dot products
in numpy take ~0.3 ms, and fetching the ten winning rows by row address ~1.5 ms. Below the
size where the store builds its approximate (HNSW) index, searches run here instead.

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
fetched from LanceDB once and then kept as records, until a commit touches them again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ..runtime.blas import OneBlasThread
from .connection import take_in_order
from .filters import Filter, build_filter
from .records import ContentMatch, MemoryRecord, ScoredMemory
from .schema import SUMMARY_COLUMNS, rows_to_records

log = logging.getLogger(__name__)

UNKNOWN = -1
_NO_CODE = -2  # the code of a namespace the copy has never seen: matches no row


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

    # ---- reading -------------------------------------------------------------------------

    def has_copy(self) -> bool:
        return self._snapshot is not None

    def current(self, version: int) -> Snapshot | None:
        snap = self._snapshot
        return snap if snap is not None and snap.version == version else None

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
                summary=table.drop_columns(["vector", "_rowid"]).combine_chunks(),  # take() on one chunk is ~4x faster
                current_summary=np.ones(n, dtype=bool),
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
        with self._one_blas_thread():  # runtime/blas.py: a split product waits for a busy core
            scores = snap.vectors[: snap.n] @ np.asarray(query, dtype=np.float32)
        candidates = np.flatnonzero(self._live(snap, namespace, now))
        return _best(scores[candidates], candidates, limit)

    def top_many(
        self, snap: Snapshot, queries: np.ndarray, limit: int, namespace: str | None, now: float
    ) -> list[list[tuple[int, float]]]:
        """`top` for each of several queries. One matrix product over the candidate rows only
        (a batch's queries usually search one namespace of several), where `top`'s one query
        multiplies every row and selects after."""
        candidates = np.flatnonzero(self._live(snap, namespace, now))
        if candidates.size == 0 or limit <= 0:
            return [[] for _ in queries]
        with self._one_blas_thread():
            scores = np.asarray(queries, dtype=np.float32) @ snap.vectors[candidates].T
        return [_best(chosen, candidates, limit) for chosen in scores]

    def _live(self, snap: Snapshot, namespace: str | None, now: float) -> np.ndarray:
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
        mask &= self._live(snap, namespace, now)
        return np.flatnonzero(mask).tolist()

    # ---- following this process's own commits ----------------------------------------------

    def invalidate(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:  # under self._lock
        self._snapshot = None
        self._records = {}

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

    def committed(
        self,
        before: int,
        after: int,
        *,
        removed: Sequence[str] = (),
        written: Sequence[Written] = (),
        rows: pa.Table | None = None,
        moved: Sequence[str] = (),
    ) -> None:
        """Apply one commit of this process that took the table from `before` to `after`.

        `removed`: ids deleted; `written`: rows inserted or replaced, and `rows` the same rows as
        written to LanceDB (every column), whose summary the copy then holds as current;
        `moved`: ids rewritten in place by LanceDB (same vector, new row address)."""
        with self._lock:
            snap = self._snapshot
            if snap is None:
                return
            if snap.version != before or after not in (before, before + 1):
                self._drop()
                return
            if after == before:
                return
            replaced = [*removed, *(w.id for w in written)]
            for memory_id in [*replaced, *moved]:
                self._records.pop(memory_id, None)
            alive = snap.alive
            positions = snap.positions
            addresses = snap.addresses
            current_summary = snap.current_summary
            if replaced:
                alive, positions = alive.copy(), dict(positions)
                for memory_id in replaced:
                    row = positions.pop(memory_id, None)
                    if row is not None:
                        alive[row] = False
            if moved:
                addresses, current_summary = addresses.copy(), current_summary.copy()
                for memory_id in moved:
                    row = positions.get(memory_id)
                    if row is not None:
                        addresses[row] = UNKNOWN
                        current_summary[row] = False
            n, vectors, ids, namespaces, summary = snap.n, snap.vectors, snap.ids, snap.namespaces, snap.summary
            sessions, sequences, expires, pinned = snap.sessions, snap.sequences, snap.expires, snap.pinned
            if written:
                m = len(written)
                if len(positions) + m > self.max_rows:
                    self._drop()
                    return
                if n + m > vectors.shape[0]:
                    grown = np.empty((n + m + (n + m) // 4 + 256, self.dim), dtype=np.float32)
                    grown[:n] = vectors[:n]
                    vectors = grown
                # Rows past n belong to no published snapshot yet, so writing them is safe.
                vectors[n : n + m] = np.stack([np.asarray(w.vector, dtype=np.float32) for w in written])
                ids = np.concatenate([ids, np.array([w.id for w in written], dtype=object)])
                addresses = np.concatenate([addresses, np.full(m, UNKNOWN, dtype=np.int64)])
                namespaces = np.concatenate(
                    [namespaces, np.array([self._code(w.namespace) for w in written], np.int32)]
                )
                sessions = np.concatenate(
                    [sessions, np.array([self._session(w.session_id) for w in written], np.int32)]
                )
                sequences = np.concatenate(
                    [sequences, np.array([-1 if w.sequence is None else w.sequence for w in written], np.int64)]
                )
                expires = np.concatenate([expires, np.array([w.expires for w in written], np.float64)])
                pinned = np.concatenate([pinned, np.array([w.pinned for w in written], bool)])
                alive = np.concatenate([alive, np.ones(m, dtype=bool)])
                appended = _appended_summary(summary, n, rows, m)
                summary = appended if appended is not None else summary
                current_summary = np.concatenate([current_summary, np.full(m, appended is not None)])
                for offset, w in enumerate(written):
                    positions[w.id] = n + offset
                n += m
            if n > 2 * max(len(positions), 512):
                self._drop()  # mostly dead rows: cheaper to reload than to keep scanning
                return
            self._snapshot = replace(
                snap,
                version=after,
                n=n,
                ids=ids,
                addresses=addresses,
                namespaces=namespaces,
                sessions=sessions,
                sequences=sequences,
                expires=expires,
                pinned=pinned,
                vectors=vectors,
                alive=alive,
                positions=positions,
                current_summary=current_summary,
                summary=summary,
            )

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
        up after each write cost the upkeep thread ~20 ms per batch of 100, beside the next
        batch's embedding."""
        rows = np.flatnonzero(snap.alive & (snap.addresses == UNKNOWN) & ~snap.current_summary)
        return [snap.ids[i] for i in rows]

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


def _best(scores: np.ndarray, candidates: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """(row, score) of the best `limit` candidates (`scores[i]` is candidate i's), best first;
    ties broken by row order, so equal scores come back in a stable order."""
    k = min(limit, candidates.size)
    if k <= 0:
        return []
    best = np.argpartition(-scores, k - 1)[:k] if k < candidates.size else np.arange(candidates.size)
    best = best[np.lexsort((candidates[best], -scores[best]))]
    return [(int(candidates[i]), float(scores[i])) for i in best]


# Appended summaries are merged into one chunk past this many chunks: take() on one chunk is
# ~4x faster, and merging every commit would copy the whole summary each time.
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
    import pyarrow.compute as pc

    return pc.fill_null(table.column("pinned"), False).to_numpy(zero_copy_only=False).astype(bool)


def _expiries(table: pa.Table) -> np.ndarray:
    """Each row's expiry in epoch seconds: inf when it has none or is pinned."""
    n = table.num_rows
    if "expires_at" not in table.column_names:
        return np.full(n, np.inf)
    import pyarrow.compute as pc

    seconds = pc.cast(table.column("expires_at"), pa.int64()).to_numpy(zero_copy_only=False)
    expires = np.where(pc.is_null(table.column("expires_at")).to_numpy(zero_copy_only=False), np.inf, 0.0)
    known = ~np.isinf(expires)
    expires[known] = np.asarray(seconds, dtype=np.float64)[known] / 1e6
    if "pinned" in table.column_names:
        pinned = pc.fill_null(table.column("pinned"), False).to_numpy(zero_copy_only=False)
        expires[pinned] = np.inf
    return expires


# Up to this many unresolved row addresses are looked up by id; more (many rewritten rows),
# by one scan of the id column.
RESOLVE_BY_ID_MAX = 1024


class ExactSearch:
    """MemoryStore's searches and row fetches through the in-memory exact copy (uses the store's table)."""

    def _exact_snapshot(self, *, load: bool = True) -> Snapshot | None:
        """The exact copy at the table's current version (loading it if allowed and small
        enough), or None when searches must go to LanceDB."""
        if self._vector_index_ready():
            return None
        try:
            version = self.version
            snap = self._exact.current(version)
            if snap is not None or not load or self._exact_skipped_at == version:
                return snap
            if self._table.count_rows() > self._exact.max_rows:
                self._exact_skipped_at = version
                return None
            columns = [*SUMMARY_COLUMNS, "vector"]
            scan = self._table.search().select(columns).with_row_id(True).limit(None).to_arrow()
            if self._table.version != version:
                return None  # changed while reading: let LanceDB answer this time
            return self._exact.load(scan, version)
        except Exception:  # noqa: BLE001 - LanceDB's own search is always there to fall back on
            log.debug("exact index unavailable", exc_info=True)
            return None

    def _exact_for(self, flt: Filter | None) -> tuple[Snapshot, str | None] | None:
        """The copy and the namespace to keep when the copy can answer under this filter (none, or
        one namespace only); None when LanceDB must."""
        if flt is not None and (flt.metadata or flt.as_of is not None or (flt.sql and flt.only_namespace is None)):
            return None
        snap = self._exact_snapshot()
        if snap is None:
            return None
        return snap, flt.only_namespace if flt else None

    def _exact_search(
        self, vector: np.ndarray, limit: int, flt: Filter | None, with_vectors: bool
    ) -> list[ScoredMemory] | None:
        found = self._exact_for(flt)
        if found is None:
            return None
        snap, namespace = found
        top = self._exact.top(snap, vector, limit, namespace, self.now().timestamp())
        records = self._fetch_rows(snap, [row for row, _ in top], with_vectors=with_vectors)
        if records is None:
            return None
        return [ScoredMemory(r, min(1.0, max(0.0, score))) for r, (_, score) in zip(records, top)]

    def _exact_contents_many(
        self, vectors: np.ndarray, limit: int, flt: Filter | None
    ) -> list[list[ContentMatch]] | None:
        """`_exact_search` for several vectors, one product, reading only each hit's content and
        namespace: the write checks compare texts, and building every hit's whole record took most
        of their time (a batch of 100 in 10 namespaces of 3,000 memories: 55 ms in-process)."""
        found = self._exact_for(flt)
        if found is None:
            return None
        snap, namespace = found
        tops = self._exact.top_many(snap, vectors, limit, namespace, self.now().timestamp())
        by_row = self._contents(snap, list(dict.fromkeys(row for top in tops for row, _ in top)))
        if by_row is None:
            return None
        return [
            [ContentMatch(snap.ids[row], min(1.0, max(0.0, score)), *by_row[row]) for row, score in top] for top in tops
        ]

    def _contents(self, snap: Snapshot, rows: list[int]) -> dict[int, tuple[str, str]] | None:
        """row -> (content, namespace) for these rows of the copy: from the copy's summary, or from
        the records of rows rewritten since it was loaded; None when the table no longer matches
        the copy."""
        current = [row for row in rows if snap.current_summary[row]]
        found: dict[int, tuple[str, str]] = {}
        if current:
            table = snap.summary.select(["content", "namespace"]).take(current)
            found.update(zip(current, zip(table.column("content").to_pylist(), table.column("namespace").to_pylist())))
        stale = [row for row in rows if row not in found]
        if stale:
            records = self._fetch_rows(snap, stale, with_vectors=False)
            if records is None:
                return None
            found.update((row, (r.content, r.namespace)) for row, r in zip(stale, records, strict=True))
        return found

    def _exact_neighbours(
        self, windows: Sequence[tuple[str, int, int]], flt: Filter | None
    ) -> list[MemoryRecord] | None:
        """Session neighbours from the copy (with vectors); None when LanceDB must answer."""
        found = self._exact_for(flt)
        if found is None:
            return None
        snap, namespace = found
        rows = self._exact.session_rows(snap, windows, namespace, self.now().timestamp())
        return self._fetch_rows(snap, rows, with_vectors=True)

    def _exact_pinned(self, namespace: str | None) -> list[MemoryRecord] | None:
        """Pinned memories (with vectors) from the copy; None when LanceDB must answer."""
        snap = self._exact_snapshot()
        if snap is None:
            return None
        return self._fetch_rows(snap, self._exact.pinned_rows(snap, namespace), with_vectors=True)

    def _fetch_rows(self, snap: Snapshot, rows: list[int], *, with_vectors: bool) -> list[MemoryRecord] | None:
        """The records at these rows of the copy, in order; None when the table no longer
        matches the copy (a row is missing), so the caller asks LanceDB instead."""
        if not rows:
            return []
        wanted = [snap.ids[row] for row in rows]
        loaded = [row for row in rows if snap.current_summary[row]]
        by_id = {r.id: r for r in rows_to_records(snap.summary.take(loaded))} if loaded else {}
        by_id.update(self._exact.kept([i for i in wanted if i not in by_id]))
        missing = [row for row in rows if snap.ids[row] not in by_id]
        addresses = [int(snap.addresses[row]) for row in missing if snap.addresses[row] != UNKNOWN]
        unknown = [snap.ids[row] for row in missing if snap.addresses[row] == UNKNOWN]
        try:
            found: list[MemoryRecord] = []
            if addresses:
                found += rows_to_records(take_in_order(self._table, addresses, SUMMARY_COLUMNS))
            if unknown:
                found += rows_to_records(self._scan(build_filter(ids=unknown).sql, SUMMARY_COLUMNS))
        except Exception:  # noqa: BLE001 - stale addresses: fall back to a search by value
            log.debug("fetching rows by address failed", exc_info=True)
            return None
        wanted_ids = set(wanted)
        fresh = [r for r in found if r.id in wanted_ids]
        self._exact.keep(snap, fresh)
        by_id.update((r.id, r) for r in fresh)
        if any(i not in by_id for i in wanted):
            return None
        # Copies, so a caller changing a record never changes the kept one. The copy's vectors
        # are the stored ones (the same float32 values).
        if not with_vectors:
            return [replace(by_id[i]) for i in wanted]
        return [replace(by_id[i], vector=snap.vectors[row].copy()) for i, row in zip(wanted, rows)]

    def refresh_exact(self) -> None:
        """Upkeep: (re)load the exact copy and look up row addresses of rows written since."""
        snap = self._exact_snapshot()
        if snap is None:
            return
        pending = self._exact.unresolved(snap)
        if not pending:
            return
        try:
            query = self._table.search().with_row_id(True)
            if len(pending) > RESOLVE_BY_ID_MAX:  # many rewritten rows: every address, from one scan
                found = query.select(["id"]).limit(None).to_arrow()
            else:
                query = query.where(build_filter(ids=pending).sql).select(SUMMARY_COLUMNS)
                found = query.limit(len(pending)).to_arrow()
            if self._table.version != snap.version:
                return
        except Exception:  # noqa: BLE001 - advisory: unresolved rows are fetched by id
            log.debug("resolving row addresses failed", exc_info=True)
            return
        ids, addresses = found.column("id").to_pylist(), found.column("_rowid").to_pylist()
        self._exact.resolve_addresses(snap.version, dict(zip(ids, addresses)))
        if len(pending) <= RESOLVE_BY_ID_MAX:
            # Rewritten rows (recall's access counts) are the ones found again soonest: keep them
            # now rather than on the next search that hits them.
            self._exact.keep(snap, rows_to_records(found.drop_columns(["_rowid"])))

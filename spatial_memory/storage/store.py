"""MemoryStore: the one narrow wrapper around the LanceDB `memories` table.

Every method is synchronous and blocks: callers run them in worker threads, never on
the event loop. Writes are serialized by a lock shared by every thread and every process
using the store (`StoreLock`, locking.py); each public write is a single LanceDB commit, so it
is either fully applied or not at all.

The class is assembled from parts, one concern each: exact_index.ExactSearch (the in-memory
exact copy), candidates.CandidateSearch (recall's candidates as columns), access_ledger.AccessCounts
(recall access counts), maintenance.Maintenance (compaction, index upkeep) and fulltext.FullTextSearch
(keyword search); schema.py holds the table's schema and row conversion. This module keeps what they
share: opening the table, the reads, and the write path (lock, commit with retry, the exact copy told
of each commit). It is over 400 lines because those reads and writes uphold one set of invariants together.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ConfigurationError, SpatialMemoryError, StorageError
from .access_ledger import ACCESS_COLUMNS, AccessCounts, AccessLedger
from .candidates import CandidateSearch
from .co_recall import CoRecall
from .connection import (
    LARGE_INDEX_CACHE_BYTES,
    SMALL_INDEX_CACHE_BYTES,
    SideTables,
    connect,
    in_one_trip,
    is_remote,
    take_in_order,
)
from .exact_index import ExactIndex, ExactSearch, Written
from .filters import (
    MAX_LIST_VALUES,
    NO_MATCH,
    Filter,
    both,
    build_filter,
    metadata_matches,
    pinned_only,
    session_windows,
    unexpired,
)
from .fulltext import FullTextSearch
from .history import RetiredState, VersionHistory
from .indexing import IndexPolicy
from .lease import INDEX_LEASE, WRITE_LEASE, LeaseLock, open_lease_table
from .locking import INDEX_LOCK_FILE, LOCK_FILE, WRITE_ATTEMPTS, ReentrantLock, StoreLock, backoff, is_retryable
from .maintenance import Maintenance
from .readonly import ReadOnlyLock, read_only_message, read_only_reason
from .records import ContentMatch, MemoryRecord, ScoredMemory, is_uuid, utc_now
from .recovery import Damage, open_last_good
from .relations import RELATIONS_TABLE, Relations
from .schema import (
    ADDED_COLUMNS,
    HISTORY_TABLE,
    MODEL_KEY,
    SUMMARY_COLUMNS,
    TABLE_NAME,
    NamespaceInfo,
    memory_schema,
    records_to_arrow,
    rows_to_records,
)

log = logging.getLogger(__name__)

# Lance file format of new tables. Every search ends by reading its few result rows at random
# positions, and format 2.1 does that in a fraction of the time of LanceDB 0.40's default
# (2.2): measured here, 10 rows of the 11 summary columns out of 300,000 took 3.9-4.6 ms
# against 9.3-12 ms. Full scans cost the same. A table keeps the format it was created with.
DATA_STORAGE_VERSION = "2.1"


BULK_ROWS = 1000
# A namespace's search on an indexed table: the best OVERFETCH x limit / share rows of the whole
# table, filtered afterwards, when that is at most POSTFILTER_MAX_ROWS (see _namespace_search).
OVERFETCH = 2.0
POSTFILTER_MAX_ROWS = 2000


def _written(records: Sequence[MemoryRecord]) -> list[Written]:
    return [
        Written(
            r.id,
            r.namespace,
            np.asarray(r.vector, dtype=np.float32),
            r.conversation.session_id,
            r.conversation.sequence,
            expiry_seconds(r),
            bool(r.pinned),
        )
        for r in records
    ]


def expiry_seconds(record: MemoryRecord) -> float:
    """When the record expires, in epoch seconds (inf: never, as for pinned ones)."""
    if record.pinned or record.expires_at is None:
        return float("inf")
    return record.expires_at.timestamp()


class MemoryStore(
    ExactSearch,
    CandidateSearch,
    AccessCounts,
    Maintenance,
    FullTextSearch,
    VersionHistory,
    Relations,
    CoRecall,
    SideTables,
):
    def __init__(
        self,
        db_path: Path | str,
        model_id: str,
        dim: int,
        *,
        compact_fragment_threshold: int = 24,
        version_retention_seconds: int = 60,
        lock_timeout_seconds: float = 30.0,
        index_cache_bytes: int | None = None,
        index_policy: IndexPolicy | None = None,
        clock: Callable[[], datetime] = utc_now,
        read_only: bool = False,
    ) -> None:
        self.model_id = model_id
        self.now = clock  # every expiry is judged by it (tests move it)
        self._expiry_at_version: tuple[int, float] | None = None
        self._pinned = threading.local()  # the version `one_version` read, per thread
        self._shares: dict[str, tuple[int, float]] = {}  # namespace -> (version, share of the rows)
        self.dim = dim
        self._compact_threshold = compact_fragment_threshold
        self._retention = timedelta(seconds=version_retention_seconds)
        self._writes_since_compaction = 0
        self._keyword_searches_since_compaction = 0
        self._rows_since_compaction = 0  # rows this process wrote or rewrote (see fts_may_lag)
        self._last_write = 0.0  # time.monotonic() when this process's last write landed
        self._write_gap = math.inf  # seconds between its last two writes (see compaction_can_wait)
        self._same_data: dict[int, int] = {}  # version after a compaction -> data_version before it
        remote = is_remote(db_path)
        if not remote:
            try:
                db_path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create the memory store directory {db_path}: {exc}") from exc
        self.damage: Damage | None = None  # set when the newest version could not be read
        self._db_path = db_path
        try:
            self._index_cache_bytes = index_cache_bytes  # None: sized by _cache_bytes()
            self._db = connect(db_path, index_cache_bytes or SMALL_INDEX_CACHE_BYTES)
            # Shared with every process on this store: writes and maintenance take it - the file
            # lock (StoreLock) on a local path, a lease (lease.py) on object storage. A store that
            # cannot be written gets a lock that refuses every write (readonly.py).
            self.read_only_reason = read_only_reason(db_path, forced=read_only)
            if self.read_only_reason:
                log.warning("the memory store at %s is read-only: %s", db_path, self.read_only_reason)
                self._write_lock: ReentrantLock | ReadOnlyLock = ReadOnlyLock(read_only_message(self.read_only_reason))
                self._index_lock: ReentrantLock | ReadOnlyLock = self._write_lock
            elif remote:
                leases = open_lease_table(self._db)
                self._write_lock = LeaseLock(leases, WRITE_LEASE, lock_timeout_seconds)
                # Index builds take their own lock so they never block writers; a busy lock means
                # another process is already building, and this one skips its turn.
                self._index_lock = LeaseLock(leases, INDEX_LEASE, 0.05)
            else:
                self._write_lock = StoreLock(db_path / LOCK_FILE, lock_timeout_seconds)
                self._index_lock = StoreLock(db_path / INDEX_LOCK_FILE, 0.05)
            # Two servers starting on a new store create the table once.
            with nullcontext() if self.read_only else self._write_lock:
                if TABLE_NAME in self._db.list_tables().tables:
                    self._open_table()
                elif self.read_only:
                    raise StorageError(f"there is no memory store at {db_path}, and none can be created there")
                else:
                    self._table = self._create_table()
            self._ledger = AccessLedger(self._db)
        except SpatialMemoryError:
            raise
        except Exception as exc:
            raise StorageError(f"cannot open the memory store at {db_path}: {exc}") from exc
        self._check_model()
        self._ensure_fts_index()
        self._writes_since_compaction = self._fragment_count()
        self._index_policy = index_policy or IndexPolicy()
        # Below the approximate index's threshold, searches run on an in-memory exact copy.
        self._exact = ExactIndex(dim, max_rows=2 * self._index_policy.vector_index_threshold)
        self._exact_skipped_at: int | None = None  # a version found too big for the copy
        self._vector_indexed = False
        self._index_checked_at = 0.0
        self._refresh_index_state()
        if self._vector_indexed and index_cache_bytes is None:
            self._reconnect()  # with the index cache a vector index needs

    def _cache_bytes(self) -> int:
        if self._index_cache_bytes is not None:
            return self._index_cache_bytes
        return LARGE_INDEX_CACHE_BYTES if self._vector_indexed else SMALL_INDEX_CACHE_BYTES

    @property
    def read_only(self) -> bool:
        return isinstance(self._write_lock, ReadOnlyLock)

    def _open_table(self) -> None:
        """The table at its newest version or, when that cannot be read, read-only at its last good
        one (recovery.py)."""
        try:
            self._table = self._db.open_table(TABLE_NAME)
        except Exception as exc:
            if is_remote(self._db_path):
                raise  # recovery's view of the last good version is built of local symlinks
            cache = self._index_cache_bytes or SMALL_INDEX_CACHE_BYTES
            opened = open_last_good(self._db_path, lambda path: connect(path, cache), exc)
            if opened is None:
                raise
            self._db, self._table, self.damage = opened
            self._write_lock = ReadOnlyLock(self.damage.message)
            return
        if not self.read_only:
            self._migrate()

    def _create_table(self):
        try:
            return self._db.create_table(
                TABLE_NAME,
                schema=memory_schema(self.model_id, self.dim),
                storage_options={"new_table_data_storage_version": DATA_STORAGE_VERSION},
            )
        except (ValueError, OSError):
            # Another process created it between our check and our create.
            return self._db.open_table(TABLE_NAME)

    def _migrate(self) -> None:
        """A store written before a column existed gains it, all null, in one commit."""
        present = set(self._table.schema.names)
        missing = [f for f in ADDED_COLUMNS if f.name not in present]
        if missing:
            self._table.add_columns(pa.schema(missing))
            log.info("store upgraded: added the columns %s", ", ".join(f.name for f in missing))

    def _check_model(self) -> None:
        schema = self._table.schema
        meta = schema.metadata or {}
        stored_model = meta.get(MODEL_KEY, b"").decode() or None
        stored_dim = schema.field("vector").type.list_size
        if stored_dim != self.dim or (stored_model and stored_model != self.model_id):
            raise ConfigurationError(
                f"this store was built with embedding model '{stored_model}' ({stored_dim} dimensions) "
                f"but the server is configured with '{self.model_id}' ({self.dim} dimensions). "
                "Use the original model (SPATIAL_MEMORY_EMBEDDING_MODEL) or a different SPATIAL_MEMORY_PATH, "
                "or export and re-import with regenerate_embeddings."
            )

    # ---- reads -------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The table's version: the newest one, or the one this thread's `one_version` read."""
        pinned = getattr(self._pinned, "version", None)
        return self._table.version if pinned is None else pinned

    @property
    def data_version(self) -> int:
        """The table version, except that a version made by this process's compaction counts as
        the one it compacted: the same memories, so caches of what they show (maps, regions)
        stay valid across it."""
        version = self.version
        return self._same_data.get(version, version)

    @contextmanager
    def one_version(self, version: int | None = None) -> Iterator[int]:
        """Reads in this thread check the table version once (or take the one given, read by
        another thread of the same search), not once per step: each check is a hand-off to
        LanceDB's event loop thread, ~0.2 ms on a quiet host and 1 ms or more on a busy one, and a
        ranked recall has five steps that check it. Only for reads: a commit of this process
        during the block makes the copy move on, and the block's steps then ask LanceDB."""
        outer = getattr(self._pinned, "version", None)
        self._pinned.version = version = version if version is not None else self.version
        try:
            yield version
        finally:
            self._pinned.version = outer

    def count(self, flt: Filter | None = None) -> int:
        if flt is not None and flt.metadata:
            return len(self._matching_ids(flt))
        return self._table.count_rows(self._where(flt))

    def get(self, memory_id: str, *, with_vector: bool = False) -> MemoryRecord | None:
        found = self.get_many([memory_id], with_vectors=with_vector)
        return found[0] if found else None

    def get_many(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[MemoryRecord]:
        """Records for the ids that exist, in the order asked."""
        wanted = [i for i in dict.fromkeys(ids) if is_uuid(i)]
        if not wanted:
            return []
        columns = SUMMARY_COLUMNS + (["vector"] if with_vectors else [])
        snap = self._exact_snapshot(load=False)
        if snap is not None:
            rows = [snap.positions[i] for i in wanted if i in snap.positions]
            fetched = self._fetch_rows(snap, rows, with_vectors=with_vectors)
            if fetched is not None:
                now = self.now()
                return self._with_accesses([r for r in fetched if not r.expired(now)])
        # one row per id at most: no count of the matching rows first
        table = self._scan(self._where(build_filter(ids=wanted)), columns, limit=len(wanted))
        by_id = {r.id: r for r in rows_to_records(table)}
        return self._with_accesses([by_id[i] for i in wanted if i in by_id])

    def scan(
        self, flt: Filter | None = None, *, with_vectors: bool = False, limit: int | None = None
    ) -> list[MemoryRecord]:
        columns = SUMMARY_COLUMNS + (["vector"] if with_vectors else [])
        table = self._scan(self._where(flt), columns, limit=None if flt and flt.metadata else limit)
        records = rows_to_records(table)
        if flt is not None and flt.metadata:
            records = [r for r in records if metadata_matches(r.metadata, flt.metadata)][:limit]
        return self._with_accesses(records)

    def nth(self, index: int, flt: Filter | None = None, *, with_vector: bool = False) -> MemoryRecord | None:
        """The index-th matching row in storage order (for picking a random memory cheaply)."""
        columns = SUMMARY_COLUMNS + (["vector"] if with_vector else [])
        where = self._where(flt)
        query = self._table.search().select(columns).offset(int(index)).limit(1)
        if where:
            query = query.where(where)
        found = self._with_accesses(rows_to_records(query.to_arrow()))
        return found[0] if found else None

    def scan_arrow(self, columns: list[str], flt: Filter | None = None) -> pa.Table:
        return self._ledger.apply_arrow(self._scan(self._where(flt), columns))

    def _where(self, flt: Filter | None, *, live: bool = True) -> str | None:
        """The filter's where clause, with the ledger's access counts folded into the rows
        first when the clause reads them. `live`: expired memories are left out (when any
        memory has expired at all: see `_earliest_expiry`)."""
        sql = None
        if flt is not None:
            if flt.columns & ACCESS_COLUMNS and not self.read_only and self._ledger.entries(exact=True):
                self.fold_accesses()
            sql = flt.sql
        if live:
            moment = flt.as_of if flt is not None and flt.as_of is not None else self.now()
            if flt is not None and flt.as_of is not None or self._earliest_expiry() <= moment.timestamp():
                sql = unexpired(moment) if sql is None else f"({sql}) AND {unexpired(moment)}"
        return sql

    def _earliest_expiry(self) -> float:
        """The first expiry (epoch seconds) of a memory not pinned, inf when none expires; kept per
        table version, so a store where nothing has expired searches without an extra clause."""
        version = self.version
        cached = self._expiry_at_version
        if cached is not None and cached[0] == version:
            return cached[1]
        table = self._scan("expires_at IS NOT NULL AND NOT COALESCE(pinned, false)", ["expires_at"], exact_count=False)
        first = float("inf")
        if table.num_rows:
            import pyarrow.compute as pc

            first = pc.min(table.column("expires_at")).as_py().timestamp()
        self._expiry_at_version = (version, first)
        return first

    def _follow_expiry(self, before: int | None, change: dict[str, Any] | None) -> None:
        """Keep the earliest expiry across this process's own commit (no scan at the next read): the
        rows it wrote can only bring it forward, and deleted rows can only leave it too early, which
        costs a where clause, never a wrong answer."""
        cached = self._expiry_at_version
        self._expiry_at_version = None
        if cached is None or change is None or cached[0] != before:
            return
        written = change.get("written", ())
        first = min([cached[1], *(w.expires for w in written)])
        self._expiry_at_version = (self._table.version, first)

    def expired_ids(self) -> list[str]:
        """Memories past their expiry, still stored (upkeep purges them)."""
        now = self.now()
        if self._earliest_expiry() > now.timestamp():
            return []
        where = f"NOT {unexpired(now)}"
        return self._scan(where, ["id"]).column("id").to_pylist()

    def purge_expired(self) -> list[str]:
        """Delete expired memories and their history, in one commit per table."""
        if self.read_only:
            return []  # hidden from every read all the same
        ids = self.expired_ids()
        if not ids:
            return []
        with self._write_lock:
            now = self.now()
            return self.delete_where(build_filter(ids=ids[:MAX_LIST_VALUES]), live=False, extra=f"NOT {unexpired(now)}")

    def pinned(self, namespace: str | None, limit: int) -> list[MemoryRecord]:
        """A namespace's pinned memories (every namespace's when None), most important first, with
        their vectors: from the exact copy when it can answer."""
        records = self._exact_pinned(namespace)
        if records is None:
            records = self.scan(pinned_only(namespace), with_vectors=True)
        records.sort(key=lambda r: (-r.importance, r.created_at, r.id))
        return records[:limit]

    def _with_accesses(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        self._ledger.apply(records)
        return records

    def _scan(
        self, where: str | None, columns: list[str], limit: int | None = None, *, exact_count: bool = True
    ) -> pa.Table:
        if limit is None and exact_count:
            limit = max(self._table.count_rows(where), 1)
        try:
            return in_one_trip(self._table, lambda table: table.query(), columns, limit, where)
        except Exception as exc:
            raise StorageError(f"read failed: {exc}") from exc

    def _search_where(self, flt: Filter | None) -> str | None:
        """The where clause of a search under `flt`: metadata conditions, which SQL cannot read in
        the JSON column, become the ids that meet them (NO_MATCH when none does)."""
        if flt is None or not flt.metadata:
            return self._where(flt)
        ids = self._matching_ids(flt)
        return build_filter(ids=ids).sql if ids else NO_MATCH

    def _matching_ids(self, flt: Filter) -> list[str]:
        table = self._scan(self._where(flt), ["id", "metadata"])
        ids = table.column("id").to_pylist()
        metas = table.column("metadata").to_pylist()
        return [i for i, m in zip(ids, metas) if metadata_matches(json.loads(m) if m else {}, flt.metadata)]

    def search(
        self,
        vector: np.ndarray,
        limit: int,
        flt: Filter | None = None,
        *,
        min_similarity: float = 0.0,
        with_vectors: bool = False,
    ) -> list[ScoredMemory]:
        """Nearest memories by cosine similarity (vectors are unit norm, so dot product)."""
        exact = self._exact_search(vector, limit, flt, with_vectors)
        if exact is not None:
            self._ledger.apply(hit.record for hit in exact)
            return [hit for hit in exact if hit.similarity >= min_similarity]
        where = self._search_where(flt)
        if where is NO_MATCH:
            return []
        columns = SUMMARY_COLUMNS + (["vector"] if with_vectors else [])
        table = self._nearest(vector, limit, flt, where, columns, refine=True)
        distances = table.column("_distance").to_pylist()
        results = []
        records = self._with_accesses(rows_to_records(table.drop_columns(["_distance"])))
        for record, distance in zip(records, distances):
            similarity = min(1.0, max(0.0, 1.0 - float(distance)))
            if similarity >= min_similarity:
                results.append(ScoredMemory(record, similarity))
        return results

    def closest_contents(
        self, vectors: np.ndarray, limit: int, flt: Filter | None = None, *, exact_only: bool = False
    ) -> list[list[ContentMatch]] | None:
        """For each of several vectors, its `limit` nearest memories (as `search`) by id, similarity,
        content and namespace: one matrix product on the exact copy when it can answer, reading the
        hits' content only; else one search each at one version (or None, with `exact_only`, so the
        caller can choose another way)."""
        exact = self._exact_contents_many(vectors, limit, flt)
        if exact is not None or exact_only:
            return exact
        with self.one_version():
            return [
                [ContentMatch(h.record.id, h.similarity, h.record.content, h.record.namespace) for h in hits]
                for hits in (self.search(vector, limit, flt) for vector in vectors)
            ]

    def _nearest(
        self, vector: np.ndarray, limit: int, flt: Filter | None, where: str | None, columns: list[str], *, refine: bool
    ) -> pa.Table:
        """LanceDB's nearest rows (the columns and _distance). With the vector index: its HNSW graph
        searched `IndexPolicy.search_ef` wide and, with `refine`, its candidates re-ranked on the
        full vectors."""
        policy = self._index_policy
        indexed = self._vector_index_ready()

        def nearest(table, rows: int, share: float):
            query = table.query().nearest_to(np.asarray(vector, dtype=np.float32)).column("vector")
            query = query.distance_type("dot")
            if not indexed:
                return query
            query = query.ef(policy.search_ef(rows * (policy.refine_factor if refine else 1), share))
            return query.refine_factor(policy.refine_factor) if refine else query

        try:
            return self._namespace_search(nearest, columns, "_distance", limit, flt, where)
        except Exception as exc:
            raise StorageError(f"vector search failed: {exc}") from exc

    def _namespace_search(
        self, start, columns: list[str], score: str, limit: int, flt: Filter | None, where: str | None
    ) -> pa.Table:
        """A search's Arrow result (the columns and its `score` column), `start(async table, rows,
        share)` beginning it. On an indexed table, a search in one namespace asks for the best
        OVERFETCH x limit / share rows of the whole table (ids and scores only), keeps the
        namespace's, and reads the columns of the first `limit`: they are the namespace's best
        whenever that many are there (else the filter goes first, as on small tables). At 1,000,000
        rows, one namespace of ten: a keyword search for 100 ids took 23 ms so against 145 ms
        filtering first, a vector search 10 ms against 35-65 ms."""
        namespace = flt.only_namespace if flt is not None else None
        if namespace is None or not self._vector_index_ready():
            return in_one_trip(self._table, lambda table: start(table, limit, 1.0), [*columns, score], limit, where)
        share = self._namespace_share(namespace)
        wide = math.ceil(limit * OVERFETCH / share) if share > 0 else POSTFILTER_MAX_ROWS + 1
        if wide <= POSTFILTER_MAX_ROWS:
            best = in_one_trip(
                self._table, lambda table: start(table, wide, 1.0).with_row_id(), [score], wide, where, postfilter=True
            )
            if best.num_rows >= limit:
                best = best.slice(0, limit)
                row_ids = best.column("_rowid").to_pylist()
                rows = take_in_order(self._table, row_ids, columns)
                if rows.num_rows == len(row_ids):  # else a row went away meanwhile: ask again below
                    return rows.append_column(score, best.column(score))
        return in_one_trip(self._table, lambda table: start(table, limit, share), [*columns, score], limit, where)

    def _namespace_share(self, namespace: str) -> float:
        """The share of the table's rows in this namespace, kept per table version (two counts
        through the namespace's bitmap index: ~1 ms at 100,000 rows)."""
        version = self.version
        cached = self._shares.get(namespace)
        if cached is None or cached[0] != version:
            total = max(self._table.count_rows(), 1)
            cached = self._shares[namespace] = (
                version,
                self._table.count_rows(build_filter(namespace=namespace).sql) / total,
            )
        return cached[1]

    def namespaces(self) -> list[NamespaceInfo]:
        table = self._scan(self._where(None), ["namespace", "created_at"])
        if table.num_rows == 0:
            return []
        grouped = table.group_by("namespace").aggregate(
            [("created_at", "min"), ("created_at", "max"), ("namespace", "count")]
        )
        infos = [
            NamespaceInfo(row["namespace"], row["namespace_count"], row["created_at_min"], row["created_at_max"])
            for row in grouped.to_pylist()
        ]
        return sorted(infos, key=lambda n: n.name)

    def stats(self) -> dict[str, Any]:
        stats = self._table.stats()
        fragments = stats["fragment_stats"]
        indices = []
        for index in self._table.list_indices():
            indices.append(
                {
                    "name": index.name,
                    "index_type": str(index.index_type),
                    "column": index.columns[0] if index.columns else "",
                    "num_indexed_rows": int(getattr(index, "num_indexed_rows", 0) or 0),
                    "status": "ready" if not getattr(index, "num_unindexed_rows", 0) else "needs_update",
                }
            )
        return {
            "total_bytes": int(stats["total_bytes"]),
            "num_rows": int(stats["num_rows"]),
            "num_fragments": int(fragments["num_fragments"]),
            "num_small_fragments": int(fragments["num_small_fragments"]),
            "indices": indices,
            "version": self._table.version,
        }

    def health_facts(self) -> dict[str, Any]:
        """Cheap facts for the health tool: rows, table version, index state, the write lock."""
        return {
            "rows": self._table.count_rows(),
            "version": self._table.version,
            "vector_indexed": self._vector_index_ready(),
            "writes_since_compaction": self._writes_since_compaction,
            "needs_compaction": self.needs_compaction(),
            "exact_copy": self._exact.has_copy(),
            "lock": "read-only" if self.read_only else self._write_lock.probe(),
            "read_only": getattr(self._write_lock, "message", None) if self.read_only else None,
            "path": self._db_path,
        }

    def _fragment_count(self) -> int:
        return int(self._table.stats()["fragment_stats"]["num_fragments"])

    # ---- writes ------------------------------------------------------------------------

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the write lock across a read-modify-write (the writes inside re-enter it), so no
        other write - another thread's or another process's - lands between the read and the write."""
        with self._write_lock:
            yield

    @contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """Hold the write lock across writes to several tables, the memories table's commit last:
        if anything inside fails, the side tables (history, relations) are restored to the versions
        they had on entry, so the failed writes leave nothing behind (import_memories)."""
        with self._write_lock:
            names = (HISTORY_TABLE, RELATIONS_TABLE)
            tables = {name: self._side_table(name, None, create=False) for name in names}
            entry = {name: (table.version if table is not None else None) for name, table in tables.items()}
            try:
                yield
            except BaseException:
                for name in names:
                    table = self._side_table(name, None, create=False)
                    if table is not None and table.version != (entry[name] or 1):
                        table.restore(entry[name] or 1)  # created inside: back to its empty first version
                raise

    def _commit(
        self,
        failure: str,
        action: Callable[[], Any],
        *,
        landed: Callable[[], bool] | None = None,
        change: dict[str, Any] | None = None,
    ) -> Any:
        """Run one LanceDB commit under the store lock, retrying with backoff when it lost a race
        (a commit conflict fails before anything is written). `landed` tells whether a failed
        attempt was committed after all; it is asked before retrying a write that is not idempotent.
        `change` describes the commit to the exact index (ExactIndex.committed); without it the
        exact copy is dropped and reloaded by the next search."""
        with self._write_lock:
            expiry = self._expiry_at_version
            before = self._table.version if self._exact.has_copy() or expiry is not None else None
            try:
                result = self._attempt(failure, action, landed)
            except BaseException:
                self._exact.invalidate()
                raise
            self._follow_expiry(before, change)
            if change is not None:
                self._rows_since_compaction += len(change.get("written", ())) + len(change.get("moved", ()))
            if change is None or before is None or not self._exact.has_copy():
                self._exact.invalidate()
            else:
                try:
                    self._exact.committed(before, self._table.version, **change)
                except Exception:  # noqa: BLE001 - the copy only speeds searches up
                    log.debug("exact index update failed", exc_info=True)
                    self._exact.invalidate()
            return result

    def _attempt(
        self, failure: str, action: Callable[[], Any], landed: Callable[[], bool] | None, *, counted: bool = True
    ) -> Any:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                result = action()
            except Exception as exc:
                if attempt + 1 >= WRITE_ATTEMPTS or not is_retryable(exc):
                    raise StorageError(f"{failure}: {exc}") from exc
                log.info("write conflict, retrying (%d): %s", attempt + 1, exc)
                time.sleep(backoff(attempt))
                if landed is not None and landed():
                    result = None
                else:
                    continue
            if counted:  # a write to the memories table, which compaction tidies
                self._writes_since_compaction += 1
                now = time.monotonic()
                self._write_gap, self._last_write = now - self._last_write, now
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _to_arrow(self, records: Sequence[MemoryRecord]) -> pa.Table:
        return records_to_arrow(records, self.model_id, self.dim)

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert records in one commit: all of them or none."""
        if not records:
            return
        first = build_filter(ids=[records[0].id]).sql  # an add commits every row or none
        with self._write_lock:
            records = self._in_arrival_order(records)
            data = self._to_arrow(records)
            self._commit(
                "write failed, nothing was stored",
                lambda: self._table.add(data),
                landed=lambda: self._table.count_rows(first) > 0,
                change={"written": _written(records), "rows": data},
            )
            self._forget_accesses([r.id for r in records])
        if len(records) >= BULK_ROWS:
            # Rows outside the full-text index are found by a slow scan until compaction folds
            # them in: after a bulk insert, let the next upkeep pass compact.
            self._writes_since_compaction = max(self._writes_since_compaction, self._compact_threshold + 1)

    def _in_arrival_order(self, records: Sequence[MemoryRecord]) -> Sequence[MemoryRecord]:
        """Records of a session given without a sequence get the next ones after the session's
        last, in the order given (called under the write lock, so two writers never share one)."""
        sessions = {
            r.conversation.session_id for r in records if r.conversation.session_id and r.conversation.sequence is None
        }
        if not sessions:
            return records
        last = self.last_sequences(sessions)
        for r in records:  # sequences given explicitly in the batch count too
            c = r.conversation
            if c.session_id in sessions and c.sequence is not None:
                last[c.session_id] = max(last.get(c.session_id, -1), c.sequence)
        placed = []
        for r in records:
            c = r.conversation
            if c.session_id in sessions and c.sequence is None:
                last[c.session_id] = last.get(c.session_id, -1) + 1
                r = replace(r, conversation=replace(c, sequence=last[c.session_id]))
            placed.append(r)
        return placed

    def neighbours(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None = None) -> list[MemoryRecord]:
        """Memories (with vectors) whose session and sequence lie in one of the windows
        (session_id, low, high), and that match the filter: from the exact copy when it can answer."""
        if not windows:
            return []
        found = self._exact_neighbours(windows, flt)
        if found is not None:
            self._ledger.apply(found)
            return found
        window_filter = session_windows(windows)
        return self.scan(both(flt, window_filter) if flt is not None else window_filter, with_vectors=True)

    def last_sequences(self, sessions: Iterable[str]) -> dict[str, int]:
        """The highest sequence stored in each of these sessions (sessions without one left out)."""
        wanted = sorted(sessions)
        last: dict[str, int] = {}
        for start in range(0, len(wanted), MAX_LIST_VALUES):  # one IN list holds at most that many
            chunk = wanted[start : start + MAX_LIST_VALUES]
            table = self._scan(build_filter(filters={"session_id": {"in": chunk}}).sql, ["session_id", "sequence"])
            if table.num_rows == 0:
                continue
            grouped = table.group_by("session_id").aggregate([("sequence", "max")])
            sessions_found = grouped.column("session_id").to_pylist()
            tops = grouped.column("sequence_max").to_pylist()
            last.update(
                {session: int(top) for session, top in zip(sessions_found, tops, strict=True) if top is not None}
            )
        return last

    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """Replace whole rows by id (inserting missing ones) in one commit."""
        if not records:
            return
        data = self._to_arrow(records)
        with self._write_lock:
            self._commit(
                "update failed, nothing was changed",
                lambda: (
                    self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
                ),
                change={"written": _written(records), "rows": data},
            )
            self._forget_accesses([r.id for r in records])

    def replace(self, new_records: Sequence[MemoryRecord], delete_ids: Sequence[str]) -> None:
        """Write `new_records` and delete `delete_ids` in a single commit.

        A merge-insert whose source also flags rows for deletion commits both at once,
        so no crash can leave the deletes without the insert (or the reverse).
        """
        deletions = [i for i in delete_ids if i not in {r.id for r in new_records}]
        if not deletions:
            self.upsert(new_records)
            return
        if not new_records:
            self.delete_ids(deletions)
            return
        data = self._to_arrow(new_records)
        with self._write_lock:
            self.drop_relations(deletions)
            self.drop_co_recall(deletions)
            self._commit(
                "replace failed, nothing was changed",
                lambda: (
                    self._table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(build_filter(ids=deletions).sql)
                    .execute(data)
                ),
                change={"written": _written(new_records), "rows": data, "removed": deletions},
            )
            self._forget_accesses([*(r.id for r in new_records), *deletions])

    def update_where(self, flt: Filter, values: dict[str, Any]) -> int:
        where = self._where(flt)
        result = self._commit(
            "update failed, nothing was changed", lambda: self._table.update(where=where, values=values)
        )
        return int(getattr(result, "rows_updated", 0) or 0)

    def delete_ids(self, ids: Iterable[str]) -> list[str]:
        wanted = [i for i in dict.fromkeys(ids) if is_uuid(i)]
        if not wanted:
            return []
        return self.delete_where(build_filter(ids=wanted))

    def delete_where(self, flt: Filter, *, live: bool = True, extra: str | None = None) -> list[str]:
        """Delete matching rows, their history and their relations (those first: a crash between
        leaves the memory, never a history without it); returns the ids deleted. `live`: expired
        memories, which no read returns any more, are not counted; `extra`: a further clause."""
        with self._write_lock:
            if flt.metadata:
                ids = self._matching_ids(flt)
                where = build_filter(ids=ids).sql if ids else None
            else:
                where = self._where(flt, live=live)
                if extra:
                    where = extra if where is None else f"({where}) AND {extra}"
                ids = self._scan(where, ["id"]).column("id").to_pylist()
            if not ids or where is None:
                return []
            self.drop_history(ids)
            self.drop_relations(ids)
            self.drop_co_recall(ids)
            self._commit(
                "delete failed, nothing was deleted", lambda: self._table.delete(where), change={"removed": ids}
            )
            self._forget_accesses(ids)
        return ids

    # ---- memories that change (update_memory, supersedes) --------------------------------

    def rewrite(self, record: MemoryRecord, previous: MemoryRecord, max_versions: int) -> None:
        """Replace a memory by its next version, keeping `previous` in its history. Call under
        `exclusive()` after reading `previous`, so no other writer's version is lost."""
        when = record.updated_at
        self._retire([RetiredState(previous, when, "update")], max_versions)
        self.upsert([record])

    def supersede(
        self,
        successors: Sequence[MemoryRecord],
        closed: Sequence[MemoryRecord],
        successor_of: dict[str, str],
        max_versions: int,
    ) -> None:
        """Store `successors` and close `closed` (their last states go to the history, each linked to
        its successor, `successor_of[id]`): the memories table changes in one commit. Call under
        `exclusive()`."""
        when = successors[0].created_at
        self._retire([RetiredState(r, when, "supersede", successor_of[r.id]) for r in closed], max_versions)
        self.replace(successors, [r.id for r in closed])

    def as_of_search(self, vector: np.ndarray, limit: int, flt: Filter, moment: datetime) -> list[ScoredMemory]:
        """What was current at `moment` nearest to the vector: current rows whose version existed
        then, and retired states current then (`flt` must include `filters.current_at(moment)`)."""
        hits = self.search(vector, limit, flt, with_vectors=True)
        retired = self.states_at(flt, moment)
        if flt.metadata:
            retired = [r for r in retired if metadata_matches(r.metadata, flt.metadata)]
        if retired:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in retired])
            scores = np.clip(vectors @ np.asarray(vector, dtype=np.float32), 0.0, 1.0)
            hits += [ScoredMemory(r, float(x)) for r, x in zip(retired, scores.tolist(), strict=True)]
        hits.sort(key=lambda h: -h.similarity)
        return hits[:limit]

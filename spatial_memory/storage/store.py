"""MemoryStore: the store as one object, a facade over its parts.

Every method is synchronous and blocks: callers run them in worker threads, never on the event
loop. Writes are serialized by a lock shared by every thread and every process using the store
(writer.py); each public write is a single LanceDB commit, so it is either fully applied or not
at all.

The parts, one concern each, get what they use in their constructors (`MemoryStore._wire`):
the table (table.py: opening, the model check, reconnecting) and the writer (writer.py: lock,
commit, retry); reads (reads.py), vector search (vector_search.py), keyword search (fulltext.py),
recall's candidates (candidate_search.py), the in-memory exact copy (exact_index.py, exact_search.py),
access counts (access_counts.py, access_ledger.py), writes (writes.py), the version history
(history.py), relations (relations.py), imports in flight (pending_imports.py), co-recall links
(co_recall.py) and maintenance (maintenance.py). This class wires them and forwards each method to the part that does it
(`Forward`); services see it through the `Store` protocol (protocol.py), and upkeep and tests
reach the parts through its public attributes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import numpy as np

from ..errors import SpatialMemoryError, StorageError
from .access_counts import AccessCounts
from .access_ledger import AccessLedger
from .candidate_search import CandidateSearch
from .co_recall import CoRecall
from .connection import SMALL_INDEX_CACHE_BYTES, connect, is_remote
from .exact_index import ExactIndex
from .exact_search import ExactSearch
from .expiry import Expiry
from .filters import Filter, metadata_matches
from .fulltext import FullTextSearch
from .history import VersionHistory
from .indexing import IndexPolicy, VectorIndexState
from .maintenance import Maintenance
from .pending_imports import PendingImports
from .readonly import read_only_reason
from .reads import Reads
from .records import MemoryRecord, ScoredMemory, utc_now
from .recovery import Damage
from .relations import Relations
from .table import MemoryTable
from .vector_search import NamespaceSearch, VectorSearch
from .writer import Locks, WriteActivity, Writer
from .writes import MemoryWrites

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class StoreOptions:
    """The settings a store opens with (MemoryStore's keyword arguments, config.py's settings)."""

    compact_fragment_threshold: int = 24
    version_retention_seconds: int = 60
    lock_timeout_seconds: float = 30.0
    index_cache_bytes: int | None = None  # None: sized by whether the table has a vector index
    index_policy: IndexPolicy = IndexPolicy()
    read_only: bool = False
    on_commit: Callable[[], None] | None = None  # told after every commit (runtime/changes.py)


def _open_table(
    path: Path | str, model_id: str, dim: int, options: StoreOptions
) -> tuple[MemoryTable, Locks, str | None]:
    """Connect, take the locks the store calls for, open (or create) the table and check its model;
    the third value is why the store cannot be written (None: it can)."""
    remote = is_remote(path)
    if not remote:
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the memory store directory {path}: {exc}") from exc
    try:
        db = connect(path, options.index_cache_bytes or SMALL_INDEX_CACHE_BYTES)
        reason = read_only_reason(path, forced=options.read_only)
        if reason:
            log.warning("the memory store at %s is read-only: %s", path, reason)
        locks = Locks.of(path, db, remote=remote, read_only_reason=reason, timeout=options.lock_timeout_seconds)
        table = MemoryTable(
            path,
            db,
            model_id,
            dim,
            cache_bytes=options.index_cache_bytes,
            creation_lock=locks.write if not reason else nullcontext(),
            read_only=bool(reason),
        )
    except SpatialMemoryError:
        raise
    except Exception as exc:
        raise StorageError(f"cannot open the memory store at {path}: {exc}") from exc
    table.check_model()
    return table, locks, reason


class Forward(Generic[P, R]):
    """A method of the facade that is the same method of one of its parts: `MemoryStore.search` is
    `VectorSearch.search` on the store's `vector` part (the signature, for type checkers too)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, store: None, owner: type[Any]) -> Forward[P, R]: ...

    @overload
    def __get__(self, store: object, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(self, store: object | None, owner: type[Any] | None = None) -> Forward[P, R] | Callable[P, R]:
        if store is None:
            return self
        return getattr(getattr(store, self._part), self._name)

    def __call__(self, store: object, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Called on the class (`MemoryStore.search(store, ...)`), as a method can be."""
        return getattr(getattr(store, self._part), self._name)(*args, **kwargs)


class MemoryStore:
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
        on_commit: Callable[[], None] | None = None,
    ) -> None:
        options = StoreOptions(
            compact_fragment_threshold,
            version_retention_seconds,
            lock_timeout_seconds,
            index_cache_bytes,
            index_policy or IndexPolicy(),
            read_only,
            on_commit,
        )
        self.model_id = model_id
        self.dim = dim
        self.now = clock  # every expiry is judged by it (tests move it)
        self.table, locks, self.read_only_reason = _open_table(db_path, model_id, dim, options)
        self._wire(locks, options)
        self.fulltext.ensure_index()
        self.pending_imports.settle()  # an import killed before its commit point: its side rows go
        self.activity.writes = self.table.fragment_count()
        if self.indexed.ready() and index_cache_bytes is None:
            self.maintenance.reconnect()  # with the index cache a vector index needs

    def _wire(self, locks: Locks, options: StoreOptions) -> None:
        """Build the parts, each given what it uses."""
        table, clock, policy = self.table, self.now, options.index_policy
        retention = timedelta(seconds=options.version_retention_seconds)
        self.activity = WriteActivity(options.compact_fragment_threshold)
        self.indexed = VectorIndexState(table)
        # Below the approximate index's threshold, searches run on an in-memory exact copy.
        self.exact = ExactSearch(table, ExactIndex(self.dim, 2 * policy.vector_index_threshold), self.indexed, clock)
        expiry = Expiry(table)
        self.writer = Writer(table, locks, self.activity, self.exact.index, expiry, options.on_commit)
        if table.damage is not None:
            self.writer.refuse_writes(table.damage.message)
        try:
            ledger = AccessLedger(table.db)
        except Exception as exc:
            raise StorageError(f"cannot open the memory store at {table.path}: {exc}") from exc
        self.accesses = AccessCounts(table, self.writer, ledger, self.indexed, self.activity, retention)
        self.reads = Reads(table, self.writer, self.accesses, expiry, self.exact, clock)
        namespace_search = NamespaceSearch(table, self.indexed)
        self.vector = VectorSearch(table, namespace_search, self.indexed, policy, self.reads, self.exact, self.accesses)
        self.fulltext = FullTextSearch(
            table, self.writer, self.reads, self.exact, namespace_search, self.accesses, self.activity
        )
        self.candidates = CandidateSearch(
            table, self.exact, self.reads, self.vector, self.fulltext, self.accesses, self.indexed, clock
        )
        self.pending_imports = PendingImports(table, self.writer)
        self.history = VersionHistory(table, self.writer, self.pending_imports)
        self.relations = Relations(table, self.writer, self.reads)
        self.co_recall = CoRecall(table, self.writer, clock)
        self.writes = MemoryWrites(
            table,
            self.writer,
            self.reads,
            self.accesses,
            self.history,
            self.relations,
            self.co_recall,
            self.pending_imports,
            self.activity,
            clock,
        )
        self.maintenance = Maintenance(
            table,
            self.writer,
            self.activity,
            self.exact.index,
            self.accesses,
            self.fulltext,
            self.indexed,
            policy,
            retention,
        )

    # ---- facts -------------------------------------------------------------------------------

    @property
    def ledger(self) -> AccessLedger:
        return self.accesses.ledger

    @property
    def read_only(self) -> bool:
        return self.writer.read_only

    @property
    def damage(self) -> Damage | None:
        return self.table.damage

    @property
    def version(self) -> int:
        return self.table.version

    @property
    def data_version(self) -> int:
        return self.table.data_version

    def health_facts(self) -> dict[str, Any]:
        """Cheap facts for the health tool: rows, table version, index state, the write lock."""
        writer = self.writer
        return {
            "rows": self.table.count_rows(),
            "version": self.table.newest_version,
            "vector_indexed": self.indexed.ready(),
            "writes_since_compaction": self.activity.writes,
            "needs_compaction": self.needs_compaction(),
            "exact_copy": self.exact.index.has_copy(),
            "lock": writer.lock_state(),
            "read_only": writer.read_only_message,
            "path": self.table.path,
        }

    def get(self, memory_id: str, *, with_vector: bool = False) -> MemoryRecord | None:
        found = self.reads.get_many([memory_id], with_vectors=with_vector)
        return found[0] if found else None

    def as_of_search(self, vector: np.ndarray, limit: int, flt: Filter, moment: datetime) -> list[ScoredMemory]:
        """What was current at `moment` nearest to the vector: current rows whose version existed
        then, and retired states current then (`flt` must include `filters.current_at(moment)`)."""
        hits = self.vector.search(vector, limit, flt, with_vectors=True)
        retired = self.history.states_at(flt, moment)
        if flt.metadata:
            retired = [r for r in retired if metadata_matches(r.metadata, flt.metadata)]
        if retired:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in retired])
            scores = np.clip(vectors @ np.asarray(vector, dtype=np.float32), 0.0, 1.0)
            hits += [ScoredMemory(r, float(x)) for r, x in zip(retired, scores.tolist(), strict=True)]
        hits.sort(key=lambda h: -h.similarity)
        return hits[:limit]

    # ---- every other method: the same method of one part ---------------------------------------

    one_version = Forward("table", MemoryTable.one_version)
    stats = Forward("reads", Reads.stats)
    # upkeep's (runtime/upkeep.py)
    needs_compaction = Forward("maintenance", Maintenance.needs_compaction)
    compaction_can_wait = Forward("maintenance", Maintenance.compaction_can_wait)
    fts_may_lag = Forward("maintenance", Maintenance.fts_may_lag)
    fts_lags = Forward("maintenance", Maintenance.fts_lags)
    compact = Forward("maintenance", Maintenance.compact)
    refresh_exact = Forward("exact", ExactSearch.refresh)
    purge_expired = Forward("writes", MemoryWrites.purge_expired)
    record_access = Forward("accesses", AccessCounts.record)
    record_co_recall = Forward("co_recall", CoRecall.record)
    # reads
    count = Forward("reads", Reads.count)
    get_many = Forward("reads", Reads.get_many)
    scan = Forward("reads", Reads.scan)
    nth = Forward("reads", Reads.nth)
    scan_arrow = Forward("reads", Reads.scan_arrow)
    pinned = Forward("reads", Reads.pinned)
    neighbours = Forward("reads", Reads.neighbours)
    namespaces = Forward("reads", Reads.namespaces)
    search = Forward("vector", VectorSearch.search)
    closest_contents = Forward("vector", VectorSearch.closest_contents)
    fts_search = Forward("fulltext", FullTextSearch.search)
    search_candidates = Forward("candidates", CandidateSearch.search)
    fts_candidates = Forward("candidates", CandidateSearch.keyword)
    neighbour_candidates = Forward("candidates", CandidateSearch.neighbours)
    materialize = Forward("candidates", CandidateSearch.materialize)
    retired = Forward("history", VersionHistory.retired)
    history_arrow = Forward("history", VersionHistory.history_arrow)
    relation_graph = Forward("relations", Relations.graph)
    relations_of = Forward("relations", Relations.of)
    current_relations = Forward("relations", Relations.current)
    co_recall_links = Forward("co_recall", CoRecall.links)
    # writes
    exclusive = Forward("writer", Writer.exclusive)
    all_or_nothing = Forward("writes", MemoryWrites.all_or_nothing)
    add = Forward("writes", MemoryWrites.add)
    add_imported = Forward("writes", MemoryWrites.add_imported)
    upsert = Forward("writes", MemoryWrites.upsert)
    replace = Forward("writes", MemoryWrites.replace)
    rewrite = Forward("writes", MemoryWrites.rewrite)
    supersede = Forward("writes", MemoryWrites.supersede)
    update_where = Forward("writes", MemoryWrites.update_where)
    delete_ids = Forward("writes", MemoryWrites.delete_ids)
    delete_where = Forward("writes", MemoryWrites.delete_where)
    restore_history = Forward("history", VersionHistory.restore)
    relate = Forward("relations", Relations.relate)
    unrelate = Forward("relations", Relations.unrelate)

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
(co_recall.py), search as of a moment (as_of_search.py) and maintenance (maintenance.py). This
class wires them; each member of the store's surface is declared once in `Store` (protocol.py),
with the part that serves it, and served here by that part's method (`_serve`). Upkeep's own
methods are declared below the same way; upkeep and tests reach the parts through its public
attributes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import SpatialMemoryError, StorageError
from ..records import utc_now
from .protocol import Store
from .search.as_of_search import AsOfSearch
from .search.candidate_search import CandidateSearch
from .search.exact_index import ExactIndex
from .search.exact_search import ExactSearch
from .search.fulltext import FullTextSearch
from .search.indexing import IndexPolicy, VectorIndexState
from .search.keyword_index import KeywordIndex
from .search.vector_search import NamespaceSearch, VectorSearch
from .side_tables.access_counts import AccessCounts
from .side_tables.access_ledger import AccessLedger
from .side_tables.co_recall import CoRecall
from .side_tables.history import VersionHistory
from .side_tables.relations import Relations
from .surface import Fact, Member
from .table.connection import SMALL_INDEX_CACHE_BYTES, connect, is_remote
from .table.maintenance import Maintenance
from .table.reads import Reads
from .table.table import MemoryTable
from .writing.expiry import Expiry
from .writing.pending_imports import PendingImports
from .writing.readonly import read_only_reason
from .writing.writer import Locks, WriteActivity, Writer
from .writing.writes import MemoryWrites

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Opened:
    """What opening the store found."""

    read_only_reason: str | None  # why it cannot be written (None: it can)


class MemoryStore(Store):
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
        self.now = clock  # every expiry is judged by it (tests move it)
        self.table, locks, reason = _open_table(db_path, model_id, dim, options)
        self.opened = Opened(reason)
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
        self.exact = ExactSearch(
            table, ExactIndex(table.dim, 2 * policy.vector_index_threshold), KeywordIndex(), self.indexed, clock
        )
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
        self.as_of = AsOfSearch(self.vector, self.history)
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

    # ---- how the surface is served: by the part each member names (protocol.py) --------------

    def _serve(self, member: Member[..., Any]) -> Any:
        return getattr(getattr(self, member.part), member.method.__name__)

    def _fact(self, fact: Fact[Any]) -> Any:
        return getattr(getattr(self, fact.part), fact.name)

    @property
    def ledger(self) -> AccessLedger:
        return self.accesses.ledger

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

    # ---- upkeep's (runtime/upkeep.py): not on the services' surface, so not on a confined store ----

    compaction_can_wait = Member("maintenance", Maintenance.compaction_can_wait, None)
    fts_lags = Member("maintenance", Maintenance.fts_lags, None)
    compact = Member("maintenance", Maintenance.compact, None)
    refresh_exact = Member("exact", ExactSearch.refresh, None)
    purge_expired = Member("writes", MemoryWrites.purge_expired, None)
    record_access = Member("accesses", AccessCounts.record, None)
    record_co_recall = Member("co_recall", CoRecall.record, None)

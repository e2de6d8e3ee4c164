"""MemoryStore: the store as one object, a facade over its parts.

Every method is synchronous and blocks: callers run them in worker threads, never on the event
loop. Writes are serialized by a lock shared by every thread and every process using the store
(writer.py); each public write is a single LanceDB commit, so it is either fully applied or not
at all.

The parts, one concern each, get what they use in their constructors (`_Parts.open` wires them):
the table (table.py: opening, the model check, reconnecting) and the writer (writer.py: lock,
commit, retry); reads (reads.py), vector search (vector_search.py), keyword search (fulltext.py),
recall's candidates (candidate_search.py), the in-memory exact copy (exact_index.py, exact_search.py),
access counts (access_counts.py, access_ledger.py), writes (writes.py), the version history
(history.py), relations (relations.py), co-recall links (co_recall.py) and maintenance
(maintenance.py). This class only forwards: services see it through the `Store` protocol
(protocol.py); upkeep and tests reach the parts through its public attributes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import SpatialMemoryError, StorageError
from .access_counts import AccessCounts
from .access_ledger import AccessLedger
from .candidate_search import CandidateSearch
from .candidates import Candidates
from .co_recall import MIN_STRENGTH, CoRecall
from .connection import SMALL_INDEX_CACHE_BYTES, connect, is_remote
from .exact_index import ExactIndex
from .exact_search import ExactSearch
from .expiry import Expiry
from .filters import Filter, metadata_matches
from .fulltext import FullTextSearch
from .history import RetiredState, VersionHistory
from .indexing import IndexPolicy, VectorIndexState
from .maintenance import Maintenance
from .readonly import read_only_reason
from .reads import Reads
from .records import ContentMatch, MemoryRecord, ScoredMemory, utc_now
from .recovery import Damage
from .relations import Relation, RelationGraph, Relations
from .schema import NamespaceInfo
from .table import MemoryTable
from .vector_search import NamespaceSearch, VectorSearch
from .writer import Locks, WriteActivity, Writer
from .writes import MemoryWrites

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreOptions:
    compact_fragment_threshold: int = 24
    version_retention_seconds: int = 60
    lock_timeout_seconds: float = 30.0
    index_cache_bytes: int | None = None  # None: sized by whether the table has a vector index
    index_policy: IndexPolicy = IndexPolicy()
    read_only: bool = False


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
    ) -> None:
        options = StoreOptions(
            compact_fragment_threshold,
            version_retention_seconds,
            lock_timeout_seconds,
            index_cache_bytes,
            index_policy or IndexPolicy(),
            read_only,
        )
        self.model_id = model_id
        self.dim = dim
        self.now = clock  # every expiry is judged by it (tests move it)
        self.table, locks, self.read_only_reason = _open_table(db_path, model_id, dim, options)
        self._wire(locks, options)
        self.fulltext.ensure_index()
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
        self.writer = Writer(table, locks, self.activity, self.exact.index, expiry)
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
        self.history = VersionHistory(table, self.writer)
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

    def one_version(self, version: int | None = None) -> AbstractContextManager[int]:
        return self.table.one_version(version)

    def stats(self) -> dict[str, Any]:
        return self.reads.stats()

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
            "lock": "read-only" if writer.read_only else writer.lock.probe(),
            "read_only": writer.read_only_message,
            "path": self.table.path,
        }

    # ---- upkeep (runtime/upkeep.py) ----------------------------------------------------------

    def needs_compaction(self) -> bool:
        return self.maintenance.needs_compaction()

    def compaction_can_wait(self) -> bool:
        return self.maintenance.compaction_can_wait()

    def fts_may_lag(self) -> bool:
        return self.maintenance.fts_may_lag()

    def fts_lags(self) -> bool:
        return self.maintenance.fts_lags()

    def compact(self) -> None:
        self.maintenance.compact()

    def refresh_exact(self) -> None:
        self.exact.refresh()

    def purge_expired(self) -> list[str]:
        return self.writes.purge_expired()

    def record_access(self, counts: dict[str, int], when: datetime | None = None) -> None:
        self.accesses.record(counts, when)

    def record_co_recall(self, pairs: Mapping[tuple[str, str], int], when: datetime | None = None) -> None:
        self.co_recall.record(pairs, when)

    # ---- reads -------------------------------------------------------------------------------

    def count(self, flt: Filter | None = None) -> int:
        return self.reads.count(flt)

    def get(self, memory_id: str, *, with_vector: bool = False) -> MemoryRecord | None:
        found = self.reads.get_many([memory_id], with_vectors=with_vector)
        return found[0] if found else None

    def get_many(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[MemoryRecord]:
        return self.reads.get_many(ids, with_vectors=with_vectors)

    def scan(
        self, flt: Filter | None = None, *, with_vectors: bool = False, limit: int | None = None
    ) -> list[MemoryRecord]:
        return self.reads.scan(flt, with_vectors=with_vectors, limit=limit)

    def nth(self, index: int, flt: Filter | None = None, *, with_vector: bool = False) -> MemoryRecord | None:
        return self.reads.nth(index, flt, with_vector=with_vector)

    def scan_arrow(self, columns: list[str], flt: Filter | None = None) -> pa.Table:
        return self.reads.scan_arrow(columns, flt)

    def pinned(self, namespace: str | None, limit: int) -> list[MemoryRecord]:
        return self.reads.pinned(namespace, limit)

    def neighbours(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None = None) -> list[MemoryRecord]:
        return self.reads.neighbours(windows, flt)

    def namespaces(self) -> list[NamespaceInfo]:
        return self.reads.namespaces()

    def search(
        self,
        vector: np.ndarray,
        limit: int,
        flt: Filter | None = None,
        *,
        min_similarity: float = 0.0,
        with_vectors: bool = False,
    ) -> list[ScoredMemory]:
        return self.vector.search(vector, limit, flt, min_similarity=min_similarity, with_vectors=with_vectors)

    def closest_contents(
        self, vectors: np.ndarray, limit: int, flt: Filter | None = None, *, exact_only: bool = False
    ) -> list[list[ContentMatch]] | None:
        return self.vector.closest_contents(vectors, limit, flt, exact_only=exact_only)

    def fts_search(
        self, text: str, limit: int, flt: Filter | None = None, *, with_vectors: bool = False
    ) -> list[tuple[MemoryRecord, float]]:
        return self.fulltext.search(text, limit, flt, with_vectors=with_vectors)

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

    def search_candidates(self, vector: np.ndarray, limit: int, flt: Filter | None) -> Candidates:
        return self.candidates.search(vector, limit, flt)

    def fts_candidates(self, text: str, limit: int, flt: Filter | None) -> tuple[Candidates, list[float]]:
        return self.candidates.keyword(text, limit, flt)

    def neighbour_candidates(self, windows: Sequence[tuple[str, int, int]], flt: Filter | None) -> Candidates:
        return self.candidates.neighbours(windows, flt)

    def materialize(self, candidates: Candidates, indices: Sequence[int]) -> list[MemoryRecord | None]:
        return self.candidates.materialize(candidates, indices)

    def retired(self, ids: Sequence[str]) -> list[RetiredState]:
        return self.history.retired(ids)

    def history_arrow(self, flt: Filter | None) -> pa.Table:
        return self.history.history_arrow(flt)

    def relation_graph(self) -> RelationGraph:
        return self.relations.graph()

    def relations_of(self, ids: Sequence[str]) -> list[Relation]:
        return self.relations.of(ids)

    def current_relations(self) -> list[Relation]:
        return self.relations.current()

    def co_recall_links(self, ids: Iterable[str], *, minimum: float = MIN_STRENGTH) -> list[tuple[str, str, float]]:
        return self.co_recall.links(ids, minimum=minimum)

    # ---- writes ------------------------------------------------------------------------------

    def exclusive(self) -> AbstractContextManager[None]:
        return self.writer.exclusive()

    def add(self, records: Sequence[MemoryRecord]) -> None:
        self.writes.add(records)

    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        self.writes.upsert(records)

    def replace(self, new_records: Sequence[MemoryRecord], delete_ids: Sequence[str]) -> None:
        self.writes.replace(new_records, delete_ids)

    def rewrite(self, record: MemoryRecord, previous: MemoryRecord, max_versions: int) -> None:
        self.writes.rewrite(record, previous, max_versions)

    def supersede(
        self,
        successors: Sequence[MemoryRecord],
        closed: Sequence[MemoryRecord],
        successor_of: dict[str, str],
        max_versions: int,
    ) -> None:
        self.writes.supersede(successors, closed, successor_of, max_versions)

    def restore_history(self, states: Sequence[RetiredState]) -> None:
        self.history.restore(states)

    def update_where(self, flt: Filter, values: dict[str, Any]) -> int:
        return self.writes.update_where(flt, values)

    def delete_ids(self, ids: Iterable[str]) -> list[str]:
        return self.writes.delete_ids(ids)

    def delete_where(self, flt: Filter, *, live: bool = True, extra: str | None = None) -> list[str]:
        return self.writes.delete_where(flt, live=live, extra=extra)

    def relate(self, relations: Sequence[Relation]) -> None:
        self.relations.relate(relations)

    def unrelate(self, source_id: str, target_id: str, relation: str | None) -> list[Relation]:
        return self.relations.unrelate(source_id, target_id, relation)

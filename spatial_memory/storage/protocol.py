"""`Store`: everything services may call on the store, and nothing else, each member said once.

Each line names the part of MemoryStore that serves the member (`Member`: that part's method of
the same signature; `Fact`: its attribute) and how a team principal is confined on it
(confinement.py's checks; `PASSED`: a fact or a lock, as it is; `WRITTEN_OUT`: ConfinedStore
writes it out). Two classes are Stores: MemoryStore (store.py), the whole store, which calls the
part, and ConfinedStore (confined.py), the store as one principal of a team server sees it, which
confines the call as said here. Services hold a `Store` (`Resources.store()`), never either class.

A new store method is the part's method plus one line here: MemoryStore forwards it and
ConfinedStore confines it from this line (tests/test_team_server.py checks every member is).
"""

# pyarrow ships no types: the members returning a pa.Table (scan_arrow, history_arrow) are partly Unknown.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false, reportUnknownVariableType=false

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import confinement as confined
from .repair.recovery import Damage
from .search.as_of_search import AsOfSearch
from .search.candidate_search import CandidateSearch
from .search.fulltext import FullTextSearch
from .search.vector_search import VectorSearch
from .side_tables.co_recall import CoRecall
from .side_tables.history import VersionHistory
from .side_tables.relations import Relations
from .surface import PASSED, WRITTEN_OUT, Fact, Member
from .table.maintenance import Maintenance
from .table.reads import Reads
from .table.table import MemoryTable
from .writing.writer import Writer
from .writing.writes import MemoryWrites


class Store:
    # ---- facts about the store itself ------------------------------------------------------

    dim = Fact[int]("table")
    model_id = Fact[str]("table")
    read_only = Fact[bool]("writer")
    read_only_reason = Fact[str | None]("opened")
    damage = Fact[Damage | None]("table")
    version = Fact[int]("table")
    data_version = Fact[int]("table")

    one_version = Member("table", MemoryTable.one_version, PASSED)  # which version this thread's reads check
    needs_compaction = Member("maintenance", Maintenance.needs_compaction, PASSED)
    fts_may_lag = Member("maintenance", Maintenance.fts_may_lag, PASSED)
    stats = Member("reads", Reads.stats, WRITTEN_OUT)

    def health_facts(self) -> dict[str, Any]:
        """Cheap facts for the health tool: rows, table version, index state, the write lock."""
        raise NotImplementedError  # each store says them (store.py, confined.py)

    # ---- reads -----------------------------------------------------------------------------

    count = Member("reads", Reads.count, confined.AS_IS)
    get = Member("reads", Reads.get, confined.RECORD)
    get_many = Member("reads", Reads.get_many, confined.RECORDS)
    scan = Member("reads", Reads.scan, confined.RECORDS)
    nth = Member("reads", Reads.nth, confined.RECORD)
    scan_arrow = Member("reads", Reads.scan_arrow, confined.ROWS)
    pinned = Member("reads", Reads.pinned, WRITTEN_OUT)
    neighbours = Member("reads", Reads.neighbours, confined.RECORDS)
    namespaces = Member("reads", Reads.namespaces, confined.NAMESPACES)
    search = Member("vector", VectorSearch.search, confined.HITS)
    closest_contents = Member("vector", VectorSearch.closest_contents, confined.CONTENT_MATCHES)
    fts_search = Member("fulltext", FullTextSearch.search, confined.SCORED_RECORDS)
    as_of_search = Member("as_of", AsOfSearch.search, confined.HITS)
    search_candidates = Member("candidates", CandidateSearch.search, confined.CANDIDATES)
    fts_candidates = Member("candidates", CandidateSearch.keyword, confined.SCORED_CANDIDATES)
    neighbour_candidates = Member("candidates", CandidateSearch.neighbours, confined.CANDIDATES)
    materialize = Member("candidates", CandidateSearch.materialize, confined.RECORDS_IN_PLACE)
    retired = Member("history", VersionHistory.retired, confined.RETIRED)
    history_arrow = Member("history", VersionHistory.history_arrow, confined.ROWS)
    relation_graph = Member("relations", Relations.graph, WRITTEN_OUT)
    relations_of = Member("relations", Relations.of, WRITTEN_OUT)
    current_relations = Member("relations", Relations.current, confined.RELATIONS)
    co_recall_links = Member("co_recall", CoRecall.links, WRITTEN_OUT)

    # ---- writes ----------------------------------------------------------------------------

    exclusive = Member("writer", Writer.exclusive, PASSED)  # the write lock, held across a read-modify-write
    all_or_nothing = Member("writes", MemoryWrites.all_or_nothing, PASSED)  # across tables, each write confined
    add = Member("writes", MemoryWrites.add, confined.WRITES_RECORDS)
    upsert = Member("writes", MemoryWrites.upsert, confined.WRITES_RECORDS)
    replace = Member("writes", MemoryWrites.replace, confined.REPLACES)
    rewrite = Member("writes", MemoryWrites.rewrite, confined.REWRITES)
    supersede = Member("writes", MemoryWrites.supersede, confined.SUPERSEDES)
    restore_history = Member("history", VersionHistory.restore, confined.RESTORES)
    update_where = Member("writes", MemoryWrites.update_where, confined.RENAME)
    delete_ids = Member("writes", MemoryWrites.delete_ids, WRITTEN_OUT)
    delete_where = Member("writes", MemoryWrites.delete_where, confined.FILTER_ONLY)
    relate = Member("relations", Relations.relate, WRITTEN_OUT)
    add_imported = Member("writes", MemoryWrites.add_imported, WRITTEN_OUT)
    unrelate = Member("relations", Relations.unrelate, WRITTEN_OUT)

    # ---- how a store class serves them ------------------------------------------------------

    def _serve(self, member: Member[..., Any]) -> Callable[..., Any]:
        raise NotImplementedError

    def _fact(self, fact: Fact[Any]) -> Any:
        raise NotImplementedError


def members() -> dict[str, Member[..., Any] | Fact[Any]]:
    """Every declared member of the surface, by name."""
    return {name: value for name, value in vars(Store).items() if isinstance(value, (Member, Fact))}

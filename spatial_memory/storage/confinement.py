"""The checks a confined store applies (protocol.py names one beside each member of the surface).

A read's check gets what the store returned and keeps what the principal may read: every record,
hit, candidate, row and relation outside the scope is dropped. A write's check gets the call's
arguments by name before it runs and refuses a record outside the writable namespaces, or an id
that already belongs to a namespace the principal cannot write.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..records import ContentMatch, MemoryRecord, ScoredMemory
from .search.candidates import Candidates
from .side_tables.history import RetiredState
from .side_tables.relations import Relation
from .surface import Principal, Read, Write
from .table.schema import NamespaceInfo

# ---- what a read returns, confined ----------------------------------------------------------


def _as_is(confined: Principal, value: int) -> int:
    return value  # the confined filter alone decided (a count)


def _record(confined: Principal, record: MemoryRecord | None) -> MemoryRecord | None:
    return record if confined.visible(record) else None


def _records(confined: Principal, records: list[MemoryRecord]) -> list[MemoryRecord]:
    return [r for r in records if confined.visible(r)]


def _records_in_place(confined: Principal, records: list[MemoryRecord | None]) -> list[MemoryRecord | None]:
    return [r if confined.visible(r) else None for r in records]  # positions matter (materialize)


def _hits(confined: Principal, hits: list[ScoredMemory]) -> list[ScoredMemory]:
    return [h for h in hits if confined.visible(h.record)]


def _scored_records(confined: Principal, found: list[tuple[MemoryRecord, float]]) -> list[tuple[MemoryRecord, float]]:
    return [(r, s) for r, s in found if confined.visible(r)]


def _content_matches(confined: Principal, found: list[list[ContentMatch]] | None) -> list[list[ContentMatch]] | None:
    return None if found is None else [[m for m in hits if confined.readable(m.namespace)] for hits in found]


def _kept(confined: Principal, found: Candidates) -> list[int] | None:
    """The positions of the candidates the principal may read; None when it may read them all."""
    mine = confined.readable_ids()
    keep = [i for i, memory_id in enumerate(found.ids) if memory_id in mine]
    return None if len(keep) == len(found) else keep


def _candidates(confined: Principal, found: Candidates) -> Candidates:
    keep = _kept(confined, found)
    return found if keep is None else found.take(keep)


def _scored_candidates(confined: Principal, found: tuple[Candidates, list[float]]) -> tuple[Candidates, list[float]]:
    candidates, scores = found
    keep = _kept(confined, candidates)
    return found if keep is None else (candidates.take(keep), [scores[i] for i in keep])


def _rows(confined: Principal, table: pa.Table) -> pa.Table:
    """An Arrow table's rows the principal may read: by their namespace, else by their id; a table
    with neither column was read under the confined filter alone."""
    if "namespace" in table.column_names:
        keep = [confined.readable(n) for n in table.column("namespace").to_pylist()]
    elif "id" in table.column_names:
        mine = confined.readable_ids()
        keep = [i in mine for i in table.column("id").to_pylist()]
    else:
        return table
    return table if all(keep) else table.filter(keep)


def _retired(confined: Principal, states: list[RetiredState]) -> list[RetiredState]:
    return [s for s in states if confined.visible(s.record)]


def _namespaces(confined: Principal, infos: list[NamespaceInfo]) -> list[NamespaceInfo]:
    return [n for n in infos if confined.readable(n.name)]


def _relations(confined: Principal, relations: list[Relation]) -> list[Relation]:
    return confined.between_mine(relations)


AS_IS = Read(_as_is)
RECORD = Read(_record)
RECORDS = Read(_records)
RECORDS_IN_PLACE = Read(_records_in_place)
HITS = Read(_hits)
SCORED_RECORDS = Read(_scored_records)
CONTENT_MATCHES = Read(_content_matches)
CANDIDATES = Read(_candidates)
SCORED_CANDIDATES = Read(_scored_candidates)
ROWS = Read(_rows)
RETIRED = Read(_retired)
NAMESPACES = Read(_namespaces)
RELATIONS = Read(_relations)

# ---- what a write is allowed to touch, checked before it runs ---------------------------------


def _nothing_more(confined: Principal, arguments: dict[str, Any]) -> None:
    return None  # the confined filter alone decides what it touches


def _rename(confined: Principal, arguments: dict[str, Any]) -> None:
    if "namespace" in arguments["values"]:  # a rename: the new name must be the principal's too
        confined.check_namespace_write(str(arguments["values"]["namespace"]))


FILTER_ONLY = Write(_nothing_more)
RENAME = Write(_rename)
WRITES_RECORDS = Write(lambda c, a: c.check_writes(a["records"]))
REPLACES = Write(lambda c, a: c.check_writes(a["new_records"], a["delete_ids"]))
REWRITES = Write(lambda c, a: c.check_writes([a["record"], a["previous"]]))
SUPERSEDES = Write(lambda c, a: c.check_writes([*a["successors"], *a["closed"]]))
RESTORES = Write(lambda c, a: c.check_writes([s.record for s in a["states"]]))

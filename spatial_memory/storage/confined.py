"""ConfinedStore: the store as one principal of a team server sees it.

Every service reaches the store through `Resources.store()`; a principal's requests get this
wrapper instead (auth/principal.py builds it), so a service that forgets a namespace check still
cannot read or change another principal's memories. It wraps the `Store` protocol (protocol.py),
and each member of the protocol is confined in exactly one of four ways:

- `_FACTS`: facts about the store itself, not about any memory, passed through;
- `_READS`: the method's `flt` argument (when it has one) is intersected with the principal's
  readable namespaces (a typed SQL clause from auth/scope.py), and what it returns is checked again
  by the function listed beside it: every record, hit, candidate, row and relation outside the
  scope is dropped;
- `_WRITES`: the method's `flt` argument is confined to the writable namespaces, and the check
  beside it refuses a written record outside them, or a write to an id that already belongs to a
  namespace the principal cannot write (an imported file naming a foreign id must not overwrite it);
- methods written out below, for the few whose arguments change (ids narrowed to the readable
  ones) or whose answer is built anew (counts, the relation graph).

Anything else does not exist for a confined request (AttributeError, an internal error): a store
method a service starts using fails closed until the protocol and this module list it, and
tests/test_team_server.py checks that every member of the protocol is confined here.

Memories outside the scope are simply absent, so id-based tools answer MemoryNotFoundError
for them, exactly as for an id that never existed.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from ..errors import MemoryNotFoundError
from .candidates import Candidates
from .filters import MAX_LIST_VALUES, Filter, both, build_filter
from .history import RetiredState
from .protocol import Store
from .records import ContentMatch, MemoryRecord, ScoredMemory
from .relations import Relation, RelationGraph


class Scope(Protocol):
    """The namespaces one principal may read and write (auth/scope.py's NamespaceScope)."""

    def can_read(self, namespace: str) -> bool: ...

    def can_write(self, namespace: str) -> bool: ...

    def check_write(self, namespace: str) -> None:
        """Raise the typed error that says the principal may not write there."""

    def filter(self) -> Filter:
        """The readable namespaces, as a filter."""

    def write_filter(self) -> Filter:
        """The writable namespaces, as a filter."""


class ConfinedStore:
    def __init__(self, store: Store, scope: Scope) -> None:
        self._store = store
        self._scope = scope
        self._lock = threading.Lock()
        self._ids: tuple[int, frozenset[str]] | None = None
        self._graph: tuple[Any, RelationGraph] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _FACTS:
            return getattr(self._store, name)
        if name in _READS:
            return functools.partial(self._call, name, _READS[name], write=False)
        if name in _WRITES:
            return functools.partial(self._call, name, _WRITES[name], write=True)
        raise AttributeError(f"Store.{name} is not available to a confined request (storage/confined.py)")

    def _call(self, name: str, check: Callable[[ConfinedStore, Any], Any], *args: Any, write: bool, **kwargs: Any):
        """Call the store's `name` with its `flt` argument confined; `check` then sees the arguments
        by name (a write, before the call) or the result (a read, which it returns confined)."""
        at = _filter_position(name)
        if at is not None:
            if len(args) > at:
                args = (*args[:at], self._confine(args[at], write=write), *args[at + 1 :])
            else:
                kwargs["flt"] = self._confine(kwargs.get("flt"), write=write)
        if write:
            check(self, _signature(name).bind(*args, **kwargs).arguments)
        result = getattr(self._store, name)(*args, **kwargs)
        return result if write else check(self, result)

    def wraps(self, store: Store) -> bool:
        return self._store is store

    # ---- what the principal may see ---------------------------------------------------------

    def _confine(self, flt: Filter | None, *, write: bool = False) -> Filter:
        scope = self._scope
        allowed = scope.can_write if write else scope.can_read
        if flt is not None and flt.only_namespace is not None and allowed(flt.only_namespace):
            return flt  # already one namespace of the scope: the exact copy can still answer
        own = scope.write_filter() if write else scope.filter()
        return own if flt is None else both(flt, own)

    def visible(self, record: MemoryRecord | None) -> bool:
        return record is not None and self._scope.can_read(record.namespace)

    def readable(self, namespace: str) -> bool:
        return self._scope.can_read(namespace)

    def readable_ids(self) -> frozenset[str]:
        """The ids of every memory the principal may read, read once per table version."""
        version = self._store.version
        with self._lock:
            if self._ids is not None and self._ids[0] == version:
                return self._ids[1]
        ids = frozenset(self._store.scan_arrow(["id"], self._scope.filter()).column("id").to_pylist())
        with self._lock:
            self._ids = (version, ids)
        return ids

    def between_mine(self, relations: Iterable[Relation]) -> list[Relation]:
        mine = self.readable_ids()
        return [r for r in relations if r.source_id in mine and r.target_id in mine]

    def _owners(self, ids: Sequence[str]) -> dict[str, str]:
        """The namespace of each of these ids that exists, whoever owns it."""
        owners: dict[str, str] = {}
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), MAX_LIST_VALUES):
            table = self._store.scan_arrow(
                ["id", "namespace"], build_filter(ids=wanted[start : start + MAX_LIST_VALUES])
            )
            owners.update(zip(table.column("id").to_pylist(), table.column("namespace").to_pylist()))
        return owners

    def check_writes(self, records: Sequence[MemoryRecord], removed: Sequence[str] = ()) -> None:
        """Every record in a writable namespace, and no id among them (or `removed`) owned by a
        namespace the principal cannot write."""
        for r in records:
            self._scope.check_write(r.namespace)
        for memory_id, namespace in self._owners([*(r.id for r in records), *removed]).items():
            if not self._scope.can_write(namespace):
                if self._scope.can_read(namespace):
                    self._scope.check_write(namespace)
                raise MemoryNotFoundError(f"Memory not found: {memory_id}")

    def check_namespace_write(self, namespace: str) -> None:
        self._scope.check_write(namespace)

    def _writable_ids(self, ids: Iterable[str]) -> list[str]:
        """The ids of writable memories among these; a readable one that is not writable refuses."""
        owners = self._owners([i for i in dict.fromkeys(ids) if isinstance(i, str)])
        for namespace in set(owners.values()):
            if self._scope.can_read(namespace):
                self._scope.check_write(namespace)
        return [i for i, namespace in owners.items() if self._scope.can_write(namespace)]

    # ---- methods whose arguments or answers are built anew ------------------------------------

    def stats(self) -> dict[str, Any]:
        return {**self._store.stats(), "num_rows": self._store.count(self._confine(None))}

    def health_facts(self) -> dict[str, Any]:
        return {**self._store.health_facts(), "rows": self._store.count(self._confine(None))}

    def pinned(self, namespace: str | None, limit: int) -> list[MemoryRecord]:
        if namespace is not None:
            return _records(self, self._store.pinned(namespace, limit)) if self.readable(namespace) else []
        found: list[MemoryRecord] = []
        for info in self.namespaces():
            found += self._store.pinned(info.name, limit)
        found.sort(key=lambda r: (-r.importance, r.created_at, r.id))
        return _records(self, found[:limit])

    def relation_graph(self) -> RelationGraph:
        graph = self._store.relation_graph()
        mine = self.readable_ids()
        with self._lock:
            if self._graph is not None and self._graph[0] == (graph.version, mine):
                return self._graph[1]
        confined = RelationGraph(graph.version, self.between_mine(graph.relations))
        with self._lock:
            self._graph = ((graph.version, mine), confined)
        return confined

    def relations_of(self, ids: Sequence[str]) -> list[Relation]:
        mine = self.readable_ids()
        return self.between_mine(self._store.relations_of([i for i in ids if i in mine]))

    def co_recall_links(self, ids: Iterable[str], **options: Any) -> list[tuple[str, str, float]]:
        mine = self.readable_ids()
        links = self._store.co_recall_links([i for i in ids if i in mine], **options)
        return [link for link in links if link[0] in mine and link[1] in mine]

    def delete_ids(self, ids: Iterable[str]) -> list[str]:
        return self._store.delete_ids(self._writable_ids(ids))

    def relate(self, relations: Sequence[Relation]) -> None:
        self._writable_ids([e for r in relations for e in (r.source_id, r.target_id)])
        mine = self.readable_ids()
        missing = next((e for r in relations for e in (r.source_id, r.target_id) if e not in mine), None)
        if missing is not None:
            raise MemoryNotFoundError(f"Memory not found: {missing}")
        self._store.relate(relations)

    def add_imported(
        self, records: Sequence[MemoryRecord], states: Sequence[RetiredState], relations: Sequence[Relation]
    ) -> None:
        """As `add`, `restore_history` and `relate` together: a relation's end the import does not
        write must be a memory the principal can read and write."""
        self.check_writes([*records, *(s.record for s in states)])
        written = {r.id for r in records}
        outside = [e for r in relations for e in (r.source_id, r.target_id) if e not in written]
        self._writable_ids(outside)
        mine = self.readable_ids()
        missing = next((e for e in outside if e not in mine), None)
        if missing is not None:
            raise MemoryNotFoundError(f"Memory not found: {missing}")
        self._store.add_imported(records, states, relations)

    def unrelate(self, source_id: str, target_id: str, relation: str | None) -> list[Relation]:
        mine = self.readable_ids()
        if source_id not in mine or target_id not in mine:
            return []
        self._writable_ids([source_id, target_id])
        return self._store.unrelate(source_id, target_id, relation)


@functools.cache
def _signature(name: str) -> inspect.Signature:
    """The protocol's signature of `name`, without `self`."""
    signature = inspect.signature(getattr(Store, name))
    return signature.replace(parameters=list(signature.parameters.values())[1:])


@functools.cache
def _filter_position(name: str) -> int | None:
    """Where the protocol's method `name` takes its `flt` argument when passed by position; None
    when it has none."""
    for position, parameter in enumerate(_signature(name).parameters.values()):
        if parameter.name == "flt":
            if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
                raise TypeError(f"Store.{name}: its flt must be passable by position or by name")
            return position
    return None


# ---- what a read returns, confined ----------------------------------------------------------


def _as_is(confined: ConfinedStore, value: Any) -> Any:
    return value  # the confined filter alone decided (a count)


def _record(confined: ConfinedStore, record: MemoryRecord | None) -> MemoryRecord | None:
    return record if confined.visible(record) else None


def _records(confined: ConfinedStore, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    return [r for r in records if confined.visible(r)]


def _records_in_place(confined: ConfinedStore, records: Iterable[MemoryRecord | None]) -> list[MemoryRecord | None]:
    return [r if confined.visible(r) else None for r in records]  # positions matter (materialize)


def _hits(confined: ConfinedStore, hits: Iterable[ScoredMemory]) -> list[ScoredMemory]:
    return [h for h in hits if confined.visible(h.record)]


def _scored_records(confined: ConfinedStore, found: Iterable[tuple[MemoryRecord, float]]):
    return [(r, s) for r, s in found if confined.visible(r)]


def _content_matches(confined: ConfinedStore, found: list[list[ContentMatch]] | None):
    return None if found is None else [[m for m in hits if confined.readable(m.namespace)] for hits in found]


def _kept(confined: ConfinedStore, found: Candidates) -> list[int] | None:
    """The positions of the candidates the principal may read; None when it may read them all."""
    mine = confined.readable_ids()
    keep = [i for i, memory_id in enumerate(found.ids) if memory_id in mine]
    return None if len(keep) == len(found) else keep


def _candidates(confined: ConfinedStore, found: Candidates) -> Candidates:
    keep = _kept(confined, found)
    return found if keep is None else found.take(keep)


def _scored_candidates(confined: ConfinedStore, found: tuple[Candidates, list[float]]):
    candidates, scores = found
    keep = _kept(confined, candidates)
    return found if keep is None else (candidates.take(keep), [scores[i] for i in keep])


def _rows(confined: ConfinedStore, table: pa.Table) -> pa.Table:
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


def _retired(confined: ConfinedStore, states: Iterable[Any]) -> list[Any]:
    return [s for s in states if confined.visible(s.record)]


def _namespaces(confined: ConfinedStore, infos: Iterable[Any]) -> list[Any]:
    return [n for n in infos if confined.readable(n.name)]


def _relations(confined: ConfinedStore, relations: Iterable[Relation]) -> list[Relation]:
    return confined.between_mine(relations)


# ---- what a write is allowed to touch, checked before it runs ---------------------------------


def _nothing_more(confined: ConfinedStore, arguments: dict[str, Any]) -> None:
    return None  # the confined filter alone decides what it touches


def _rename(confined: ConfinedStore, arguments: dict[str, Any]) -> None:
    if "namespace" in arguments["values"]:  # a rename: the new name must be the principal's too
        confined.check_namespace_write(str(arguments["values"]["namespace"]))


_FACTS = frozenset(
    {
        "dim",
        "model_id",
        "read_only",
        "read_only_reason",
        "damage",
        "version",
        "data_version",
        "one_version",  # which version this thread's reads check
        "needs_compaction",
        "fts_may_lag",
        "exclusive",  # the write lock: held across a read-modify-write, itself confined
        "all_or_nothing",  # the same across writes to several tables, each of them confined
    }
)

_READS: dict[str, Callable[[ConfinedStore, Any], Any]] = {
    "count": _as_is,
    "get": _record,
    "get_many": _records,
    "scan": _records,
    "nth": _record,
    "scan_arrow": _rows,
    "neighbours": _records,
    "namespaces": _namespaces,
    "search": _hits,
    "closest_contents": _content_matches,
    "fts_search": _scored_records,
    "as_of_search": _hits,
    "search_candidates": _candidates,
    "fts_candidates": _scored_candidates,
    "neighbour_candidates": _candidates,
    "materialize": _records_in_place,
    "retired": _retired,
    "history_arrow": _rows,
    "current_relations": _relations,
}

_WRITES: dict[str, Callable[[ConfinedStore, dict[str, Any]], None]] = {
    "add": lambda c, a: c.check_writes(a["records"]),
    "upsert": lambda c, a: c.check_writes(a["records"]),
    "replace": lambda c, a: c.check_writes(a["new_records"], a["delete_ids"]),
    "rewrite": lambda c, a: c.check_writes([a["record"], a["previous"]]),
    "supersede": lambda c, a: c.check_writes([*a["successors"], *a["closed"]]),
    "restore_history": lambda c, a: c.check_writes([s.record for s in a["states"]]),
    "update_where": _rename,
    "delete_where": _nothing_more,
}

# The methods written out above.
_WRITTEN_OUT = frozenset(
    {
        "stats",
        "health_facts",
        "pinned",
        "relation_graph",
        "relations_of",
        "co_recall_links",
        "delete_ids",
        "relate",
        "add_imported",
        "unrelate",
    }
)


def confinement_of(name: str) -> str | None:
    """How the protocol member `name` is confined ("fact", "read", "write", "written out"), or None
    when it is not (tests/test_team_server.py checks every member of Store has one)."""
    for kind, names in (("fact", _FACTS), ("read", _READS), ("write", _WRITES), ("written out", _WRITTEN_OUT)):
        if name in names:
            return kind
    return None

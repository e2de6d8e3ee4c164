"""ConfinedStore: the MemoryStore as one principal of a team server sees it.

Every service reaches the store through `Resources.store()`; a principal's requests get this
wrapper instead (auth/principal.py builds it), so a service that forgets a namespace check still
cannot read or change another principal's memories:

- every read filter is intersected with the principal's readable namespaces (a typed SQL clause
  from auth/scope.py), and every record, candidate and relation returned is checked again;
- every written record must be in a writable namespace, and no write may land on an id that
  already belongs to a namespace the principal cannot write (an imported file naming a foreign id
  must not overwrite it);
- deletes and updates are confined to the writable namespaces;
- a method not listed here does not exist for a confined request (AttributeError, an internal
  error): a new store method used by a service fails closed until it is confined here.

Memories outside the scope are simply absent, so id-based tools answer MemoryNotFoundError
for them, exactly as for an id that never existed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import MemoryNotFoundError
from .filters import MAX_LIST_VALUES, Filter, both, build_filter

if TYPE_CHECKING:
    from ..auth.scope import NamespaceScope
    from .candidates import Candidates
    from .records import MemoryRecord
    from .relations import Relation, RelationGraph

# Facts about the store itself, not about any memory, and one_version (which version this
# thread's reads check): passed through unchanged.
_STORE_FACTS = frozenset(
    {
        "dim",
        "model_id",
        "read_only",
        "read_only_reason",
        "version",
        "data_version",
        "needs_compaction",
        "fts_may_lag",
        "damage",
        "one_version",
    }
)


class ConfinedStore:
    def __init__(self, store: Any, scope: NamespaceScope) -> None:
        self._store = store
        self._scope = scope
        self._lock = threading.Lock()
        self._ids: tuple[int, frozenset[str]] | None = None
        self._graph: tuple[Any, RelationGraph] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _STORE_FACTS:
            return getattr(self._store, name)
        raise AttributeError(f"MemoryStore.{name} is not available to a confined request (storage/confined.py)")

    # ---- what the principal may see ---------------------------------------------------------

    def _confine(self, flt: Filter | None, *, write: bool = False) -> Filter:
        scope = self._scope
        allowed = scope.can_write if write else scope.can_read
        if flt is not None and flt.only_namespace is not None and allowed(flt.only_namespace):
            return flt  # already one namespace of the scope: the exact copy can still answer
        own = scope.write_filter() if write else scope.filter()
        return own if flt is None else both(flt, own)

    def _visible(self, record: MemoryRecord | None) -> bool:
        return record is not None and self._scope.can_read(record.namespace)

    def _mine(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        return [r for r in records if self._visible(r)]

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

    def _check_writes(self, records: Sequence[MemoryRecord], removed: Sequence[str] = ()) -> None:
        for r in records:
            self._scope.check_write(r.namespace)
        for memory_id, namespace in self._owners([*(r.id for r in records), *removed]).items():
            if not self._scope.can_write(namespace):
                if self._scope.can_read(namespace):
                    self._scope.check_write(namespace)
                raise MemoryNotFoundError(f"Memory not found: {memory_id}")

    # ---- reads ---------------------------------------------------------------------------

    def count(self, flt: Filter | None = None) -> int:
        return self._store.count(self._confine(flt))

    def get(self, memory_id: str, *, with_vector: bool = False) -> MemoryRecord | None:
        record = self._store.get(memory_id, with_vector=with_vector)
        return record if self._visible(record) else None

    def get_many(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[MemoryRecord]:
        return self._mine(self._store.get_many(ids, with_vectors=with_vectors))

    def scan(self, flt: Filter | None = None, *, with_vectors: bool = False, limit: int | None = None):
        return self._mine(self._store.scan(self._confine(flt), with_vectors=with_vectors, limit=limit))

    def nth(self, index: int, flt: Filter | None = None, *, with_vector: bool = False) -> MemoryRecord | None:
        record = self._store.nth(index, self._confine(flt), with_vector=with_vector)
        return record if self._visible(record) else None

    def scan_arrow(self, columns: list[str], flt: Filter | None = None):
        table = self._store.scan_arrow(columns, self._confine(flt))
        if "namespace" in table.column_names:
            return self._readable_rows(table)
        if "id" in table.column_names:
            mine = self.readable_ids()
            keep = [i in mine for i in table.column("id").to_pylist()]
            return table if all(keep) else table.filter(keep)
        return table  # the confined where clause alone decided

    def history_arrow(self, flt: Filter | None):
        return self._readable_rows(self._store.history_arrow(self._confine(flt)))

    def _readable_rows(self, table):
        """The rows of an Arrow table (with a namespace column) in namespaces the principal may read."""
        keep = [self._scope.can_read(n) for n in table.column("namespace").to_pylist()]
        return table if all(keep) else table.filter(keep)

    def retired(self, ids: Sequence[str]):
        return [s for s in self._store.retired(ids) if self._visible(s.record)]

    def pinned(self, namespace: str | None, limit: int) -> list[MemoryRecord]:
        if namespace is not None:
            return self._mine(self._store.pinned(namespace, limit)) if self._scope.can_read(namespace) else []
        found: list[MemoryRecord] = []
        for name in self.namespace_names():
            found += self._store.pinned(name, limit)
        found.sort(key=lambda r: (-r.importance, r.created_at, r.id))
        return self._mine(found[:limit])

    def search(self, vector, limit: int, flt: Filter | None = None, **options: Any):
        return [h for h in self._store.search(vector, limit, self._confine(flt), **options) if self._visible(h.record)]

    def closest_contents(self, vectors, limit: int, flt: Filter | None = None, **options: Any):
        found = self._store.closest_contents(vectors, limit, self._confine(flt), **options)
        return None if found is None else [[m for m in hits if self._scope.can_read(m.namespace)] for hits in found]

    def as_of_search(self, vector, limit: int, flt: Filter, moment):
        return [
            h for h in self._store.as_of_search(vector, limit, self._confine(flt), moment) if self._visible(h.record)
        ]

    def fts_search(self, text: str, limit: int, flt: Filter | None = None, **options: Any):
        return [
            (r, s) for r, s in self._store.fts_search(text, limit, self._confine(flt), **options) if self._visible(r)
        ]

    def neighbours(self, windows, flt: Filter | None = None) -> list[MemoryRecord]:
        return self._mine(self._store.neighbours(windows, self._confine(flt)))

    def _kept(self, found: Candidates) -> list[int] | None:
        """The positions of the candidates the principal may read; None when it may read them all."""
        mine = self.readable_ids()
        keep = [i for i, memory_id in enumerate(found.ids) if memory_id in mine]
        return None if len(keep) == len(found) else keep

    def _candidates(self, found: Candidates) -> Candidates:
        keep = self._kept(found)
        return found if keep is None else found.take(keep)

    def search_candidates(self, vector, limit: int, flt: Filter | None) -> Candidates:
        return self._candidates(self._store.search_candidates(vector, limit, self._confine(flt)))

    def fts_candidates(self, text: str, limit: int, flt: Filter | None):
        found, scores = self._store.fts_candidates(text, limit, self._confine(flt))
        keep = self._kept(found)
        return (found, scores) if keep is None else (found.take(keep), [scores[i] for i in keep])

    def neighbour_candidates(self, windows, flt: Filter | None) -> Candidates:
        return self._candidates(self._store.neighbour_candidates(windows, self._confine(flt)))

    def materialize(self, candidates: Candidates, indices: Sequence[int]) -> list[MemoryRecord | None]:
        return [r if self._visible(r) else None for r in self._store.materialize(candidates, indices)]

    def namespace_names(self) -> list[str]:
        return [n.name for n in self.namespaces()]

    def namespaces(self):
        return [n for n in self._store.namespaces() if self._scope.can_read(n.name)]

    def stats(self) -> dict[str, Any]:
        return {**self._store.stats(), "num_rows": self.count()}

    def health_facts(self) -> dict[str, Any]:
        return {**self._store.health_facts(), "rows": self.count()}

    # ---- connections -----------------------------------------------------------------------

    def _between_mine(self, relations: Iterable[Relation]) -> list[Relation]:
        mine = self.readable_ids()
        return [r for r in relations if r.source_id in mine and r.target_id in mine]

    def relation_graph(self) -> RelationGraph:
        from .relations import RelationGraph

        graph = self._store.relation_graph()
        mine = self.readable_ids()
        with self._lock:
            if self._graph is not None and self._graph[0] == (graph.version, mine):
                return self._graph[1]
        confined = RelationGraph(graph.version, self._between_mine(graph.relations))
        with self._lock:
            self._graph = ((graph.version, mine), confined)
        return confined

    def relations_of(self, ids: Sequence[str]) -> list[Relation]:
        mine = self.readable_ids()
        return self._between_mine(self._store.relations_of([i for i in ids if i in mine]))

    def current_relations(self) -> list[Relation]:
        return self._between_mine(self._store.current_relations())

    def co_recall_links(self, ids: Iterable[str], **options: Any) -> list[tuple[str, str, float]]:
        mine = self.readable_ids()
        links = self._store.co_recall_links([i for i in ids if i in mine], **options)
        return [link for link in links if link[0] in mine and link[1] in mine]

    # ---- writes ----------------------------------------------------------------------------

    def exclusive(self) -> Iterator[None]:
        return self._store.exclusive()

    def all_or_nothing(self) -> Iterator[None]:
        return self._store.all_or_nothing()

    def _writable_ids(self, ids: Iterable[str]) -> list[str]:
        """The ids of writable memories among these; a readable one that is not writable refuses."""
        owners = self._owners([i for i in dict.fromkeys(ids) if isinstance(i, str)])
        for namespace in set(owners.values()):
            if self._scope.can_read(namespace):
                self._scope.check_write(namespace)
        return [i for i, namespace in owners.items() if self._scope.can_write(namespace)]

    def add(self, records: Sequence[MemoryRecord]) -> None:
        self._check_writes(records)
        self._store.add(records)

    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        self._check_writes(records)
        self._store.upsert(records)

    def replace(self, new_records: Sequence[MemoryRecord], delete_ids: Sequence[str]) -> None:
        self._check_writes(new_records, delete_ids)
        self._store.replace(new_records, delete_ids)

    def rewrite(self, record: MemoryRecord, previous: MemoryRecord, max_versions: int) -> None:
        self._check_writes([record, previous])
        self._store.rewrite(record, previous, max_versions)

    def supersede(self, successors, closed, successor_of, max_versions: int) -> None:
        self._check_writes([*successors, *closed])
        self._store.supersede(successors, closed, successor_of, max_versions)

    def restore_history(self, states) -> None:
        self._check_writes([s.record for s in states])
        self._store.restore_history(states)

    def update_where(self, flt: Filter, values: dict[str, Any]) -> int:
        if "namespace" in values:  # a rename: the new name must be the principal's too
            self._scope.check_write(str(values["namespace"]))
        return self._store.update_where(self._confine(flt, write=True), values)

    def delete_ids(self, ids: Iterable[str]) -> list[str]:
        return self._store.delete_ids(self._writable_ids(ids))

    def delete_where(self, flt: Filter, **options: Any) -> list[str]:
        return self._store.delete_where(self._confine(flt, write=True), **options)

    def relate(self, relations: Sequence[Relation]) -> None:
        self._writable_ids([e for r in relations for e in (r.source_id, r.target_id)])
        mine = self.readable_ids()
        if any(r.source_id not in mine or r.target_id not in mine for r in relations):
            missing = next(e for r in relations for e in (r.source_id, r.target_id) if e not in mine)
            raise MemoryNotFoundError(f"Memory not found: {missing}")
        self._store.relate(relations)

    def unrelate(self, source_id: str, target_id: str, relation: str | None) -> list[Relation]:
        mine = self.readable_ids()
        if source_id not in mine or target_id not in mine:
            return []
        self._writable_ids([source_id, target_id])
        return self._store.unrelate(source_id, target_id, relation)

"""ConfinedStore: the store as one principal of a team server sees it.

Every service reaches the store through `Resources.store()`; a principal's requests get this
wrapper instead (auth/principal.py builds it), so a service that forgets a namespace check still
cannot read or change another principal's memories. It is a `Store` (protocol.py), whose every
member says once how a principal is confined on it, and serves each as said:

- `PASSED`: facts about the store itself, not about any memory, and the locks, as they are;
- a read (`Read`): the method's `flt` argument (when it has one) is intersected with the
  principal's readable namespaces (a typed SQL clause from auth/scope.py), and what it returns is
  checked again by the check named beside it (confinement.py): every record, hit, candidate, row
  and relation outside the scope is dropped;
- a write (`Write`): the method's `flt` argument is confined to the writable namespaces, and the
  check beside it refuses a written record outside them, or a write to an id that already belongs
  to a namespace the principal cannot write (an imported file naming a foreign id must not
  overwrite it);
- `WRITTEN_OUT`: the methods written out below, whose arguments change (ids narrowed to the
  readable ones) or whose answer is built anew (counts, the relation graph).

Anything else does not exist for a confined request (AttributeError, an internal error): a store
member without a confinement fails closed, and tests/test_team_server.py checks that every member
of the surface has one.

Memories outside the scope are simply absent, so id-based tools answer MemoryNotFoundError
for them, exactly as for an id that never existed.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from ..errors import MemoryNotFoundError
from ..records import MemoryRecord
from .filters import Filter, both, build_filter, chunks
from .protocol import Store
from .side_tables.co_recall import MIN_STRENGTH
from .side_tables.history import RetiredState
from .side_tables.relations import Relation, RelationGraph
from .surface import Fact, Member, Passed, Read, Write, WrittenOut

R = TypeVar("R")


class NamespacePermissions(Protocol):
    """The namespaces one principal may read and write (auth/scope.py's NamespaceScope)."""

    def can_read(self, namespace: str) -> bool: ...

    def can_write(self, namespace: str) -> bool: ...

    def check_write(self, namespace: str) -> None:
        """Raise the typed error that says the principal may not write there."""

    def filter(self) -> Filter:
        """The readable namespaces, as a filter."""
        ...

    def write_filter(self) -> Filter:
        """The writable namespaces, as a filter."""
        ...


class ConfinedStore(Store):
    def __init__(self, store: Store, scope: NamespacePermissions) -> None:
        self._store = store
        self._scope = scope
        self._lock = threading.Lock()
        self._ids: tuple[int, frozenset[str]] | None = None
        self._graph: tuple[Any, RelationGraph] | None = None

    # ---- how the surface is served: confined as each member says (protocol.py) -------------------

    def _fact(self, fact: Fact[Any]) -> Any:
        return getattr(self._store, fact.name)

    def _serve(self, member: Member[..., Any]) -> Callable[..., Any]:
        confined = member.confined
        if isinstance(confined, Passed):
            return getattr(self._store, member.name)
        if isinstance(confined, Read):
            return functools.partial(self._read, member, confined)
        if isinstance(confined, Write):
            return functools.partial(self._write, member, confined)
        # WrittenOut is served by the method of that name below; anything else fails closed
        raise AttributeError(f"Store.{member.name} is not available to a confined request (storage/confined.py)")

    def _read(self, member: Member[..., R], read: Read[R], *args: Any, **kwargs: Any) -> R:
        """The store's `member` with its `flt` argument confined to the readable namespaces, and
        what it returns checked again."""
        args, kwargs = self._confined_filter(member, args, kwargs, write=False)
        found: R = getattr(self._store, member.name)(*args, **kwargs)
        return read.check(self, found)

    def _write(self, member: Member[..., Any], write: Write, *args: Any, **kwargs: Any) -> Any:
        """The store's `member` with its `flt` argument confined to the writable namespaces, after
        its check has seen the arguments by name."""
        args, kwargs = self._confined_filter(member, args, kwargs, write=True)
        write.check(self, _signature(member).bind(*args, **kwargs).arguments)
        return getattr(self._store, member.name)(*args, **kwargs)

    def _confined_filter(
        self, member: Member[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, write: bool
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        at = _filter_position(member)
        if at is None:
            return args, kwargs
        if len(args) > at:
            return (*args[:at], self._confine(args[at], write=write), *args[at + 1 :]), kwargs
        return args, {**kwargs, "flt": self._confine(kwargs.get("flt"), write=write)}

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
        for chunk in chunks(wanted):
            table = self._store.scan_arrow(["id", "namespace"], build_filter(ids=chunk))
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
            return (
                [r for r in self._store.pinned(namespace, limit) if self.visible(r)] if self.readable(namespace) else []
            )
        found: list[MemoryRecord] = []
        for info in self.namespaces():
            found += self._store.pinned(info.name, limit)
        found.sort(key=lambda r: (-r.importance, r.created_at, r.id))
        return [r for r in found[:limit] if self.visible(r)]

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

    def co_recall_links(self, ids: Iterable[str], *, minimum: float = MIN_STRENGTH) -> list[tuple[str, str, float]]:
        mine = self.readable_ids()
        links = self._store.co_recall_links([i for i in ids if i in mine], minimum=minimum)
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
def _signature(member: Member[..., Any]) -> inspect.Signature:
    """The part's signature of the member, without `self`."""
    signature = inspect.signature(member.method)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


@functools.cache
def _filter_position(member: Member[..., Any]) -> int | None:
    """Where the member takes its `flt` argument when passed by position; None when it has none."""
    for position, parameter in enumerate(_signature(member).parameters.values()):
        if parameter.name == "flt":
            if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
                raise TypeError(f"Store.{member.name}: its flt must be passable by position or by name")
            return position
    return None


def confinement_of(name: str) -> str | None:
    """How the member `name` of the store's surface is confined ("fact", "read", "write",
    "written out"), or None when it is not on the surface (a confined store has no such member)."""
    member = vars(Store).get(name)
    if isinstance(member, Fact) or (isinstance(member, Member) and isinstance(member.confined, Passed)):
        return "fact"
    if isinstance(member, Member) and member.confined is not None:
        kinds = {Read: "read", Write: "write", WrittenOut: "written out"}
        written_out = isinstance(member.confined, WrittenOut)
        if written_out and name not in vars(ConfinedStore):
            return None  # declared written out, but not written: it fails closed
        return kinds[type(member.confined)]
    if callable(member) and name in vars(ConfinedStore):
        return "written out"  # a method each store writes itself (health_facts)
    return None

"""How a member of the store's surface is declared once: `Member` (a method: the part that serves
it and how a team principal is confined on it) and `Fact` (a fact about the store itself).

`Store` (protocol.py) is a list of these, one line each. A store class says how it serves a member
(`_serve`, `_fact`): MemoryStore (store.py) calls the part's method, ConfinedStore (confined.py)
confines it as declared. For type checkers a member reads as the part's method itself
(`store.search` has `VectorSearch.search`'s signature, without its `self`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

if TYPE_CHECKING:  # named in annotations only
    from collections.abc import Iterable, Sequence

    from ..records import MemoryRecord
    from .side_tables.relations import Relation

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class Principal(Protocol):
    """What the confinement checks ask of a confined store (confined.py's ConfinedStore)."""

    def visible(self, record: MemoryRecord | None) -> bool: ...

    def readable(self, namespace: str) -> bool: ...

    def readable_ids(self) -> frozenset[str]: ...

    def between_mine(self, relations: Iterable[Relation]) -> list[Relation]: ...

    def check_writes(self, records: Sequence[MemoryRecord], removed: Sequence[str] = ()) -> None: ...

    def check_namespace_write(self, namespace: str) -> None: ...


@dataclass(frozen=True)
class Passed:
    """Passed through as it is: a fact about the store, or a lock whose writes are confined themselves."""


@dataclass(frozen=True)
class Read(Generic[R]):
    """Its `flt` argument (when it has one) intersected with the readable namespaces; `check` drops
    from what it returns whatever the principal may not read."""

    check: Callable[[Principal, R], R]


@dataclass(frozen=True)
class Write:
    """Its `flt` argument (when it has one) confined to the writable namespaces; `check` sees the
    arguments by name before the call and raises when they reach outside them."""

    check: Callable[[Principal, dict[str, Any]], None]


@dataclass(frozen=True)
class WrittenOut:
    """ConfinedStore writes it out: its arguments are narrowed, or its answer is built anew."""


PASSED = Passed()
WRITTEN_OUT = WrittenOut()


class Serves(Protocol):
    """A store class: how it serves a declared member and a declared fact."""

    def _serve(self, member: Member[..., Any]) -> Callable[..., Any]: ...

    def _fact(self, fact: Fact[Any]) -> Any: ...


class Member(Generic[P, R]):
    """One method of the store's surface: the same method of the part named `part` (an attribute
    of MemoryStore), confined on a team server as `confined` says (None: not on the services'
    surface at all, so a confined store has no such member)."""

    def __init__(
        self,
        part: str,
        method: Callable[Concatenate[Any, P], R],
        confined: Passed | Read[R] | Write | WrittenOut | None,
    ) -> None:
        self.part = part
        self.method = method
        self.confined = confined
        self.name = method.__name__  # the store's name for it, once the class says (__set_name__)
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, store: None, owner: type[Any]) -> Member[P, R]: ...

    @overload
    def __get__(self, store: Serves, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(self, store: Serves | None, owner: type[Any] | None = None) -> Member[P, R] | Callable[P, R]:
        if store is None:
            return self
        return store._serve(self)  # pyright: ignore[reportPrivateUsage] - the store classes' half of this protocol

    def __call__(self, store: Serves, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Called on the class (`MemoryStore.search(store, ...)`), as a method can be."""
        return store._serve(self)(*args, **kwargs)  # pyright: ignore[reportPrivateUsage] - as above


class Fact(Generic[T]):
    """A fact about the store itself (not about any memory): the attribute of the same name of the
    part named `part`, passed through as it is on a confined store."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, store: None, owner: type[Any]) -> Fact[T]: ...

    @overload
    def __get__(self, store: Serves, owner: type[Any] | None = None) -> T: ...

    def __get__(self, store: Serves | None, owner: type[Any] | None = None) -> Fact[T] | T:
        if store is None:
            return self
        value: T = store._fact(self)  # pyright: ignore[reportPrivateUsage] - the store classes' half of this protocol
        return value

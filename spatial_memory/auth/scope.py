"""NamespaceScope: which namespaces one authenticated principal may read and write.

A pattern is an exact namespace name, or a prefix ending in `*` (`team-*` matches `team-a`,
`team-b`, ...; a lone `*` matches every namespace). Writable namespaces are readable too.
Stdio and unauthenticated localhost HTTP carry no scope at all (None): full access, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import PermissionDeniedError
from ..storage.filters import Filter, build_filter, quote


def _matches(pattern: str, namespace: str) -> bool:
    if pattern.endswith("*"):
        return namespace.startswith(pattern[:-1])
    return namespace == pattern


def _escape_like(prefix: str) -> str:
    """A LIKE pattern matching strings that start with `prefix` (its %, _ and \\ taken literally)."""
    escaped = quote(prefix)[1:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"'{escaped}%'"


@dataclass(frozen=True)
class NamespaceScope:
    principal: str
    writable: tuple[str, ...]
    read_only: tuple[str, ...] = ()
    # Who vouches for the principal ("" for the tokens file, the issuer for OAuth): an OAuth subject
    # named like a tokens-file principal is still someone else (its own export/import folder).
    realm: str = ""

    @classmethod
    def of(
        cls, principal: str, writable: Iterable[str], read_only: Iterable[str] = (), *, realm: str = ""
    ) -> NamespaceScope:
        write = tuple(dict.fromkeys(p for p in writable if p))
        return cls(principal, write, tuple(p for p in dict.fromkeys(read_only) if p and p not in write), realm)

    @property
    def readable(self) -> tuple[str, ...]:
        return self.writable + self.read_only

    def can_read(self, namespace: str) -> bool:
        return any(_matches(p, namespace) for p in self.readable)

    def can_write(self, namespace: str) -> bool:
        return any(_matches(p, namespace) for p in self.writable)

    def check_read(self, namespace: str, what: str = "namespace") -> None:
        if not self.can_read(namespace):
            raise PermissionDeniedError(self._refusal(namespace, what, self.readable))

    def check_write(self, namespace: str, what: str = "namespace") -> None:
        if not self.can_write(namespace):
            if self.can_read(namespace):
                raise PermissionDeniedError(
                    f"{what} '{namespace[:100]}' is read-only for {self.principal}; "
                    f"namespaces it may write: {self._listing(self.writable)}"
                )
            raise PermissionDeniedError(self._refusal(namespace, what, self.writable))

    def _refusal(self, namespace: str, what: str, allowed: tuple[str, ...]) -> str:
        return (
            f"{what} '{namespace[:100]}' is not available to {self.principal}; "
            f"namespaces it may use: {self._listing(allowed)}"
        )

    @staticmethod
    def _listing(patterns: tuple[str, ...]) -> str:
        return ", ".join(patterns) if patterns else "none"

    def sql(self, *, write: bool = False) -> str:
        """A where clause true exactly for the memories of readable (writable) namespaces, built from
        typed values only."""
        patterns = self.writable if write else self.readable
        if "*" in patterns:
            return "true"
        exact = [p for p in patterns if not p.endswith("*")]
        parts = [f"namespace IN ({', '.join(quote(p) for p in exact)})"] if exact else []
        parts += [f"namespace LIKE {_escape_like(p[:-1])} ESCAPE '\\'" for p in patterns if p.endswith("*")]
        return "(" + " OR ".join(parts) + ")" if parts else "false"

    def filter(self, *, write: bool = False) -> Filter:
        """The filter of `sql`; one exact namespace keeps the exact in-memory copy's fast path."""
        patterns = self.writable if write else self.readable
        if len(patterns) == 1 and not patterns[0].endswith("*"):
            return build_filter(namespace=patterns[0])
        return Filter(self.sql(write=write), [], None, frozenset({"namespace"}))

    def write_filter(self) -> Filter:
        return self.filter(write=True)

    def check_arguments(self, arguments: Any, *, writes: bool) -> None:
        """Refuse (PermissionDeniedError) a tool call naming a namespace outside the scope, wherever
        the namespace argument sits (remember_batch's items included). `writes`: the tool changes
        memories, so `namespace` must be writable; a rename's or an import's target always must."""
        if isinstance(arguments, dict):
            for key, value in arguments.items():
                if key in _NAMESPACE_LISTS and isinstance(value, list):
                    for name in value:
                        if isinstance(name, str):
                            self.check_read(name, key)
                elif key in _NAMESPACE_ARGUMENTS and isinstance(value, str):
                    if writes or key in _WRITTEN_NAMESPACES:
                        self.check_write(value, key)
                    else:
                        self.check_read(value, key)
                elif key == "namespace" and isinstance(value, dict):  # a filter: {"eq": name} or {"in": [names]}
                    for op in _NAMING_OPERATORS:
                        named = value.get(op)
                        for name in [named] if isinstance(named, str) else named if isinstance(named, list) else []:
                            if isinstance(name, str):
                                self.check_read(name, key)
                else:
                    self.check_arguments(value, writes=writes)
        elif isinstance(arguments, list):
            for item in arguments:
                self.check_arguments(item, writes=writes)


# Tool arguments naming a namespace (tools/*.py); a test checks every such argument is listed.
_NAMESPACE_ARGUMENTS = frozenset({"namespace", "namespace_override", "old_namespace", "new_namespace"})
_WRITTEN_NAMESPACES = frozenset({"namespace_override", "old_namespace", "new_namespace"})
_NAMESPACE_LISTS = frozenset({"namespaces"})
# Filter operators naming the namespaces to read (storage/filters.py); the others (ne, nin, contains)
# name none exactly: the confined store alone answers them.
_NAMING_OPERATORS = ("eq", "in")

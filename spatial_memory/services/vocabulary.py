"""The names a store holds - namespaces and tags - for argument completion."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..limits import MAX_COMPLETIONS
from .base import Service
from .cache import VersionedCache

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store

NameKind = Literal["namespace", "tag"]


@dataclass(frozen=True)
class NameMatches:
    values: list[str]  # at most `limit`, most used first
    total: int  # every match
    has_more: bool


class VocabularyService(Service):
    def __init__(self, resources) -> None:
        super().__init__(resources)
        # Names per (table version, kind, namespace restriction): a keystroke costs no scan.
        self._names = VersionedCache(size=8)

    def names(
        self,
        kind: NameKind,
        prefix: str = "",
        *,
        namespaces: Collection[str] | None = None,
        limit: int = MAX_COMPLETIONS,
    ) -> NameMatches:
        """The namespace or tag names of live memories starting with `prefix` (case-insensitive),
        most used first. `namespaces`: only names found in these namespaces (None: every one)."""
        store = self._resources.store()
        within = None if namespaces is None else frozenset(namespaces)
        key = (store.data_version, kind, within)
        ranked = self._names.get(key)
        if ranked is None:
            ranked = _ranked_names(store, kind, within)
            self._names.put(key, ranked)
        folded = prefix.casefold()
        matching = [name for name in ranked if name.casefold().startswith(folded)] if folded else list(ranked)
        return NameMatches(values=matching[:limit], total=len(matching), has_more=len(matching) > limit)


def _ranked_names(store: Store, kind: NameKind, within: frozenset[str] | None) -> tuple[str, ...]:
    """Distinct names, the most memories first, then alphabetically."""
    # Not at the top: pyarrow.compute loads with the heavy imports before the first call
    # (runtime/imports.py), not while the App is built at start-up.
    import pyarrow as pa
    import pyarrow.compute as pc

    if within is not None and not within:
        return ()
    column = "namespace" if kind == "namespace" else "tags"
    table = store.scan_arrow(list({"namespace", column}))
    if within is not None:
        table = table.filter(
            pc.call_function(
                "is_in", [table.column("namespace")], pc.SetLookupOptions(pa.array(sorted(within), pa.string()))
            )
        )
    values = table.column(column)
    if kind == "tag":
        values = pc.call_function("list_flatten", [values])
    counts = pc.call_function("value_counts", [pc.call_function("drop_null", [values])]).to_pylist()
    counts.sort(key=lambda item: (-item["counts"], item["values"]))
    return tuple(item["values"] for item in counts)

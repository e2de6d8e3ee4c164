"""The atlas page's JSON operations: each checks its arguments and makes the service calls the
tools make (the same services, so the same validation, scoping and errors).

`run(app, name, arguments)` returns the JSON-ready answer or raises a SpatialMemoryError; the web
server turns that into `{"error", "message"}` (atlas/server.py). A team server hands in the
principal's App, so the page sees and changes only that principal's namespaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ValidationError
from ..records import Provenance

MAX_HITS = 50
HISTORY_VERSIONS = 100
NEIGHBOURS = 6
JOURNEY_STEPS = 8
EDITABLE = ("content", "tags", "importance", "memory_type", "pinned")
_KINDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "to": (str,),
    "query": (str,),
    "content": (str,),
    "memory_type": (str,),
    "tags": (list,),
    "importance": (int, float),
    "pinned": (bool,),
    "version": (int,),
    "limit": (int,),
    "namespace": (str, type(None)),
}


def _arguments(name: str, given: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise ValidationError(f"{name}: the body must be a JSON object")
    unknown = sorted(set(given) - set(required) - set(optional))
    if unknown:
        raise ValidationError(
            f"{name}: unknown argument(s) {', '.join(unknown)}; accepted: {', '.join(required + optional)}"
        )
    missing = [k for k in required if k not in given]
    if missing:
        raise ValidationError(f"{name}: missing {', '.join(missing)}")
    for key, value in given.items():
        kinds = _KINDS[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ValidationError(f"{name}: {key} has the wrong type ({type(value).__name__})")
    if "tags" in given and not all(isinstance(t, str) for t in given["tags"]):
        raise ValidationError(f"{name}: tags must be strings")
    return given


def _origin() -> Provenance:
    return Provenance(via="update", client="spatial-memory atlas")


def _dump(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json")


def atlas_map(app: Any, given: Any) -> dict[str, Any]:
    _arguments("map", given, ())
    return _dump(app.atlas.map())


def recall(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("recall", given, ("query",), ("limit", "namespace"))
    limit = a.get("limit", 20)
    if not 1 <= limit <= MAX_HITS:
        raise ValidationError(f"recall: limit must be from 1 to {MAX_HITS}")
    return _dump(app.search.recall(a["query"], limit=limit, namespace=a.get("namespace")))


def memory(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("memory", given, ("id",))
    found = app.revisions.get_memories([a["id"]])
    if not found.memories:
        return {"memory": None, "neighbours": []}
    current = found.memories[0].current
    near = app.search.nearby(a["id"], limit=NEIGHBOURS).neighbors if current else []
    return {
        "memory": found.memories[0].model_dump(mode="json"),
        "neighbours": [n.model_dump(mode="json") for n in near],
    }


def update(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("update", given, ("id",), EDITABLE)
    changes = {k: a[k] for k in EDITABLE if k in a}
    return _dump(app.revisions.update_memory(a["id"], provenance=_origin(), **changes))


def forget(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("forget", given, ("id",))
    return _dump(app.memory.forget(a["id"]))


def history(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("history", given, ("id",))
    return _dump(app.revisions.memory_history(a["id"], limit=HISTORY_VERSIONS, diff=True))


def revert(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("revert", given, ("id", "version"))
    return _dump(app.revisions.update_memory(a["id"], revert_to=a["version"], provenance=_origin()))


def journey(app: Any, given: Any) -> dict[str, Any]:
    a = _arguments("journey", given, ("id", "to"))
    return _dump(app.spatial.journey(a["id"], a["to"], steps=JOURNEY_STEPS, neighbors_per_step=1))


OPERATIONS: dict[str, Callable[[Any, Any], dict[str, Any]]] = {
    "map": atlas_map,
    "recall": recall,
    "memory": memory,
    "update": update,
    "forget": forget,
    "history": history,
    "revert": revert,
    "journey": journey,
}
# The operations that change the store (the page asks before a forget; the server logs them).
CHANGING = frozenset({"update", "forget", "revert"})


def run(app: Any, name: str, arguments: Any) -> dict[str, Any]:
    operation = OPERATIONS.get(name)
    if operation is None:
        raise ValidationError(f"unknown operation {name[:40]!r}; known: {', '.join(OPERATIONS)}")
    return operation(app, arguments)

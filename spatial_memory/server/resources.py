"""MCP resources: the store's statistics, its namespaces, a namespace's newest memories, one memory.

Each read runs one service method in a worker thread, like a tool, and returns its typed
result as JSON. A missing memory or namespace, or a namespace a team server's principal may not
read, is an invalid-params error naming its type (as the SDK answers a resource not found); other
typed errors keep their message. `read_json` is the same read for a URI outside a request (resource
subscriptions compare what a subscriber would read before and after a write: subscriptions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import pydantic
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from ..auth.principal import current_scope
from ..errors import (
    MemoryNotFoundError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    SpatialMemoryError,
    ValidationError,
)
from ..procedures.skill_file import PREFIX as SKILLS_PREFIX
from ..tools.atlas_app import ATLAS_URI, MCP_APP_MIME
from ..tools.calls import in_worker
from ..tools.lean import is_short_id
from .mcp_server import SpatialMemoryMCPServer

if TYPE_CHECKING:
    from ..auth.scope import NamespaceScope

JSON = "application/json"
RECENT_LIMIT = 20
STATS_URI = "memory://stats"
NAMESPACES_URI = "memory://namespaces"
RECENT_TEMPLATE = "memory://{namespace}/recent"
MEMORY_PREFIX = "memory://memory/"
# The served skills as a whole (their entries: URI, frontmatter, digest), watched for
# notifications/resources/list_changed (server/skills.py); a skill's file is SKILLS_URI<name>/SKILL.md.
SKILLS_URI = SKILLS_PREFIX

Reader = Callable[[Any], pydantic.BaseModel]


def reader(uri: str) -> tuple[Reader, str | None] | None:
    """What reading `uri` runs (`fn(app)`) and the namespace it names (None: no namespace), or None
    when `uri` is none of this server's resources."""
    if uri == STATS_URI:
        return _stats, None
    if uri == NAMESPACES_URI:
        return _namespaces, None
    if uri == SKILLS_URI:
        return _skills, None
    if uri.startswith(MEMORY_PREFIX) and "/" not in uri[len(MEMORY_PREFIX) :]:
        return _memory(uri[len(MEMORY_PREFIX) :]), None
    if uri.startswith("memory://") and uri.endswith("/recent"):
        namespace = uri[len("memory://") : -len("/recent")]
        if namespace and "/" not in namespace:
            return _recent(namespace), namespace
    return None


def _stats(app: Any) -> pydantic.BaseModel:
    return app.namespaces.stats(include_index_details=False)


def _namespaces(app: Any) -> pydantic.BaseModel:
    return app.namespaces.namespaces(include_stats=True)


class SkillEntries(pydantic.BaseModel):
    skills: list[dict[str, Any]]


def _skills(app: Any) -> pydantic.BaseModel:
    return SkillEntries(skills=[f.entry() for f in app.procedures.skills()])


def _recent(namespace: str) -> Reader:
    return lambda app: app.memory.recent(namespace, limit=RECENT_LIMIT)


def _memory(memory_id: str) -> Reader:
    """One memory by its id, whole or short as results show it (tools/lean.py); a short one that
    begins several memories' ids is an AmbiguousIdError, one that begins none MemoryNotFoundError."""

    def read(app: Any) -> pydantic.BaseModel:
        full = app.memory.full_ids([memory_id]).get(memory_id, memory_id) if is_short_id(memory_id) else memory_id
        return app.memory.memory(full)

    return read


def read_json(app: Any, uri: str, scope: NamespaceScope | None) -> str | None:
    """What `scope`'s principal reads at `uri` now (blocking: a worker thread), None when it cannot
    read it (not found, not its namespace, not one of ours)."""
    found = reader(uri)
    if found is None:
        return None
    fn, namespace = found
    if scope is not None and namespace is not None and not scope.can_read(namespace):
        return None
    try:
        return in_worker(fn)(app.for_scope(scope)).model_dump_json()
    except SpatialMemoryError:
        return None


async def _read(server: SpatialMemoryMCPServer, fn: Reader, *, namespace: str | None = None) -> str:
    """`fn(app)` as JSON; `namespace`: the one the URI names, which a team server's principal must
    be allowed to read."""
    app = server.app  # static resources get no request context (SDK), so the lifespan's App from the server
    if app is None:
        raise ResourceError("the server is not running")
    scope = current_scope()
    app = app.for_scope(scope)  # a team server's principal reads only its namespaces
    try:
        if scope is not None and namespace is not None:
            scope.check_read(namespace)
        result = await anyio.to_thread.run_sync(in_worker(fn), app, abandon_on_cancel=True)
    # Invalid params, as the SDK answers a not-found resource: the URI names something the caller cannot read.
    except (MemoryNotFoundError, NamespaceNotFoundError, ValidationError, PermissionDeniedError) as exc:
        raise ResourceNotFoundError(f"{exc.error_type}: {exc.message}") from exc
    except SpatialMemoryError as exc:
        raise ResourceError(f"{exc.error_type}: {exc.message}") from exc
    return result.model_dump_json()


def register_resources(server: SpatialMemoryMCPServer) -> None:
    @server.resource(STATS_URI, name="stats", description="Store statistics (the stats tool).", mime_type=JSON)
    async def stats() -> str:
        return await _read(server, _stats)

    @server.resource(
        NAMESPACES_URI,
        name="namespaces",
        description="Namespaces with memory counts and date ranges.",
        mime_type=JSON,
    )
    async def namespaces() -> str:
        return await _read(server, _namespaces)

    @server.resource(
        RECENT_TEMPLATE,
        name="recent",
        description=f"The {RECENT_LIMIT} newest memories of a namespace, newest first.",
        mime_type=JSON,
    )
    async def recent(namespace: str) -> str:
        return await _read(server, _recent(namespace), namespace=namespace)

    @server.resource(
        ATLAS_URI,
        name="atlas",
        title="Memory atlas",
        description="The memory's map and browser (an MCP App: visualize and recall open it).",
        mime_type=MCP_APP_MIME,
    )
    async def atlas() -> str:
        from ..atlas.page import document  # here: its files are read when a host first asks, not at start

        return document("app")

    @server.resource(
        f"{MEMORY_PREFIX}{{memory_id}}",
        name="memory",
        description="One memory by id (whole, or short as results show it).",
        mime_type=JSON,
    )
    async def memory(memory_id: str) -> str:
        return await _read(server, _memory(memory_id))

"""MCP resources: the store's statistics, its namespaces, a namespace's newest memories, one memory.

Each read runs one service method in a worker thread, like a tool, and returns its typed
result as JSON. A missing memory or namespace, or a namespace a team server's principal may not
read, is an invalid-params error naming its type (as the SDK answers a resource not found); other
typed errors keep their message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pydantic
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from ..atlas import ATLAS_URI, MCP_APP_MIME
from ..auth.principal import current_scope
from ..errors import (
    MemoryNotFoundError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    SpatialMemoryError,
    ValidationError,
)
from ..tools.calls import in_worker
from .mcp_server import SpatialMemoryMCPServer

JSON = "application/json"
RECENT_LIMIT = 20
RECENT_TEMPLATE = "memory://{namespace}/recent"


async def _read(
    server: SpatialMemoryMCPServer, fn: Callable[[Any], pydantic.BaseModel], *, namespace: str | None = None
) -> str:
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
    @server.resource("memory://stats", name="stats", description="Store statistics (the stats tool).", mime_type=JSON)
    async def stats() -> str:
        return await _read(server, lambda app: app.namespaces.stats(include_index_details=False))

    @server.resource(
        "memory://namespaces",
        name="namespaces",
        description="Namespaces with memory counts and date ranges.",
        mime_type=JSON,
    )
    async def namespaces() -> str:
        return await _read(server, lambda app: app.namespaces.namespaces(include_stats=True))

    @server.resource(
        RECENT_TEMPLATE,
        name="recent",
        description=f"The {RECENT_LIMIT} newest memories of a namespace, newest first.",
        mime_type=JSON,
    )
    async def recent(namespace: str) -> str:
        return await _read(server, lambda app: app.memory.recent(namespace, limit=RECENT_LIMIT), namespace=namespace)

    @server.resource(
        ATLAS_URI,
        name="atlas",
        title="Memory atlas",
        description="The memory's map and browser (an MCP App: visualize and recall open it).",
        mime_type=MCP_APP_MIME,
    )
    async def atlas() -> str:
        from ..atlas.page import document

        return document("app")

    @server.resource("memory://memory/{memory_id}", name="memory", description="One memory by id.", mime_type=JSON)
    async def memory(memory_id: str) -> str:
        return await _read(server, lambda app: app.memory.memory(memory_id))

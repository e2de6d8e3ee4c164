"""MCP resources: the store's statistics, its namespaces, a namespace's newest memories, one memory.

Each read runs one service method in a worker thread, like a tool, and returns its typed
result as JSON. A missing memory or namespace is a resource-not-found error (JSON-RPC
invalid params); other typed errors keep their message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pydantic
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from ..auth.principal import current_scope
from ..errors import MemoryNotFoundError, NamespaceNotFoundError, SpatialMemoryError, ValidationError
from ..tools.calls import in_worker
from .mcp_server import SpatialMemoryMCPServer

JSON = "application/json"
RECENT_LIMIT = 20


async def _read(server: SpatialMemoryMCPServer, fn: Callable[[Any], pydantic.BaseModel]) -> str:
    app = server.app  # static resources get no request context (SDK), so the lifespan's App from the server
    if app is None:
        raise ResourceError("the server is not running")
    app = app.for_scope(current_scope())  # a team server's principal reads only its namespaces
    try:
        result = await anyio.to_thread.run_sync(in_worker(fn), app, abandon_on_cancel=True)
    except (MemoryNotFoundError, NamespaceNotFoundError, ValidationError) as exc:
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
        "memory://{namespace}/recent",
        name="recent",
        description=f"The {RECENT_LIMIT} newest memories of a namespace, newest first.",
        mime_type=JSON,
    )
    async def recent(namespace: str) -> str:
        return await _read(server, lambda app: app.memory.recent(namespace, limit=RECENT_LIMIT))

    @server.resource("memory://memory/{memory_id}", name="memory", description="One memory by id.", mime_type=JSON)
    async def memory(memory_id: str) -> str:
        return await _read(server, lambda app: app.memory.memory(memory_id))

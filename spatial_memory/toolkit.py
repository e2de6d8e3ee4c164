"""The tool layer's plumbing: run service calls off the event loop, and turn every
outcome into a CallToolResult (structured content plus the same JSON as text).

Errors are handled here and only here: a SpatialMemoryError becomes its typed
`{"error", "message", "isError"}` result; anything unexpected becomes InternalError
with a short reference id, its traceback going to stderr only.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import pydantic
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from .errors import SpatialMemoryError

log = logging.getLogger("spatial_memory.tools")

T = TypeVar("T")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
UPDATING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
CHANGING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def success(result: pydantic.BaseModel) -> CallToolResult:
    data = result.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=_json(data))], structured_content=data)


def failure(error_type: str, message: str) -> CallToolResult:
    data = {"error": error_type, "message": message, "isError": True}
    return CallToolResult(content=[TextContent(type="text", text=_json(data))], structured_content=data, is_error=True)


def internal_failure(where: str) -> CallToolResult:
    reference = uuid.uuid4().hex[:8]
    log.exception("internal error in %s (reference %s)", where, reference)
    return failure("InternalError", f"An internal error occurred. Reference: {reference}")


def describe_validation_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        location = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{location}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "Invalid arguments: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


async def call(ctx: Context, fn: Callable[[Any], pydantic.BaseModel]) -> CallToolResult:
    """Run `fn(app)` in a worker thread and wrap its result or error."""
    app = ctx.request_context.lifespan_context
    try:
        result = await anyio.to_thread.run_sync(fn, app)
    except SpatialMemoryError as exc:
        log.info("%s: %s", exc.error_type, exc.message)
        return failure(exc.error_type, exc.message)
    except Exception:  # noqa: BLE001 - the one place unexpected errors are caught
        return internal_failure(getattr(fn, "__qualname__", "tool"))
    return success(result)


class SpatialMemoryMCPServer(MCPServer):
    """MCPServer whose argument-validation failures come back as typed ValidationError results."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, pydantic.ValidationError):
                return failure("ValidationError", describe_validation_error(cause))
            if isinstance(cause, SpatialMemoryError):
                return failure(cause.error_type, cause.message)
            if str(exc).startswith("Unknown tool"):
                return failure("ValidationError", f"Unknown tool: {name[:100]}")
            return internal_failure(name)

"""The tool layer's plumbing: run service calls off the event loop, and turn every
outcome into a CallToolResult (structured content plus the same JSON as text).

Errors are handled here and only here: a SpatialMemoryError becomes its typed
`{"error", "message", "isError"}` result; anything unexpected becomes InternalError
with a short reference id, its traceback going to stderr only.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
import pydantic
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from .cancellation import request_scope
from .errors import SpatialMemoryError
from .handshake import Handover, HandshakeCache, Recorder
from .lazy_imports import import_heavy_modules
from .validation import argument_problem

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
    """An isError result whose text is the typed JSON body `{"error", "message", "isError"}`.

    No structuredContent: clients built on the TypeScript SDK validate structuredContent against the
    tool's outputSchema even when isError is set, and would throw away the message."""
    message = message.encode("utf-8", "replace").decode("utf-8")  # an echoed lone surrogate cannot be sent
    data = {"error": error_type, "message": message, "isError": True}
    return CallToolResult(content=[TextContent(type="text", text=_json(data))], is_error=True)


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


async def _heartbeat(ctx: Context, message: str) -> None:
    """MCP progress notifications while a slow call runs (no-op unless the client sent a token)."""
    elapsed = 0
    while True:
        try:
            await ctx.report_progress(elapsed, None, message)
        except Exception:  # noqa: BLE001 - progress is best effort
            return
        await anyio.sleep(1.0)
        elapsed += 1


def _after_heavy_imports(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(app: Any) -> Any:
        import_heavy_modules()  # never two threads importing pyarrow at once (see there)
        return fn(app)

    return run


async def _run_with_progress(fn: Callable[[Any], Any], app: Any, ctx: Context, progress: str | None) -> Any:
    fn = _after_heavy_imports(fn)
    if progress is None:
        return await anyio.to_thread.run_sync(fn, app, abandon_on_cancel=True)
    outcome: Any = None
    error: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_heartbeat, ctx, progress)
        try:
            outcome = await anyio.to_thread.run_sync(fn, app, abandon_on_cancel=True)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, unwrapped by the task group
            error = exc
        finally:
            group.cancel_scope.cancel()
    if error is not None:
        raise error
    return outcome


async def call(ctx: Context, fn: Callable[[Any], pydantic.BaseModel], *, progress: str | None = None) -> CallToolResult:
    """Run `fn(app)` in a worker thread and wrap its result or error.

    With `progress`, the client gets a progress notification every second until it finishes."""
    app = ctx.request_context.lifespan_context
    upkeep = app.resources.upkeep
    upkeep.call_started()  # background bookkeeping waits for a pause between calls
    try:
        return await _call(app, ctx, fn, progress)
    finally:
        upkeep.call_finished()


async def _call(
    app: Any, ctx: Context, fn: Callable[[Any], pydantic.BaseModel], progress: str | None
) -> CallToolResult:
    with request_scope() as cancelled:
        try:
            # A cancelled request (or a client that closed the pipe) returns at once instead of
            # waiting for its worker; the token makes the worker stop before any commit it has
            # not started yet, so nothing is written for a client that is gone.
            result = await _run_with_progress(fn, app, ctx, progress)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        except SpatialMemoryError as exc:
            log.info("%s: %s", exc.error_type, exc.message)
            return failure(exc.error_type, exc.message)
        except RecursionError:
            return failure("ValidationError", "Invalid arguments: nested too deeply")
        except Exception:  # noqa: BLE001 - the one place unexpected errors are caught
            return internal_failure(getattr(fn, "__qualname__", "tool"))
    try:
        out = success(result)
    except Exception:  # noqa: BLE001 - a result that cannot be serialized is still a typed error
        return internal_failure(getattr(fn, "__qualname__", "tool"))
    return _bounded(out, app.resources.settings.max_result_bytes)


def _bounded(out: CallToolResult, limit: int) -> CallToolResult:
    size = len(out.content[0].text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return out
    return failure(
        "ResultTooLargeError",
        f"the result is {size:,} bytes; the limit is {limit:,} (SPATIAL_MEMORY_MAX_RESULT_BYTES). "
        "Ask for fewer results (limit, max_memories) or narrow them (namespace, filters).",
    )


class SpatialMemoryMCPServer(MCPServer):
    """MCPServer whose argument-validation failures come back as typed ValidationError results,
    and whose stdio transport answers a line it cannot parse instead of dropping it."""

    # Set by the CLI when the handshake fast path (handshake.py) answered the first requests.
    handover: Handover | None = None
    handshake_cache: HandshakeCache | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        problem = argument_problem(arguments, MAX_ARGUMENT_DEPTH)
        if problem is not None:
            return failure("ValidationError", f"Invalid arguments: {problem}")
        try:
            return await super().call_tool(name, arguments, context)
        except RecursionError:
            return failure("ValidationError", "Invalid arguments: nested too deeply")
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, pydantic.ValidationError):
                return failure("ValidationError", describe_validation_error(cause))
            if isinstance(cause, SpatialMemoryError):
                return failure(cause.error_type, cause.message)
            if str(exc).startswith("Unknown tool"):
                return failure("ValidationError", f"Unknown tool: {name[:100]}")
            return internal_failure(name)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, except that a line which is not a valid JSON-RPC message (nested
        too deeply for the parser, a lone surrogate escape, plain garbage) gets a JSON-RPC parse
        error - carrying the request id when one can be read from the line - instead of being
        dropped silently, which would leave the client waiting forever. Over pipes (any MCP client),
        stdin and stdout are served by the event loop itself (see stdio_pipes)."""
        lowlevel = getattr(self, "_lowlevel_server", None)
        if lowlevel is None:  # pragma: no cover - a future SDK without it: plain behaviour
            return await super().run_stdio_async()
        from mcp.server.stdio import stdio_server
        from mcp.shared.message import SessionMessage

        from . import stdio_pipes

        async with AsyncExitStack() as stack:
            if self.handover is not None:  # the handshake fast path served the wire so far
                recorder = Recorder(self.handshake_cache, self.handover.answered)
                streams = await stack.enter_async_context(stdio_pipes.pipe_streams(self.handover, recorder))
            elif stdio_pipes.usable():
                streams = await stack.enter_async_context(stdio_pipes.pipe_streams())
            else:
                streams = (None, None)
            read_stream, write_stream = await stack.enter_async_context(stdio_server(*streams))
            send, receive = anyio.create_memory_object_stream[Any](0)

            async def forward() -> None:
                async with send, read_stream:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await _answer_unparseable(item, write_stream, SessionMessage)
                        else:
                            await send.send(item)

            async with anyio.create_task_group() as tg:
                tg.start_soon(forward)
                await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
                tg.cancel_scope.cancel()


MAX_ARGUMENT_DEPTH = 64
_REQUEST_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


async def _answer_unparseable(exc: Exception, write_stream: Any, session_message: Any) -> None:
    import mcp_types

    request_id: Any = None
    code, reason, line = -32700, str(exc)[:200], ""
    if isinstance(exc, pydantic.ValidationError):
        for err in exc.errors():
            value = err.get("input")
            if isinstance(value, dict):  # valid JSON, but not a valid JSON-RPC message
                code, reason, request_id = -32600, f"{'.'.join(map(str, err['loc']))}: {err['msg']}", value.get("id")
                break
            if err.get("type") == "json_invalid" and isinstance(value, (str, bytes)):
                line = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                reason = str(err.get("msg", reason))[:200]
        if line:
            found = _REQUEST_ID.search(line[:4096])
            if found:
                try:
                    request_id = json.loads(found.group(1))
                except ValueError:
                    request_id = None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    log.warning("unparseable message (request id %r): %s", request_id, reason)
    message = (
        "Parse error: not valid JSON (nested deeper than the parser allows, an invalid escape, or malformed)"
        if code == -32700
        else "Invalid Request: not a valid JSON-RPC message"
    )
    error = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message))
    try:
        await write_stream.send(session_message(error))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass

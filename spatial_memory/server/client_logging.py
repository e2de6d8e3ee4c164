"""The server's logs, sent to the client as `notifications/message`.

- A record logged while serving a request goes on that request's own stream, when the client asked
  for its level: on protocol versions up to 2025-11-25 with `logging/setLevel` (per connection), on
  2026-07-28 with the request's `io.modelcontextprotocol/logLevel` `_meta` key.
- A record logged outside any request (background upkeep, capture ingest) goes to every connection
  that set a level - but only on a server without authorization: a team server's principal hears
  only of its own requests.

Only the `spatial_memory` loggers are sent (never the SDK's own, which would log its sending), and
only records at or above the server's own level (SPATIAL_MEMORY_LOG_LEVEL): the client's level
filters what the server logs, it does not make the server log more. What is logged never holds a
memory's content or a secret (text/secrets.py), so it may leave the process.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.connection import allowed_log_levels
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types import EmptyResult, LoggingMessageNotification, LoggingMessageNotificationParams, SetLevelRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .subscriptions import _connection

if TYPE_CHECKING:
    from .mcp_server import SpatialMemoryMCPServer

# MCP's levels (RFC 5424), least severe first, and the Python level each starts at.
MCP_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_PYTHON_FLOOR = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}
_LEVEL_KEY = "spatial_memory.log_level"
FLUSH_SECONDS = 2.0


def mcp_level(levelno: int) -> str:
    """The MCP level of a Python level number."""
    name = "debug"
    for level in MCP_LEVELS:
        if levelno >= _PYTHON_FLOOR[level]:
            name = level
    return name


@dataclass(frozen=True)
class _Request:
    """The request being served, as the log handler needs it (bound per request by the middleware)."""

    loop: asyncio.AbstractEventLoop
    session: Any
    request_id: Any
    connection: Any
    allowed: frozenset[str]  # 2026-07-28: the levels this request's `_meta` asked for
    # Records on their way: sent before the response, after which the request's stream is closed.
    sending: list[Any] = field(default_factory=list)


_REQUEST: ContextVar[_Request | None] = ContextVar("spatial_memory_log_request", default=None)
# Set in the task forwarding a record: what sending it logs is not sent in turn.
_SENDING: ContextVar[bool] = ContextVar("spatial_memory_log_sending", default=False)


class ClientLogHandler(logging.Handler):
    """Forwards `spatial_memory` records to the clients that asked for them (see the module doc)."""

    def __init__(self, *, broadcast: bool) -> None:
        super().__init__()
        self.broadcast = broadcast  # records outside requests go to every listening connection
        self._listening: weakref.WeakSet[Any] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None

    def listen(self, connection: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._listening.add(connection)

    def emit(self, record: logging.LogRecord) -> None:
        if _SENDING.get():
            return
        level = mcp_level(record.levelno)
        try:
            params = {"level": level, "logger": record.name, "data": self.format(record)}
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is not sent
            return
        request = _REQUEST.get()
        if request is not None:
            if _wants(request, level):
                message = request.session.send_notification(_notification(params), request.request_id)
                request.sending.append(self._send(request.loop, message))
            return
        if not self.broadcast or self._loop is None:
            return
        for connection in list(self._listening):
            if _at_least(level, connection.state.get(_LEVEL_KEY)):
                self._send(self._loop, connection.outbound.notify("notifications/message", params))

    def _send(self, loop: asyncio.AbstractEventLoop, message: Coroutine[Any, Any, None]) -> Any:
        """Send on `loop` from any thread; returns the task (or a thread's future), None if not sent."""

        async def send() -> None:
            _SENDING.set(True)  # this task's own context
            try:
                await message
            except Exception:  # noqa: BLE001 - a client gone away, a stream closed: nothing to tell
                pass

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        try:
            if running is loop:
                task = loop.create_task(send())
                _keep(task)
                return task
            return asyncio.run_coroutine_threadsafe(send(), loop)
        except RuntimeError:  # the loop has closed
            message.close()
            return None


_TASKS: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def _flush(request: _Request) -> None:
    """Let the request's records reach its stream before its response ends the stream."""
    pending = [p if isinstance(p, asyncio.Future) else asyncio.wrap_future(p) for p in request.sending if p is not None]
    if pending:
        await asyncio.wait(pending, timeout=FLUSH_SECONDS)


def _notification(params: dict[str, Any]) -> Any:
    return LoggingMessageNotification(params=LoggingMessageNotificationParams(**params))


def _at_least(level: str, threshold: str | None) -> bool:
    return threshold is not None and MCP_LEVELS.index(level) >= MCP_LEVELS.index(threshold)


def _wants(request: _Request, level: str) -> bool:
    if request.connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return level in request.allowed
    return _at_least(level, request.connection.state.get(_LEVEL_KEY))


def register_client_logging(server: SpatialMemoryMCPServer, *, broadcast: bool) -> ClientLogHandler:
    handler = ClientLogHandler(broadcast=broadcast)
    handler.setFormatter(logging.Formatter("%(message)s"))  # added to the logger while the server runs (app.py)
    lowlevel = server._lowlevel_server  # noqa: SLF001 - handlers MCPServer has no decorator for

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        connection = _connection(ctx)
        connection.state[_LEVEL_KEY] = params.level
        handler.listen(connection, asyncio.get_running_loop())
        return EmptyResult()

    async def bind_request(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification
            return await call_next(ctx)
        connection = _connection(ctx)
        request = _Request(
            asyncio.get_running_loop(),
            ctx.session,
            ctx.request_id,
            connection,
            allowed_log_levels(connection.protocol_version, ctx.meta),
        )
        reset = _REQUEST.set(request)
        try:
            return await call_next(ctx)
        finally:
            _REQUEST.reset(reset)
            await _flush(request)

    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    server.middleware.append(bind_request)
    return handler

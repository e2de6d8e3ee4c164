"""The MCPServer subclass in front of the tools.

- Arguments are checked before the SDK sees them: too deeply nested, or naming an argument the
  tool does not have (a misspelt filter must not be silently dropped): a typed ValidationError.
- The SDK's own argument-validation failures come back as typed ValidationError results.
- Over stdio, a line that cannot be parsed gets a JSON-RPC error instead of silence.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import signal
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
import pydantic
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult

from ..auth.principal import current_scope
from ..errors import PermissionDeniedError, SpatialMemoryError, ValidationError
from ..runtime.early_queries import QueryLines
from ..runtime.shutdown import SIGNAL_EXIT_SECONDS, exit_after
from ..tools.calls import failure, internal_failure
from ..tools.registry import read_only_names
from ..tools.search import QUERY_TOOLS
from ..transport import stdio_pipes
from ..transport.handshake import Handover, HandshakeCache, Recorder
from ..validation import argument_problem

if TYPE_CHECKING:  # named in annotations only
    from ..app import App

log = logging.getLogger("spatial_memory.tools")


class SpatialMemoryMCPServer(MCPServer):
    """MCPServer whose argument-validation failures come back as typed ValidationError results,
    and whose stdio transport answers a line it cannot parse instead of dropping it."""

    # Set by the CLI when the handshake fast path (handshake.py) answered the first requests.
    handover: Handover | None = None
    handshake_cache: HandshakeCache | None = None
    # The lifespan's App while the server runs (server/app.py), for handlers the SDK gives no
    # request context (static resources).
    app: App | None = None
    # Set when SIGTERM or SIGINT ended the session: the lifespan's drain is then short.
    stopping_on_signal: bool = False

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        problem = argument_problem(arguments, MAX_ARGUMENT_DEPTH)
        if problem is None:
            problem = self._unknown_argument(name, arguments)
        if problem is not None:
            return failure(ValidationError(f"Invalid arguments: {problem}"))
        scope = current_scope()
        if scope is not None:  # a team server's principal names only its own namespaces
            try:
                scope.check_arguments(arguments, writes=name not in self._read_only)
            except PermissionDeniedError as exc:
                return failure(exc)
        try:
            if context is None:  # not through a session (the SDK makes a bare context)
                return await super().call_tool(name, arguments, context)
            result = await self._tool_manager.call_tool(name, arguments, context)
        except RecursionError:
            return failure(ValidationError("Invalid arguments: nested too deeply"))
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, pydantic.ValidationError):
                return failure(ValidationError(self._describe(name, cause)))
            if isinstance(cause, SpatialMemoryError):
                return failure(cause)
            if str(exc).startswith("Unknown tool"):
                return failure(ValidationError(describe_unknown_tool(name, list(self._schemas))))
            return internal_failure(name)
        if isinstance(result, CallToolResult):
            # What every tool returns (tools/calls.py): structured content that is its typed result's
            # own dump, so the SDK's converting it (super().call_tool) would only validate it against
            # the same model a second time, on the event loop; clients validate it themselves.
            return result
        tool = self._tool_manager.get_tool(name)
        if tool is None:  # pragma: no cover - it was found to be called
            return internal_failure(name)
        try:  # pragma: no cover - no tool returns anything else today
            return tool.fn_metadata.convert_result(result)
        except Exception:  # noqa: BLE001 - a result the SDK cannot convert is still a typed error
            return internal_failure(name)

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        _announce_resource_list_changes(self._lowlevel_server)
        _advertise_extensions_at_every_version(self._lowlevel_server)
        self._schemas = {tool.name: tool.parameters for tool in tools}
        # A recall's query starts embedding when its line arrives (runtime/early_queries.py).
        self._query_lines = QueryLines(lambda: self.app.resources.early_queries if self.app else None, QUERY_TOOLS)
        self._read_only = read_only_names(tools)

    async def _end_on_signal(self, scope: anyio.CancelScope) -> None:
        """SIGTERM (a client quitting, a supervisor) or SIGINT (Ctrl-C) ends the session like the
        client closing the pipe: the run is cancelled from inside the event loop, so the lifespan's
        shielded drain runs (runtime/shutdown.py), instead of an exception landing in whatever the
        main thread was doing. The drain then gets a short bound, and the process ends within
        SIGNAL_EXIT_SECONDS whatever is still running (one signal must be enough)."""
        try:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for received in signals:
                    log.info("signal %s: shutting down", received)
                    self.stopping_on_signal = True
                    exit_after(SIGNAL_EXIT_SECONDS)
                    scope.cancel()
                    return
        except (NotImplementedError, ValueError):  # no signal receivers here (Windows, not the main thread)
            return

    def _describe(self, name: str, exc: pydantic.ValidationError) -> str:
        """The SDK's validation errors, up to five, each with where it happened; an unknown key in a
        nested object (a remember_batch item) names the keys accepted there."""
        parts = []
        for err in exc.errors()[:5]:
            location = ".".join(str(p) for p in err["loc"]) or "arguments"
            if err["type"] == "extra_forbidden" and err["loc"]:
                accepted = _keys_at(self._schemas.get(name, {}), err["loc"][:-1])
                owner = ".".join(str(p) for p in err["loc"][:-1])
                parts.append(describe_unknown_arguments(owner, [str(err["loc"][-1])], accepted, noun="field"))
            else:
                parts.append(f"{location}: {err['msg']}")
        more = len(exc.errors()) - 5
        return "Invalid arguments: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")

    def _unknown_argument(self, name: str, arguments: dict[str, Any]) -> str | None:
        schema = self._schemas.get(name)
        if schema is None:
            return None  # the SDK answers "Unknown tool"
        accepted = list(schema.get("properties", {}))
        unknown = [key for key in arguments if key not in accepted]
        return None if not unknown else describe_unknown_arguments(name, unknown, accepted)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, except that a line which is not a valid JSON-RPC message (nested
        too deeply for the parser, a lone surrogate escape, plain garbage) gets a JSON-RPC parse
        error - carrying the request id when one can be read from the line - instead of being
        dropped silently, which would leave the client waiting forever. Over pipes (any MCP client),
        stdin and stdout are served by the event loop itself (see stdio_pipes)."""
        lowlevel = getattr(self, "_lowlevel_server", None)
        if lowlevel is None:  # pragma: no cover - a future SDK without it: plain behaviour
            return await super().run_stdio_async()
        # The whole session, transport included, so a signal also ends the SDK's stdin reader.
        with anyio.CancelScope() as session:
            async with AsyncExitStack() as stack:
                if self.handover is not None:  # the handshake fast path served the wire so far
                    recorder = Recorder(self.handshake_cache, self.handover.answered)
                    streams = await stack.enter_async_context(
                        stdio_pipes.pipe_streams(self.handover, recorder, on_line=self._query_lines)
                    )
                elif stdio_pipes.usable():
                    streams = await stack.enter_async_context(stdio_pipes.pipe_streams(on_line=self._query_lines))
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
                    tg.start_soon(self._end_on_signal, session)
                    await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
                    tg.cancel_scope.cancel()


def _announce_resource_list_changes(lowlevel: Any) -> None:
    """Capabilities with `resources.listChanged`: the server sends notifications/resources/list_changed
    when the skills it serves change (server/skills.py). The SDK's transports build the capabilities
    with no notification options, so the default is given here once."""
    from mcp.server.lowlevel.server import NotificationOptions  # the SDK's own: loaded with MCPServer already

    build = lowlevel.create_initialization_options

    def create_initialization_options(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        options = notification_options or NotificationOptions(resources_changed=True)
        return build(options, *args, **kwargs)

    lowlevel.create_initialization_options = create_initialization_options


def _advertise_extensions_at_every_version(lowlevel: Any) -> None:
    """`capabilities.extensions` in every `initialize` answer, not only at 2026-07-28.

    The SDK builds the capabilities with the extensions (the Skills extension: server/skills.py),
    then sieves the answer through the negotiated version's schema (ServerRunner._serialize ->
    mcp_types.methods.serialize_server_result): the 2025-11-25 ServerCapabilities model has no
    `extensions` field and ignores extra ones, so the field is dropped - and the clients of today
    (which negotiate 2025-11-25) never learn of the skills. Capability objects are open at every
    version ("not a closed set"), and a client that knows nothing of extensions ignores the
    field, so it is put back after the sieve, by a middleware around `initialize`."""

    async def restore_extensions(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "initialize" or not lowlevel.extensions or not isinstance(result, dict):
            return result
        capabilities = result.get("capabilities")
        if isinstance(capabilities, dict) and "extensions" not in capabilities:
            extensions = {key: dict(value) for key, value in lowlevel.extensions.items()}
            result = {**result, "capabilities": {**capabilities, "extensions": extensions}}
        return result

    lowlevel.middleware.append(restore_extensions)


MAX_ARGUMENT_DEPTH = 64
_REQUEST_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


async def _answer_unparseable(exc: Exception, write_stream: Any, session_message: Any) -> None:
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


def _keys_at(schema: dict[str, Any], location: tuple[Any, ...]) -> list[str]:
    """The property names a JSON schema accepts at `location` (object keys and list indexes)."""
    node = schema
    for step in (*location, None):
        while "$ref" in node:
            node = schema.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
        node = next((o for o in node.get("anyOf", []) if o.get("type") != "null"), node)
        if step is None:
            break
        node = node.get("items", {}) if isinstance(step, int) else node.get("properties", {}).get(step, {})
    return list(node.get("properties", {}))


def describe_unknown_arguments(owner: str, unknown: list[str], accepted: list[str], *, noun: str = "argument") -> str:
    """'namespce' (did you mean 'namespace'?) is not an argument of recall; accepted: ..."""
    parts = [f"'{key[:100]}'{_did_you_mean(key, accepted)}" for key in unknown[:5]]
    article = "an" if noun[0] in "aeiou" else "a"
    what = f"is not {article} {noun}" if len(unknown) == 1 else f"are not {noun}s"
    return f"{', '.join(parts)} {what} of {owner}; accepted: {', '.join(accepted)}"


def describe_unknown_tool(name: str, listed: list[str]) -> str:
    """Unknown tool: recal (did you mean 'recall'?); tools: remember, ..."""
    return f"Unknown tool: {name[:100]}{_did_you_mean(name, listed)}; tools: {', '.join(listed)}"


def _did_you_mean(key: str, accepted: list[str]) -> str:
    close = difflib.get_close_matches(key, accepted, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""

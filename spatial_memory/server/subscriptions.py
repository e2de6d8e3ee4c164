"""Resource subscriptions: a client is told when a write changed a resource it watches.

Two ways in:
- `resources/subscribe` / `unsubscribe` (protocol versions up to 2025-11-25): per connection, the
  update goes on the connection's own channel (stdio, or an HTTP session's GET stream). Stateless
  HTTP has no such channel, so a subscription there is refused with what to do instead.
- `subscriptions/listen` (2026-07-28): the SDK's listen stream. The URIs it asks for are watched
  while it is open, and their updates go to that stream only (ListenBus).

What changed is decided by comparison, not guessed from the write: after a commit (the store's one
hook, runtime/changes.py) every watched URI is read again as its subscriber's principal reads it,
and its watchers are told when the JSON differs from the last read. A notification therefore means
the content that subscriber would read did change; a team server's principal hears only of its own
namespaces. A burst of writes is checked once (CHECK_DELAY_SECONDS after the first).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..auth.principal import current_scope
from .resources import SKILLS_URI, read_json, reader

if TYPE_CHECKING:
    from ..auth.scope import NamespaceScope
    from .mcp_server import SpatialMemoryMCPServer

log = logging.getLogger(__name__)

CHECK_DELAY_SECONDS = 0.1
STATELESS_REFUSAL = (
    "resources/subscribe needs a channel for updates, and stateless HTTP has none: set "
    "SPATIAL_MEMORY_HTTP_SESSIONS=true, or use a 2026-07-28 client's subscriptions/listen"
)

Deliver = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class _Watched:
    uri: str
    scope: NamespaceScope | None


class ResourceWatch:
    """Watched URIs per principal, their last-read JSON, and who to tell when it changes.

    `current_app()` is the running server's App (the watch is made before the server, which the
    skills' handlers are given it with: server/app.py)."""

    def __init__(self, current_app: Callable[[], Any]) -> None:
        self._app = current_app
        self._watchers: dict[_Watched, dict[object, Deliver]] = {}
        self._seen: dict[_Watched, str | None] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._check_pending = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def add(self, uri: str, scope: NamespaceScope | None, owner: object, deliver: Deliver) -> None:
        """Tell `deliver(uri)` when `uri` changes for `scope` (until `remove`/`remove_owner`)."""
        self._attach()
        watched = _Watched(uri, scope)
        first = watched not in self._watchers
        self._watchers.setdefault(watched, {})[owner] = deliver
        if first and reader(uri) is not None:  # a URI that is not ours never changes
            self._seen[watched] = await anyio.to_thread.run_sync(read_json, self._app(), uri, scope)

    async def add_for_connection(
        self, uri: str, scope: NamespaceScope | None, connection: Any, deliver: Deliver
    ) -> None:
        """`add`, until the connection ends."""
        if not connection.state.get("spatial_memory.watching"):
            connection.state["spatial_memory.watching"] = True
            connection.exit_stack.callback(self.remove_owner, connection)
        await self.add(uri, scope, connection, deliver)

    def remove(self, uri: str, scope: NamespaceScope | None, owner: object) -> None:
        watched = _Watched(uri, scope)
        owners = self._watchers.get(watched, {})
        owners.pop(owner, None)
        if not owners:
            self._watchers.pop(watched, None)
            self._seen.pop(watched, None)

    def remove_owner(self, owner: object) -> None:
        for watched in [w for w, owners in self._watchers.items() if owner in owners]:
            self.remove(watched.uri, watched.scope, owner)

    @property
    def watched(self) -> int:
        return len(self._watchers)

    def _attach(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._stop_listening = self._app().resources.changes.listen(self._committed)

    def _committed(self) -> None:
        """A commit landed (any thread): check the watched URIs soon, on the event loop."""
        loop = self._loop
        if loop is None or not self._watchers:
            return
        try:
            loop.call_soon_threadsafe(self._schedule_check)
        except RuntimeError:  # the loop has closed: the server is ending
            pass

    def _schedule_check(self) -> None:
        if self._check_pending:
            return
        self._check_pending = True
        assert self._loop is not None
        task = self._loop.create_task(self._check())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _check(self) -> None:
        await asyncio.sleep(CHECK_DELAY_SECONDS)
        self._check_pending = False  # a commit during the reads below checks again
        app = self._app()
        for watched in list(self._watchers):
            if reader(watched.uri) is None:
                continue
            try:
                now = await anyio.to_thread.run_sync(read_json, app, watched.uri, watched.scope)
            except Exception:  # noqa: BLE001 - one failed read must not stop the others
                log.exception("re-reading %s for its subscribers failed", watched.uri)
                continue
            if watched not in self._watchers or now == self._seen.get(watched):
                continue
            self._seen[watched] = now
            for deliver in list(self._watchers.get(watched, {}).values()):
                try:
                    await deliver(watched.uri)
                except Exception:  # noqa: BLE001 - a subscriber gone away must not stop the others
                    log.debug("could not deliver an update of %s", watched.uri, exc_info=True)


# The listen stream a `subscriptions/listen` request is serving (set around the SDK's handler).
_LISTEN_STREAM: ContextVar[object | None] = ContextVar("spatial_memory_listen_stream", default=None)


class ListenBus:
    """The SDK's SubscriptionBus, plus delivery to one listen stream: a resource update goes only to
    the stream that asked for it, whose principal it was read for (the SDK's in-memory bus would
    hand it to every stream listening to that URI, whoever's it is)."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[object | None, Callable[[ServerEvent], None]]] = {}

    async def publish(self, event: ServerEvent) -> None:
        for _, listener in list(self._listeners.values()):
            _call(listener, event)
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        key = object()
        self._listeners[key] = (_LISTEN_STREAM.get(), listener)  # the SDK subscribes inside our wrapper

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    async def deliver(self, stream: object, uri: str) -> None:
        await self._deliver(stream, ResourceUpdated(uri=uri))

    async def deliver_list_changed(self, stream: object, _uri: str) -> None:
        await self._deliver(stream, ResourcesListChanged())

    async def _deliver(self, stream: object, event: ServerEvent) -> None:
        for owner, listener in list(self._listeners.values()):
            if owner is stream:
                _call(listener, event)
        await anyio.lowlevel.checkpoint()


def _call(listener: Callable[[ServerEvent], None], event: ServerEvent) -> None:
    try:
        listener(event)
    except Exception:  # noqa: BLE001 - one listener must not starve the others
        log.exception("subscription listener failed")


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The per-client Connection behind the per-request session: what a resources/subscribe lasts
    # as long as. The SDK gives handlers no public handle on it (ServerSession keeps it private).
    return ctx.session._connection  # noqa: SLF001


async def _updated(connection: Any, uri: str) -> None:
    await connection.outbound.notify("notifications/resources/updated", {"uri": uri})


async def _list_changed(connection: Any, _uri: str) -> None:
    await connection.outbound.notify("notifications/resources/list_changed", None)


async def watch_skills_listed(watch: ResourceWatch, ctx: ServerRequestContext[Any, Any]) -> None:
    """The session that just listed the skills is sent notifications/resources/list_changed whenever
    the skills its principal is served change - whatever changed them (a tool, capture confirming a
    procedure in the background, backfill, an import: every commit is checked). A 2026-07-28 client
    hears of it on a subscriptions/listen stream asking for resourcesListChanged instead (`listen`
    below); stateless HTTP has no channel to tell it on."""
    connection = _connection(ctx)
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return
    if ctx.request is not None and connection.session_id is None:
        return
    await watch.add_for_connection(SKILLS_URI, current_scope(), connection, partial(_list_changed, connection))


def register_subscriptions(server: SpatialMemoryMCPServer, bus: ListenBus, watch: ResourceWatch) -> None:
    lowlevel = server._lowlevel_server  # noqa: SLF001 - handlers MCPServer has no decorator for

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        connection = _connection(ctx)
        if ctx.request is not None and connection.session_id is None:
            raise MCPError(INVALID_REQUEST, STATELESS_REFUSAL)
        scope = current_scope()
        found = reader(params.uri)
        if scope is not None and found is not None and found[1] is not None and not scope.can_read(found[1]):
            raise MCPError(INVALID_PARAMS, f"PermissionDeniedError: namespace '{found[1]}' is not available")
        await watch.add_for_connection(params.uri, scope, connection, partial(_updated, connection))
        return EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        watch.remove(params.uri, current_scope(), _connection(ctx))
        return EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)

    sdk_listen = lowlevel.get_request_handler("subscriptions/listen")
    if sdk_listen is not None:

        async def listen(ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> Any:
            stream = object()
            scope = current_scope()
            for uri in params.notifications.resource_subscriptions or ():
                await watch.add(uri, scope, stream, partial(bus.deliver, stream))
            if params.notifications.resources_list_changed:  # the skills served (server/skills.py)
                await watch.add(SKILLS_URI, scope, stream, partial(bus.deliver_list_changed, stream))
            reset = _LISTEN_STREAM.set(stream)
            try:
                return await sdk_listen.handler(ctx, params)
            finally:
                _LISTEN_STREAM.reset(reset)
                watch.remove_owner(stream)

        lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, listen)

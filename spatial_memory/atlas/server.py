"""The atlas over HTTP: `spatial-memory ui` (a local page) and the team server's /ui.

Local page: uvicorn on 127.0.0.1 only. Every request must carry the per-launch token (the URL's
`token` query parameter for the page, the `X-Atlas-Token` header for the API; compared in
constant time): without it, 401. A Host or Origin header that is not the address it listens on
is refused (403), so a web page elsewhere cannot reach it through DNS rebinding or a cross-site
form. The page is the same self-contained document as the MCP App (atlas/page.py).

Team server: /ui serves the page (no data in it) and /ui/api/<operation> the operations, behind
the bearer/OAuth middleware of the MCP endpoint; each request runs as its principal (the confined
App), so the page shows only that principal's namespaces.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import signal
import socket
import sys
import threading
import webbrowser
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import anyio
import uvicorn
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from .. import algorithms  # noqa: F401 - the layout's code, loaded with the page rather than by the first map
from ..app import App
from ..auth.principal import current_scope
from ..runtime.resources import Resources
from ..tools.calls import in_worker, typed_error
from . import api
from .page import document

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20
TOKEN_HEADER = "x-atlas-token"


async def _body(request) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        return None
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return None


async def answer(app: Any, operation: str, request) -> Any:
    """One operation as a JSON response: 200 with its result, 400 with `{"error", "message"}`."""

    arguments = await _body(request)
    if arguments is None:
        return JSONResponse({"error": "ValidationError", "message": "the body must be JSON (at most 1 MB)"}, 400)
    upkeep = app.resources.upkeep
    upkeep.call_started()  # background bookkeeping waits for a pause, as for a tool call
    try:
        result = await anyio.to_thread.run_sync(in_worker(lambda a: api.run(a, operation, arguments)), app)
    except Exception:  # noqa: BLE001 - never a traceback to the page: the tools' one translation
        error = typed_error(f"atlas {operation}")
        status = 404 if error.error_type in ("MemoryNotFoundError", "NamespaceNotFoundError") else 400
        status = 500 if error.error_type == "InternalError" else status
        return JSONResponse({"error": error.error_type, "message": error.message}, status)
    finally:
        upkeep.call_finished()
    return JSONResponse(result)


class LoopbackGuard:
    """ASGI middleware of the local page: right Host, no foreign Origin, the launch token."""

    def __init__(self, app: Any, *, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get("host", "").lower() not in self.hosts:
            return await _plain(send, 403, "refused: this page answers only at its own loopback address")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return await _plain(send, 403, "refused: a request from another origin")
        given = headers.get(TOKEN_HEADER) or _query_token(scope.get("query_string", b""))
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return await _plain(send, 401, "the atlas needs the token of this launch: open the URL it printed")
        return await self.app(scope, receive, send)


def _query_token(query: bytes) -> str | None:

    values = parse_qs(query.decode("latin-1")).get("token")
    return values[0] if values else None


async def _plain(send: Any, status: int, message: str) -> None:
    body = message.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the URL carries the token
    "Content-Security-Policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
}


def local_app(settings: Any, *, token: str, port: int, embedder: Any = None) -> Any:
    """The Starlette app of `spatial-memory ui`: the page at /, the operations at /api/<name>."""

    state: dict[str, Any] = {"mapped": threading.Event()}

    def warm_up(resources: Any) -> None:
        # The store first (the map's code came with this module); the model (only search needs it)
        # once the first map is out, so the two do not share the CPU while a person waits for it.
        try:
            resources.store()

        except Exception as exc:  # noqa: BLE001 - surfaced again, typed, on first use
            log.warning("background warm-up: %s", exc)
        state["mapped"].wait(30)
        try:
            resources.embedder.load()
        except Exception as exc:  # noqa: BLE001
            log.warning("background warm-up: %s", exc)

    @asynccontextmanager
    async def lifespan(_: Any):
        resources = Resources(settings, embedder, None)
        state["app"] = App(resources)
        resources.upkeep.start()
        threading.Thread(target=warm_up, args=(resources,), name="atlas-warm-up", daemon=True).start()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(resources.close, settings.lock_timeout_seconds)

    async def page(_request):
        return HTMLResponse(document("local"), headers=_PAGE_HEADERS)

    async def operation(request):
        name = request.path_params["name"]
        try:
            return await answer(state["app"], name, request)
        finally:
            if name == "map":
                state["mapped"].set()

    routes = [Route("/", page, methods=["GET"]), Route("/api/{name}", operation, methods=["POST"])]
    return LoopbackGuard(Starlette(routes=routes, lifespan=lifespan), token=token, port=port)


def team_routes(server: Any, settings: Any) -> list[Any]:
    """/ui and /ui/api/<name> for the team HTTP server (only when authorization is configured)."""

    async def page(_request):
        return HTMLResponse(document("team"), headers=_PAGE_HEADERS)

    async def operation(scope: dict, receive: Any, send: Any) -> None:

        request = Request(scope, receive)
        app = server.app
        if app is None:
            response = JSONResponse({"error": "StorageError", "message": "the server is starting"}, 503)
        else:
            response = await answer(app.for_scope(current_scope()), request.path_params["name"], request)
        await response(scope, receive, send)

    required = list(settings.oauth_required_scopes or [])
    guarded = RequireAuthMiddleware(operation, required, None)
    return [Route("/ui", page, methods=["GET"]), Route("/ui/api/{name}", guarded, methods=["POST"])]


def serve_local(settings: Any, *, port: int, open_browser: bool) -> None:
    """`spatial-memory ui`: print the URL (the first stdout line), open it, serve until stopped."""

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sys.stderr.write(f"spatial-memory ui: cannot listen on 127.0.0.1:{port}: {exc.strerror}\n")
        raise SystemExit(2) from None
    sock.listen(128)  # from now on a browser's connection waits for uvicorn instead of being refused
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = f"http://127.0.0.1:{port}/?token={token}"
    sys.stdout.write(url + "\n")
    sys.stdout.flush()
    config = uvicorn.Config(
        local_app(settings, token=token, port=port), log_config=None, lifespan="on", access_log=False
    )
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, lambda *_: None)
    uvicorn.Server(config).run(sockets=[sock])

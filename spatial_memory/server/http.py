"""MCP over streamable HTTP (the SDK's implementation, at /mcp), served by uvicorn.

One process, one lifespan: the SDK's session manager enters the server's lifespan once when the
Starlette app starts, and every HTTP session or stateless request shares that App (server/app.py).
By default requests are stateless (`http_sessions` off): each stands alone, so replicas behind a
load balancer need no sticky sessions; progress notifications still stream in the request's own
SSE response. Localhost keeps the SDK's DNS-rebinding protection (Host/Origin checked). Listening
beyond localhost is refused unless a tokens file or OAuth is configured.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import sys

from ..auth.setup import authorization
from ..config import Settings
from ..errors import ConfigurationError
from .app import create_server

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refusal(settings: Settings) -> str | None:
    """Why the server must not start with these settings (None: it may)."""
    if not is_loopback(settings.host) and not settings.authorization_configured:
        return (
            f"refusing to listen on {settings.host} without authorization: set SPATIAL_MEMORY_TOKENS_FILE "
            "or SPATIAL_MEMORY_OAUTH_ISSUER (see docs/TEAM.md), or use --host 127.0.0.1"
        )
    return None


def build_app(settings: Settings, **server_options):
    """The Starlette app serving MCP at /mcp (plus the OAuth metadata routes when configured)."""
    verifier, auth = authorization(settings)
    server = create_server(settings, auth=auth, token_verifier=verifier, **server_options)
    app = server.streamable_http_app(
        stateless_http=not settings.http_sessions,
        host=settings.host,
        max_request_body_size=int(settings.http_max_request_mb * 1024 * 1024),
    )
    if verifier is not None:  # the atlas at /ui, behind the same authorization (without it: `spatial-memory ui`)
        from ..atlas.server import team_routes  # only a server with authorization serves the atlas

        app.router.routes.extend(team_routes(server, settings))
    return app


def serve_http(settings: Settings, **server_options) -> None:
    """Serve until SIGTERM/SIGINT (uvicorn's graceful shutdown ends the lifespan, which drains);
    `server_options` go to create_server (tests: a fake embedder)."""
    problem = refusal(settings)
    if problem is not None:
        sys.stderr.write(f"spatial-memory-mcp: {problem}\n")
        raise SystemExit(2)
    import uvicorn  # only to serve: build_app (tests, another ASGI host) does without it

    try:
        app = build_app(settings, **server_options)
    except ConfigurationError as exc:
        sys.stderr.write(f"spatial-memory-mcp: {exc.message}\n")
        raise SystemExit(2) from None
    kinds = [kind for kind, on in (("tokens file", settings.tokens_file), ("OAuth", settings.oauth_issuer)) if on]
    log.info("serving MCP at %s (%s)", settings.resource_url, " and ".join(kinds) or "no authorization, localhost")
    # log_config=None: uvicorn's records go through this process's logging (stderr), access log included.
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None, lifespan="on")
    # uvicorn raises the signal that stopped it again once its own handlers are gone, which would kill
    # the process by that signal: a graceful stop is an ordinary end (exit 0), as on stdio.
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, lambda *_: None)
    uvicorn.Server(config).run()

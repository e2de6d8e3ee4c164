"""Wiring: one server per process, its services built once in a typed lifespan.

Heavy modules (LanceDB, onnxruntime, the numpy-heavy services) are imported lazily, so
`initialize` and `tools/list` are answered at once.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from datetime import datetime
from functools import partial
from typing import Any

import anyio
from mcp.server.caching import CacheHint

from .. import __version__
from ..app import App
from ..capture.context_server import ContextServer
from ..capture.ingest import SpoolIngester
from ..config import Settings
from ..runtime.resources import Embedder, Resources
from ..runtime.shutdown import SIGNAL_DRAIN_SECONDS
from ..tools import build_tools
from .client_logging import register_client_logging
from .completions import register_completions
from .mcp_server import SpatialMemoryMCPServer
from .prompts import register_prompts
from .resources import register_resources
from .skills import SkillsExtension, register_skill_files
from .subscriptions import ListenBus, ResourceWatch, register_subscriptions

log = logging.getLogger(__name__)

# Freshness hints on 2026-07-28 results. The lists and server/discover are fixed for the life of the
# process and the same for every principal (public); a restart with other settings can change them,
# so a client keeps them for minutes, not for ever. A resource's content changes with any write and
# differs per principal: never fresh, never shared.
LIST_HINT = CacheHint(ttl_ms=600_000, scope="public")
CACHE_HINTS = {
    "server/discover": LIST_HINT,
    "tools/list": LIST_HINT,
    "prompts/list": LIST_HINT,
    "resources/list": LIST_HINT,
    "resources/templates/list": LIST_HINT,
    "resources/read": CacheHint(ttl_ms=0, scope="private"),
}

# What the server tells a client about itself, one sentence per group of tools; a sentence
# names only the listed tools (SPATIAL_MEMORY_TOOLS), and goes when none of its tools is listed.
INSTRUCTION_SENTENCES = (
    ("Store facts, decisions and context with {}.", ("remember", "remember_batch")),
    ("Find them with {}.", ("recall", "hybrid_recall")),
    ("Correct or delete them with {}.", ("update_memory", "forget")),
    ("Explore with {}.", ("nearby", "journey", "wander", "regions", "visualize")),
    ("Keep memory healthy with {}.", ("decay", "reinforce", "consolidate", "extract")),
)


def instructions(tool_names: Collection[str]) -> str:
    """The server's instructions for a server listing these tools."""
    sentences = ["Persistent memory as a semantic space."]
    for template, group in INSTRUCTION_SENTENCES:
        listed = [f"`{name}`" for name in group if name in tool_names]
        if len(listed) > 1:
            listed = [", ".join(listed[:-1]), listed[-1]]
        if listed:
            sentences.append(template.format(" and ".join(listed)))
    # The lean text of results (tools/lean.py), said once here rather than in every result.
    sentences.append(
        "Results leave out fields at their defaults (namespace default, importance 0.5, false, empty) and"
        " show ids short: send them back as shown. A hit marked weak is likely not relevant."
    )
    sentences.append("Namespaces separate projects.")
    return " ".join(sentences)


def _capture_ingester(app: App):
    """Store what client hooks spool (capture/), within a second of their writing it."""
    if not app.resources.settings.capture_ingest:
        return None
    ingester = SpoolIngester(app, ContextServer(app))
    ingester.start()
    return ingester


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _warm_up_and_announce(resources: Resources) -> None:
    """A person started the server in a terminal: once the store and model are loaded, one line
    says it is ready, what it serves, and how to stop it (a client would have started it itself)."""
    resources.warm_up()
    try:
        count = f"{resources.store().count()} memories"
    except Exception as exc:  # noqa: BLE001 - the line says what went wrong instead
        count = f"the store did not open: {exc}"
    sys.stderr.write(
        f"spatial-memory-mcp ready: store {resources.settings.path} ({count}), model {resources.embedder.model_id}. "
        "It serves MCP on stdin/stdout for a client that starts it; stop it with Ctrl-C.\n"
    )
    sys.stderr.flush()


def create_server(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    clock: Callable[[], datetime] | None = None,
    auth: Any = None,
    token_verifier: Any = None,
) -> SpatialMemoryMCPServer:
    """The server for these settings; `embedder` and `clock` replace the configured model and the
    wall clock (tests); `auth` and `token_verifier` (auth/setup.py) protect the HTTP transport."""

    @asynccontextmanager
    async def lifespan(server: SpatialMemoryMCPServer) -> AsyncIterator[App]:
        resources = Resources(settings, embedder, clock)
        app = server.app = App(resources)
        resources.upkeep.start()
        capture = _capture_ingester(app)
        logging.getLogger("spatial_memory").addHandler(client_log)
        on_terminal = _stderr_is_terminal()
        if settings.preload or on_terminal:
            warm_up = partial(_warm_up_and_announce, resources) if on_terminal else resources.warm_up
            threading.Thread(target=warm_up, name="spatial-memory-warm-up", daemon=True).start()
        try:
            yield app
        finally:
            # Shielded: on SIGINT/SIGTERM the whole run is cancelled, and the drain must still
            # happen (running writes finish, pending access counts are written).
            # After a signal the wait is short: one signal stops the server (runtime/shutdown.py).
            drain = SIGNAL_DRAIN_SECONDS if server.stopping_on_signal else settings.lock_timeout_seconds
            with anyio.CancelScope(shield=True):
                logging.getLogger("spatial_memory").removeHandler(client_log)
                if capture is not None:
                    await anyio.to_thread.run_sync(capture.stop, drain)
                await anyio.to_thread.run_sync(resources.close, drain)

    tools = build_tools(settings)
    tool_names = {tool.name for tool in tools}
    bus = ListenBus()
    # What a subscriber or a session that listed the skills is told of. Made before the server,
    # which it reads the running App from (assigned below, read only once the server runs).
    watch = ResourceWatch(lambda: server.app)
    server = SpatialMemoryMCPServer(
        "spatial-memory",
        version=__version__,
        instructions=instructions(tool_names),
        lifespan=lifespan,
        log_level=settings.log_level,
        tools=tools,
        auth=auth,
        token_verifier=token_verifier,
        cache_hints=CACHE_HINTS,
        subscriptions=bus,
        extensions=[SkillsExtension(watch)],
    )
    register_resources(server)
    register_skill_files(server)
    register_subscriptions(server, bus, watch)
    # A team server's principals hear only of their own requests' records.
    client_log = register_client_logging(server, broadcast=not settings.authorization_configured)
    register_prompts(server, tool_names)
    register_completions(server)
    return server

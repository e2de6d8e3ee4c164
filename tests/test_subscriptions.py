"""Resource subscriptions and the server's logs, through the Python SDK's client.

- protocol 2025-11-25 (`mode="legacy"`): `resources/subscribe` over stdio and over HTTP with
  sessions; a write that changes what the subscriber reads sends `notifications/resources/updated`,
  one that does not (another namespace) sends nothing, `unsubscribe` stops it; stateless HTTP
  refuses the subscription and says what to do. `logging/setLevel`: the server's own records arrive
  as `notifications/message` at that level and above, none below.
- protocol 2026-07-28: `subscriptions/listen` (stdio and stateless HTTP) delivers the same updates;
  a request's `_meta` log level is honoured; lists carry cache hints.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from .http_server import HttpServer
from .reliability import stdio_params

pytestmark = pytest.mark.anyio
warnings.filterwarnings("ignore", message=".*deprecated.*")

NS = "watched"


class Notes:
    """Every notification the client gets."""

    def __init__(self) -> None:
        self.received: list[Any] = []

    async def __call__(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.received.append(message)

    def updated(self) -> list[str]:
        return [n.params.uri for n in self.received if isinstance(n, types.ResourceUpdatedNotification)]

    def logged(self) -> list[tuple[str, str]]:
        return [
            (n.params.level, str(n.params.data))
            for n in self.received
            if isinstance(n, types.LoggingMessageNotification)
        ]

    async def wait_for(self, what, timeout: float = 20.0) -> None:
        with anyio.fail_after(timeout):
            while not what():
                await anyio.sleep(0.05)


async def remember(client: Client, content: str, namespace: str = NS) -> str:
    result = await client.call_tool("remember", {"content": content, "namespace": namespace})
    assert not result.is_error, result.content[0].text
    return result.structured_content["id"]


async def _legacy_subscriptions(client: Client, notes: Notes) -> None:
    first = await remember(client, "the first memory of the watched namespace")
    watched = ["memory://stats", "memory://namespaces", f"memory://{NS}/recent", f"memory://memory/{first}"]
    for uri in watched:
        await client.subscribe_resource(uri)
    await client.subscribe_resource("memory://elsewhere/recent")
    await remember(client, "a second memory of the watched namespace")
    await notes.wait_for(
        lambda: {"memory://stats", "memory://namespaces", f"memory://{NS}/recent"} <= set(notes.updated())
    )
    await anyio.sleep(0.5)
    # The memory itself did not change, nor did another namespace.
    assert f"memory://memory/{first}" not in notes.updated() and "memory://elsewhere/recent" not in notes.updated()
    notes.received.clear()
    changed = await client.call_tool("update_memory", {"memory_id": first, "content": "the first memory, corrected"})
    assert not changed.is_error, changed.content[0].text
    await notes.wait_for(lambda: f"memory://memory/{first}" in notes.updated())
    for uri in watched:
        await client.unsubscribe_resource(uri)
    notes.received.clear()
    await remember(client, "a third memory nobody watches now")
    await anyio.sleep(1.0)
    assert notes.updated() == []


async def _legacy_logging(client: Client, notes: Notes) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    await client.set_logging_level("error")
    await client.call_tool("update_memory", {"memory_id": missing, "content": "x"})  # logs MemoryNotFoundError at info
    await anyio.sleep(0.5)
    assert notes.logged() == []
    await client.set_logging_level("info")
    await client.call_tool("update_memory", {"memory_id": missing, "content": "x"})
    await notes.wait_for(lambda: any("MemoryNotFoundError" in data for _, data in notes.logged()))
    assert {level for level, _ in notes.logged()} == {"info"}


async def test_legacy_subscriptions_and_logging_over_stdio(tmp_path):
    notes = Notes()
    (tmp_path / "store").mkdir()
    async with Client(
        stdio_params(tmp_path / "store"), mode="legacy", message_handler=notes, logging_callback=None
    ) as client:
        assert client.server_capabilities.resources.subscribe is True
        assert client.server_capabilities.logging is not None
        await _legacy_subscriptions(client, notes)
        await _legacy_logging(client, notes)


async def test_legacy_subscriptions_and_logging_over_http_sessions(tmp_path):
    notes = Notes()
    (tmp_path / "store").mkdir()
    with HttpServer(tmp_path, SPATIAL_MEMORY_HTTP_SESSIONS="true") as server:
        async with Client(server.url, mode="legacy", message_handler=notes) as client:
            await _legacy_subscriptions(client, notes)
            await _legacy_logging(client, notes)


async def test_stateless_http_refuses_a_subscription_and_says_what_works(tmp_path):
    (tmp_path / "store").mkdir()
    with HttpServer(tmp_path) as server:
        async with Client(server.url, mode="legacy") as client:
            with pytest.raises(MCPError) as refused:
                await client.subscribe_resource("memory://stats")
            assert "SPATIAL_MEMORY_HTTP_SESSIONS=true" in str(refused.value)
            assert "subscriptions/listen" in str(refused.value)


async def _listen(client: Client) -> None:
    assert client.protocol_version == "2026-07-28"
    first = await remember(client, "the first memory of the watched namespace")
    uris = ["memory://stats", f"memory://{NS}/recent", f"memory://memory/{first}", "memory://elsewhere/recent"]
    events: list[str] = []
    async with client.listen(resource_subscriptions=uris) as subscription:

        async def collect() -> None:
            async for event in subscription:
                if isinstance(event, ResourceUpdated):
                    events.append(event.uri)

        async with anyio.create_task_group() as group:
            group.start_soon(collect)
            await remember(client, "a second memory of the watched namespace")
            with anyio.fail_after(20):
                while not {"memory://stats", f"memory://{NS}/recent"} <= set(events):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)
            assert f"memory://memory/{first}" not in events and "memory://elsewhere/recent" not in events
            forgotten = await client.call_tool("forget", {"memory_id": first})
            assert forgotten.structured_content["deleted"] == 1, forgotten.content[0].text
            with anyio.fail_after(20):
                while f"memory://memory/{first}" not in events:
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()


async def _modern_lists_and_logging(client: Client) -> None:
    tools = await client.session.list_tools()
    assert tools.ttl_ms == 600_000 and tools.cache_scope == "public"
    read = await client.session.read_resource("memory://stats")
    assert read.ttl_ms == 0 and read.cache_scope == "private"
    logged: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(f"{params.level}:{params.data}")

    missing = "00000000-0000-4000-8000-000000000000"
    client.session._logging_callback = on_log  # noqa: SLF001 - the same client, now listening
    await client.call_tool(
        "update_memory", {"memory_id": missing, "content": "x"}, meta={"io.modelcontextprotocol/logLevel": "warning"}
    )
    await anyio.sleep(0.5)
    assert logged == []
    await client.call_tool(
        "update_memory", {"memory_id": missing, "content": "x"}, meta={"io.modelcontextprotocol/logLevel": "info"}
    )
    with anyio.fail_after(20):
        while not any("MemoryNotFoundError" in line for line in logged):
            await anyio.sleep(0.05)


async def test_a_2026_client_listens_over_stdio(tmp_path):
    (tmp_path / "store").mkdir()
    async with Client(stdio_params(tmp_path / "store"), mode="2026-07-28") as client:
        await _listen(client)
        await _modern_lists_and_logging(client)


async def test_a_2026_client_listens_over_stateless_http(tmp_path):
    (tmp_path / "store").mkdir()
    with HttpServer(tmp_path) as server:
        async with Client(server.url, mode="2026-07-28") as client:
            await _listen(client)
            await _modern_lists_and_logging(client)


def test_the_log_levels_map_onto_python_levels():
    import logging

    from spatial_memory.server.client_logging import mcp_level

    assert [mcp_level(n) for n in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)] == [
        "debug",
        "info",
        "warning",
        "error",
        "critical",
    ]
    assert json.dumps(mcp_level(logging.INFO + 5)) == '"notice"'

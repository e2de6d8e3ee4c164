"""The newest clients drive every tool: the TypeScript SDK 2.x client (`@modelcontextprotocol/client`
2.4, beside the 1.x one in tests/test_interop_typescript.py) with the 2025 handshake and pinned to
protocol 2026-07-28, and the Python SDK's client at 2026-07-28, over stdio and streamable HTTP.
A 2026-07-28 client gets the same tools as a 2025 one, every call succeeds and the results hold the
same facts; `subscriptions/listen` (2026) and `resources/subscribe` (2025) deliver updates through
the TypeScript clients; a destructive call asks for its confirmation where the client can answer
(`input_required` at 2026-07-28, `elicitation/create` before) and keeps `confirm` where it cannot.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .http_server import HttpServer
from .interop.node import TsClient
from .reliability import new_store, stdio_params
from .test_interop_typescript import NS, every_tool_steps, exchange_env, lean_text, seed_memories, server_spec
from .test_team_server import substitute


def ok(answer: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a call the TypeScript client returned as a success (2.x validates
    it against the output schema itself, and keeps its validators private)."""
    label = json.dumps(answer.get("step"))[:300]
    assert answer["ok"], f"the TypeScript client threw on {label}: {answer.get('error')}"
    result = answer["result"]
    assert not result.get("isError"), f"{label} failed: {result.get('content')}"
    assert json.loads(result["content"][0]["text"]) == lean_text(answer["step"]["call"], result["structuredContent"])
    return result["structuredContent"]


def facts(data: list[dict[str, Any]], seeds: list[dict[str, Any]]) -> None:
    """What every client must get from every_tool_steps, whatever its SDK or protocol version."""
    assert data[0]["count"] == len(seeds)
    assert data[9]["total_memories"] == len(seeds) + 1
    assert data[12]["output"].startswith("flowchart") and "<svg" in data[13]["output"]
    assert data[17]["groups_found"] >= 1
    assert data[21]["memories_exported"] == len(seeds) + 1 and data[25]["memories_imported"] == len(seeds) + 1
    assert data[28]["memories_deleted"] == len(seeds) + 1
    assert data[33]["memory"]["version"] == 2 and data[35]["superseded"] == [data[0]["ids"][4]]


def every_tool_through_typescript(node, tmp_path: Path, server: dict[str, Any], **header: Any) -> dict[str, Any]:
    seeds = seed_memories()
    exchange = tmp_path / "exchange"
    steps = every_tool_steps(seeds, str(uuid.uuid4()), str(exchange / "all.json"))
    with TsClient(node, server, tmp_path / "driver.log", header=header) as client:
        answers = client.steps(steps)
        listed = client.tools
        connected = client.connected
    facts([ok(a) for a in answers], seeds)
    assert {t["name"] for t in listed} == {s["call"] for s in steps}
    return {"connected": connected, "tools": listed}


@pytest.mark.slow
def test_the_typescript_2x_client_drives_every_tool_at_both_protocol_versions_over_stdio(node, tmp_path):
    def over_stdio(root: Path, **header: Any) -> dict[str, Any]:
        spec = server_spec(new_store(root, "store"), **exchange_env(root / "exchange"))
        return every_tool_through_typescript(node, root, spec, **header)

    legacy = over_stdio(tmp_path / "legacy", sdk="2")
    modern = over_stdio(tmp_path / "modern", sdk="2", mode="2026-07-28")
    assert legacy["connected"]["protocolVersion"] == "2025-11-25"
    assert modern["connected"]["protocolVersion"] == "2026-07-28"
    assert modern["tools"] == legacy["tools"]  # the same tools, schemas and all


@pytest.mark.slow
def test_the_typescript_2x_client_at_2026_drives_every_tool_over_http(node, tmp_path):
    (tmp_path / "store").mkdir()
    exchange = tmp_path / "exchange"
    with HttpServer(tmp_path, **exchange_env(exchange)) as server:
        result = every_tool_through_typescript(node, tmp_path, {"url": server.url}, sdk="2", mode="2026-07-28")
    assert result["connected"]["protocolVersion"] == "2026-07-28"


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_python_client_at_2026_drives_every_tool(tmp_path, transport):
    from mcp import Client

    seeds = seed_memories()
    exchange = tmp_path / "exchange"
    steps = every_tool_steps(seeds, str(uuid.uuid4()), str(exchange / "all.json"))
    (tmp_path / "store").mkdir()

    async def run(target) -> tuple[list[str], list[dict[str, Any]]]:
        outputs: list[dict[str, Any]] = []
        async with Client(target, mode="2026-07-28", read_timeout_seconds=300) as client:
            assert client.protocol_version == "2026-07-28"
            listed = [t.name for t in (await client.list_tools()).tools]
            for step in steps:
                result = await client.call_tool(step["call"], substitute(step["arguments"], outputs))
                assert not result.is_error, (step, result.content[0].text)
                outputs.append(result.structured_content)
        return listed, outputs

    if transport == "stdio":
        listed, outputs = await run(stdio_params(tmp_path / "store", **exchange_env(exchange)))
    else:
        with HttpServer(tmp_path, **exchange_env(exchange)) as server:
            listed, outputs = await run(server.url)
    facts(outputs, seeds)
    assert set(listed) == {s["call"] for s in steps}


def _doomed_steps() -> list[dict[str, Any]]:
    return [
        {"call": "remember", "arguments": {"content": "to be deleted", "namespace": "doomed"}},
        {"call": "delete_namespace", "arguments": {"namespace": "doomed", "dry_run": False}},
        {"call": "namespaces", "arguments": {}},
    ]


@pytest.mark.parametrize(
    ("sdk", "mode"), [("2", "2026-07-28"), ("2", None), ("1", None)], ids=["ts2-2026", "ts2-2025", "ts1-2025"]
)
def test_a_namespace_deletion_asks_for_its_confirmation_where_the_client_can(node, tmp_path, sdk, mode):
    header = {"sdk": sdk, **({"mode": mode} if mode else {})}
    for answer in ("accept", "decline", None):
        root = tmp_path / str(answer)
        store = new_store(root, "store")
        extra = {"elicitation": answer} if answer else {}
        with TsClient(node, server_spec(store), root / "driver.log", header={**header, **extra}) as client:
            remembered, deleted, listed = client.steps(_doomed_steps())
        ok(remembered)
        names = {n["name"] for n in ok(listed)["namespaces"]}
        if answer is None:  # a client that cannot ask: today's typed error, nothing deleted
            assert deleted["result"]["isError"] and "confirm=true" in deleted["result"]["content"][0]["text"]
            assert deleted["elicited"] == [] and names == {"doomed"}
        elif answer == "decline":
            assert deleted["result"]["isError"] and names == {"doomed"}
            assert deleted["elicited"] == ["Delete every memory in namespace 'doomed'? This cannot be undone."]
        else:
            assert ok(deleted)["memories_deleted"] == 1 and names == set()
            assert deleted["elicited"] == ["Delete every memory in namespace 'doomed'? This cannot be undone."]


@pytest.mark.parametrize(("sdk", "mode", "how"), [("2", "2026-07-28", "listen"), ("1", None, "subscribe")])
def test_resource_updates_reach_the_typescript_clients(node, tmp_path, sdk, mode, how):
    store = new_store(tmp_path, "store")
    header = {"sdk": sdk, **({"mode": mode} if mode else {})}
    watched = ["memory://stats", f"memory://{NS}/recent"]
    subscribe = [{"listen": watched}] if how == "listen" else [{"subscribe": uri} for uri in watched]
    steps = [
        *subscribe,
        {"subscribe": "memory://elsewhere/recent"} if how == "subscribe" else {"listen": ["memory://elsewhere/recent"]},
        {"call": "remember", "arguments": {"content": "a watched memory", "namespace": NS}},
        {"updates": True, "waitMs": 2000},
    ]
    with TsClient(node, server_spec(store), tmp_path / "driver.log", header=header) as client:
        answers = client.steps(steps)
    updated = answers[-1]["result"]["uris"]
    assert set(updated) == set(watched), updated

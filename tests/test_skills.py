"""Live procedures served as MCP skills (SEP-2640) through the Python SDK client: skills/list,
skills/get and resources/read agree byte for byte, and the served set follows the procedures."""

from __future__ import annotations

import hashlib
from typing import Any

import mcp_types
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from .conftest import data

pytestmark = pytest.mark.anyio

BUILD = {
    "trajectory": [
        {"action": "Run the failing test with pytest -x", "tool": "bash", "parameters": {"cmd": "pytest -x"}},
        {"action": "Add the missing import"},
    ],
    "outcome_score": 0.8,
    "domain": "coding",
    "trigger_pattern": "a Python test fails with ImportError",
    "name": "Fix a failing import!",
}


async def request(client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A Skills extension request (the Python SDK has no client helper for it)."""
    message = mcp_types.Request[dict[str, Any], str](method=method, params=params)
    return await client.session.send_request(message, TypeAdapter(dict[str, Any]))


def frontmatter(text: str) -> dict[str, Any]:
    import json

    head = text.split("---\n")[1]
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in head.splitlines())}


async def test_live_procedures_are_skills_with_right_digests(client):
    assert client.server_capabilities.extensions == {"io.modelcontextprotocol/skills": {}}
    assert client.server_capabilities.resources is not None
    assert (await request(client, "skills/list", {}))["skills"] == []
    built = data(await client.call_tool("build_skill", BUILD))
    listing = await request(client, "skills/list", {})
    assert listing["ttlMs"] > 0 and listing["cacheScope"] == "private"
    (entry,) = listing["skills"]
    assert entry["uri"] == built["skill_uri"]
    name = entry["frontmatter"]["name"]
    assert name == f"fix-a-failing-import-{built['procedure_id'][:8]}" and entry["uri"].endswith(f"/{name}/SKILL.md")
    assert entry["frontmatter"]["description"].startswith("Use when: a Python test fails with ImportError")
    (file,) = entry["resources"]
    read = await client.read_resource(entry["uri"])
    (content,) = read.contents
    raw = content.text.encode()
    assert content.mime_type == "text/markdown"
    assert file["size"] == len(raw) and file["digest"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert frontmatter(content.text) == entry["frontmatter"]
    assert "1. Run the failing test with pytest -x (tool `bash`" in content.text
    got = await request(client, "skills/get", {"uri": entry["uri"]})
    assert got["skill"] == entry and got["cacheScope"] == "private"


async def test_runs_change_the_skill_and_deprecation_removes_it(client):
    built = data(await client.call_tool("build_skill", BUILD))
    before = (await request(client, "skills/get", {"uri": built["skill_uri"]}))["skill"]
    await client.call_tool(
        "execute_skill",
        {"procedure_id": built["procedure_id"], "success": False, "error": "circular import", "failed_step": 2},
    )
    after = (await request(client, "skills/get", {"uri": built["skill_uri"]}))["skill"]
    assert after["resources"][0]["digest"] != before["resources"][0]["digest"]
    text = (await client.read_resource(built["skill_uri"])).contents[0].text
    assert "## Pitfalls" in text and "step 2 failed" in text and "circular import" in text
    assert "Executions: 1" in text
    await client.call_tool("deprecate_skill", {"procedure_id": built["procedure_id"], "reason": "obsolete"})
    assert (await request(client, "skills/list", {}))["skills"] == []
    with pytest.raises(MCPError) as refused:
        await request(client, "skills/get", {"uri": built["skill_uri"]})
    assert refused.value.error.code == mcp_types.INVALID_PARAMS
    with pytest.raises(MCPError):
        await client.read_resource(built["skill_uri"])


async def test_unknown_skills_are_invalid_params(client):
    for uri in ("skill://spatial-memory/nothing-12345678/SKILL.md", "skill://other/x/SKILL.md", "memory://stats"):
        with pytest.raises(MCPError) as refused:
            await request(client, "skills/get", {"uri": uri})
        assert refused.value.error.code == mcp_types.INVALID_PARAMS


async def test_a_legacy_session_that_listed_the_skills_is_told_when_they_change(settings, fake_embedder):
    """On a 2025-11-25 session the server advertises resources.listChanged; once the session has
    listed the skills it is sent notifications/resources/list_changed after any commit that changed
    them - a tool's, or a write by no tool at all (here the service called directly, as capture,
    backfill and import do) - and not after a call that changed nothing."""
    import anyio
    from mcp import Client

    from spatial_memory.server.app import create_server

    seen: list[str] = []

    async def handler(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            seen.append(method)

    def told() -> int:
        return seen.count("notifications/resources/list_changed")

    async def until_told(times: int) -> None:
        with anyio.fail_after(10):
            while told() < times:
                await anyio.sleep(0.02)

    server = create_server(settings, embedder=fake_embedder)
    async with Client(server, mode="legacy", message_handler=handler) as client:
        assert client.server_capabilities.resources.list_changed is True
        first = data(await client.call_tool("build_skill", BUILD))
        await anyio.sleep(0.5)
        assert told() == 0  # it has not listed the skills
        assert len((await request(client, "skills/list", {}))["skills"]) == 1
        built = data(await client.call_tool("build_skill", {**BUILD, "name": "Another"}))
        await until_told(1)
        await client.call_tool("execute_skill", {"procedure_id": built["procedure_id"], "success": True})
        await until_told(2)
        bad = await client.call_tool("execute_skill", {"procedure_id": "nope", "success": True})
        assert bad.is_error
        await client.call_tool("remember", {"content": "not a procedure"})  # a commit; the skills are the same
        await anyio.sleep(0.5)
        assert told() == 2
        await anyio.to_thread.run_sync(lambda: server.app.procedures.deprecate_skill(first["procedure_id"]))
        await until_told(3)
        assert len((await request(client, "skills/list", {}))["skills"]) == 1

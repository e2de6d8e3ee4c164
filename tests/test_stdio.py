"""The real entry point over stdio: `python -m spatial_memory`, with the real bundled model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from .conftest import data
from .reliability import wire_body

pytestmark = [pytest.mark.anyio, pytest.mark.model]


def server_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update({"SPATIAL_MEMORY_PATH": str(tmp_path / "store"), "HF_HUB_OFFLINE": "1"})
    return env


async def test_stdio_session_end_to_end(tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "spatial_memory"], env=server_env(tmp_path), cwd=str(tmp_path)
    )
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"remember", "recall", "nearby", "forget", "stats"} <= names
        stored = data(await client.call_tool("remember", {"content": "The staging server runs on port 8443"}))
        await client.call_tool("remember", {"content": "Lunch is at noon on Fridays"})
        found = data(await client.call_tool("recall", {"query": "which port does staging use?", "limit": 2}))
        assert found["memories"][0]["id"] == stored["id"]
        bad = await client.call_tool("remember", {"content": "x", "importance": 1.5})
        assert bad.is_error and data(bad)["error"] == "ValidationError"
    assert (tmp_path / "store" / "lancedb").is_dir()
    assert not any(p.name.startswith("lancedb") for p in tmp_path.iterdir() if p.name != "store")


def debug_server(tmp_path) -> subprocess.Popen:
    """The server on stdio pipes (text), logging at DEBUG to its stderr."""
    return subprocess.Popen(
        [sys.executable, "-m", "spatial_memory"],
        env=server_env(tmp_path) | {"SPATIAL_MEMORY_LOG_LEVEL": "DEBUG"},
        cwd=str(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_stdout_carries_only_protocol(tmp_path):
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"content": "hi"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "hi", "limit": 0}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "nearby", "arguments": {"memory_id": "nope"}},
        },
    ]
    proc = debug_server(tmp_path)
    responses = {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                deadline = time.monotonic() + 60
                while message["id"] not in responses and time.monotonic() < deadline:
                    line = proc.stdout.readline()
                    parsed = json.loads(line)  # every stdout line is JSON-RPC
                    assert parsed["jsonrpc"] == "2.0"
                    if "id" in parsed:
                        responses[parsed["id"]] = parsed
        proc.stdin.close()
        proc.wait(timeout=60)
        rest, stderr = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert responses[2]["result"]["tools"]
    assert responses[3]["result"]["isError"] is False
    assert responses[4]["result"]["isError"] is True
    assert wire_body(responses[4]["result"])["error"] == "ValidationError"
    assert wire_body(responses[5]["result"])["error"] == "MemoryNotFoundError"
    assert "Traceback" not in json.dumps(responses)
    assert proc.returncode == 0, stderr


def test_a_recalls_query_is_embedded_as_its_line_arrives(tmp_path):
    """The stdio transport begins a recall's embedding before the SDK dispatches it
    (runtime/early_queries.py), and the tool takes that vector: the same answers, sooner."""
    proc = debug_server(tmp_path)

    def ask(number: int, method: str, params: dict) -> dict:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == number:
                return answer["result"]

    try:
        ask(
            1,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        stored = wire_body(
            ask(2, "tools/call", {"name": "remember", "arguments": {"content": "The staging server runs on port 8443"}})
        )
        found = []
        for number in range(3, 6):  # the model is loaded (remember embedded its content)
            result = ask(
                number, "tools/call", {"name": "recall", "arguments": {"query": "which port does staging use?"}}
            )
            found.append(wire_body(result)["memories"][0]["id"])
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr = proc.stderr.read()
    finally:
        proc.kill()
    assert found == [stored["id"]] * 3
    assert "a query embedded from its request's arrival was taken" in stderr, stderr[-3000:]

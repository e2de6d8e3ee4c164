"""The handshake fast path: cached answers while the SDK imports, then a clean handover."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spatial_memory.config import Settings
from spatial_memory.tools import build_tools
from spatial_memory.transport.handshake import HandshakeCache, Recorder, cache_key, fingerprint

from .conftest import data
from .hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


def spawn_env(tmp_path: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(
        {
            "SPATIAL_MEMORY_PATH": str(tmp_path / "store"),
            "SPATIAL_MEMORY_PRELOAD": "false",
            "XDG_CACHE_HOME": str(cache),
            "HF_HUB_OFFLINE": "1",
        },
        **extra,
    )
    return env


def cache_file(cache: Path) -> Path:
    files = list((cache / "spatial-memory-mcp").glob("handshake-*.json"))
    assert len(files) == 1, files
    return files[0]


async def tools_and_info(tmp_path: Path, cache: Path, **extra: str):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "spatial_memory"], env=spawn_env(tmp_path, cache, **extra), cwd=tmp_path
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        stats = data(await client.call_tool("stats", {}))  # a tool call after the handover
    return tools, stats


async def test_second_start_is_answered_from_the_cache_then_handed_over(tmp_path):
    cache = tmp_path / "cache"
    first, stats = await tools_and_info(tmp_path, cache)
    assert stats["total_memories"] == 0
    path = cache_file(cache)
    entries = json.loads(path.read_text())
    assert {json.loads(k)[0] for k in entries} >= {"tools/list"}

    second, _ = await tools_and_info(tmp_path, cache)
    assert [t.model_dump() for t in second] == [t.model_dump() for t in first]

    # Proof that the answer came from the cache, not the SDK: a marked entry is what the client gets.
    marked = {}
    for key, result in entries.items():
        parsed = json.loads(result)
        if json.loads(key)[0] == "tools/list":
            parsed["tools"][0]["description"] = "MARKED"
        marked[key] = json.dumps(parsed)
    path.write_text(json.dumps(marked))
    third, stats = await tools_and_info(tmp_path, cache)
    assert third[0].description == "MARKED"
    assert stats["total_memories"] == 0

    # Disabled, the SDK answers (and the marked cache is left alone).
    fourth, _ = await tools_and_info(tmp_path, cache, SPATIAL_MEMORY_FAST_HANDSHAKE="false")
    assert fourth[0].description == first[0].description


async def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path):
    cache = tmp_path / "cache"
    first, _ = await tools_and_info(tmp_path, cache)
    path = cache_file(cache)
    path.write_text("{not json")
    second, stats = await tools_and_info(tmp_path, cache)
    assert [t.name for t in second] == [t.name for t in first] and stats["total_memories"] == 0
    assert json.loads(path.read_text())  # rewritten from the SDK's answers


def legacy_session(tmp_path: Path, cache: Path) -> tuple[dict, list[dict]]:
    """initialize / initialized / tools/list / a tool call, as a pre-2026 client sends them."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "stats", "arguments": {}}},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "spatial_memory"],
        env=spawn_env(tmp_path, cache),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    answers: dict = {}
    lines: list[dict] = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" not in message:
                continue
            while message["id"] not in answers:
                parsed = json.loads(proc.stdout.readline())
                lines.append(parsed)
                if "id" in parsed:
                    answers[parsed["id"]] = parsed
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    lines += [json.loads(line) for line in rest.splitlines() if line.strip()]
    assert proc.returncode == 0, proc.stderr.read().decode()
    return answers, lines


def test_legacy_initialize_is_replayed_to_the_sdk_and_answered_once(tmp_path):
    cache = tmp_path / "cache"
    first, first_lines = legacy_session(tmp_path, cache)
    second, second_lines = legacy_session(tmp_path, cache)
    for answers, lines in ((first, first_lines), (second, second_lines)):
        ids = [line["id"] for line in lines if "id" in line]
        assert sorted(map(str, ids)) == ["1", "3", "two"]  # every request answered exactly once
        assert answers[1]["result"]["protocolVersion"] == "2025-06-18"
        assert len(answers["two"]["result"]["tools"]) == len(build_tools(Settings()))
        assert answers[3]["result"]["structuredContent"]["total_memories"] == 0  # the SDK session is initialized
    assert second[1] == first[1] and second["two"] == first["two"]


def test_cache_keys_cover_only_opening_requests(tmp_path):
    assert cache_key({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) == cache_key(
        {"jsonrpc": "2.0", "id": "x", "method": "tools/list", "params": {}}
    )
    assert cache_key({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "2"}}) is None
    assert cache_key({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stats"}}) is None
    assert cache_key({"jsonrpc": "2.0", "id": True, "method": "tools/list"}) is None
    assert cache_key({"jsonrpc": "2.0", "method": "tools/list"}) is None  # a notification
    assert cache_key(["not", "a", "request"]) is None
    settings = Settings(path=tmp_path / "fp")
    assert len(fingerprint(settings)) == 20 and fingerprint(settings) == fingerprint(settings)


def test_recorder_learns_answers_and_drops_second_answers(tmp_path):
    cache = HandshakeCache(tmp_path, "f")
    recorder = Recorder(cache, answered={1})
    recorder.incoming('{"jsonrpc":"2.0","id":7,"method":"tools/list"}\n')
    assert recorder.outgoing('{"jsonrpc":"2.0","id":1,"result":{"again":true}}\n') is False
    assert recorder.outgoing('{"jsonrpc":"2.0","id":1,"result":{"later":true}}\n') is True  # only the first
    assert recorder.outgoing('{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}\n') is True
    assert HandshakeCache(tmp_path, "f").get(cache_key({"jsonrpc": "2.0", "id": 0, "method": "tools/list"})) == (
        '{"tools":[]}'
    )
    recorder.incoming('{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"cursor":"c"}}\n')
    assert recorder.outgoing('{"jsonrpc":"2.0","id":8,"error":{"code":1,"message":"x"}}\n') is True


async def test_cached_answers_depend_only_on_the_fingerprinted_settings(tmp_path, monkeypatch):
    """The cache is keyed by code, SDK and the settings the tool schemas are built from: any
    other setting must leave every cached answer unchanged, and those settings must change both
    the answers and the fingerprint."""
    from spatial_memory.server.app import create_server

    # Every server builds its own tools here (not the suite's shared ones: conftest.py).
    monkeypatch.setattr("spatial_memory.server.app.build_tools", build_tools)

    async def answers(settings):
        server = create_server(settings, embedder=HashEmbedder())
        tools = [t.model_dump() for t in await server.list_tools()]
        options = server._lowlevel_server.create_initialization_options()
        return tools, options.model_dump()

    plain = Settings(path=tmp_path / "a", preload=False)
    unrelated = Settings(path=tmp_path / "b", preload=False, log_level="DEBUG", index_ef=50, embedding_batch_size=4)
    limits = Settings(path=tmp_path / "c", preload=False, max_content_length=10, max_batch_size=2)
    assert await answers(plain) == await answers(unrelated)
    assert fingerprint(plain) == fingerprint(unrelated)
    assert await answers(plain) != await answers(limits)
    assert fingerprint(plain) != fingerprint(limits)
    profile = Settings(path=tmp_path / "d", preload=False, tools="core")  # the listed tools and the instructions
    assert await answers(plain) != await answers(profile)
    assert fingerprint(plain) != fingerprint(profile)


def test_the_tools_are_built_from_the_fingerprinted_settings_only(tmp_path):
    """Every setting the tool schemas and the tool selection read is one the cache is keyed by
    (a description naming a setting's value counts)."""
    from spatial_memory.limits import SCHEMA_SETTINGS
    from spatial_memory.tools import build_tools

    class Recorder:
        def __init__(self, settings: Settings) -> None:
            self.settings, self.read = settings, set()

        def __getattr__(self, name: str):
            self.read.add(name)
            return getattr(self.settings, name)

    recorder = Recorder(Settings(path=tmp_path, preload=False))
    assert build_tools(recorder)
    assert recorder.read and recorder.read <= set(SCHEMA_SETTINGS), recorder.read - set(SCHEMA_SETTINGS)


def test_the_fingerprint_covers_every_module_of_the_package():
    from spatial_memory.transport.handshake import fingerprint_sources

    package = Path(__file__).resolve().parents[1] / "spatial_memory"
    sources = set(fingerprint_sources())
    for module in ("tools/memory.py", "tools/types.py", "storage/store.py", "server/app.py", "__init__.py"):
        assert (package / module).resolve() in sources, module

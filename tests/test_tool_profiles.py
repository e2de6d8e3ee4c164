"""SPATIAL_MEMORY_TOOLS: the tools a server lists, per profile or by name (the `all` listing is
pinned by the tools/list snapshot in test_protocol_core.py)."""

from __future__ import annotations

import re

import pytest

from spatial_memory.config import Settings, describe_settings_error
from spatial_memory.tool_profiles import CORE, TOOL_NAMES

from .conftest import data
from .hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio

READ_ONLY = [
    "get_memories",
    "memory_history",
    "recall",
    "hybrid_recall",
    "nearby",
    "journey",
    "wander",
    "regions",
    "visualize",
    "stats",
    "namespaces",
    "health",
    "discover_connections",
    "corpus_bridges",
    "setup_hooks",
    "how_to",
]


def test_the_catalogue_names_every_registered_tool_in_order(tmp_path):
    from spatial_memory.tools import build_tools

    tools = build_tools(Settings(path=tmp_path, preload=False))
    assert tuple(t.name for t in tools) == TOOL_NAMES
    assert list(CORE) == [name for name in TOOL_NAMES if name in CORE]  # listed in this order
    assert [t.name for t in tools if t.annotations.read_only_hint] == READ_ONLY


def test_an_unknown_name_is_refused_in_one_line_naming_it_and_the_valid_ones(tmp_path):
    with pytest.raises(Exception) as caught:
        Settings(path=tmp_path, tools="core, rememberr,nope")
    line = describe_settings_error(caught.value)
    assert "\n" not in line and line.startswith("invalid setting SPATIAL_MEMORY_TOOLS:")
    assert "'rememberr', 'nope'" in line and "profiles: all, core, readonly" in line and "update_memory" in line
    with pytest.raises(Exception, match="names no tools"):
        Settings(path=tmp_path, tools=" , ")


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("core", list(CORE)),
        ("readonly", READ_ONLY),
        ("recall, remember,recall", ["remember", "recall"]),
        ("core,stats", ["remember", "remember_batch", "update_memory", "forget", "recall", "stats", "namespaces"]),
    ],
)
async def test_a_profile_lists_its_tools_and_refuses_the_others(tmp_path, selection, expected):
    from mcp import Client

    from spatial_memory.server.app import create_server

    settings = Settings(path=tmp_path / "store", preload=False, tools=selection)
    async with Client(create_server(settings, embedder=HashEmbedder())) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert sorted(names) == sorted(expected) and names == [n for n in TOOL_NAMES if n in names]
        outside = next(n for n in TOOL_NAMES if n not in names)
        body = data(await client.call_tool(outside, {}))
        assert body["error"] == "ValidationError" and body["isError"] is True
        assert body["message"].startswith(f"Unknown tool: {outside}"), body
        assert body["message"].endswith(f"; tools: {', '.join(names)}"), body  # the listed ones

        # The instructions and the prompts name only listed tools.
        mentioned = set(re.findall(r"`(\w+)`", client.instructions or ""))
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        for name, prompt in prompts.items():
            required = {a.name: "x" for a in prompt.arguments or [] if a.required}
            text = (await client.get_prompt(name, required)).messages[0].content.text
            mentioned |= set(re.findall(r"`(\w+)`", text))
        assert mentioned <= set(names), mentioned - set(names)
        if "recall" in names:
            assert {"recall_for_task", "review_tag"} <= set(prompts)
            await client.call_tool("recall", {"query": "anything"})
        assert ("save_session_summary" in prompts) == bool({"remember", "remember_batch"} & set(names))


async def test_every_tool_is_named_in_the_full_instructions(client):
    from spatial_memory.server.app import INSTRUCTION_SENTENCES

    text = client.instructions
    named = [name for _, group in INSTRUCTION_SENTENCES for name in group]
    assert set(re.findall(r"`(\w+)`", text)) == set(named) and set(named) <= set(TOOL_NAMES)

"""What a tool call sends back, pinned byte for byte: the structured content and the text of
remember, recall, get_memories and error results, through a real MCP client session.

The call path (tools/calls.py, server/mcp_server.py) may be made cheaper, never different: a
result's content is the same for the same call. Ids and times, which differ from run to run, are
replaced by placeholders in order of appearance (a short id by its full id's placeholder).
The snapshot is tests/snapshots/call_results.json; a deliberate change to what results say is
written there with SPATIAL_MEMORY_UPDATE_SNAPSHOTS=1.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from spatial_memory.limits import SHORT_ID_CHARS

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "call_results.json"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_DAY = re.compile(r"\d{4}-\d\d-\d\d")

MEMORIES = [
    {"content": "Deploys go out on Fridays after the standup", "tags": ["ops"], "importance": 0.8},
    {"content": "The staging database is rebuilt every night at 02:00", "namespace": "infra"},
    {"content": "Alice prefers tabs; Bob prefers spaces", "metadata": {"team": "web", "n": 3}},
]


class Placeholders:
    """Full ids (and their short forms) and times as stable placeholders."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        for full in _UUID.findall(text):
            self.ids.setdefault(full, f"<id{len(self.ids)}>")
        text = _UUID.sub(lambda m: self.ids[m.group(0)], text)
        for full, name in self.ids.items():
            text = text.replace(f'"{full[:SHORT_ID_CHARS]}', f'"{name[:-1]}-short>')
        return _DAY.sub("<day>", _TIME.sub("<time>", text))


def wire(result, placeholders: Placeholders) -> dict:
    """A result as bytes the client received: each content block's text, the structured content."""
    structured = result.structured_content
    if structured is not None:  # first: the full ids it holds name the short ones in the text
        structured = placeholders(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = [placeholders(block.text) for block in result.content if block.type == "text"]
    return {"is_error": bool(result.is_error), "text": text, "structured": structured}


async def test_results_are_the_same_bytes_as_pinned(client):
    placeholders = Placeholders()
    seen: dict[str, dict] = {}

    async def record(label: str, name: str, arguments: dict) -> dict:
        result = await client.call_tool(name, arguments)
        seen[label] = wire(result, placeholders)
        return result.structured_content or {}

    ids = [(await record(f"remember {n}", "remember", memory))["id"] for n, memory in enumerate(MEMORIES)]
    await record("recall", "recall", {"query": "when do deploys go out", "limit": 10})
    await record("recall namespace", "recall", {"query": "database", "limit": 10, "namespace": "infra"})
    await record("get_memories", "get_memories", {"memory_ids": [ids[2], ids[0][:SHORT_ID_CHARS]]})
    await record("not found", "get_memories", {"memory_ids": ["00000000-0000-4000-8000-000000000000"]})
    await record(
        "error: not found", "update_memory", {"memory_id": "00000000-0000-4000-8000-000000000000", "content": "x"}
    )
    await record("error: invalid argument", "recall", {"query": "x", "limit": 0})
    await record("error: unknown argument", "recall", {"query": "x", "limt": 3})
    await record("error: unknown tool", "recal", {"query": "x"})

    if os.environ.get("SPATIAL_MEMORY_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(seen, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert seen == json.loads(SNAPSHOT.read_text(encoding="utf-8"))

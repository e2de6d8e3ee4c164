"""What tools/list costs a model under each tool profile (SPATIAL_MEMORY_TOOLS).

Every client sends the model the whole tools/list answer in every conversation. This lists the
tools of a server per profile through an MCP client session and measures the answer as
compact JSON (characters, and characters / 4 as a rough token count). Deterministic: no timing.

python -m benchmarks.tools_list_size    # print the table, write benchmarks/results/tools_list_size.json
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from .common import listing_size, print_table, write_json

PROFILES = ("all", "readonly", "core")


async def measure(profile: str, store: Path) -> dict[str, Any]:
    from mcp import Client

    from spatial_memory.config import Settings
    from spatial_memory.server.app import create_server

    settings = Settings(path=store, preload=False, tools=profile)
    async with Client(create_server(settings)) as client:
        return {"profile": profile, **listing_size((await client.list_tools()).tools)}


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        rows = [await measure(profile, Path(root) / profile) for profile in PROFILES]
    print_table("tools/list size per profile", rows)
    print(f"\nwrote {write_json('tools_list_size', {'rows': rows})}")


if __name__ == "__main__":
    anyio.run(main)

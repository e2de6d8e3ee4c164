"""What tools/list costs a model under each tool profile (SPATIAL_MEMORY_TOOLS).

Every client puts each listed tool's name, description and input schema, and the server's
instructions, into the model's context in every conversation. This lists the tools of a server per
profile through an MCP client session and reports that model-visible part (characters, and
characters / 4 as tokens: spatial_memory/tools/budget.py) beside the budget, the reference 1.11.4's
4,840 tokens measured the same way; and the whole answer as compact JSON (output schemas
included, which clients read and models do not). Deterministic: no timing.

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
    from spatial_memory.tools.budget import BUDGET_TOKENS, model_visible_chars, tokens

    settings = Settings(path=store, preload=False, tools=profile)
    async with Client(create_server(settings)) as client:
        tools = (await client.list_tools()).tools
        visible = model_visible_chars(tools, client.instructions)
    return {
        "profile": profile,
        "model_visible_chars": visible,
        "model_visible_tokens": tokens(visible),
        "budget_tokens": BUDGET_TOKENS,
        **listing_size(tools),
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        rows = [await measure(profile, Path(root) / profile) for profile in PROFILES]
    print_table("tools/list size per profile", rows)
    print(f"\nwrote {write_json('tools_list_size', {'rows': rows})}")


if __name__ == "__main__":
    anyio.run(main)

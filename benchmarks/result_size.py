"""What each read tool's result costs a model, on a fixed workload: this checkout beside another
(today's main, before the lean form) and the reference 1.11.4.

Clients hand the model a result's text content. For each server, a fresh store: 50 short memories
(remember_batch), then one call of each read tool: recall and hybrid_recall (limit 5, QUERY),
nearby (recall's first hit, limit 5), get_memories (recall's hits), then a procedure
(build_skill, where the server has it) and how_to, regions, namespaces, stats. Reported: the characters of the
text content and characters / 4 as tokens (spatial_memory/tools/budget.py), and for ours the
structured content's characters (the whole result, which clients keep and models do not read).
Deterministic: no timing. A tool a server does not have is left out of its row.

    python -m benchmarks.result_size                                  # this checkout alone
    python -m benchmarks.result_size --before /tmp/main-checkout --venv /tmp/ref-venv
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from spatial_memory.evaluation.soak import short_texts

from .common import print_table, write_json
from .reference import ensure_reference, ours_command, reference_command, spawn

QUERY = "What do you remember about our deployments?"
MEMORIES = 50
READ_TOOLS = ("recall", "hybrid_recall", "nearby", "get_memories", "how_to", "regions", "namespaces", "stats")
SKILL = {
    "trajectory": [
        {"action": "run the test suite", "tool": "bash", "result": "all green"},
        {"action": "build the release image", "tool": "bash", "parameters": {"tag": "v2"}},
        {"action": "deploy it to staging, then production", "tool": "bash"},
    ],
    "outcome_score": 1.0,
    "domain": "devops",
    "trigger_pattern": "deploying a release",
}


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def payload(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    try:
        return json.loads(text_of(result))
    except ValueError:
        return None


async def measure(name: str, argv: list[str], env: dict[str, str], root: Path) -> dict[str, Any]:
    from mcp.types import ListToolsResult

    row: dict[str, Any] = {"server": name}
    structured: dict[str, Any] = {}
    async with spawn(argv, env, root) as (client, _):
        listed: ListToolsResult = await client.list_tools()
        names = {t.name for t in listed.tools}
        texts = short_texts(MEMORIES, seed=MEMORIES)
        stored = await client.call_tool("remember_batch", {"memories": [{"content": t} for t in texts]})
        assert not stored.is_error, text_of(stored)
        ids: list[str] = []
        for tool in READ_TOOLS:
            if tool not in names:
                continue
            if tool == "how_to":  # after the memory tools: their results are of the 50 memories alone
                built = await client.call_tool("build_skill", SKILL)
                assert not built.is_error, text_of(built)
            args: dict[str, Any] = {
                "recall": {"query": QUERY, "limit": 5},
                "hybrid_recall": {"query": QUERY, "limit": 5},
                "nearby": {"memory_id": ids[0] if ids else "", "limit": 5},
                "get_memories": {"memory_ids": ids},
                "how_to": {"task": "deploy a release to production"},
            }.get(tool, {})
            result = await client.call_tool(tool, args)
            if result.is_error:
                row[f"{tool}_error"] = text_of(result)[:120]
                continue
            if tool == "recall":
                # Full ids from the whole result (structured content, or the reference's JSON text).
                ids = [m["id"] for m in payload(result)["memories"]]
            row[tool] = len(text_of(result))
            if result.structured_content is not None:
                structured[tool] = len(json.dumps(result.structured_content, separators=(",", ":")))
    row["structured_chars"] = structured
    return row


async def run(before: Path | None, venv: Path | None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sm-result-size-"))
    servers: list[tuple[str, list[str], dict[str, str]]] = []
    argv, env = ours_command(root / "ours-store", root / "cache")
    servers.append(("ours", argv, env))
    if before is not None:
        argv, env = ours_command(root / "before-store", root / "cache-before", before)
        servers.append(("before", argv, env))
    if venv is not None:
        argv, env = reference_command(ensure_reference(venv), root / "reference-store")
        servers.append(("reference 1.11.4", argv, env))
    rows = [await measure(name, argv, env, root) for name, argv, env in servers]
    return {"query": QUERY, "memories": MEMORIES, "rows": rows, "ratios": ratios(rows)}


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tool: characters and tokens for each server, and ours as a fraction of the others."""
    by = {r["server"]: r for r in rows}
    ours = by["ours"]
    table = []
    for tool in READ_TOOLS:
        line: dict[str, Any] = {"tool": tool}
        for name, r in by.items():
            if tool in r:
                line[f"{name} chars"] = r[tool]
                line[f"{name} tokens"] = round(r[tool] / 4)
        for name, r in by.items():
            if name != "ours" and tool in r and tool in ours:
                line[f"ours / {name}"] = round(ours[tool] / r[tool], 3)
        table.append(line)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout of ours (today's main)")
    parser.add_argument("--venv", type=Path, help="a virtualenv for the reference (created when missing)")
    args = parser.parse_args()
    out = anyio.run(run, args.before, args.venv)
    print_table(f"model-visible characters of each read tool's result ({MEMORIES} memories)", out["ratios"])
    print(f"\nwrote {write_json('result_size', out)}")


if __name__ == "__main__":
    main()

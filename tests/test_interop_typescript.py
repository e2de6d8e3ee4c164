"""Interop: the server driven by the official TypeScript MCP clients - the SDK's `Client` (what
Claude Desktop, Claude Code and the MCP Inspector are built on) and the MCP Inspector CLI.

The TypeScript client is stricter than the Python one: `callTool` validates structuredContent
against the tool's outputSchema (after tools/list, as every real client calls it first), and
throws on a result it cannot accept. Every test here fails when a TypeScript client would reject
or misread something: a tool result, a typed error, a progress notification, a resource or prompt.

Plumbing (node, the pinned npm packages in a cache directory, the driver): tests/interop/. Without
node/npm these tests are skipped, except under CI (CI set), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

from spatial_memory.tools import AREAS
from spatial_memory.tools.lean import lean

from .interop.node import NodeTools, TsClient, run_scenario
from .reliability import new_store, server_args, server_env

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
NS = "interop"

# Three topics of eight, plus two identical statements for consolidate to find.
TOPICS = {
    "database": [
        "We decided to use PostgreSQL as the main database for the billing service",
        "The PostgreSQL database needs a nightly vacuum to keep billing queries fast",
        "Database migrations for billing run with alembic before each deploy",
        "The billing database keeps seven days of point in time recovery",
        "Read replicas of the PostgreSQL database serve the reporting queries",
        "Database connection pooling uses pgbouncer in transaction mode",
        "The billing database schema has an invoices table and a payments table",
        "Slow database queries are logged when they take more than 200 ms",
    ],
    "frontend": [
        "The frontend is written in TypeScript with React components",
        "React components of the frontend are tested with testing library",
        "The frontend bundle is built with vite and served from a CDN",
        "Frontend state management uses React context instead of redux",
        "The TypeScript frontend uses strict mode and eslint",
        "Frontend routes are lazy loaded React components",
        "The design system of the frontend lives in a shared React package",
        "Frontend error reports go to Sentry with source maps",
    ],
    "travel": [
        "Alice is travelling to Lisbon in May for the conference",
        "The Lisbon conference hotel is near the river in May",
        "Alice prefers window seats when travelling by plane",
        "The flight to Lisbon leaves Tuesday morning in May",
        "Travel expenses for the Lisbon trip go through the travel portal",
        "Alice wants a vegetarian meal on the Lisbon flight",
        "The conference in Lisbon runs for three days in May",
        "Travel insurance for the Lisbon trip covers cancellations",
    ],
}
DUPLICATE = "The deploy pipeline runs every Friday at noon"


def seed_memories() -> list[dict[str, Any]]:
    memories = [
        {"content": text, "namespace": NS, "tags": [topic], "importance": 0.3 + 0.05 * i, "metadata": {"n": i}}
        for topic, texts in TOPICS.items()
        for i, text in enumerate(texts)
    ]
    memories += [{"content": DUPLICATE, "namespace": NS, "tags": ["ops"]} for _ in range(2)]
    return memories


# ---- plumbing -------------------------------------------------------------------------------


def server_spec(store: Path, *, fake: bool = True, **env: str) -> dict[str, Any]:
    """How the driver starts the server: as in tests/reliability.py (`python -m ...`, SPATIAL_MEMORY_*)."""
    return {
        "command": sys.executable,
        "args": server_args(fake=fake),
        "env": server_env(store, **env),
        "cwd": str(store.parent),
    }


def exchange_env(directory: Path) -> dict[str, str]:
    """Export and import confined to one temporary directory (instead of <data dir>/exports)."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "SPATIAL_MEMORY_EXPORT_DIRS": json.dumps([str(directory)]),
        "SPATIAL_MEMORY_IMPORT_DIRS": json.dumps([str(directory)]),
    }


# Each tool's result model (its return annotation): the lean text is computed from it.
RESULT_MODELS = {
    fn.__name__: get_args(get_type_hints(fn, include_extras=True)["return"])[1] for area in AREAS for fn in area.TOOLS
}


def text_json(result: dict[str, Any]) -> Any:
    content = result.get("content") or []
    assert content and content[0].get("type") == "text", result
    # Besides the JSON text, only visualize's SVG travels, as an embedded image/svg+xml resource.
    extra = content[1:]
    assert all(c.get("type") == "resource" and c["resource"].get("mimeType") == "image/svg+xml" for c in extra), result
    return json.loads(content[0]["text"])


def succeeded(answer: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a tool call the TypeScript client accepted as a success."""
    label = json.dumps(answer.get("step"))[:300]
    assert answer["ok"], f"the TypeScript client threw on {label}: {answer.get('error')}"
    result = answer["result"]
    assert not result.get("isError"), f"{label} failed: {result.get('content')}"
    assert answer["outputSchemaValidated"], f"{label}: the client had no output schema to validate against"
    data = result.get("structuredContent")
    assert isinstance(data, dict), f"{label}: no structuredContent: {result}"
    tool = answer["step"]["call"]
    assert text_json(result) == lean_text(tool, data), f"{label}: the text is not the lean form of structuredContent"
    return data


def lean_text(tool: str, data: dict[str, Any]) -> Any:
    """What the text block holds: the lean form (spatial_memory/tools/lean.py) of the whole result."""
    return lean(RESULT_MODELS[tool].model_validate(data))


def typed_error(answer: dict[str, Any], error_type: str, *mentions: str) -> str:
    """The message of an isError result the TypeScript client returned without throwing."""
    label = json.dumps(answer.get("step"))[:300]
    assert answer["ok"], f"the TypeScript client threw on {label} instead of returning the error: {answer['error']}"
    result = answer["result"]
    assert result.get("isError") is True, f"{label} did not fail: {result}"
    assert "structuredContent" not in result, f"{label}: an error result with structuredContent: {result}"
    body = text_json(result)
    assert body.get("error") == error_type, f"{label}: expected {error_type}, got {body}"
    assert body.get("isError") is True, body
    message = body.get("message")
    assert isinstance(message, str) and message, body
    assert "Traceback" not in message, body
    for word in mentions:
        assert word in message, f"{label}: the message does not mention {word!r}: {message}"
    return message


def every_tool_steps(seeds: list[dict[str, Any]], unknown: str, export_path: str) -> list[dict[str, Any]]:
    """A scenario calling every tool (test_team_server.py runs it over HTTP): step 0 stores `seeds`,
    "$N.path" refers to step N's result (driver.mjs); `unknown` is an id no memory has."""
    return [
        {"call": "remember_batch", "arguments": {"memories": seeds, "allow_duplicate": True}},  # 0 (DUPLICATE twice)
        {
            "call": "remember",
            "arguments": {
                "content": "Bob owns the payments runbook",
                "namespace": NS,
                "tags": ["people", "payments"],
                "importance": 0.9,
                "metadata": {"source": "interop", "nested": {"list": [1, 2.5, None, True]}},
            },
        },  # 1
        {
            "call": "recall",
            "arguments": {
                "query": "which database does billing use",
                "limit": 5,
                "namespace": NS,
                "tags": ["database"],
                "filters": {"importance": {"gte": 0.1}},
            },
        },  # 2
        {"call": "recall", "arguments": {"query": "PostgreSQL billing", "hybrid_alpha": 0.5}},  # 3
        {"call": "hybrid_recall", "arguments": {"query": "PostgreSQL pgbouncer", "alpha": 0.5, "limit": 5}},  # 4
        {"call": "nearby", "arguments": {"memory_id": "$1.id", "limit": 3}},  # 5
        {
            "call": "journey",
            "arguments": {"start_id": "$0.ids.0", "end_id": "$0.ids.16", "steps": 5, "include_positions": True},
        },  # 6
        {"call": "wander", "arguments": {"start_id": "$0.ids.8", "steps": 5, "random_seed": 7}},  # 7
        {"call": "wander", "arguments": {"seed": "Lisbon conference", "steps": 3, "temperature": 0.0}},  # 8
        {"call": "regions", "arguments": {"namespace": NS, "min_cluster_size": 3, "include_members": True}},  # 9
        # Fewer than 16 memories: PCA, not UMAP (the UMAP path is test_first_visualize_reports_progress's).
        {"call": "visualize", "arguments": {"namespace": NS, "format": "json", "max_memories": 12}},  # 10
        {
            "call": "visualize",
            "arguments": {"memory_ids": "$0.ids", "format": "json", "dimensions": 3, "max_memories": 10},
        },  # 11
        {"call": "visualize", "arguments": {"namespace": NS, "format": "mermaid", "max_memories": 12}},  # 12
        {
            "call": "visualize",
            "arguments": {"namespace": NS, "format": "svg", "max_memories": 12, "highlight_ids": ["$1.id"]},
        },  # 13
        {"call": "decay", "arguments": {"namespace": NS, "dry_run": True}},  # 14
        {"call": "reinforce", "arguments": {"memory_ids": ["$1.id", unknown], "boost_amount": 0.05}},  # 15
        {
            "call": "extract",
            "arguments": {
                "text": "We decided to deploy the billing service with Kubernetes. "
                "The outage was caused by an expired TLS certificate. "
                "Remember that the on-call rotation changes every Monday.",
                "namespace": "extracted",
                "min_confidence": 0.3,
            },
        },  # 16
        {"call": "consolidate", "arguments": {"namespace": NS, "dry_run": True, "similarity_threshold": 0.9}},  # 17
        {"call": "stats", "arguments": {}},  # 18
        {"call": "stats", "arguments": {"namespace": NS, "include_index_details": False}},  # 19
        {"call": "namespaces", "arguments": {}},  # 20
        {"call": "export_memories", "arguments": {"output_path": export_path, "namespace": NS}},  # 21
        {"call": "export_memories", "arguments": {"output_path": "all.parquet"}},  # 22
        {"call": "export_memories", "arguments": {"output_path": "all.csv"}},  # 23
        {"call": "import_memories", "arguments": {"source_path": "all.json", "namespace_override": "imported"}},  # 24
        {
            "call": "import_memories",
            "arguments": {"source_path": "all.json", "namespace_override": "imported", "dry_run": False},
        },  # 25
        {"call": "rename_namespace", "arguments": {"old_namespace": "imported", "new_namespace": "renamed"}},  # 26
        {"call": "delete_namespace", "arguments": {"namespace": "renamed"}},  # 27: dry run
        {"call": "delete_namespace", "arguments": {"namespace": "renamed", "confirm": True, "dry_run": False}},  # 28
        {"call": "forget", "arguments": {"memory_id": "$1.id"}},  # 29
        {"call": "forget_batch", "arguments": {"memory_ids": ["$0.ids.1", "$0.ids.2", unknown]}},  # 30
        {"call": "forget", "arguments": {"namespace": "extracted"}},  # 31
        {"call": "stats", "arguments": {"namespace": "empty"}},  # 32: the null fields of an empty selection
        {
            "call": "update_memory",
            "arguments": {"memory_id": "$0.ids.3", "content": "Billing moved to MySQL 8.", "pinned": True},
        },  # 33
        {"call": "memory_history", "arguments": {"memory_id": "$0.ids.3"}},  # 34
        {
            "call": "remember",
            "arguments": {
                "content": "The payments team meets on Tuesdays now.",
                "namespace": NS,
                "supersedes": ["$0.ids.4"],
                "memory_type": "conversation",
            },
        },  # 35
        {"call": "get_memories", "arguments": {"memory_ids": ["$0.ids.3", "$0.ids.4", "$35.id", unknown]}},  # 36
        {
            "call": "recall",
            "arguments": {"query": "billing database", "namespace": NS, "as_of": "2100-01-01T00:00:00Z"},
        },  # 37
        {"call": "recall", "arguments": {"query": "anything at all", "namespace": NS, "limit": 1}},  # 38: pinned first
        {"call": "health", "arguments": {"verbose": True}},  # 39
        {"call": "remember", "arguments": {"content": "Billing moved to MySQL 8.", "namespace": "elsewhere"}},  # 40
        {"call": "discover_connections", "arguments": {"memory_id": "$0.ids.3", "min_similarity": 0.0}},  # 41
        {"call": "corpus_bridges", "arguments": {"min_similarity": 0.5, "max_bridges": 5}},  # 42
        {
            "call": "relate",
            "arguments": {"source_id": "$0.ids.5", "target_id": "$0.ids.6", "relation": "supports", "weight": 0.5},
        },  # 43
        {"call": "get_memories", "arguments": {"memory_ids": ["$0.ids.6"]}},  # 44
        {"call": "unrelate", "arguments": {"source_id": "$0.ids.5", "target_id": "$0.ids.6"}},  # 45
        {"call": "relate", "arguments": {"source_id": "$0.ids.3", "target_id": "$0.ids.6", "relation": "caused"}},  # 46
        {"call": "recall", "arguments": {"query": "Billing moved to MySQL 8.", "namespace": NS, "expand": 3}},  # 47
        {"call": "setup_hooks", "arguments": {"client": "cursor", "scope": "project"}},  # 48
        {
            "call": "build_skill",
            "arguments": {
                "trajectory": [
                    {"action": "Run the migrations", "tool": "bash", "parameters": {"cmd": "alembic upgrade"}}
                ],
                "outcome_score": 0.8,
                "domain": "devops",
                "trigger_pattern": "the billing schema is behind",
                "namespace": NS,
            },
        },  # 49
        {"call": "how_to", "arguments": {"task": "the billing schema is behind", "namespace": NS}},  # 50
        {"call": "execute_skill", "arguments": {"procedure_id": "$49.procedure_id", "success": True}},  # 51
        {"call": "deprecate_skill", "arguments": {"procedure_id": "$49.procedure_id", "reason": "done"}},  # 52
    ]


# ---- 1. every tool's success path -----------------------------------------------------------


def test_every_tool_succeeds_through_the_typescript_client(node, tmp_path):
    """Every tool tools/list offers is called once or more, and the TypeScript client accepts each
    result: no throw, structuredContent valid against the outputSchema, text equal to it."""
    store = new_store(tmp_path, "store")
    exchange = tmp_path / "exchange"
    seeds = seed_memories()
    unknown = str(uuid.uuid4())
    steps = every_tool_steps(seeds, unknown, str(exchange / "all.json"))
    with TsClient(node, server_spec(store, **exchange_env(exchange)), tmp_path / "driver.log") as client:
        listed = {t["name"] for t in client.tools}
        assert client.connected["tools"]["pages"] == 1  # the SDK keeps output validators of the last page only
        without_schema = sorted(t["name"] for t in client.tools if not t.get("outputSchema"))
        assert not without_schema, f"tools without an outputSchema (nothing to validate): {without_schema}"
        answers = client.steps(steps)
    assert client.proc.returncode == 0, client.log_tail()

    data = [succeeded(a) for a in answers]
    called = {s["call"] for s in steps}
    assert listed - called == set(), f"tools without interop coverage: {sorted(listed - called)}"
    assert called - listed == set(), f"tools called here but not listed: {sorted(called - listed)}"

    batch, one = data[0], data[1]
    assert batch["count"] == len(seeds) and len(batch["ids"]) == len(seeds)
    assert all(UUID_RE.match(i) for i in batch["ids"]) and UUID_RE.match(one["id"])
    assert data[2]["memories"] and all(m["namespace"] == NS for m in data[2]["memories"])
    assert data[4]["memories"]
    assert data[5]["reference"]["id"] == one["id"]
    assert data[6]["start_id"] == batch["ids"][0] and len(data[6]["steps"]) == 5
    assert data[7]["start_id"] == batch["ids"][8]
    assert data[9]["total_memories"] == len(seeds) + 1
    assert data[10]["format"] == "json" and data[10]["node_count"] == 12 and data[10]["nodes"]
    assert data[11]["node_count"] == 10 and all(n["z"] is not None for n in data[11]["nodes"])
    assert data[12]["format"] == "mermaid" and data[12]["output"].startswith("flowchart")
    assert data[13]["format"] == "svg" and "<svg" in data[13]["output"]
    assert data[15]["memories_reinforced"] == 1 and data[15]["not_found"] == [unknown]
    assert data[16]["memories_created"] >= 1
    assert data[17]["groups_found"] >= 1  # the two identical statements
    assert data[18]["total_memories"] == len(seeds) + 1 + data[16]["memories_created"]
    assert {n["name"] for n in data[20]["namespaces"]} == {NS, "extracted"}
    assert data[21]["memories_exported"] == len(seeds) + 1
    assert Path(data[21]["output_path"]) == exchange / "all.json"
    assert Path(data[22]["output_path"]) == exchange / "all.parquet" and (exchange / "all.csv").is_file()
    assert data[24]["dry_run"] and data[24]["would_import"] == len(seeds) + 1
    assert data[25]["memories_imported"] == len(seeds) + 1
    assert data[26]["memories_renamed"] == len(seeds) + 1
    assert data[27]["dry_run"] and data[28]["memories_deleted"] == len(seeds) + 1
    assert data[29]["deleted"] == 1
    assert data[30]["deleted"] == 2 and sorted(data[30]["ids"]) == sorted(batch["ids"][1:3])
    assert data[31]["deleted"] == data[16]["memories_created"]
    assert data[32]["total_memories"] == 0 and data[32]["oldest_memory_date"] is None
    assert data[33]["changed"] == ["content", "pinned"] and data[33]["memory"]["version"] == 2
    assert [v["version"] for v in data[34]["versions"]] == [2, 1] and data[34]["versions"][1]["retired_by"] == "update"
    assert data[35]["superseded"] == [batch["ids"][4]]
    by_id = {m["id"]: m for m in data[36]["memories"]}
    assert data[36]["not_found"] == [unknown] and by_id[batch["ids"][3]]["versions"] == 2
    assert by_id[batch["ids"][4]]["current"] is False and by_id[batch["ids"][4]]["superseded_by"] == data[35]["id"]
    assert by_id[data[35]["id"]]["memory_type"] == "conversation" and by_id[data[35]["id"]]["expires_at"]
    assert by_id[data[35]["id"]]["provenance"]["via"] == "supersede"
    assert batch["ids"][4] not in {m["id"] for m in data[37]["memories"]}
    assert data[38]["memories"][0]["id"] == batch["ids"][3] and data[38]["memories"][0]["pinned"] is True
    assert data[39]["status"] == "healthy" and [c["name"] for c in data[39]["checks"]][0] == "store"
    assert data[40]["id"] in {c["id"] for c in data[41]["connections"]}
    top = data[42]["bridges"][0]
    assert data[42]["total_bridges"] >= 1 and {top["a"]["id"], top["b"]["id"]} == {batch["ids"][3], data[40]["id"]}
    assert data[43]["created"] and data[44]["memories"][0]["relations"][0]["relation"] == "supports"
    assert data[45]["removed"] == 1
    assert {"from_id": batch["ids"][3], "via": "relation:caused"} in [
        step for m in data[47]["expanded"] for step in m["path"]
    ] or batch["ids"][6] in {m["id"] for m in data[47]["memories"]}
    assert data[48]["hooks_file"] == "<project>/.cursor/hooks.json" and data[48]["hooks"]["version"] == 1
    assert data[50]["procedures"][0]["procedure_id"] == data[49]["procedure_id"]
    assert data[51]["executions"] == 1 and data[52]["status"] == "deprecated"


# ---- 2. typed errors ------------------------------------------------------------------------


def test_typed_errors_reach_the_typescript_client(node, tmp_path):
    """Error results are isError results the TypeScript client returns (never throws on), with the
    typed JSON body as text and a message naming the problem."""
    store = new_store(tmp_path, "store")
    exchange = tmp_path / "exchange"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "memories.json").write_text("[]")
    unknown = str(uuid.uuid4())
    with TsClient(node, server_spec(store, **exchange_env(exchange)), tmp_path / "driver.log") as client:
        (
            remembered,
            importance,
            not_found,
            journey_missing,
            dotdot,
            outside_export,
            outside_import,
            empty_batch,
            unknown_tool,
        ) = client.steps(
            [
                {"call": "remember", "arguments": {"content": "a memory to point at"}},
                {"call": "remember", "arguments": {"content": "too important", "importance": 1.5}},
                {"call": "nearby", "arguments": {"memory_id": unknown}},
                {"call": "journey", "arguments": {"start_id": "$0.id", "end_id": unknown}},
                {"call": "export_memories", "arguments": {"output_path": "../escape.json"}},
                {"call": "export_memories", "arguments": {"output_path": str(outside / "memories.json")}},
                {"call": "import_memories", "arguments": {"source_path": str(outside / "memories.json")}},
                {"call": "forget_batch", "arguments": {"memory_ids": []}},
                {"call": "no_such_tool", "arguments": {}},
            ]
        )
    succeeded(remembered)
    typed_error(importance, "ValidationError", "importance")
    typed_error(not_found, "MemoryNotFoundError", unknown)
    typed_error(journey_missing, "MemoryNotFoundError", unknown)
    typed_error(dotdot, "PathSecurityError", "escape.json")
    typed_error(outside_export, "PathSecurityError", str(outside / "memories.json"))
    typed_error(outside_import, "PathSecurityError", str(outside / "memories.json"))
    typed_error(empty_batch, "ValidationError", "memory_ids")
    typed_error(unknown_tool, "ValidationError", "no_such_tool")
    assert not any(exchange.iterdir()), "a refused export wrote a file"
    assert (outside / "memories.json").read_text() == "[]"


def test_misspelt_arguments_are_refused_by_name(node, tmp_path):
    """A misspelt argument (top level, or inside remember_batch's items) is a ValidationError that
    names it and the accepted arguments, instead of being ignored; every input schema says so."""
    store = new_store(tmp_path, "store")
    with TsClient(node, server_spec(store), tmp_path / "driver.log") as client:
        tools = client.tools
        top, nested, stored = client.steps(
            [
                {"call": "recall", "arguments": {"query": "anything", "namespce": "work"}},
                {
                    "call": "remember_batch",
                    "arguments": {"memories": [{"content": "ok"}, {"content": "typo", "namespce": "work"}]},
                },
                {"call": "stats", "arguments": {}},
            ]
        )
    message = typed_error(top, "ValidationError", "namespce", "namespace")
    assert "query" in message, message  # lists what recall accepts
    typed_error(nested, "ValidationError", "namespce")
    assert succeeded(stored)["total_memories"] == 0, "remember_batch stored something despite the typo"
    open_schemas = [t["name"] for t in tools if t["inputSchema"].get("additionalProperties") is not False]
    open_schemas += [
        f"{t['name']}.$defs.{name}"
        for t in tools
        for name, schema in t["inputSchema"].get("$defs", {}).items()
        if "properties" in schema and schema.get("additionalProperties") is not False
    ]
    assert not open_schemas, f"input schemas without additionalProperties: false: {open_schemas}"


def test_degenerate_geometry_still_validates(node, tmp_path):
    """Identical memories (zero distances, zero variance, one point repeated) are where a NaN would
    appear. The Python side passes a NaN float (pydantic allows it) and sends it as null in
    structuredContent, which the TypeScript client rejects against the schema's "number"; every
    result here must still validate."""
    store = new_store(tmp_path, "store")
    same = [{"content": "exactly the same words", "namespace": "same"} for _ in range(20)]
    steps: list[dict[str, Any]] = [
        {"call": "remember_batch", "arguments": {"memories": same[:3], "allow_duplicate": True}},  # 0
        {"call": "visualize", "arguments": {"namespace": "same"}},  # PCA of three identical points
        {"call": "visualize", "arguments": {"namespace": "same", "dimensions": 3}},
        {"call": "journey", "arguments": {"start_id": "$0.ids.0", "end_id": "$0.ids.1"}},
        {"call": "wander", "arguments": {"start_id": "$0.ids.0", "temperature": 1.0}},
        {"call": "consolidate", "arguments": {"namespace": "same"}},
        {"call": "remember_batch", "arguments": {"memories": same[3:], "allow_duplicate": True}},
        {"call": "visualize", "arguments": {"namespace": "same"}},  # UMAP of twenty identical points
        {"call": "visualize", "arguments": {"namespace": "same", "format": "svg"}},
        {"call": "regions", "arguments": {"namespace": "same", "min_cluster_size": 2}},
        {"call": "decay", "arguments": {"half_life_days": 1}},
        {"call": "reinforce", "arguments": {"memory_ids": ["$0.ids.0"], "boost_type": "multiplicative"}},
        {"call": "hybrid_recall", "arguments": {"query": "zzz unrelated", "alpha": 0.0}},
        {"call": "recall", "arguments": {"query": "!!!"}},
        {"call": "wander", "arguments": {"seed": "same words", "temperature": 0.0, "steps": 20}},
    ]
    with TsClient(node, server_spec(store), tmp_path / "driver.log") as client:
        answers = client.steps(steps)
    data = [succeeded(a) for a in answers]
    assert data[7]["node_count"] == 20


# ---- 3. progress ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.model
def test_first_visualize_reports_progress(node, tmp_path, bundled_models):
    """The first visualize of a fresh server with the bundled model compiles UMAP: the client that
    passed onprogress (so the request carries a progressToken) gets progress notifications with
    increasing progress, and the result validates against the outputSchema."""
    store = new_store(tmp_path, "store", bundled_models)
    memories = [{"content": text, "namespace": NS} for texts in TOPICS.values() for text in texts]
    with TsClient(node, server_spec(store, fake=False), tmp_path / "driver.log") as client:
        seeded, first, mermaid, svg = client.steps(
            [
                {"call": "remember_batch", "arguments": {"memories": memories}},
                {"call": "visualize", "arguments": {"namespace": NS}, "progress": True},
                {"call": "visualize", "arguments": {"namespace": NS, "format": "mermaid"}, "progress": True},
                {"call": "visualize", "arguments": {"namespace": NS, "format": "svg"}},
            ]
        )
    assert succeeded(seeded)["count"] == len(memories)
    data = succeeded(first)
    assert data["node_count"] == len(memories) >= 16  # enough for UMAP (fewer are laid out by PCA)
    progress = first["progress"]
    assert progress, "no progress notification arrived during the first visualize"
    values = [p["progress"] for p in progress]
    assert all(isinstance(v, (int, float)) for v in values), progress
    assert values == sorted(set(values)), f"progress must increase with each notification: {values}"
    # A heartbeat while the UMAP code loads, then the drawing's own steps, done of total.
    beats = [p for p in progress if "total" not in p]
    assert beats and all("UMAP" in p.get("message", "") for p in beats), progress
    assert {p["total"] - p["progress"] for p in progress if "total" in p} <= {3, 2, 1}, progress
    assert succeeded(mermaid)["output"].startswith("flowchart")
    assert "<svg" in succeeded(svg)["output"]


# ---- 4. resources and prompts ---------------------------------------------------------------


def sample_argument(name: str, memory_id: str) -> str:
    """A plausible value for a prompt argument or URI template variable, by its name."""
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()))
    if words & {"id", "ids", "uuid"}:
        return memory_id
    if "namespace" in words:
        return NS
    if words & {"limit", "count", "max", "days", "number", "top", "size", "k", "n"}:
        return "5"
    return "PostgreSQL database"


def expand_template(template: str, memory_id: str) -> str:
    """A concrete URI for an RFC 6570 template's simple {name} variables."""
    return re.sub(r"\{([^}]+)\}", lambda m: sample_argument(m.group(1).lstrip("+#./;?&"), memory_id), template)


def test_advertised_resources_and_prompts_work(node, tmp_path):
    """Whatever initialize advertises (resources, prompts) is there: its list calls succeed and are
    not empty, every listed resource and resource template can be read, and every prompt can be got
    with sample arguments, and namespace and tag arguments complete - all without the TypeScript
    client throwing. The server runs the `core` tool profile (SPATIAL_MEMORY_TOOLS): it lists only
    those tools, names no other in its instructions, and a tool outside it is an unknown tool."""
    from spatial_memory.tool_profiles import CORE

    store = new_store(tmp_path, "store")
    with TsClient(node, server_spec(store, SPATIAL_MEMORY_TOOLS="core"), tmp_path / "driver.log") as client:
        capabilities = client.connected["capabilities"]
        assert "tools" in capabilities, capabilities
        assert [t["name"] for t in client.tools] == list(CORE)
        assert set(re.findall(r"`(\w+)`", client.connected["instructions"])) <= set(CORE)
        outside = client.step({"call": "stats", "arguments": {}})
        assert outside["ok"] and outside["result"]["isError"], outside
        message = json.loads(outside["result"]["content"][0]["text"])["message"]
        assert message == f"Unknown tool: stats; tools: {', '.join(CORE)}", message
        seeded = client.step(
            {"call": "remember_batch", "arguments": {"memories": seed_memories(), "allow_duplicate": True}}
        )
        memory_id = succeeded(seeded)["ids"][0]
        checked: list[str] = []
        problems: list[str] = []

        def answer(step: dict[str, Any]) -> dict[str, Any] | None:
            got = client.step(step)
            if not got["ok"]:
                problems.append(f"{json.dumps(step)}: the TypeScript client threw: {got['error']}")
                return None
            return got["result"]

        if "resources" in capabilities:
            resources = answer({"list": "resources"})
            templates = answer({"list": "resourceTemplates"})
            if resources is not None and templates is not None:
                uris = [r["uri"] for r in resources["resources"]]
                # A skill's SKILL.md exists only for a live procedure: test_interop_skills reads them.
                uris += [
                    expand_template(t["uriTemplate"], memory_id)
                    for t in templates["resourceTemplates"]
                    if not t["uriTemplate"].startswith("skill://")
                ]
                if not uris:
                    problems.append("the resources capability is advertised but there are no resources or templates")
                for uri in uris:
                    read = answer({"read": uri})
                    checked.append(uri)
                    if read is None:
                        continue
                    contents = read.get("contents") or []
                    if not contents:
                        problems.append(f"resources/read {uri}: no contents")
                    for item in contents:
                        if "text" not in item and "blob" not in item:
                            problems.append(f"resources/read {uri}: content without text or blob: {item}")
                        elif item.get("mimeType") == "application/json":
                            try:
                                json.loads(item["text"])
                            except (KeyError, ValueError) as exc:
                                problems.append(f"resources/read {uri}: application/json that does not parse: {exc}")
        if "prompts" in capabilities:
            prompts = answer({"list": "prompts"})
            if prompts is not None:
                if not prompts["prompts"]:
                    problems.append("the prompts capability is advertised but prompts/list is empty")
                for prompt in prompts["prompts"]:
                    arguments = prompt.get("arguments") or []
                    required = {
                        a["name"]: sample_argument(a["name"], memory_id) for a in arguments if a.get("required")
                    }
                    every = {a["name"]: sample_argument(a["name"], memory_id) for a in arguments}
                    for values in [required, every] if every != required else [required]:
                        got = answer({"prompt": prompt["name"], "arguments": values})
                        checked.append(f"prompt {prompt['name']} {values}")
                        if got is not None and not got.get("messages"):
                            problems.append(f"prompts/get {prompt['name']} {values}: no messages")
        if "completions" in capabilities:
            recent = {"type": "ref/resource", "uri": "memory://{namespace}/recent"}
            review = {"type": "ref/prompt", "name": "review_tag"}
            for ref, name, prefix, context, expected in [
                (recent, "namespace", NS[:3].upper(), None, [NS]),
                ({"type": "ref/prompt", "name": "recall_for_task"}, "namespace", "", None, [NS]),
                (review, "tag", "Data", {"arguments": {"namespace": NS}}, ["database"]),
                (review, "tag", "zzz", None, []),
            ]:
                step = {"complete": {"ref": ref, "argument": {"name": name, "value": prefix}}}
                if context:
                    step["complete"]["context"] = context
                got = answer(step)
                checked.append(f"complete {json.dumps(step)}")
                if got is not None and got["completion"]["values"] != expected:
                    problems.append(f"{json.dumps(step)}: {got['completion']} (expected {expected})")
    assert not problems, "\n".join(problems)
    if "resources" in capabilities or "prompts" in capabilities:
        assert checked
    assert "completions" in capabilities


# ---- 5. the Inspector CLI -------------------------------------------------------------------


def inspector(node: NodeTools, tmp_path: Path, store: Path, *args: str) -> tuple[int, Any, str]:
    """`npx @modelcontextprotocol/inspector --cli --format json ... -- <the server>`: exit status,
    the JSON on stdout, stderr."""
    env_args: list[str] = []
    base = os.environ
    for key, value in server_env(store).items():
        if key.startswith("SPATIAL_MEMORY_") or base.get(key) != value or key == "XDG_CACHE_HOME":
            env_args += ["-e", f"{key}={value}"]
    home = tmp_path / "inspector-home"
    home.mkdir(exist_ok=True)
    command = [
        *node.inspector_cli(),
        "--cli",
        "--format",
        "json",
        "--cwd",
        str(store.parent),
        *env_args,
        *args,
        "--",
        sys.executable,
        *server_args(fake=True),
    ]
    # Its catalog, client config and secrets files live under HOME: a temporary one.
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        pytest.fail(
            f"the Inspector printed no JSON (exit {done.returncode}): {done.stdout[:2000]}\n{done.stderr[-3000:]}"
        )
    return done.returncode, out, done.stderr


@pytest.mark.slow
def test_inspector_cli_lists_and_calls_tools(node, tmp_path):
    """The MCP Inspector CLI (v2, built on the TypeScript SDK's v2 client packages - a second, newer
    TypeScript client than the driver's): tools/list passes its schema portability
    check (--strict), a tools/call succeeds with valid structured content, and a typed error comes
    back as an isError result."""
    store = new_store(tmp_path, "store")
    status, listed, stderr = inspector(node, tmp_path, store, "--method", "tools/list", "--strict")
    assert status == 0, f"tools/list --strict exited {status}: {stderr[-3000:]}"
    tools = listed["result"]["tools"]
    names = {t["name"] for t in tools}
    assert len(names) == len(tools) >= 21 and {"remember", "recall", "visualize", "import_memories"} <= names
    errors = [
        (finding["toolName"], issue)
        for finding in listed.get("schemaFindings", [])
        for issue in finding["findings"]
        if issue.get("severity") == "error"
    ]
    assert not errors, f"the Inspector finds unportable tool schemas: {errors}"

    arguments = {"content": "The Inspector stored this", "tags": ["inspector"], "importance": 0.7}
    status, called, stderr = inspector(
        node,
        tmp_path,
        store,
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-args-json",
        json.dumps(arguments),
    )
    assert status == 0, f"tools/call remember exited {status}: {stderr[-3000:]}"
    result = called["result"]
    assert not result.get("isError"), result
    assert UUID_RE.match(result["structuredContent"]["id"]), result
    assert result["structuredContent"]["content"] == arguments["content"]
    assert text_json(result) == lean_text("remember", result["structuredContent"])

    status, failed, stderr = inspector(
        node,
        tmp_path,
        store,
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-args-json",
        json.dumps({"query": "stored", "limit": 0}),
    )
    assert status != 0, "the Inspector reported a failed tool call as a success"
    result = failed["result"]
    assert result.get("isError") is True and "structuredContent" not in result, result
    body = text_json(result)
    assert body["error"] == "ValidationError" and "limit" in body["message"], body
    assert "tool_is_error" in stderr, stderr[-3000:]  # the Inspector's own verdict: a tool error, not a crash


# ---- the driver itself ----------------------------------------------------------------------


def test_driver_scenario_file_with_references(node, tmp_path):
    """The driver's scenario-file mode and its references to earlier results ("$N.path", "{{N.path}}")."""
    store = new_store(tmp_path, "store")
    lines = run_scenario(
        node,
        {
            "server": server_spec(store),
            "steps": [
                {"call": "remember", "arguments": {"content": "referenced", "namespace": "refs"}},
                {"call": "nearby", "arguments": {"memory_id": "$0.id", "namespace": "{{0.namespace}}"}},
                {"call": "nearby", "arguments": {"memory_id": "$7.id"}},
                {"list": "tools"},
                {"call": "remember", "arguments": {"content": "$$5.00", "namespace": "refs"}},
            ],
        },
        tmp_path / "driver.log",
    )
    connected, remembered, nearby, unresolved, tools, dollars = lines
    assert connected["connected"] and connected["serverInfo"]["name"] == "spatial-memory"
    memory_id = succeeded(remembered)["id"]
    assert succeeded(nearby)["reference"]["id"] == memory_id
    assert nearby["step"]["arguments"] == {"memory_id": "$0.id", "namespace": "{{0.namespace}}"}
    assert not unresolved["ok"] and "no step 7" in unresolved["error"]["message"]
    assert {t["name"] for t in tools["result"]["tools"]} == {t["name"] for t in connected["tools"]["tools"]}
    assert succeeded(dollars)["content"] == "$5.00"


# ---- older TypeScript clients ------------------------------------------------------------------

AJV_DEFAULTS_CHECK = """
const Ajv = require('ajv').default;
const schemas = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const warnings = [];
const logger = { log() {}, warn: (...a) => warnings.push(a.join(' ')), error: (...a) => warnings.push(a.join(' ')) };
const ajv = new Ajv({ logger });  // the TypeScript SDK's client up to 1.20: `new Ajv()`, strict checks "log"
for (const schema of schemas) ajv.compile(schema);
console.log(JSON.stringify({ compiled: schemas.length, warnings }));
"""


def test_output_schemas_compile_quietly_with_ajv_defaults(node, tmp_path):
    """Clients built on the TypeScript SDK up to 1.20 compiled every tool's output schema with
    `new Ajv()`, whose strict mode logs a warning for each schema feature it dislikes (union types
    among them, except T-or-null): the published output schemas compile without one."""
    from spatial_memory.config import Settings
    from spatial_memory.tools import build_tools

    schemas = [t.output_schema for t in build_tools(Settings()) if t.output_schema is not None]
    (tmp_path / "schemas.json").write_text(json.dumps(schemas))
    (tmp_path / "check.cjs").write_text(AJV_DEFAULTS_CHECK)
    done = subprocess.run(
        [node.node, str(tmp_path / "check.cjs"), str(tmp_path / "schemas.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(node.node_modules)},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"compiled": len(schemas), "warnings": []}
    assert len(schemas) == 34

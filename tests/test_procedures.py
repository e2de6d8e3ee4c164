"""Procedures through the Python SDK client: build_skill, how_to, execute_skill, deprecate_skill."""

from __future__ import annotations

import pytest

from .conftest import data

pytestmark = pytest.mark.anyio

IMPORT_FIX = {
    "trajectory": [
        {
            "action": "Run the failing test with pytest -x to see the traceback",
            "tool": "bash",
            "parameters": {"cmd": "pytest -x"},
        },
        {"action": "Add the missing import to the module"},
        {"action": "Run pytest again until it passes", "result": "all tests pass"},
    ],
    "outcome_score": 0.9,
    "domain": "coding",
    "trigger_pattern": "a Python test fails with ImportError",
}
BAD_GATEWAY = {
    "trajectory": [
        {"action": "Open the Grafana dashboard"},
        {"action": "Restart the nginx pod with kubectl rollout restart"},
    ],
    "outcome_score": 0.7,
    "domain": "devops",
    "trigger_pattern": "the website returns 502 errors",
}


async def build(client, arguments) -> dict:
    result = await client.call_tool("build_skill", arguments)
    assert not result.is_error, result
    return data(result)


async def test_a_trajectory_becomes_a_procedure_how_to_finds_for_a_paraphrase(model_client):
    built = await build(model_client, IMPORT_FIX)
    await build(model_client, BAD_GATEWAY)
    assert built["status"] == "live" and built["skill_uri"].endswith("/SKILL.md")
    found = data(await model_client.call_tool("how_to", {"task": "how do I fix a failing python import in tests"}))
    best = found["procedures"][0]
    assert best["procedure_id"] == built["procedure_id"]
    assert [s["action"] for s in best["steps"]][0].startswith("Run the failing test")
    assert best["steps"][0]["tool"] == "bash" and best["executions"] == 0
    assert best["success_rate"] == pytest.approx(0.9)
    other = data(await model_client.call_tool("how_to", {"task": "website gives 502"}))
    assert [p["domain"] for p in other["procedures"]] == ["devops"]
    assert data(await model_client.call_tool("how_to", {"task": "bake a chocolate cake"}))["procedures"] == []
    only = data(await model_client.call_tool("how_to", {"task": "python import error in tests", "domain": "devops"}))
    assert only["procedures"] == []


async def test_success_rate_follows_execute_skill_and_reliability_orders_equals(client):
    first = await build(client, {**IMPORT_FIX, "name": "fix import A"})
    second = await build(client, {**IMPORT_FIX, "name": "fix import B"})
    rates = []
    for success in (True, True, False, True):
        ran = data(
            await client.call_tool("execute_skill", {"procedure_id": second["procedure_id"], "success": success})
        )
        rates.append(ran["success_rate"])
    assert ran["executions"] == 4
    assert rates == pytest.approx([(0.9 + 1) / 2, (0.9 + 2) / 3, (0.9 + 2) / 4, (0.9 + 3) / 5])
    for _ in range(3):
        await client.call_tool("execute_skill", {"procedure_id": first["procedure_id"], "success": False, "error": "x"})
    found = data(await client.call_tool("how_to", {"task": IMPORT_FIX["trigger_pattern"]}))["procedures"]
    assert [p["procedure_id"] for p in found[:2]] == [second["procedure_id"], first["procedure_id"]]
    assert found[1]["pitfalls"] == ["a run: x"] * 3


async def test_failures_are_pitfalls_and_deprecation_hides_but_keeps(client):
    built = await build(client, IMPORT_FIX)
    pid = built["procedure_id"]
    failed = await client.call_tool(
        "execute_skill",
        {"procedure_id": pid, "success": False, "error": "circular import", "failed_step": 2, "context": "py3.12"},
    )
    assert data(failed)["executions"] == 1
    bad_step = await client.call_tool("execute_skill", {"procedure_id": pid, "success": True, "failed_step": 9})
    assert bad_step.is_error and data(bad_step)["error"] == "ValidationError"
    found = data(await client.call_tool("how_to", {"task": IMPORT_FIX["trigger_pattern"]}))["procedures"]
    assert found[0]["pitfalls"] == ["step 2: circular import (py3.12)"]
    gone = data(await client.call_tool("deprecate_skill", {"procedure_id": pid, "reason": "we use ruff now"}))
    assert gone["status"] == "deprecated"
    assert data(await client.call_tool("how_to", {"task": IMPORT_FIX["trigger_pattern"]}))["procedures"] == []
    asked = data(await client.call_tool("how_to", {"task": IMPORT_FIX["trigger_pattern"], "include_deprecated": True}))
    assert asked["procedures"][0]["status"] == "deprecated"
    history = data(await client.call_tool("memory_history", {"memory_id": pid}))
    assert [v["version"] for v in history["versions"]] == [3, 2, 1]
    assert history["versions"][0]["metadata"]["procedure"]["deprecated_reason"] == "we use ruff now"
    assert history["versions"][0]["provenance"]["via"] == "deprecate_skill"


async def test_bad_input_is_a_typed_error(client):
    cases = [
        ("build_skill", {**IMPORT_FIX, "trajectory": []}),
        ("build_skill", {**IMPORT_FIX, "outcome_score": 1.5}),
        ("build_skill", {**IMPORT_FIX, "trajectory": [{"action": "x", "tool_name": "y"}]}),
        ("execute_skill", {"procedure_id": "00000000-0000-4000-8000-000000000000", "success": True}),
        ("deprecate_skill", {"procedure_id": "nope", "reason": "r"}),
        ("how_to", {"task": "x", "limit": 0}),
    ]
    for tool, arguments in cases:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, arguments)
        assert data(result)["error"] in ("ValidationError", "MemoryNotFoundError"), data(result)
    fact = data(await client.call_tool("remember", {"content": "a plain fact"}))
    not_procedure = await client.call_tool("execute_skill", {"procedure_id": fact["id"], "success": True})
    assert data(not_procedure)["error"] == "MemoryNotFoundError"


async def test_a_procedure_is_a_memory_exported_and_secret_free(client, tmp_path, settings):
    built = await build(
        client,
        {**IMPORT_FIX, "trajectory": [{"action": "export TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 then deploy"}]},
    )
    got = data(await client.call_tool("get_memories", {"memory_ids": [built["procedure_id"]]}))["memories"][0]
    assert got["memory_type"] == "procedure" and "procedure" in got["tags"]
    assert "ghp_" not in got["content"] and "ghp_" not in str(got["metadata"])
    assert got["expires_at"] is None
    assert data(await client.call_tool("stats", {}))["memories_by_tier"]["procedural"] == 1


async def test_a_procedure_survives_export_and_import(client):
    built = await build(client, IMPORT_FIX)
    await client.call_tool("execute_skill", {"procedure_id": built["procedure_id"], "success": True})
    exported = data(await client.call_tool("export_memories", {"output_path": "procs.json", "namespace": "default"}))
    assert exported["memories_exported"] == 1
    await client.call_tool("forget", {"memory_id": built["procedure_id"]})
    imported = data(
        await client.call_tool(
            "import_memories", {"source_path": "procs.json", "dry_run": False, "namespace_override": "restored"}
        )
    )
    assert imported["memories_imported"] == 1, imported
    found = data(await client.call_tool("how_to", {"task": IMPORT_FIX["trigger_pattern"], "namespace": "restored"}))
    (procedure,) = found["procedures"]
    assert procedure["executions"] == 1 and procedure["success_rate"] == pytest.approx((0.9 + 1) / 2)

"""Procedures and the Skills extension through the TypeScript SDK 2.4 client
(@modelcontextprotocol/client and its SkillsClient, which checks every entry against the SEP-2640
rules and every file it reads against the entry's size, SHA-256 digest and frontmatter)."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest

from .interop.node import TsClient, run_scenario
from .reliability import new_store
from .test_interop_typescript import server_spec
from .test_procedures_learned import fix_session

BUILD = {
    "trajectory": [
        {"action": "Run the failing test with pytest -x to see the traceback", "tool": "bash"},
        {"action": "Add the missing import to the module"},
        {"action": "Run pytest again until it passes", "result": "all tests pass"},
    ],
    "outcome_score": 0.9,
    "domain": "coding",
    "trigger_pattern": "a Python test fails with ImportError",
}


# The 2.4 client with its default options (the 2025-11-25 handshake, what today's clients
# negotiate) and negotiating the 2026-07-28 revision: the extension is advertised at both.
V2 = {"sdk": "2", "mode": "auto"}
DEFAULT_2_4 = {"sdk": "2"}
VERSIONS = {"2025-11-25": DEFAULT_2_4, "2026-07-28": V2}


def succeeded(answer: dict) -> dict:
    """The structured content of a tool call the 2.x client returned as a success (it validates
    structured content against the tool's output schema inside callTool, and throws if it fails)."""
    assert answer["ok"], f"the TypeScript client threw on {answer['step']}: {answer.get('error')}"
    result = answer["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_procedure_through_the_typescript_2_4_client_is_a_verified_skill(
    node, tmp_path: Path, bundled_models, version: str
):
    store = new_store(tmp_path, "store", bundled_models)
    steps = [
        {"call": "build_skill", "arguments": BUILD},  # 0
        {"call": "how_to", "arguments": {"task": "how do I fix a failing python import in tests"}},  # 1
        {"call": "execute_skill", "arguments": {"procedure_id": "$0.procedure_id", "success": True}},  # 2
        {
            "call": "execute_skill",
            "arguments": {"procedure_id": "$0.procedure_id", "success": False, "error": "circular", "failed_step": 2},
        },  # 3
        {"skills": "list"},  # 4
        {"skills": "read", "uri": "$0.skill_uri"},  # 5
        {"skills": "get", "uri": "$0.skill_uri"},  # 6
        {"call": "deprecate_skill", "arguments": {"procedure_id": "$0.procedure_id", "reason": "obsolete"}},  # 7
        {"skills": "list"},  # 8
        {"skills": "get", "uri": "$0.skill_uri"},  # 9
    ]
    scenario = {"server": server_spec(store, fake=False), **VERSIONS[version], "steps": steps}
    lines = run_scenario(node, scenario, tmp_path / "ts.log")
    connected, *answers = lines
    assert connected["skillsSupported"] is True
    assert "io.modelcontextprotocol/skills" in connected["capabilities"]["extensions"]
    built = succeeded(answers[0])
    found = succeeded(answers[1])["procedures"]
    assert found[0]["procedure_id"] == built["procedure_id"] and found[0]["executions"] == 0
    assert succeeded(answers[2])["success_rate"] == pytest.approx((0.9 + 1) / 2)
    after = succeeded(answers[3])
    assert after["executions"] == 2 and after["success_rate"] == pytest.approx((0.9 + 1) / 3)
    listing = answers[4]["result"]
    assert answers[4]["ok"] and listing["invalid"] == []
    (entry,) = listing["skills"]
    assert entry["uri"] == built["skill_uri"]
    assert connected["protocolVersion"] == version
    assert listing["cacheScope"] == "private" and listing["ttlMs"] > 0
    read = answers[5]
    assert read["ok"], read
    file = read["result"]
    assert file["verified"] is True and file["frontmatter"] == entry["frontmatter"]
    assert file["byteLength"] == entry["resources"][0]["size"]
    assert "Success rate: 63%" in file["body"] and "step 2 failed" in file["body"] and "Executions: 2" in file["body"]
    assert answers[6]["ok"] and answers[6]["result"]["skill"] == entry
    succeeded(answers[7])
    assert answers[8]["ok"] and answers[8]["result"]["skills"] == []
    assert not answers[9]["ok"] and answers[9]["error"]["code"] == -32602


def test_the_typescript_client_refuses_a_skill_whose_file_differs_from_its_entry(node, tmp_path: Path):
    """The digest check is real: the same file read against an entry with another digest, size or
    frontmatter is a SkillVerificationError (so the passing read above verified something)."""
    store = new_store(tmp_path, "store")
    first = run_scenario(
        node,
        {
            "server": server_spec(store),
            **V2,
            "steps": [{"call": "build_skill", "arguments": BUILD}, {"skills": "list"}],
        },
        tmp_path / "a.log",
    )
    entry = first[2]["result"]["skills"][0]
    wrong_digest = copy.deepcopy(entry)
    wrong_digest["resources"][0]["digest"] = "sha256:" + "0" * 64
    wrong_size = copy.deepcopy(entry)
    wrong_size["resources"][0]["size"] += 1
    wrong_description = copy.deepcopy(entry)
    wrong_description["frontmatter"]["description"] = "something else"
    steps = [
        {"skills": "read", "uri": entry["uri"], "entry": e}
        for e in (entry, wrong_digest, wrong_size, wrong_description)
    ]
    _, fine, digest, size, frontmatter = run_scenario(
        node, {"server": server_spec(store), **V2, "steps": steps}, tmp_path / "b.log"
    )
    assert fine["ok"] and fine["result"]["verified"] is True
    tricky = 'a "quoted" C:\\path: #not-a-comment, tab\there, 100% ✓ 🚀 --- and\nnewline'
    built = {**BUILD, "trigger_pattern": tricky, "name": "Ünïcode & «quotes»"}
    _, made, read = run_scenario(
        node,
        {
            "server": server_spec(store),
            **V2,
            "steps": [{"call": "build_skill", "arguments": built}, {"skills": "read", "uri": "$0.skill_uri"}],
        },
        tmp_path / "c.log",
    )
    assert read["ok"], read  # the YAML frontmatter reads back exactly as the entry says
    assert read["result"]["verified"] is True and "quoted" in read["result"]["frontmatter"]["description"]
    assert succeeded(made)["skill_uri"].startswith("skill://spatial-memory/unicode-quotes-")
    for answer, reason in ((digest, "digest"), (size, "size"), (frontmatter, "frontmatter")):
        assert not answer["ok"] and answer["error"]["name"] == "SkillVerificationError", answer
        assert answer["error"]["data"]["reason"] == reason, answer


@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_procedure_confirmed_by_capture_is_announced_and_listed(node, tmp_path: Path, version: str):
    """The hooks' spool, ingested by the running server in the background (no tool call): a fix
    seen once is a captured procedure (not a skill, nothing announced); seen again in another
    session it is confirmed, a skill, and the 2.4 client - with its default options at
    2025-11-25, through a subscriptions/listen stream at 2026-07-28 - hears
    notifications/resources/list_changed and lists it."""
    from spatial_memory.capture.spool import Spool

    store = new_store(tmp_path, "store")
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    spool = Spool(store)
    with TsClient(node, server_spec(store), tmp_path / "ts.log", header=VERSIONS[version]) as client:
        assert client.connected["skillsSupported"] is True
        if version == "2026-07-28":
            assert client.step({"listen": [], "resourcesListChanged": True})["ok"]
        listed = client.step({"skills": "list"})
        assert listed["ok"] and listed["result"]["skills"] == []
        fix_session(spool, project, "s1", "Order")
        found = {}
        deadline = time.monotonic() + 60  # the server ingests the spool within a second or so, when idle
        while time.monotonic() < deadline:
            found = client.step({"call": "how_to", "arguments": {"task": "pytest fails with ImportError"}})
            if found["result"]["structuredContent"]["procedures"]:
                break
            time.sleep(0.05)
        (captured,) = found["result"]["structuredContent"]["procedures"]
        assert captured["status"] == "captured"
        assert client.step({"listChanged": True, "waitMs": 1000})["result"]["count"] == 0  # no skill yet
        fix_session(spool, project, "s2", "Invoice")  # the same fix in another session: confirmed
        assert client.step({"listChanged": True, "waitMs": 20_000})["result"]["count"] >= 1
        listed = client.step({"skills": "list"})
        assert listed["ok"], listed
        (entry,) = listed["result"]["skills"]
        read = client.step({"skills": "read", "uri": entry["uri"]})
        assert read["ok"] and read["result"]["verified"] is True and "ImportError" in read["result"]["body"]

"""What capture keeps: the rules on tool uses and text, and their precision / recall on the
labelled sample sessions (benchmarks/capture_quality.py reports the figures)."""

from __future__ import annotations

import json

from spatial_memory.capture.selection import from_text, from_tool_use, session_summary
from spatial_memory.evaluation.capture_replay import HELD_OUT, SESSION, evaluate


def bash(command: str, stdout: str = "", stderr: str = "", **extra) -> tuple:
    return "Bash", {"command": command}, {"stdout": stdout, "stderr": stderr, "interrupted": False, **extra}


def test_a_failure_then_its_fix_with_the_files_edited_between() -> None:
    state: dict = {}
    failed = from_tool_use(
        *bash("pytest -q tests/test_a.py", "E   AssertionError: 2 != 3\n1 failed in 0.1s"), state, "/p"
    )
    assert [c.kind for c in failed] == ["command_failed"] and "AssertionError: 2 != 3" in failed[0].content
    edit = {"file_path": "/p/src/a.py", "old_string": "return 2", "new_string": "return compute_three()"}
    assert from_tool_use("Edit", edit, {}, state, "/p")[0].content == "Edited src/a.py: now `return compute_three()`"
    fixed = from_tool_use(*bash("pytest tests/test_a.py", "1 passed"), state, "/p")
    assert fixed[0].kind == "fix" and "after editing src/a.py" in fixed[0].content and "2 != 3" in fixed[0].content
    assert state["failures"] == {} and (state["commands"], state["failed"], state["fixed"]) == (2, 1, 1)
    summary = session_summary(state, "project-p", "2026-11-24")
    assert summary is not None and "edited src/a.py" in summary.content and "1 fixed" in summary.content


def test_commands_that_simply_pass_and_reads_are_not_kept() -> None:
    state: dict = {}
    assert from_tool_use(*bash("ls -la"), state, "/p") == []
    assert from_tool_use(*bash("pytest", "12 passed, 0 failed"), state, "/p") == []
    assert from_tool_use("Read", {"file_path": "/p/a.py"}, {"content": "Error: x"}, state, "/p") == []
    assert from_tool_use("Grep", {"pattern": "TODO"}, {}, state, "/p") == []


def test_exit_status_and_interruption_count_as_failure() -> None:
    state: dict = {}
    assert from_tool_use(*bash("make", "", exit_code=2), state, "/p")[0].kind == "command_failed"
    assert from_tool_use("Bash", {"command": "sleep 999"}, {"interrupted": True}, state, "/p")[0].kind == (
        "command_failed"
    )


def test_commits_and_dependency_changes_are_kept() -> None:
    state: dict = {}
    commit = from_tool_use(*bash("git commit -m 'Use a unique index'", "[main abc123] Use a unique index"), state, "/p")
    install = from_tool_use(*bash("uv add httpx", "Resolved 12 packages"), state, "/p")
    assert commit[0].kind == install[0].kind == "command"


def test_text_keeps_decisions_and_preferences_not_chatter() -> None:
    kept = from_text("We decided to deploy on Fridays only. Thanks!", "user")
    assert [c.content for c in kept] == ["We decided to deploy on Fridays only"]
    assert from_text("ok", "user") == [] and from_text("Sure, let me look at that file first.", "assistant") == []


def test_precision_and_recall_on_the_labelled_sessions() -> None:
    seen = evaluate(json.loads(SESSION.read_text()))
    held_out = evaluate(json.loads(HELD_OUT.read_text()))
    assert seen["precision"] >= 0.9 and seen["recall"] >= 0.9, seen
    assert held_out["precision"] >= 0.8 and held_out["recall"] >= 0.8, held_out
    assert seen["session_summaries"] == held_out["session_summaries"] == 1

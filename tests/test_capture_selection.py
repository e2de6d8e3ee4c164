"""What capture keeps: the rules on tool uses and text, and their precision / recall on the
labelled sample sessions (benchmarks/capture_quality.py reports the figures)."""

from __future__ import annotations

import json

from spatial_memory.capture.selection import edits_of_turn, from_text, from_tool_use, session_summary
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
    assert from_tool_use("Edit", edit, {}, state, "/p") == []  # held until the turn ends
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
    assert [c.content for c in kept] == ["We decided to deploy on Fridays only. Thanks!"]
    assert from_text("ok", "user") == [] and from_text("Sure, let me look at that file first.", "assistant") == []


def test_the_user_is_kept_when_stating_not_when_only_asking_or_requesting() -> None:
    said = "In the past I've always created the online repo first, then cloned it - can you walk me through it?"
    assert [c.content for c in from_text(said, "user")] == [said]
    assert from_text("git@github.com:someone/some-repo.git", "user")[0].kind == "statement"
    for asks in (
        "can you walk me through the manual testing steps?",
        "implement the enhanced export now",
        "it worked!",
    ):
        assert from_text(asks, "user") == [], asks
    pasted = "still no\n\n(venv) jim@box:/tmp/x$ tool -c\nNo conversation found to continue"
    assert from_text(pasted, "user") == []


def test_the_assistant_keeps_answers_and_conclusions_not_narration() -> None:
    answer = "The export now writes `_` as `-` in project paths, as Claude Code does:\n\n- `normalize()` in export.py"
    assert [c.content for c in from_text(answer, "assistant", final=True)] == [answer]  # not cut at the colon
    narration = "Let me check the generated migration and snapshot files."
    assert from_text(narration, "assistant", final=False) == from_text(narration, "assistant", final=True) == []
    cause = "The migration uses ALTER TABLE ... modify, which SQLite doesn't support for nullability changes."
    assert from_text(cause, "assistant", final=False)[0].tags == ["conclusion"]
    assert from_text("That's a key insight!", "assistant", final=True) == []
    assert from_text("Understood, I won't write credentials to .env files.", "assistant", final=True) == []


def test_an_edit_keeps_its_telling_lines_and_where_they_are() -> None:
    state: dict = {}
    old = "def connect():\n    # connect to the database\n    host = 'localhost'\n"
    new = (
        "def connect():\n    # connect to the database on the shared host\n    host = 'db.internal'\n    port = 5433\n"
    )
    from_tool_use("Edit", {"file_path": "/p/db.py", "old_string": old, "new_string": new}, {}, state, "/p")
    (memory,) = edits_of_turn(state)
    assert memory.content.startswith("Edited db.py:\nin `def connect():`")
    assert "host = 'db.internal'" in memory.content and "port = 5433" in memory.content
    from_tool_use("Write", {"file_path": "/p/empty.txt", "content": ""}, {}, state, "/p")
    assert [m.content for m in edits_of_turn(state)] == ["Wrote empty.txt"]  # never "(0 lines)"


def test_a_passing_command_is_no_failure_and_a_rerun_by_another_form_is_a_fix() -> None:
    state: dict = {}
    report = "CURRENT FAILED EXTRACTIONS REPORT\n3 FAILED"
    assert from_tool_use(*bash("python3 report.py", report, exit_code=0), state, "/p") == []
    push = "Exit code 128\nfatal: The current branch main has no upstream branch.\nTo push the current branch, use\n"
    failed = from_tool_use("Bash", {"command": "git push"}, push, state, "/p")
    assert failed[0].kind == "command_failed" and "no upstream branch" in failed[0].content
    fixed = from_tool_use(*bash("git push --set-upstream origin main", "done", exit_code=0), state, "/p")
    assert fixed[0].kind == "fix" and "no upstream branch" in fixed[0].content
    ex = "Exit code 2\n  1) test mount (AppTest)\n** (RuntimeError) no :secret_key_base configuration found\n"
    assert "secret_key_base" in from_tool_use("Bash", {"command": "mix test"}, ex, state, "/p")[0].content


def test_precision_and_recall_on_the_labelled_sessions() -> None:
    seen = evaluate(json.loads(SESSION.read_text()))
    held_out = evaluate(json.loads(HELD_OUT.read_text()))
    assert seen["precision"] >= 0.9 and seen["recall"] >= 0.9, seen
    assert held_out["precision"] >= 0.8 and held_out["recall"] >= 0.8, held_out
    assert seen["session_summaries"] == held_out["session_summaries"] == 1


def test_a_slash_command_template_is_not_the_users_words() -> None:
    from spatial_memory.capture.transcript import text_turns

    def entry(role: str, text: str, **extra) -> dict:
        return {"type": role, "uuid": text[:8], "message": {"role": role, "content": text}, **extra}

    entries = [
        entry("user", "<command-message>init is analyzing</command-message>\n<command-name>/init</command-name>"),
        entry("user", "Please analyze this codebase and create a notes file for future sessions."),
        entry("assistant", "I'll analyze the codebase."),
        entry("user", "<command-name>/cost</command-name>"),
        entry("user", "<local-command-stdout>Total cost: $0.10</local-command-stdout>"),
        entry("user", "We always deploy from the release branch."),
    ]
    said = [m.text for _, m in text_turns(entries) if m is not None]
    assert said == ["I'll analyze the codebase.", "We always deploy from the release branch."]


def test_the_memorability_classifier_is_small_and_needs_no_scikit_learn() -> None:
    import subprocess
    import sys

    from spatial_memory.capture import memorable

    assert memorable.WEIGHTS.stat().st_size < 16_000
    code = (
        "import sys, numpy as np; from spatial_memory.capture import memorable as m; "
        "p = m.probability(np.zeros(384), 'We always deploy from the release branch.', 'user', False); "
        "assert 0.0 <= p <= 1.0 and 'sklearn' not in sys.modules, p"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0

"""setup-hooks and the setup_hooks tool: the configuration shown, and the command line's merge
into the clients' files (backup first, idempotent, other hooks kept); the tool writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spatial_memory.capture.namespace import project_namespace, project_root, sanitise
from spatial_memory.capture.setup import HOOK_MARKER, merge_hooks, plan, this_launch
from spatial_memory.validation import NAMESPACE_PATTERN

from .conftest import data

USER_HOOK = {"type": "command", "command": "~/bin/lint.sh"}


def setup_cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(
        [sys.executable, "-m", "spatial_memory", "setup-hooks", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_claude_code_user_settings_merged_with_backup_and_idempotent(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    (home / ".claude").mkdir(parents=True)
    cwd.mkdir()
    settings = home / ".claude" / "settings.json"
    mine = {
        "model": "opus",
        "hooks": {
            "PostToolUse": [{"matcher": "Bash", "hooks": [USER_HOOK]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
        },
    }
    settings.write_text(json.dumps(mine))
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}))
    os.chmod(home / ".claude.json", 0o600)

    shown = setup_cli(home, cwd, "--client", "claude-code")
    assert shown.returncode == 0, shown.stderr
    assert "Nothing was written" in shown.stdout and HOOK_MARKER in shown.stdout
    assert json.loads(settings.read_text()) == mine  # without --write nothing changes

    written = setup_cli(home, cwd, "--client", "claude-code", "--user", "--write")
    assert written.returncode == 0, written.stderr
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus" and merged["hooks"]["Notification"] == mine["hooks"]["Notification"]
    groups = merged["hooks"]["PostToolUse"]
    assert groups[0] == {"matcher": "Bash", "hooks": [USER_HOOK]}
    assert groups[1]["matcher"] == "Edit|MultiEdit|Write|NotebookEdit|Bash"
    assert HOOK_MARKER in groups[1]["hooks"][0]["command"] and groups[1]["hooks"][0]["timeout"] == 5
    assert set(merged["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}
    backups = sorted((home / ".claude").glob("settings.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == mine
    servers = json.loads((home / ".claude.json").read_text())
    assert servers["numStartups"] == 3 and set(servers["mcpServers"]) == {"other", "spatial-memory"}
    entry = servers["mcpServers"]["spatial-memory"]
    assert [entry["command"], *entry["args"]] == this_launch().server  # how this installation starts
    assert (home / ".claude.json").stat().st_mode & 0o777 == 0o600

    again = setup_cli(home, cwd, "--client", "claude-code", "--user", "--write")
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert json.loads(settings.read_text()) == merged
    assert len(list((home / ".claude").glob("settings.json.bak-*"))) == 1


def test_cursor_project_hooks_written_in_the_repository_root(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    home.mkdir()
    hooks = repo / ".cursor" / "hooks.json"
    hooks.parent.mkdir()
    hooks.write_text(json.dumps({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}))
    done = setup_cli(home, repo / "pkg", "--client", "cursor", "--project", "--write")
    assert done.returncode == 0, done.stderr
    merged = json.loads(hooks.read_text())
    assert merged["version"] == 1
    assert merged["hooks"]["afterFileEdit"][0] == {"command": "./format.sh"}
    assert HOOK_MARKER in merged["hooks"]["afterFileEdit"][1]["command"]
    assert set(merged["hooks"]) >= {"sessionStart", "beforeSubmitPrompt", "afterShellExecution", "stop", "sessionEnd"}
    assert "spatial-memory" in json.loads((repo / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert not (home / ".cursor").exists()


def test_a_file_that_is_not_json_is_left_alone(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    (home / ".cursor").mkdir(parents=True)
    cwd.mkdir()
    (home / ".cursor" / "hooks.json").write_text("{ this is: not json")
    done = setup_cli(home, cwd, "--client", "cursor", "--write")
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert (home / ".cursor" / "hooks.json").read_text() == "{ this is: not json"


def test_merging_replaces_only_our_previous_hooks() -> None:
    ours = plan("claude-code", "user", project=Path("/p"), home=Path("/h")).hooks
    old = {"type": "command", "command": "/old/python -m spatial_memory hook --client claude-code Stop"}
    existing = {"hooks": {"Stop": [{"hooks": [old]}, {"hooks": [USER_HOOK, old]}]}}
    merged = merge_hooks(existing, ours, "claude-code")
    assert merged["hooks"]["Stop"][0] == {"hooks": [USER_HOOK]}
    assert len(merged["hooks"]["Stop"]) == 2 and merged["hooks"]["Stop"][1] == ours["hooks"]["Stop"][0]
    assert merge_hooks(merged, ours, "claude-code") == merged


@pytest.mark.anyio
async def test_setup_hooks_tool_only_returns_the_configuration(client, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    result = data(await client.call_tool("setup_hooks", {"client": "claude-code"}))
    assert result["hooks_file"] == "~/.claude/settings.json" and result["mcp_file"] == "~/.claude.json"
    assert HOOK_MARKER in result["hooks"]["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert "--store" in result["hooks"]["hooks"]["SessionStart"][0]["hooks"][0]["command"]  # a test store
    assert result["write_command"] == f"{this_launch().cli} setup-hooks --client claude-code --user --write"
    project = data(await client.call_tool("setup_hooks", {"client": "cursor", "scope": "project"}))
    assert project["hooks_file"] == "<project>/.cursor/hooks.json"
    assert [p.name for p in tmp_path.iterdir()] in ([], ["store"])  # nothing written but the test store


def test_namespace_follows_the_repository(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SPATIAL_MEMORY_CAPTURE_NAMESPACE", raising=False)
    repo = tmp_path / "My Repo (v2)"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere")  # a worktree's .git is a file
    assert project_root(repo / "src" / "deep") == repo.resolve()
    assert project_namespace(repo / "src" / "deep") == "project-My-Repo-v2"
    assert project_namespace(tmp_path / "no-repo-here") == "project-no-repo-here"
    monkeypatch.setenv("SPATIAL_MEMORY_CAPTURE_NAMESPACE", "team/shared")
    assert project_namespace(repo) == "team/shared"
    monkeypatch.setenv("SPATIAL_MEMORY_CAPTURE_NAMESPACE", "  not ok!  ")
    assert project_namespace(repo) == "not-ok"
    for name in ("émoji 🎉 repo", "..", "-x-", "a" * 300, "日本語"):
        assert NAMESPACE_PATTERN.match(sanitise(name)) and len(sanitise(name)) <= 128


def test_a_uv_checkout_registers_readmes_command(tmp_path: Path) -> None:
    """From the .venv `uv sync` made, the entry is README's `uv run --frozen --directory` command and
    the suggested commands go through `uv run`; from a pip install, its scripts."""
    checkout = tmp_path / "my checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / "uv.lock").write_text("")
    (checkout / "pyproject.toml").write_text('[project]\nname = "spatial-memory-mcp"\n')
    launch = this_launch(checkout / ".venv", str(checkout / ".venv" / "bin" / "python"))
    assert launch.server == ["uv", "run", "--frozen", "--directory", str(checkout), "spatial-memory-mcp"]
    assert launch.cli == f"uv run --directory '{checkout}' spatial-memory"
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split('"spatial-memory": {', 1)[1].split("}", 1)[0]
    documented = json.loads("{" + block + "}")
    assert [documented["command"], *documented["args"]] == [
        part.replace(str(checkout), "/path/to/checkout") for part in launch.server
    ]
    scripts = tmp_path / "env" / "bin"
    scripts.mkdir(parents=True)
    for name in ("spatial-memory-mcp", "spatial-memory"):
        (scripts / name).write_text("")
    pip = this_launch(tmp_path / "env", str(scripts / "python"))
    assert pip.server == [str(scripts / "spatial-memory-mcp")] and pip.cli == str(scripts / "spatial-memory")


def test_an_entry_claude_mcp_add_made_is_kept_and_none_added(tmp_path: Path) -> None:
    """`claude mcp add` (local scope) puts the entry under the project in ~/.claude.json: setup-hooks
    shows and keeps that one, and adds no second one."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    theirs = {"command": "uv", "args": ["run", "--frozen", "--directory", "/src/sm", "spatial-memory-mcp"]}
    config = {"projects": {str(cwd): {"mcpServers": {"spatial-memory": theirs}}}}
    (home / ".claude.json").write_text(json.dumps(config))
    shown = setup_cli(home, cwd, "--client", "claude-code")
    assert shown.returncode == 0, shown.stderr
    assert "already registered" in shown.stdout and "/src/sm" in shown.stdout
    written = setup_cli(home, cwd, "--client", "claude-code", "--write")
    assert written.returncode == 0, written.stderr
    assert json.loads((home / ".claude.json").read_text()) == config
    assert HOOK_MARKER in (home / ".claude" / "settings.json").read_text()

"""The clients' configuration for capture: the hooks and the MCP server entry, and merging them
into the client's files (`spatial-memory setup-hooks --write` only; the `setup_hooks` tool only
shows them: a server does not edit a user's files unasked).

Files (Claude Code: https://code.claude.com/docs/en/settings and /en/mcp; Cursor:
https://cursor.com/docs/agent/hooks and https://cursor.com/docs/context/mcp):
  Claude Code  user:    ~/.claude/settings.json (hooks), ~/.claude.json (mcpServers)
               project: <project>/.claude/settings.local.json (hooks, not committed),
                        <project>/.mcp.json (mcpServers)
  Cursor       user:    ~/.cursor/hooks.json, ~/.cursor/mcp.json
               project: <project>/.cursor/hooks.json, <project>/.cursor/mcp.json

Merging keeps every other hook and server: our hooks are recognised by their command
(`-m spatial_memory hook`) and replaced, so writing twice changes nothing; an existing
"spatial-memory" server entry is left alone. A file that changes is backed up first
(`<file>.bak-<UTC time>`) and replaced atomically; a file that is not a JSON object is refused.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .payloads import CLAUDE_CODE, CURSOR

SERVER_NAME = "spatial-memory"
HOOK_MARKER = "-m spatial_memory hook"

# Claude Code events, with the hook timeout (seconds) each gets. Tool uses are filtered to the
# tools capture reads, so reads and searches do not even start a process.
CLAUDE_CODE_EVENTS = {
    "SessionStart": 15,
    "UserPromptSubmit": 10,
    "PostToolUse": 5,
    "PreCompact": 10,
    "Stop": 10,
    "SessionEnd": 10,
}
CLAUDE_CODE_TOOL_MATCHER = "Edit|MultiEdit|Write|NotebookEdit|Bash"
CURSOR_EVENTS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "afterFileEdit",
    "afterShellExecution",
    "afterAgentResponse",
    "preCompact",
    "stop",
    "sessionEnd",
)


@dataclass
class ClientSetup:
    """What to put where for one client and scope."""

    client: str
    scope: str  # "user" or "project"
    hooks_file: Path
    hooks: dict[str, Any]  # the configuration to merge into hooks_file
    mcp_file: Path
    mcp_server: dict[str, Any]  # the entry for mcpServers["spatial-memory"]


def plan(client: str, scope: str, *, project: Path, home: Path, store: Path | None = None) -> ClientSetup:
    """The configuration for `client` at `scope`; `store` is baked in when it is not the default."""
    if client == CLAUDE_CODE:
        hooks = claude_code_hooks(store)
        if scope == "user":
            files = home / ".claude" / "settings.json", home / ".claude.json"
        else:
            files = project / ".claude" / "settings.local.json", project / ".mcp.json"
    elif client == CURSOR:
        hooks = cursor_hooks(store)
        base = home / ".cursor" if scope == "user" else project / ".cursor"
        files = base / "hooks.json", base / "mcp.json"
    else:
        raise ConfigurationError(f"unknown client {client!r}: use claude-code or cursor")
    return ClientSetup(client, scope, files[0], hooks, files[1], mcp_server_entry(store))


def hook_command(client: str, event: str, store: Path | None) -> str:
    parts = [sys.executable, "-m", "spatial_memory", "hook", "--client", client]
    if store is not None:
        parts += ["--store", str(store)]
    parts.append(event)
    if os.name == "nt":  # pragma: no cover - cmd.exe quoting
        return " ".join(f'"{x}"' if " " in x else x for x in parts)
    return shlex.join(parts)


def claude_code_hooks(store: Path | None) -> dict[str, Any]:
    hooks: dict[str, Any] = {}
    for event, timeout in CLAUDE_CODE_EVENTS.items():
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": hook_command(CLAUDE_CODE, event, store), "timeout": timeout}]
        }
        if event == "PostToolUse":
            group = {"matcher": CLAUDE_CODE_TOOL_MATCHER, **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def cursor_hooks(store: Path | None) -> dict[str, Any]:
    return {"version": 1, "hooks": {e: [{"command": hook_command(CURSOR, e, store)}] for e in CURSOR_EVENTS}}


def mcp_server_entry(store: Path | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": ["-m", "spatial_memory"]}
    if store is not None:
        entry["env"] = {"SPATIAL_MEMORY_PATH": str(store)}
    return entry


# ---- merging --------------------------------------------------------------------------------


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_MARKER in str(hook.get("command", ""))


def merge_hooks(existing: dict[str, Any], ours: dict[str, Any], client: str) -> dict[str, Any]:
    """`existing` with our previous hooks replaced by `ours`; everything else kept as it was."""
    merged = json.loads(json.dumps(existing))  # a deep copy
    events = merged.get("hooks")
    if not isinstance(events, dict):
        events = merged["hooks"] = {}
    if client == CURSOR:
        merged.setdefault("version", ours.get("version", 1))
    for event, entries in ours["hooks"].items():
        kept = []
        for entry in events.get(event) or []:
            if client == CURSOR:
                if not _ours(entry):
                    kept.append(entry)
                continue
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if not isinstance(inner, list):
                kept.append(entry)
                continue
            others = [h for h in inner if not _ours(h)]
            if others or not inner:  # a group that held only our hook goes with it
                kept.append({**entry, "hooks": others})
        events[event] = kept + entries
    return merged


def merge_mcp(existing: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = json.loads(json.dumps(existing))
    servers = merged.get("mcpServers")
    if not isinstance(servers, dict):
        servers = merged["mcpServers"] = {}
    servers.setdefault(SERVER_NAME, entry)  # the user's own entry for this server wins
    return merged


@dataclass
class Written:
    path: Path
    changed: bool
    backup: Path | None


def write(setup: ClientSetup) -> list[Written]:
    """Merge the hooks and the server entry into the client's files (backups first)."""
    return [
        _update(setup.hooks_file, lambda current: merge_hooks(current, setup.hooks, setup.client)),
        _update(setup.mcp_file, lambda current: merge_mcp(current, setup.mcp_server)),
    ]


def _update(path: Path, change) -> Written:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        text = None
    try:
        current = json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); not changed") from None
    if not isinstance(current, dict):
        raise ConfigurationError(f"{path} does not hold a JSON object; not changed")
    updated = change(current)
    if updated == current and text is not None:
        return Written(path, False, None)
    backup = None
    if text is not None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        backup.write_text(text, "utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(updated, indent=2, ensure_ascii=False) + "\n", "utf-8")
    if text is not None:  # keep the file's permissions (~/.claude.json is private)
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    return Written(path, True, backup)

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
"spatial-memory" server entry is left alone and none is added beside it (`registered_entry`: also
one `claude mcp add` put under a project in ~/.claude.json). A file that changes is backed up first
(`<file>.bak-<UTC time>`) and replaced atomically; a file that is not a JSON object is refused.

The server entry starts the server the way this installation runs (`this_launch`): from a uv
checkout (`uv sync`), README's `uv run --frozen --directory <checkout> spatial-memory-mcp`; from a
pip install, its `spatial-memory-mcp` script; and the commands suggested are those of the route.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
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
    cli: str = "spatial-memory"  # how this installation's `spatial-memory` command is typed
    registered: str | None = field(default=None)  # where an existing "spatial-memory" entry was found


@dataclass(frozen=True)
class Launch:
    """How this installation's commands start: the MCP server entry's command and arguments, and
    the `spatial-memory` command as a person types it."""

    server: list[str]
    cli: str


def this_launch(prefix: Path | None = None, executable: str | None = None) -> Launch:
    """The route this code runs from: a uv checkout's .venv, a pip install's scripts, or a bare
    interpreter (`python -m spatial_memory`)."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    executable = sys.executable if executable is None else executable
    checkout = uv_checkout(prefix)
    if checkout is not None:
        server = ["uv", "run", "--frozen", "--directory", str(checkout), "spatial-memory-mcp"]
        return Launch(server, f"uv run --directory {_quote(str(checkout))} spatial-memory")
    scripts = Path(executable).parent
    suffix = ".exe" if os.name == "nt" else ""
    server_script, cli_script = scripts / f"spatial-memory-mcp{suffix}", scripts / f"spatial-memory{suffix}"
    if server_script.is_file() and cli_script.is_file():
        on_path = shutil.which("spatial-memory")
        same = on_path is not None and Path(on_path).resolve() == cli_script.resolve()
        return Launch([str(server_script)], "spatial-memory" if same else _quote(str(cli_script)))
    return Launch([executable, "-m", "spatial_memory"], f"{_quote(executable)} -m spatial_memory")


def uv_checkout(prefix: Path) -> Path | None:
    """The checkout whose `uv sync` environment (<checkout>/.venv) this is, or None."""
    root = prefix.parent
    if prefix.name != ".venv" or not (root / "uv.lock").is_file():
        return None
    try:
        project = (root / "pyproject.toml").read_text("utf-8")
    except OSError:
        return None
    return root if 'name = "spatial-memory-mcp"' in project else None


def _quote(part: str) -> str:
    if os.name == "nt":  # pragma: no cover - cmd.exe quoting
        return f'"{part}"' if " " in part else part
    return shlex.quote(part)


def plan(
    client: str, scope: str, *, project: Path, home: Path, store: Path | str | None = None, launch: Launch | None = None
) -> ClientSetup:
    """The configuration for `client` at `scope`; `store` (a directory or a store URI) is baked in
    when it is not the default; `launch`: how the server starts (default: `this_launch()`)."""
    launch = this_launch() if launch is None else launch
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
    return ClientSetup(client, scope, files[0], hooks, files[1], mcp_server_entry(store, launch), launch.cli)


def hook_command(client: str, event: str, store: Path | str | None) -> str:
    parts = [sys.executable, "-m", "spatial_memory", "hook", "--client", client]
    if store is not None:
        parts += ["--store", str(store)]
    parts.append(event)
    if os.name == "nt":  # pragma: no cover - cmd.exe quoting
        return " ".join(f'"{x}"' if " " in x else x for x in parts)
    return shlex.join(parts)


def claude_code_hooks(store: Path | str | None) -> dict[str, Any]:
    hooks: dict[str, Any] = {}
    for event, timeout in CLAUDE_CODE_EVENTS.items():
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": hook_command(CLAUDE_CODE, event, store), "timeout": timeout}]
        }
        if event == "PostToolUse":
            group = {"matcher": CLAUDE_CODE_TOOL_MATCHER, **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def cursor_hooks(store: Path | str | None) -> dict[str, Any]:
    return {"version": 1, "hooks": {e: [{"command": hook_command(CURSOR, e, store)}] for e in CURSOR_EVENTS}}


def mcp_server_entry(store: Path | str | None, launch: Launch) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": launch.server[0], "args": launch.server[1:]}
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


def registered_entry(setup: ClientSetup) -> ClientSetup:
    """`setup` with the client's existing "spatial-memory" entry in place of ours, when there is
    one: in the MCP file's mcpServers or, in ~/.claude.json, under one of its projects (where
    `claude mcp add` puts it by default). A user then keeps one entry, the one they made."""
    try:
        current = json.loads(setup.mcp_file.read_text("utf-8"))
    except (OSError, ValueError):
        return setup
    if not isinstance(current, dict):
        return setup
    places = [("", current)]
    projects = current.get("projects")
    if setup.client == CLAUDE_CODE and isinstance(projects, dict):
        places += [(f" (project {name})", p) for name, p in projects.items() if isinstance(p, dict)]
    for where, holder in places:
        servers = holder.get("mcpServers")
        if isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict):
            found = f"{setup.mcp_file}{where}"
            return ClientSetup(**{**setup.__dict__, "mcp_server": servers[SERVER_NAME], "registered": found})
    return setup


@dataclass
class Written:
    path: Path
    changed: bool
    backup: Path | None


def write(setup: ClientSetup) -> list[Written]:
    """Merge the hooks and the server entry into the client's files (backups first); a server
    entry already registered (`registered_entry`) is left as it is."""
    hooks = _update(setup.hooks_file, lambda current: merge_hooks(current, setup.hooks, setup.client))
    if setup.registered is not None:
        return [hooks, Written(setup.mcp_file, False, None)]
    return [hooks, _update(setup.mcp_file, lambda current: merge_mcp(current, setup.mcp_server))]


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

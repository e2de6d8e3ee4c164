"""A synthetic Claude Code history on disk (~/.claude/projects/<project>/<session>.jsonl), for
backfill: user prompts (decisions, preferences, plain requests, an API key now and then),
assistant answers, and tool uses with their results (commands that pass, fail and pass again
after edits, edits), as Claude Code writes them."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

PROMPTS = [
    "We decided to use {tool} for the {area} because it is faster to set up.",
    "I prefer {tool} over the old setup for {area}, please keep it that way.",
    "Can you look at the {area} code and tell me what it does?",
    "The root cause of the {area} outage was a missing index on the {table} table.",
    "Remember that the {area} deploy must run the migrations before the workers restart.",
    "Please refactor the {area} module, it has grown too big.",
    "Our {area} API key is sk-live-{secret} do not lose it",
]
ANSWERS = [
    "I read the {area} module: it loads the {table} rows and renders them.",
    "Done: the {area} tests pass now.",
    "The {area} service keeps its state in the {table} table, which is why the restart matters.",
    "Noted, {tool} is now the default for {area}.",
]
TOOLS = ["pytest", "ruff", "uv", "poetry", "docker", "make", "vite", "alembic"]
AREAS = ["billing", "search", "auth", "reporting", "ingest", "frontend", "export", "scheduler"]
TABLES = ["invoices", "users", "events", "sessions", "payments", "jobs"]


def _entry(kind: str, content: Any, at: str, cwd: str, session: str, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"{session}-{n}",
        "sessionId": session,
        "timestamp": at,
        "cwd": cwd,
        "message": {"role": kind, "content": content},
        **extra,
    }


def synthetic_history(home: Path, turns: int, *, sessions: int | None = None, seed: int = 7) -> Path:
    """Write `turns` transcript entries over several projects and sessions under home/.claude;
    returns the first project's directory."""
    rng = random.Random(seed)
    sessions = sessions or max(1, turns // 100)
    projects = [home / "src" / name for name in ("shop", "atlas", "ledger")]
    for project in projects:
        (project / ".git").mkdir(parents=True, exist_ok=True)
    per_session = max(1, turns // sessions)
    written = 0
    for s in range(sessions):
        project = projects[s % len(projects)]
        directory = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(project))
        directory.mkdir(parents=True, exist_ok=True)
        session = f"{s:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
        day = 1 + s % 28
        lines: list[dict[str, Any]] = []
        n = 0
        failing: str | None = None
        while n < per_session and written + n < turns:
            at = f"2026-10-{day:02d}T{9 + n // 60 % 10:02d}:{n % 60:02d}:00Z"
            words = {
                "tool": rng.choice(TOOLS),
                "area": rng.choice(AREAS),
                "table": rng.choice(TABLES),
                "secret": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(32)),
            }
            roll = rng.random()
            if roll < 0.3:
                lines.append(_entry("user", rng.choice(PROMPTS).format(**words), at, str(project), session, n))
            elif roll < 0.5:
                text = [{"type": "text", "text": rng.choice(ANSWERS).format(**words)}]
                lines.append(_entry("assistant", text, at, str(project), session, n))
            else:
                tool_id = f"toolu_{session[:8]}_{n}"
                if roll < 0.7 or failing is not None:
                    command = failing or f"{words['tool']} run {words['area']}"
                    fails = failing is None and rng.random() < 0.25
                    stdout = f"{words['area']}: 12 passed" if not fails else ""
                    stderr = (
                        f"E   ImportError: cannot import name '{words['table']}' from '{words['area']}'"
                        if fails
                        else ""
                    )
                    use = [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}]
                    result = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
                    failing = command if fails else None
                    failed = fails
                else:
                    failed = False
                    path = f"{project}/{words['area']}/{words['table']}.py"
                    new = f"from .{words['table']} import {words['table'].title()}Model"
                    use = [
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Edit",
                            "input": {"file_path": path, "old_string": "pass", "new_string": new},
                        }
                    ]
                    result = {"filePath": path}
                lines.append(_entry("assistant", use, at, str(project), session, n))
                n += 1
                block: list[dict[str, Any]] = [
                    {"type": "tool_result", "tool_use_id": tool_id, "content": json.dumps(result)}
                ]
                if failed:  # as Claude Code marks a command that exited non-zero
                    block[0]["is_error"] = True
                lines.append(_entry("user", block, at, str(project), session, n, toolUseResult=result))
            n += 1
        written += n
        (directory / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        if written >= turns:
            break
    return projects[0]

"""The namespace captures of a project go to: `project-<repository directory name>`.

The project is the git repository holding the working directory (its top level: the
directory with `.git`, a directory or, for worktrees and submodules, a file), else the working
directory itself. SPATIAL_MEMORY_CAPTURE_NAMESPACE overrides it (one namespace for everything).
Found without running git: a hook must not pay for a subprocess.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

NAMESPACE_ENV = "SPATIAL_MEMORY_CAPTURE_NAMESPACE"
PREFIX = "project-"
MAX_CHARS = 128  # the default max_namespace_length

# validation.NAMESPACE_PATTERN, repeated: importing validation would import pydantic into the hook.
_VALID = re.compile(r"^[\w][\w.:/@-]*$")
_NOT_ALLOWED = re.compile(r"[^\w.\-]+")


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The top level of the git repository holding `cwd`, else `cwd`."""
    start = Path(cwd).expanduser()
    try:
        start = start.resolve()
    except OSError:
        pass
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def project_namespace(cwd: str | os.PathLike[str], override: str | None = None) -> str:
    """The capture namespace for a session working in `cwd`."""
    override = override if override is not None else os.environ.get(NAMESPACE_ENV)
    if override and override.strip():
        override = override.strip()
        return override[:MAX_CHARS] if _VALID.match(override) else sanitise(override, prefix="")
    return sanitise(project_root(cwd).name or "root")


def sanitise(name: str, *, prefix: str = PREFIX) -> str:
    """`name` made a valid namespace: runs of other characters become one `-`."""
    cleaned = _NOT_ALLOWED.sub("-", name).strip("-.") or "project"
    return (prefix + cleaned)[:MAX_CHARS]

"""What the hooks of one client session remember between invocations.

Each hook is a new process, so the session's running state lives in a small JSON file under
`<store>/spool/sessions/`: how far the transcript has been read, the
commands that failed (to recognise their fix), the files edited and counts for the session
summary. Hooks of one session can run at once (Claude Code runs the hooks of parallel tool
calls in parallel), so the file is read and written under an exclusive lock on a lock file next
to it; it is replaced atomically, and holds only redacted text.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

SESSIONS_DIR = "sessions"


def _fresh() -> dict[str, Any]:
    return {
        "transcript_offset": 0,
        "failures": {},
        "edited": [],
        "commands": 0,
        "failed": 0,
        "fixed": 0,
        "highlights": [],
    }


@contextmanager
def session_state(spool_dir: Path, client: str, session_id: str) -> Iterator[dict[str, Any]]:
    """The session's state, locked; changes made to the dict are saved on exit."""
    directory = spool_dir / SESSIONS_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = hashlib.sha256(f"{client}\0{session_id}".encode()).hexdigest()[:32]
    path = directory / f"{key}.json"
    with _locked(directory / f"{key}.lock"):
        try:
            state = {**_fresh(), **json.loads(path.read_text("utf-8"))}
        except (FileNotFoundError, ValueError):
            state = _fresh()
        yield state
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)


ROUTINES_FILE = "routines.json"


@contextmanager
def routines_seen(spool_dir: Path) -> Iterator[dict[str, Any]]:
    """The command routines seen across sessions (selection.routines), locked; saved on exit.
    Only SessionEnd opens it."""
    spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = spool_dir / ROUTINES_FILE
    with _locked(spool_dir / "routines.lock"):
        try:
            seen = json.loads(path.read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            seen = {}
        seen = seen if isinstance(seen, dict) else {}
        yield seen
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(seen, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)


def forget_old_sessions(spool_dir: Path, max_age_seconds: float) -> int:
    """Remove the state of sessions untouched for `max_age_seconds`. A session resumed after that
    reads its transcript again from the start; what it captured before has the same ids and is
    not stored twice. Returns how many were removed."""
    directory = spool_dir / SESSIONS_DIR
    cutoff = time.time() - max_age_seconds
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        try:
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += entry.name.endswith(".json")
        except OSError:
            pass
    return removed


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:  # pragma: no cover - Windows
            import msvcrt  # Windows only: the module exists nowhere else

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
        yield
    finally:
        os.close(fd)  # closing releases the lock

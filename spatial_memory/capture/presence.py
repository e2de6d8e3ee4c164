"""Whether some process is ingesting the spool: servers and `spatial-memory ingest` say so by
holding an exclusive lock on a file of their own under `<store>/spool/ingesters/`.

The kernel drops a lock when its holder dies, so a killed server never looks alive: a hook that
can take a lock file's lock knows its owner is gone and removes the file. A hook asks before
starting a background ingester, so one runs only when nobody else would ingest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

INGESTERS_DIR = "ingesters"


@contextmanager
def ingesting(spool_dir: Path) -> Iterator[None]:
    """Announce, while inside, that this process ingests the spool."""
    directory = spool_dir / INGESTERS_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = f"{os.getpid()}-{os.urandom(4).hex()}"
    path = directory / f"{name}.lock"
    fd = os.open(directory / f"{name}.new", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd, blocking=True)
        # Visible only once locked, so no one takes it for a dead process's file and removes it.
        os.replace(directory / f"{name}.new", path)
        yield
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)


def someone_ingesting(spool_dir: Path) -> bool:
    """Whether a live process announced it ingests the spool (stale announcements are removed)."""
    try:
        names = os.listdir(spool_dir / INGESTERS_DIR)
    except FileNotFoundError:
        return False
    alive = False
    for name in names:
        if not name.endswith(".lock"):
            continue
        path = spool_dir / INGESTERS_DIR / name
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            if _lock(fd, blocking=False):
                os.unlink(path)  # its owner died without removing it
            else:
                alive = True
        except OSError:
            pass
        finally:
            os.close(fd)
        if alive:
            return True
    return False


def _lock(fd: int, *, blocking: bool) -> bool:
    """Take the file's exclusive lock; False when another process holds it (non-blocking only)."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        else:  # pragma: no cover - Windows
            import msvcrt  # Windows only: the module exists nowhere else

            msvcrt.locking(fd, msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)
    except (BlockingIOError, PermissionError):
        return False
    except OSError:
        if blocking:
            raise
        return False
    return True

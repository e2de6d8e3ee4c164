"""A store that can be read but not written: how it is recognised, and the lock that refuses writes.

Every write to the store takes its write lock first (StoreLock), so a store opened read-only gets
a ReadOnlyLock instead: reads never take the lock, and each write fails at once with a
ReadOnlyStoreError that says why, before anything is touched.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ...errors import ReadOnlyStoreError
from ..table.connection import is_remote
from .locking import LOCK_FILE

# Opening the lock file for writing fails with these on read-only media or without permission.
_READ_ONLY_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}


def read_only_reason(db_path: Path | str, *, forced: bool = False) -> str | None:
    """Why the store at db_path cannot be written, or None when it can (a store on object storage,
    a URI, is writable unless forced: its permissions show on the first write)."""
    if forced:
        return "SPATIAL_MEMORY_READ_ONLY is set"
    if is_remote(db_path):
        return None
    db_path = Path(db_path)  # a local directory, named by a str or a Path
    if db_path.is_dir() and not os.access(db_path, os.W_OK):
        return f"its directory {db_path} is not writable"
    try:  # the first thing every write does; root passes os.access on read-only media only here
        fd = os.open(db_path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        return None  # no store yet: creating it will say what is wrong
    except OSError as exc:
        if exc.errno in _READ_ONLY_ERRNOS:
            return f"its lock file cannot be opened for writing ({exc.strerror})"
        return None  # anything else surfaces, typed, on the first write
    os.close(fd)
    return None


def read_only_message(reason: str) -> str:
    return (
        f"the memory store is read-only ({reason}): nothing was changed. Reading (recall, stats, export, "
        "namespaces) works; to store or change memories, point SPATIAL_MEMORY_PATH at a writable store "
        "or copy this one to writable storage."
    )


class ReadOnlyLock:
    """Stands in for StoreLock on a store that must not be written: entering it is refused."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __enter__(self) -> ReadOnlyLock:
        raise ReadOnlyStoreError(self.message)

    def __exit__(self, *exc_info: object) -> None:  # pragma: no cover - never entered
        return None

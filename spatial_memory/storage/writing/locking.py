"""One writer at a time, across threads and processes, and the retry of a conflicting commit."""

from __future__ import annotations

import errno
import logging
import os
import random
import threading
import time
from pathlib import Path

from ...errors import StorageError
from ...transport.cancellation import check_cancelled

log = logging.getLogger(__name__)

LOCK_FILE = "memories.lock"
INDEX_LOCK_FILE = "indexes.lock"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:  # Windows
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]


_LOCK_BUSY_ERRNOS = {errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK, getattr(errno, "EDEADLOCK", 0)}


class ReentrantLock:
    """A write lock re-entrant within a thread and exclusive across threads; the first entry of a
    thread also takes the store's cross-process part (`_lock_shared`), the last exit lets it go.
    Entering refuses work for a request whose client has gone away (see cancellation)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0

    def __enter__(self) -> ReentrantLock:
        check_cancelled()
        deadline = time.monotonic() + self.timeout
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise self._busy()
        try:
            if self._depth == 0:
                self._lock_shared(deadline)
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self._unlock_shared()
        finally:
            self._thread_lock.release()

    def _lock_shared(self, deadline: float) -> None:
        raise NotImplementedError

    def _unlock_shared(self) -> None:
        raise NotImplementedError

    def probe(self) -> str:
        raise NotImplementedError

    def _busy(self) -> StorageError:
        return StorageError(
            f"the memory store is busy (another spatial-memory process has held its write lock for over "
            f"{self.timeout:g} s); nothing was changed, retry"
        )


class StoreLock(ReentrantLock):
    """The write lock of a store on a local path: re-entrant within a thread, exclusive across
    threads and across every process on the same storage path (two editor windows, a hook plus a
    server). A store on object storage has a LeaseLock instead (lease.py).

    Across processes it is an exclusive `fcntl.flock` (`msvcrt.locking` on Windows) on a lock
    file next to the table. The kernel drops it when its holder dies, so a crashed or killed
    server never leaves the store locked. Waiting is bounded: after `timeout` seconds the
    write fails with a StorageError that says to retry, and nothing is changed.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__(timeout)
        self.path = path
        self._fd: int | None = None
        self._cross_process = fcntl is not None or msvcrt is not None
        if not self._cross_process:  # pragma: no cover - no platform lacks both
            log.warning("no file locking on this platform: processes sharing %s are not serialized", path)

    def _lock_shared(self, deadline: float) -> None:
        if self._cross_process:
            self._lock_file(deadline)

    def _unlock_shared(self) -> None:
        if self._cross_process:
            self._unlock_file()

    def probe(self) -> str:
        """Without waiting: "free", "held" (a write is running, in this process or another) or
        "unlocked" (no file locking here). Tries the file lock on a descriptor of its own."""
        if not self._cross_process:
            return "unlocked"
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open the store's lock file {self.path}: {exc}") from exc
        try:
            if not self._try_lock(fd):
                return "held"
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            else:  # pragma: no cover - Windows
                assert msvcrt is not None  # no fcntl: Windows, which has msvcrt
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            return "free"
        finally:
            os.close(fd)

    def _open(self) -> int:
        if self._fd is None:
            # Not inherited by child processes (os.open's default), never truncated, never deleted.
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _try_lock(self, fd: int) -> bool:
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                assert msvcrt is not None  # no fcntl: Windows, which has msvcrt
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except (BlockingIOError, PermissionError):
            return False
        except OSError as exc:
            if exc.errno in _LOCK_BUSY_ERRNOS:
                return False
            raise

    def _lock_file(self, deadline: float) -> None:
        try:
            fd = self._open()
        except OSError as exc:
            raise StorageError(f"cannot open the store's lock file {self.path}: {exc}") from exc
        delay = 0.002
        while True:
            try:
                if self._try_lock(fd):
                    return
            except OSError as exc:  # e.g. a file system without locks: degrade to in-process only
                log.warning("cannot lock %s (%s): processes sharing this store are not serialized", self.path, exc)
                self._cross_process = False
                return
            if time.monotonic() >= deadline:
                raise self._busy()
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)) * random.uniform(0.5, 1.0))
            delay = min(delay * 2, 0.05)

    def _unlock_file(self) -> None:
        if self._fd is None:
            return
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        else:  # pragma: no cover - Windows
            assert msvcrt is not None  # no fcntl: Windows, which has msvcrt
            os.lseek(self._fd, 0, os.SEEK_SET)
            msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)


# LanceDB commits optimistically: a commit that lost a race to a writer outside our lock (or a
# read of files a concurrent cleanup removed) fails before anything is written and can be retried.
WRITE_ATTEMPTS = 6
_RETRYABLE_MESSAGES = ("commit conflict", "preempted by concurrent transaction", "please retry", "not found")


def is_retryable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(m in text for m in _RETRYABLE_MESSAGES)


def backoff(attempt: int) -> float:
    return min(0.01 * 2**attempt, 0.5) * random.uniform(0.5, 1.5)

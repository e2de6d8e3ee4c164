"""Keeping the C heap small on Linux (glibc malloc), where most of this server's memory lives.

glibc gives each thread that allocates its own arena (up to 8 per core); the worker threads,
LanceDB's compaction and the exact index reload each leave freed but unreturned memory in
theirs, and resident memory ratchets up; two arenas keep the peak well lower (docs/BENCHMARKS.md,
"Figures moved from code comments"). Elsewhere (macOS, Windows, musl) these are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

_M_ARENA_MAX = -8


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt  # noqa: B018 - glibc only
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = 2) -> None:
    """Call before any thread starts: threads created later share `arenas` malloc arenas."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, arenas)


def trim() -> None:
    """Hand freed heap pages back to the system (after a compaction's big transient buffers)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)

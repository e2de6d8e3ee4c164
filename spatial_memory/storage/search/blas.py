"""The exact search's matrix-vector product: BLAS on one thread, the rows shared by threads of our own.

numpy's OpenBLAS splits a product over 10,000 x 384 float32 values across every core. On a host
whose cores are busy, the split waits for a core, and the product takes many times longer on two
threads than on one (docs/BENCHMARKS.md, "Figures moved from code comments"). `SplitProduct` shares
the rows out itself, so that a share nobody else picks up is done by the caller: on an idle host
two cores read the matrix, on a busy one the caller alone does. Each output is the same dot
product either way (bit for bit), only the split changes.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


class OneBlasThread:
    """`with one_thread():` runs BLAS on one thread in the block, process-wide (OpenBLAS has one
    setting); the threads come back when the last block of any instance ends. Without threadpoolctl
    or a BLAS it knows, a no-op."""

    # Shared by every instance: the setting is process-wide, so the count of blocks inside and the
    # threads to restore must be too (two instances interleaving would otherwise restore 1).
    _lock = threading.Lock()
    _inside = 0
    _saved: list[int] = []
    _libs: list[Any] | None = None

    def _controllers(self) -> list[Any]:  # under the lock
        cls = type(self)
        if cls._libs is None:
            try:
                # Imported here, by the first exact search: threadpoolctl loads every BLAS library
                # it finds, which keeps start-up fast only when it waits until then.
                from threadpoolctl import ThreadpoolController

                cls._libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            except Exception:  # noqa: BLE001 - only a speed-up
                log.debug("threadpoolctl unavailable: BLAS keeps its threads", exc_info=True)
                cls._libs = []
        return cls._libs

    @contextmanager
    def __call__(self) -> Iterator[None]:
        cls = type(self)
        with cls._lock:
            libs = self._controllers()
            if libs and cls._inside == 0:
                cls._saved = [lib.get_num_threads() for lib in libs]
                for lib in libs:
                    lib.set_num_threads(1)
            cls._inside += 1
        try:
            yield
        finally:
            with cls._lock:
                cls._inside -= 1
                if libs and cls._inside == 0:
                    for lib, threads in zip(libs, cls._saved, strict=True):
                        lib.set_num_threads(threads)


# Rows per share of a split product: below two shares the product runs in the caller alone (a
# helper's wake-up costs more than it saves on a small matrix).
SHARE_ROWS = 2048
ALIGN = 64


def product_helpers() -> int:
    """Helper threads for a split product: one fewer than the CPUs this process may use, at most 3
    (memory bandwidth, not arithmetic, limits a matrix-vector product)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(0, min(cpus, 4) - 1)


class SplitProduct:
    """`matrix @ vector` with its rows shared between the calling thread and `helpers` threads of
    its own, each share a one-thread BLAS product. A product over 10,000 x 384 float32 values reads
    15 MB: one core cannot pull that from memory as fast as two (docs/BENCHMARKS.md, 45).

    Shares are claimed as each thread gets to them, and the caller claims too: a helper that a busy
    host does not run leaves its shares to the caller, which then waits only for shares a helper has
    started. Every output value is the same dot product whichever thread computes it, so the result
    does not depend on the split."""

    def __init__(self, helpers: int) -> None:
        self._helpers = max(0, helpers)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def __call__(self, matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """`matrix @ vector`; `vector` may be a matrix too (one column per query)."""
        rows = matrix.shape[0]
        shares = min(2 * (self._helpers + 1), rows // SHARE_ROWS)
        if self._helpers == 0 or shares < 2:
            return matrix @ vector
        out = np.empty((rows, *vector.shape[1:]), dtype=np.result_type(matrix, vector))
        # Shares start at multiples of ALIGN rows: BLAS works through rows in small groups, and a
        # row must fall in the same kind of group as in one product over the whole matrix.
        bounds = [min(rows, round(rows * i / shares / ALIGN) * ALIGN) for i in range(shares)] + [rows]
        claim = itertools.count()
        pending = threading.Condition()
        helping = [0]  # shares a helper claimed and has not finished
        failed: list[BaseException] = []

        def work(helper: bool) -> None:
            while True:
                with pending:
                    share = next(claim)
                    if share >= shares:
                        return
                    if helper:
                        helping[0] += 1
                lo, hi = bounds[share], bounds[share + 1]
                try:
                    np.matmul(matrix[lo:hi], vector, out=out[lo:hi])
                except BaseException as exc:
                    if not helper:
                        raise
                    failed.append(exc)  # raised by the caller, which would otherwise wait for ever
                finally:
                    if helper:
                        with pending:
                            helping[0] -= 1
                            pending.notify_all()

        pool = self._helper_pool()
        for _ in range(self._helpers):
            pool.submit(work, True)
        work(False)
        with pending:
            pending.wait_for(lambda: helping[0] == 0)
        if failed:
            raise failed[0]
        return out

    def _helper_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._helpers, thread_name_prefix="exact-search")
            return self._pool

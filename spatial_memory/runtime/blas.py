"""One BLAS thread for the exact search's matrix-vector product.

numpy's OpenBLAS splits a product over 10,000 x 384 float32 values across every core. On a host
whose cores are busy, the split waits for a core: measured on 2 shared cores under load, the
product took 8-16 ms (p50) on 2 threads and 0.3-1.1 ms on one; on an idle host, 0.19 ms on two and
0.26 ms on one. Each output is the same dot product either way (bit for bit), only the split changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)


class OneBlasThread:
    """`with one_thread():` runs BLAS on one thread in the block, process-wide (OpenBLAS has one
    setting); the threads come back when the last block of this instance ends. Without threadpoolctl
    or a BLAS it knows, a no-op."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._saved: list[int] = []
        self._libs: list[Any] | None = None

    def _controllers(self) -> list[Any]:  # under self._lock
        if self._libs is None:
            try:
                from threadpoolctl import ThreadpoolController

                self._libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            except Exception:  # noqa: BLE001 - only a speed-up
                log.debug("threadpoolctl unavailable: BLAS keeps its threads", exc_info=True)
                self._libs = []
        return self._libs

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            libs = self._controllers()
            if libs and self._inside == 0:
                self._saved = [lib.get_num_threads() for lib in libs]
                for lib in libs:
                    lib.set_num_threads(1)
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if libs and self._inside == 0:
                    for lib, threads in zip(libs, self._saved, strict=True):
                        lib.set_num_threads(threads)

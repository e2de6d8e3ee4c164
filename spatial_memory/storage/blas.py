"""One BLAS thread for the exact search's matrix-vector product.

numpy's OpenBLAS splits a product over 10,000 x 384 float32 values across every core. On a host
whose cores are busy, the split waits for a core, and the product takes many times longer on two
threads than on one; on an idle host the two differ little (docs/BENCHMARKS.md, "Figures moved from
code comments"). Each output is the same dot product either way (bit for bit), only the split changes.
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
                # Imported here, by the first exact search: threadpoolctl loads every BLAS library
                # it finds, which keeps start-up fast only when it waits until then.
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

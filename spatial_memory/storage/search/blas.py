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

"""storage.blas.OneBlasThread: one BLAS thread inside its blocks (nested and on several threads), the
threads as they were after the last block, and the exact search's product unchanged bit for bit."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from spatial_memory.storage.search.blas import OneBlasThread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _threads() -> list[int]:
    return [lib.num_threads for lib in threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers]


def test_one_thread_inside_and_restored_after():
    before = _threads()
    one = OneBlasThread()
    with one():
        assert all(n == 1 for n in _threads())
        with one():
            assert all(n == 1 for n in _threads())
        assert all(n == 1 for n in _threads())
    assert _threads() == before


def test_concurrent_blocks_restore_the_threads():
    before = _threads()
    one = OneBlasThread()
    start = threading.Barrier(4)

    def work() -> None:
        start.wait()
        for _ in range(200):
            with one():
                pass

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert _threads() == before


def test_product_is_bit_identical_on_one_thread():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20_000, 384)).astype(np.float32)
    query = vectors[7].copy()
    full = vectors @ query
    with OneBlasThread()():
        single = vectors @ query
    assert np.array_equal(full, single)

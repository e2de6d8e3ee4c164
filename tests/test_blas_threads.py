"""storage.blas.OneBlasThread: one BLAS thread inside its blocks (nested and on several threads), the
threads as they were after the last block, and the exact search's product unchanged bit for bit."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from spatial_memory.storage.search.blas import SHARE_ROWS, OneBlasThread, SplitProduct

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


@pytest.mark.parametrize("rows", [1, 100, 4095, 4096, 10_001, 30_000])
@pytest.mark.parametrize("helpers", [0, 1, 3])
def test_split_product_is_the_product_bit_for_bit(rows, helpers):
    rng = np.random.default_rng(rows)
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    vector = rng.standard_normal(384).astype(np.float32)
    with OneBlasThread()():
        assert np.array_equal(SplitProduct(helpers)(matrix, vector), matrix @ vector)


def test_split_product_does_not_wait_for_a_helper_that_never_runs():
    # The helper's only thread is held by other work: the caller takes every share itself.
    product = SplitProduct(1)
    matrix = np.ones((8 * SHARE_ROWS, 16), dtype=np.float32)
    vector = np.arange(16, dtype=np.float32)
    expected = matrix @ vector
    assert np.array_equal(product(matrix, vector), expected)  # the helper thread exists now
    release = threading.Event()
    blocker = product._helper_pool().submit(release.wait, 30)
    try:
        done = threading.Event()
        found: list[np.ndarray] = []
        worker = threading.Thread(target=lambda: (found.append(product(matrix, vector)), done.set()))
        worker.start()
        assert done.wait(10), "the product waited for a helper that was busy elsewhere"
        assert np.array_equal(found[0], expected)
    finally:
        release.set()
        blocker.result(10)
    assert np.array_equal(product(matrix, vector), expected)  # the helper's late claims found nothing left

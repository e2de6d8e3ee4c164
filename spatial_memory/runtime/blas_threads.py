"""One BLAS thread in a server process, set before numpy loads.

numpy's BLAS splits any product of more than a few thousand values across every core, then keeps
its threads spinning for a while after it. A server answering one request at a time on a laptop's
or a small VM's cores loses by it: waking the BLAS threads for a recall's small products (its
ranking's hundred-odd candidates) takes longer than the products, and the spinning threads take the
core the query's model call and keyword search run on (docs/BENCHMARKS.md, 45). The one large product
a request makes, the exact search's, is shared out by storage/search/blas.py itself. A value the
user set is kept.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

# OpenBLAS (numpy's wheels on Linux and Windows), MKL (conda), Accelerate (numpy's macOS wheels).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def one_blas_thread() -> None:
    """Call before numpy is imported: each BLAS reads its variable once, when it loads."""
    if "numpy" in sys.modules:
        log.debug("numpy is loaded already: its BLAS keeps the threads it started with")
        return
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")

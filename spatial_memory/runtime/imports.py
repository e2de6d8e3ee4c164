"""The heavy modules (numpy, pyarrow, LanceDB) imported once, one thread at a time."""

from __future__ import annotations

import threading

from ..storage.table.lancedb_import import prepare_lancedb_import

_heavy_imported = False
_heavy_lock = threading.RLock()


def import_heavy_modules() -> None:
    """Import numpy, pyarrow and LanceDB once, in one thread at a time, before any thread uses them.

    Two threads importing pyarrow at once (the warm-up opening the store while a tool call
    imports pyarrow.compute) can deadlock on the package's and its C extension's import locks;
    Python breaks the deadlock by handing one thread the half-initialized module: "cannot
    import name 'BuildInfo' from partially initialized module 'pyarrow.lib'" (seen on a fresh
    install, where nothing is byte-compiled yet and imports are slow). Every tool call and the
    store's opening come through here first; after the first time it is one flag check."""
    global _heavy_imported
    if _heavy_imported:
        return
    with _heavy_lock:
        if _heavy_imported:
            return
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401

        prepare_lancedb_import()
        import lancedb  # noqa: F401

        _heavy_imported = True

"""Importing LanceDB without the REST namespace client it never uses here.

`import lancedb` imports `lance_namespace`, which imports the models of the generated
`lance_namespace_urllib3_client` package, whose `__init__` also imports every REST API
class of a remote LanceDB namespace service: most of the import's time (docs/BENCHMARKS.md),
before the first memory can be stored. Here the package's `__init__` runs on the first use of
one of its own attributes instead of at import; its submodules (the models lance_namespace
needs) import as usual. Nothing changes for code that uses the client.

Every module of storage/ imports lancedb inside the functions that use it, after
`connection.connect` has called `prepare_lancedb_import`: importing storage stays fast, and
lancedb is never imported before its REST client is deferred.
"""

from __future__ import annotations

import importlib.util
import logging
import sys

log = logging.getLogger(__name__)

REST_CLIENT_PACKAGE = "lance_namespace_urllib3_client"


def defer_package_init(name: str) -> bool:
    """Register package `name` with its `__init__` not yet run; it runs on first attribute use.
    Returns whether the package was deferred (False when already imported or not installed)."""
    if name in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attribute: str):  # PEP 562: called only for attributes not yet defined
        module.__dict__.pop("__getattr__", None)
        loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules[name] = module
    return True


def prepare_lancedb_import() -> None:
    try:
        defer_package_init(REST_CLIENT_PACKAGE)
    except Exception:  # noqa: BLE001 - an ordinary (slower) import is always fine
        log.debug("could not defer %s", REST_CLIENT_PACKAGE, exc_info=True)

"""LanceDB imports without its REST namespace client, which still loads when used."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, tempfile
    from spatial_memory.storage.store import MemoryStore
    from spatial_memory.records import MemoryRecord, new_id
    import numpy as np

    from pathlib import Path
    store = MemoryStore(Path(tempfile.mkdtemp()), "m", 4)
    store.add([MemoryRecord(id=new_id(), content="x", vector=np.ones(4, np.float32) / 2)])
    assert store.count() == 1
    assert "lance_namespace_urllib3_client.api" not in sys.modules, "REST client imported"

    import lance_namespace_urllib3_client as client  # first use runs the package's __init__
    assert client.ApiClient is not None
    assert "lance_namespace_urllib3_client.api" in sys.modules
    print("ok")
    """
)


def test_lancedb_imports_without_its_rest_client_until_used(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_deferring_an_imported_or_missing_package_does_nothing():
    from spatial_memory.storage.table.lancedb_import import defer_package_init

    assert defer_package_init("json") is False
    assert defer_package_init("no_such_package_here_at_all") is False


@pytest.mark.anyio
async def test_tool_calls_import_the_heavy_modules_before_running(client, monkeypatch):
    """Two threads importing pyarrow at once can leave one with a half-initialized module
    (seen on a fresh install: the warm-up opening the store while `stats` imported
    pyarrow.compute); every tool call first goes through the one-at-a-time import."""
    import threading

    from spatial_memory.services.namespaces import NamespaceService
    from spatial_memory.tools import calls

    order: list[tuple[str, str]] = []
    original = NamespaceService.stats
    monkeypatch.setattr(
        calls, "import_heavy_modules", lambda: order.append(("imports", threading.current_thread().name))
    )
    monkeypatch.setattr(
        NamespaceService, "stats", lambda self, **kw: order.append(("tool", "")) or original(self, **kw)
    )
    result = await client.call_tool("stats", {})
    assert not result.is_error
    assert [step for step, _ in order] == ["imports", "tool"]
    assert order[0][1] != threading.current_thread().name  # in the worker thread, not on the event loop

"""The package's import graph, counting imports inside functions (tests/import_graph.py): storage/
and runtime/ are in no import cycle, and storage imports nothing from the floors above it."""

from __future__ import annotations

from .import_graph import cycles, graph

ABOVE_STORAGE = ("runtime", "services", "tools", "server", "auth", "capture", "portability", "text")


def _floor(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_storage_and_runtime_are_in_no_import_cycle():
    edges = graph()
    assert len(edges) > 100 and sum(map(len, edges.values())) > 300  # the whole package was read
    caught = [group for group in cycles(edges) if any(_floor(m) in ("storage", "runtime") for m in group)]
    assert caught == []


def test_storage_imports_nothing_from_the_floors_above_it():
    upward = {
        module: sorted(t for t in targets if _floor(t) in ABOVE_STORAGE)
        for module, targets in graph().items()
        if _floor(module) == "storage"
    }
    assert {module: targets for module, targets in upward.items() if targets} == {}


def test_the_graph_sees_imports_inside_functions(tmp_path):
    package = tmp_path / "spatial_memory"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "x.py").write_text("def f():\n    from .y import g\n")
    (package / "a" / "y.py").write_text("from . import x\n")
    assert cycles(graph(package)) == [["spatial_memory.a.x", "spatial_memory.a.y"]]

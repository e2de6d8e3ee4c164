"""The package's import graph: no cycle and no import that runs up a layer (docs/ARCHITECTURE.md).

Every module is parsed with `ast`, and every import counts: a function-local import is as much an
arrow as one at the top of a module (it only runs later), and so is one under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spatial_memory"

# Layers from the bottom up (docs/ARCHITECTURE.md, "Layers"): a module may import its own unit and
# units of strictly lower layers, nothing else. A unit is a package, a module, or a module of a
# package whose parts live on different floors (the longest matching prefix names a module's unit).
LAYERS: tuple[tuple[str, ...], ...] = (
    # pure: numpy and the standard library only; the lancedb import without its REST client, and
    # the exact search's one BLAS thread (storage's primitives: they import nothing of ours)
    ("algorithms", "errors", "limits", "tool_profiles", "storage.lancedb_import", "storage.blas", ""),
    # pure text rules; process primitives: heavy imports, the heap, exiting, cancellation; the atlas's
    # name and its page (static files read as text)
    (
        "text",
        "runtime.imports",
        "runtime.heap",
        "runtime.shutdown",
        "transport.cancellation",
        "transport.progress",
        "atlas",
        "atlas.page",
    ),
    ("config",),
    # docs/SETTINGS.md, generated from config.py's field descriptions
    ("settings_doc",),
    # the opening answers and the stdio pipes; the models
    ("transport", "embeddings", "storage.filters"),
    # a principal's namespaces, as filters (the confined store applies them)
    ("auth.scope",),
    ("storage",),
    ("validation", "runtime", "procedures"),
    ("portability", "auth"),
    ("services",),
    # every service wired once: what the server and capture share
    ("app",),
    # the atlas page's operations: service calls on the App it is handed
    ("capture", "atlas.api"),
    # quality measurements the benchmarks and tests share (the server never imports them)
    ("tools", "evaluation"),
    # the atlas's web servers: the page and its operations, run as the tools run
    ("atlas.server",),
    ("server",),
    ("cli",),
    ("__main__",),
)

# Units that may import nothing of ours at all (the root package is only its version string).
LEAVES = {"algorithms", "errors", "limits", "tool_profiles", "storage.lancedb_import", "storage.blas", ""}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours `name` imports anywhere in its text (top level, functions, TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from . import x` imports the module x when there is one, else a name of the package
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            candidates = submodules or [target]
        else:
            continue
        for candidate in candidates:
            # `import a.b.c` also runs a and a.b: only the deepest of ours counts as the arrow
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate in known and candidate != name:
                found.add(candidate)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def unit(module: str) -> str:
    relative = module.removeprefix("spatial_memory").removeprefix(".")
    names = {name for layer in LAYERS for name in layer}
    while relative not in names:
        if not relative:
            return ""
        relative = relative.rpartition(".")[0]
    return relative


def layer(unit_name: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit_name in layer)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    """A new package or top-level module must be placed in LAYERS (and in docs/ARCHITECTURE.md)."""
    names = {name for layer in LAYERS for name in layer}
    unplaced = sorted(
        module
        for module in modules()
        if module.removeprefix("spatial_memory").removeprefix(".").split(".")[0] not in names
        and unit(module) == ""
        and module != "spatial_memory"
    )
    assert not unplaced, f"modules outside every layer of LAYERS: {unplaced}"


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles (function-local imports count):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def test_no_import_runs_up_a_layer():
    upward = []
    for source, targets in sorted(graph().items()):
        source_unit = unit(source)
        for target in sorted(targets):
            target_unit = unit(target)
            if target_unit == source_unit and source_unit not in LEAVES | {""}:
                continue
            if source_unit in LEAVES and target_unit == source_unit:
                continue
            if source_unit in LEAVES or layer(target_unit) >= layer(source_unit):
                upward.append(f"{source} -> {target}  ({source_unit or 'root'} -> {target_unit or 'root'})")
    assert not upward, "imports that run up (or across) a layer:\n" + "\n".join(upward)


def uncommented_local_imports(path: Path) -> list[int]:
    """Lines of function-local imports with no comment saying why: neither on the line nor on the line
    above its block of imports."""
    lines = path.read_text().split("\n")
    found = []
    for function in ast.walk(ast.parse("\n".join(lines), str(path))):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or "#" in lines[node.lineno - 1]:
                continue
            above = node.lineno - 2
            while above >= 0 and (not lines[above].strip() or lines[above].lstrip().startswith(("import ", "from "))):
                above -= 1
            if above < 0 or not lines[above].lstrip().startswith("#"):
                found.append(node.lineno)
    return sorted(set(found))


def test_every_function_local_import_says_why():
    """An import inside a function is there to keep start-up fast (or for an optional or platform
    module), and a comment on it or above its block says so; every other import goes at the top."""
    missing = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in uncommented_local_imports(path)
    ]
    assert not missing, "function-local imports without a comment saying why:\n" + "\n".join(missing)


def test_tests_do_not_import_the_benchmarks():
    """What tests and benchmarks share lives in the package (spatial_memory/evaluation) or tests/."""
    found = []
    for path in sorted((PACKAGE.parent / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [f"{path.name}: {name}" for name in names if name.split(".")[0] == "benchmarks"]
    assert not found, found


def test_the_check_sees_every_kind_of_import(tmp_path):
    """The check itself: function-local, TYPE_CHECKING and `from . import x` imports are arrows."""
    source = tmp_path / "b.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .c import C\n"
        "def f():\n    from . import d\n    import spatial_memory.e.g\n"
    )
    known = {
        name: tmp_path
        for name in ("spatial_memory.a.b", "spatial_memory.a.c", "spatial_memory.a.d", "spatial_memory.e")
    }
    found = imports("spatial_memory.a.b", source, known)
    assert found == {"spatial_memory.a.c", "spatial_memory.a.d", "spatial_memory.e"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert unit("spatial_memory.runtime.imports") == "runtime.imports"
    assert unit("spatial_memory.runtime.resources") == "runtime"
    assert layer(unit("spatial_memory.services.search")) > layer(unit("spatial_memory.storage.store"))

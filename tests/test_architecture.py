"""The package's import graph: no cycle and no import that runs up a layer (docs/ARCHITECTURE.md).

Every module is parsed with `ast`, and every import counts: a function-local import is as much an
arrow as one at the top of a module (it only runs later), and so is one under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spatial_memory"
DOC = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
BEGIN = "<!-- layers: generated from tests/test_architecture.py's FLOORS by `python -m tests.test_architecture` -->"
END = "<!-- layers: end -->"

# Layers from the bottom up, each with what it is (docs/ARCHITECTURE.md, "Layers", is generated from
# this: `python -m tests.test_architecture`): a module may import its own unit and units of strictly
# lower layers, nothing else. A unit is a package, a module, or a module of a package whose parts
# live on different floors (the longest matching prefix names a module's unit).
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "pure: numpy and the standard library only; storage's primitives, lancedb without its REST client "
        "and the exact search's one BLAS thread; the domain model (records.py); the package's version (import nothing of ours)",
        (
            "algorithms",
            "records",
            "errors",
            "limits",
            "tool_profiles",
            "storage.table.lancedb_import",
            "storage.search.blas",
            "",
        ),
    ),
    (
        "pure text rules; the process primitives: heavy imports, the heap, exiting, a request's cancellation "
        "and progress",
        ("text", "runtime.imports", "runtime.heap", "runtime.shutdown", "transport.cancellation", "transport.progress"),
    ),
    ("the settings", ("config",)),
    ("docs/SETTINGS.md, generated from config.py's field descriptions", ("settings_doc",)),
    (
        "the opening answers and the stdio pipes; the models; filters from typed values",
        ("transport", "embeddings", "storage.filters"),
    ),
    ("a principal's namespaces, as filters (the confined store applies them)", ("auth.scope",)),
    ("everything that talks to LanceDB", ("storage",)),
    (
        "checks on values about to be stored; the process's resources (the store, the model, upkeep); "
        "a procedure in a memory and its SKILL.md",
        ("validation", "runtime", "procedures"),
    ),
    ("export and import files; a team server's authorization", ("portability", "auth")),
    ("the operations, one service per job", ("services",)),
    ("every service wired once: what the server, capture and the atlas share", ("app",)),
    ("client hooks, their spool and the ingester", ("capture",)),
    (
        "the tools; quality measurements the benchmarks and tests share (the server never imports them)",
        ("tools", "evaluation"),
    ),
    ("the memory's map for people: its page, its operations and web servers, run as the tools run", ("atlas",)),
    ("the MCP server: wires the App, the tools, resources, prompts and transports", ("server",)),
    ("the command line", ("cli",)),
    ("`python -m spatial_memory`", ("__main__",)),
)
LAYERS: tuple[tuple[str, ...], ...] = tuple(units for _, units in FLOORS)

# Units that may import nothing of ours at all: the bottom floor (the root package is only its version string).
LEAVES = set(FLOORS[0][1])


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


# ---- docs/ARCHITECTURE.md: its layers generated from FLOORS, its rooms checked against the package ----


def room(unit_name: str) -> str:
    """How the docs name a unit: `storage/` for a package, `storage/search/blas.py` for a module."""
    if not unit_name:
        return "`__init__.py` (the version)"
    path = PACKAGE.joinpath(*unit_name.split("."))
    return f"`{path.relative_to(PACKAGE)}/`" if path.is_dir() else f"`{path.relative_to(PACKAGE)}.py`"


def layers_markdown() -> str:
    """The numbered list of docs/ARCHITECTURE.md's layers, bottom first."""
    items = []
    for number, (note, units) in enumerate(FLOORS, 1):
        text = f"{number}. {', '.join(room(u) for u in units)}: {note}"
        items.append(textwrap.fill(text, 100, subsequent_indent=" " * (len(str(number)) + 2), break_on_hyphens=False))
    return "\n".join(items)


def doc_with_layers(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{layers_markdown()}\n{END}{rest.split(END, 1)[1]}"


def test_the_architecture_doc_lists_these_layers():
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"docs/ARCHITECTURE.md lost its generated layers ({BEGIN})"
    assert doc_with_layers(text) == text, "docs/ARCHITECTURE.md's layers are stale: python -m tests.test_architecture"


def rooms_block() -> str:
    return DOC.read_text().split("## Rooms", 1)[1].split("```", 2)[1]


def test_the_architecture_doc_names_every_room():
    """Every package is a folder of the rooms tree, every module is named in it, and every file it
    names exists: a new module is placed there, a moved or removed one leaves it."""
    block = rooms_block()
    folders = {line.strip().split()[0] for line in block.splitlines() if line.strip().split()[:1] != []}
    files = {path.name for path in PACKAGE.rglob("*.py")}
    packages = sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists())
    unnamed = [f"{p.relative_to(PACKAGE)}/" for p in packages if f"{p.name}/" not in folders and p != PACKAGE]
    unnamed += [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" and not re.search(rf"(?<![\w.]){re.escape(path.name)}\b", block)
    ]
    assert not unnamed, f"not in docs/ARCHITECTURE.md's rooms: {unnamed}"
    stale = sorted({name for name in re.findall(r"\w+\.py\b", block) if name not in files})
    assert not stale, f"docs/ARCHITECTURE.md's rooms name files that do not exist: {stale}"


if __name__ == "__main__":
    DOC.write_text(doc_with_layers(DOC.read_text()))
    sys.stdout.write(f"wrote {DOC}\n")

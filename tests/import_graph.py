"""The package's import graph, function-local imports included, and the cycles in it.

`python -m tests.import_graph` prints every cycle (each strongly connected group of modules, with
one cycle through it); `--no-type-checking` leaves out imports under `if TYPE_CHECKING:`, which
never run. tests/test_import_graph.py keeps storage/ and runtime/ out of every cycle.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "spatial_memory"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of the module, at any depth (inside functions too)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def graph(root: Path = ROOT, *, type_checking: bool = True) -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    known = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in _imports(ast.parse(path.read_text(), str(path)), type_checking=type_checking):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _base(name, path, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                while target and target not in known:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE) and target != name:
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(groups)


def one_cycle(edges: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, as the modules along it."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    return group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-type-checking", action="store_true", help="leave out `if TYPE_CHECKING:` imports")
    parser.add_argument("--root", type=Path, default=ROOT, help="the package's directory")
    args = parser.parse_args()
    edges = graph(args.root, type_checking=not args.no_type_checking)
    found = cycles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(found)} cycle(s)")
    for group in found:
        print(f"- {len(group)} modules: " + " -> ".join(one_cycle(edges, group)))


if __name__ == "__main__":
    main()

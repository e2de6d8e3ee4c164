"""Spreading activation over a memory graph: from seed memories along weighted edges, hop by hop.

Pure Python over small inputs (a recall's top hits and their neighbours). The caller supplies the
edges of the nodes reached so far; each hop multiplies the activation by the edge's weight and by
`decay`, sums what reaches a node from several sources (capped at 1), and remembers the strongest
path that reached it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

# An edge: (from, to, weight in 0-1, kind) where kind names how they are linked, e.g.
# "relation:caused", "co_recall", "conversation".
Edge = tuple[str, str, float, str]


@dataclass
class Activated:
    activation: float
    path: list[tuple[str, str]] = field(default_factory=list)  # (from id, kind) steps, seed first
    best: float = 0.0  # the strongest single contribution (whose path is kept)


def spread(
    seeds: Mapping[str, float],
    edges_of: Callable[[list[str]], Iterable[Edge]],
    *,
    hops: int = 2,
    decay: float = 0.5,
    floor: float = 0.01,
) -> dict[str, Activated]:
    """Activation of every node reached from the seeds (seeds left out), strongest first.

    A node's activation is the sum over the paths reaching it of seed activation x edge weights x
    decay per hop, capped at 1.0; contributions under `floor` are not followed further."""
    reached: dict[str, Activated] = {}
    frontier: dict[str, tuple[float, list[tuple[str, str]]]] = {s: (a, []) for s, a in seeds.items() if a > 0}
    for _ in range(max(hops, 0)):
        if not frontier:
            break
        incoming: dict[str, tuple[float, float, list[tuple[str, str]]]] = {}
        for source, target, weight, kind in edges_of(list(frontier)):
            if source not in frontier or target in seeds or target == source:
                continue
            level, path = frontier[source]
            amount = level * max(0.0, min(1.0, weight)) * decay
            if amount < floor:
                continue
            total, best, best_path = incoming.get(target, (0.0, 0.0, []))
            if amount > best:
                best, best_path = amount, [*path, (source, kind)]
            incoming[target] = (total + amount, best, best_path)
        frontier = {}
        for target, (amount, best, path) in incoming.items():
            node = reached.get(target)
            if node is None:
                reached[target] = Activated(min(1.0, amount), path, best)
                frontier[target] = (min(1.0, amount), path)
            else:
                node.activation = min(1.0, node.activation + amount)
                if best > node.best:
                    node.best, node.path = best, path
    return dict(sorted(reached.items(), key=lambda item: -item[1].activation))

"""Text renderings of a memory map: Mermaid flowcharts and self-contained SVG."""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from .results import VisualCluster, VisualEdge, VisualNode

PALETTE = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6",
    "#d37295", "#8cd17d", "#499894", "#f1ce63", "#a0cbe8",
]  # fmt: skip
NOISE_COLOR = "#9aa0a6"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def cluster_color(cluster: int) -> str:
    return NOISE_COLOR if cluster < 0 else PALETTE[cluster % len(PALETTE)]


def truncate(text: str, limit: int) -> str:
    """The text on one line, cut to `limit` characters at a word boundary (an ellipsis marks the
    cut); a single word longer than half the limit is cut inside it rather than dropped."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ") if flat[limit - 1] != " " else len(cut)
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _xml_text(text: str) -> str:
    # XML 1.0 forbids most control characters even when escaped.
    return escape(_CONTROL.sub(" ", text))


def _mermaid_label(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes for the characters its parser treats specially."""
    text = _CONTROL.sub(" ", " ".join(text.split()))
    replacements = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;", "&": "#38;"}
    return "".join(replacements.get(ch, ch) for ch in text)


def mermaid(
    nodes: Sequence[VisualNode],
    edges: Sequence[VisualEdge],
    clusters: Sequence[VisualCluster],
    *,
    label_chars: int = 40,
) -> str:
    ids = {node.id: f"m{i}" for i, node in enumerate(nodes)}
    lines = ["flowchart LR"]
    names = {c.id: c.label for c in clusters}
    for cluster in [*(c.id for c in clusters), -1]:
        members = [n for n in nodes if n.cluster == cluster]
        if not members:
            continue
        indent = "    "
        if cluster >= 0:
            lines.append(f'    subgraph c{cluster}["{_mermaid_label(names.get(cluster, f"cluster {cluster}"))}"]')
            indent = "        "
        for node in members:
            lines.append(f'{indent}{ids[node.id]}["{_mermaid_label(truncate(node.label, label_chars))}"]')
        if cluster >= 0:
            lines.append("    end")
    for edge in edges:
        if edge.from_id in ids and edge.to_id in ids:
            lines.append(f"    {ids[edge.from_id]} ---|{edge.weight:.2f}| {ids[edge.to_id]}")
    for cluster in clusters:
        lines.append(f"    style c{cluster.id} fill:{cluster.color}22,stroke:{cluster.color}")
    highlighted = [ids[n.id] for n in nodes if n.highlighted]
    if highlighted:
        lines.append("    classDef highlight stroke:#d62728,stroke-width:3px")
        lines.append(f"    class {','.join(highlighted)} highlight")
    return "\n".join(lines) + "\n"


def _place_labels(
    nodes: Sequence[VisualNode],
    position: dict[str, tuple[float, float]],
    limit: int,
    *,
    right_edge: float,
    contents: dict[str, str] | None = None,
) -> list[tuple[float, float, str, str, str]]:
    """Greedy label placement: most important first, skipping any label that would overlap another.
    Each label comes with the full text its hover shows."""
    placed: list[tuple[float, float, float, float]] = []
    labels = []
    for node in sorted(nodes, key=lambda n: (not n.highlighted, -n.importance)):
        if len(labels) >= limit:
            break
        text = truncate(node.label, 28)
        x, y = position[node.id]
        width = 6.2 * len(text)
        # Right of the node, or left of it when it would leave the plot.
        left, anchor, tx = (x + 8, "start", x + 8) if x + 8 + width < right_edge else (x - 8 - width, "end", x - 8)
        box = (left - 2, y - 10, left + width + 2, y + 5)
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            continue
        placed.append(box)
        labels.append((tx, y + 4, anchor, text, (contents or {}).get(node.id, node.label)))
    return labels


def svg(
    nodes: Sequence[VisualNode],
    edges: Sequence[VisualEdge],
    clusters: Sequence[VisualCluster],
    *,
    width: int = 960,
    height: int = 720,
    max_labels: int = 40,
    contents: dict[str, str] | None = None,
) -> str:
    """A standalone SVG scatter plot: colour = cluster, radius = importance, tooltip = full content."""
    legend_width = 240
    pad = 40
    plot_w, plot_h = width - legend_width - 2 * pad, height - 2 * pad

    def sx(x: float) -> float:
        return pad + (x + 1.0) / 2.0 * plot_w

    def sy(y: float) -> float:
        return pad + (1.0 - (y + 1.0) / 2.0) * plot_h

    position = {n.id: (sx(n.x), sy(n.y)) for n in nodes}
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">',
        "<title>Memory map</title>",
        "<style>.label{font-size:11px;fill:#1f2933;paint-order:stroke;stroke:#ffffff;stroke-width:3px;"
        "stroke-linejoin:round}.legend{font-size:12px;fill:#1f2933}.node{stroke:#ffffff;stroke-width:1}"
        ".node:hover{stroke:#111111;stroke-width:2}.edge{stroke:#8a939b;stroke-opacity:.35}</style>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<rect x="{pad / 2}" y="{pad / 2}" width="{plot_w + pad}" height="{plot_h + pad}" fill="#f7f9fb" '
        'stroke="#d9dee3" rx="8"/>',
        '<g class="edges">',
    ]
    for edge in edges:
        if edge.from_id in position and edge.to_id in position:
            (x1, y1), (x2, y2) = position[edge.from_id], position[edge.to_id]
            parts.append(
                f'<line class="edge" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                f'stroke-width="{0.5 + 2 * max(edge.weight, 0):.2f}"/>'
            )
    parts.append("</g>")
    parts.append('<g class="nodes">')
    for node in sorted(nodes, key=lambda n: n.importance):
        x, y = position[node.id]
        radius = 3.0 + 7.0 * max(0.0, min(1.0, node.importance))
        tooltip = (contents or {}).get(node.id, node.label)
        tier = getattr(node, "tier", None)
        if tier:  # the memory's tier (services/tiers.py), shown and kept for styling
            tooltip = f"[{tier}] {tooltip}"
        ring = ' stroke="#d62728" stroke-width="3"' if node.highlighted else ""
        data = f" data-id={quoteattr(node.id)}" + (f" data-tier={quoteattr(tier)}" if tier else "")
        parts.append(
            f'<circle class="node" cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{cluster_color(node.cluster)}" '
            f'fill-opacity="0.85"{ring}{data}><title>{_xml_text(tooltip)}</title></circle>'
        )
    parts.append("</g>")
    parts.append('<g class="labels">')
    placed = _place_labels(nodes, position, max_labels, right_edge=pad + plot_w + pad / 2, contents=contents)
    for x, y, anchor, text, full in placed:
        parts.append(
            f'<text class="label" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{_xml_text(text)}'
            f"<title>{_xml_text(full)}</title></text>"
        )
    parts.append("</g>")
    legend_x = width - legend_width + 10
    parts.append('<g class="legend">')
    parts.append(f'<text class="legend" x="{legend_x}" y="{pad}" font-weight="bold">Regions</text>')
    entries = [(c.label, c.color, c.size) for c in clusters]
    noise = sum(1 for n in nodes if n.cluster < 0)
    if noise:
        entries.append(("unclustered", NOISE_COLOR, noise))
    for i, (label, color, size) in enumerate(entries[:24]):
        y = pad + 22 + i * 20
        parts.append(f'<circle cx="{legend_x + 6}" cy="{y - 4}" r="6" fill="{color}"/>')
        parts.append(
            f'<text class="legend" x="{legend_x + 18}" y="{y}">{_xml_text(truncate(label, 22))} ({size})'
            f"<title>{_xml_text(label)}</title></text>"
        )
    y = pad + 22 + min(len(entries), 24) * 20 + 16
    parts.append(f'<text class="legend" x="{legend_x}" y="{y}" fill="#5f6b76">size = importance</text>')
    parts.append("</g></svg>")
    return "\n".join(parts) + "\n"

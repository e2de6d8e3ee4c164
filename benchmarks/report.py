"""Render benchmarks/results/*.json as the "Latest results" section of docs/BENCHMARKS.md.

python -m benchmarks.report            # print the markdown
python -m benchmarks.report --write    # replace the section in docs/BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR, markdown_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"


def reference_figures(reference: dict[str, Any] | None) -> dict[str, str]:
    """The reference implementation's medians from benchmarks/reference.py's run (measured beside
    ours in that run, dated), keyed like the targets; empty without such a run."""
    if not reference:
        return {}
    date = reference["generated_at"][:10]
    rows = {r["metric"]: r for r in reference.get("summary", [])}

    def fig(metric: str, unit: str) -> str:
        value = rows.get(metric, {}).get("reference")
        return f"{value.split()[0]}{unit} ({date})" if value else ""

    return {
        "tools_list_s": fig("spawn_to_tools_list_s", " s"),
        "remember_batch_1000": fig("remember_batch_per_s", "/s"),
        "recall_1000": fig("recall_p50_ms", " ms p50"),
        "peak_rss": fig("peak_rss_after_visualize_mb", " MB after visualize at 1,000"),
    }


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _row(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    return next((r for r in rows if r.get("memories") == n), {})


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def targets(cold, ingest, latency, reference=None) -> list[dict[str, Any]]:
    ref = reference_figures(reference)
    out = []
    median = (cold or {}).get("median", {})
    if median:
        out.append(
            {
                "target": "`tools/list` within 1.0 s of spawn",
                "measured": f"{median['tools_list_s']:.2f} s",
                "verdict": _verdict(median["tools_list_s"] <= 1.0),
                "reference": ref.get("tools_list_s", ""),
            }
        )
        out.append(
            {
                "target": "first `remember` within 3 s of spawn",
                "measured": f"{median['first_remember_s']:.2f} s",
                "verdict": _verdict(median["first_remember_s"] <= 3.0),
                "reference": "",
            }
        )
    for n in (1000, 10000):
        row = _row((ingest or {}).get("rows", []), n)
        if row:
            ratio = row["remember_batch_per_s"] / row["model_raw_batched_per_s"]
            out.append(
                {
                    "target": f"remember_batch >= 85% of the model's raw throughput ({n:,})",
                    "measured": f"{row['remember_batch_per_s']}/s = {ratio:.0%} of {row['model_raw_batched_per_s']}/s",
                    "verdict": _verdict(ratio >= 0.85),
                    "reference": ref.get("remember_batch_1000", "") if n == 1000 else "",
                }
            )
    rows = (latency or {}).get("rows", [])
    for n, limit in ((1000, None), (10000, 15.0), (100000, None), (1000000, 40.0)):
        row = _row(rows, n)
        if not row:
            continue
        p50, p95 = row["recall_p50_ms"], row["recall_p95_ms"]
        label = f"recall p50 <= {limit:g} ms at {n:,}" if limit else f"recall at {n:,} (no target)"
        out.append(
            {
                "target": label + "; p95 <= 2 x p50",
                "measured": f"p50 {p50} ms, p95 {p95} ms",
                "verdict": _verdict((limit is None or p50 <= limit) and p95 <= 2 * p50),
                "reference": ref.get("recall_1000", "") if n == 1000 else "",
            }
        )
    for row in rows:
        for kind, queries in (("nearby", "stored memories"), ("text", "free-text queries")):
            value = row.get(f"ann_recall_at_10_{kind}")
            if value is not None:
                out.append(
                    {
                        "target": f"ANN recall@10 vs exact >= 0.95 at {row['memories']:,} ({queries})",
                        "measured": f"{value:.3f}",
                        "verdict": _verdict(value >= 0.95),
                        "reference": "",
                    }
                )
    rss = [r.get("peak_rss_mb") for r in ((ingest or {}).get("rows", []) + rows) if r.get("memories") == 10000]
    rss = [r for r in rss if r]
    if rss:
        out.append(
            {
                "target": "peak RSS < 600 MB at 10,000 memories",
                "measured": f"{max(rss)} MB (worst of ingest and query runs)",
                "verdict": _verdict(max(rss) < 600),
                "reference": ref.get("peak_rss", ""),
            }
        )
    return out


def render() -> str:
    cold, ingest, latency, spatial, quality, reference = (
        _load(n) for n in ("cold_start", "ingest", "latency", "spatial", "quality", "reference")
    )
    lines: list[str] = []
    stamps = sorted({d["generated_at"] for d in (cold, ingest, latency, spatial, quality) if d})
    machine = next((d["machine"] for d in (cold, ingest, latency, spatial, quality) if d), {})
    if stamps:
        lines.append(
            f"Generated by `python -m benchmarks.report` from the run of {stamps[-1]} "
            f"({machine.get('cpus')} cores, {machine.get('memory_mb')} MB, Python {machine.get('python')})."
        )
        lines.append("")
    lines += ["### Targets", "", *markdown_table(targets(cold, ingest, latency, reference)), ""]
    if reference:
        lines += [
            f"The reference column is spatial-memory-mcp {reference['reference_version']} measured beside this "
            f"server on {reference['generated_at'][:10]} (`python -m benchmarks.reference`), not a published figure.",
            "",
        ]
    if cold:
        runs = [*cold["runs"], {"run": "median of warm runs", **cold["median"]}]
        lines += ["### Cold start (seconds from spawn)", "", *markdown_table(runs), ""]
    if ingest:
        lines += ["### Ingest (memories per second)", "", *markdown_table(ingest["rows"]), ""]
    if latency:
        lines += ["### Query latency through the protocol (ms)", "", *markdown_table(latency["rows"]), ""]
    if spatial:
        lines += [
            "### regions / visualize (seconds; first call in a fresh server, then repeated)",
            "",
            *markdown_table(spatial["rows"]),
            "",
        ]
    if reference:
        lines += [
            f"### Beside spatial-memory-mcp {reference['reference_version']}, one run "
            f"({reference['generated_at'][:10]}, N = {reference['n']:,})",
            "",
            "Both servers (and `before`, the previous build, when the run had one) driven by the same MCP client, "
            f"rounds interleaved; medians with (min-max) over {len({r['round'] for r in reference['rounds']})} rounds. "
            "first_visualize: the first call of a fresh process on a filled store.",
            "",
            *markdown_table(reference["summary"]),
            "",
        ]
    if quality:
        held = ", ".join(quality.get("held_out", []))
        lines += [
            "### Retrieval quality, LoCoMo dev (5 conversations, each stored with and without its structure)",
            "",
            f"Out of sample: the held-out rows ({held}) chose none of the ranking's defaults; the tuning-set rows "
            "did and are in sample (never quote them as results). Leave-one-conversation-out figures over all "
            "five: benchmarks/ranking_study.py.",
            "",
            *markdown_table(quality["rows"]),
            "",
        ]
        exact = quality.get("exactness")
        if exact:
            lines += [
                f"recall by meaning only (hybrid_alpha=1.0): top 10 equals brute-force MiniLM cosine top 10 for "
                f"{exact['top10_identical_to_brute_force']:.1%} of {exact['queries']} queries.",
                "",
            ]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="replace the results section of docs/BENCHMARKS.md")
    args = parser.parse_args()
    text = render()
    if not args.write:
        print(text)
        return
    doc = DOC.read_text()
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{text}{END}{tail}")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()

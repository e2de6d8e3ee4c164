"""Near-copy decisions on each path of the bundled model: do they match fp32's?

    python -m benchmarks.near_copies                      # fp32 against int8-row
    python -m benchmarks.near_copies --paths fp32,int8-row,int8

A corpus of pairs written for this check (not LoCoMo; spatial_memory/evaluation/near_copies.py):
developer notes and conversation lines beside light rewordings of themselves (near-copies) and
near-misses (another number, tool or person, a negation, the same topic said otherwise). Per path:

- every pair's cosine, the texts embedded in one batch as ingest does; the decisions at each
  threshold a tool uses by default (THRESHOLDS), counted against fp32's: a flip is a pair on one
  side for fp32 and the other for the path;
- through a spawned server on that path: each pair in its own namespace by `remember_batch`,
  `consolidate` (dry run, default threshold), then `extract` of the second text (default
  threshold): whether a group is found, whether the text is deduplicated; compared with fp32's.
  And remember's report (on_duplicate=store) of the second text after the first, in a namespace
  of their own: near-duplicate (decided as fp32 would), likely contradiction (a report on the
  path's own cosines), or neither.

Results: benchmarks/results/near_copies.json.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from spatial_memory.evaluation.near_copies import THRESHOLDS, pairs

from .common import print_table, write_json
from .reference import call, host_load, ours_command, spawn


def decisions(cosines: np.ndarray) -> dict[str, np.ndarray]:
    return {name: cosines >= t for name, t in THRESHOLDS.items()}


def vector_decisions(paths: tuple[str, ...], models: Path) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    from spatial_memory.embeddings import EmbeddingRouter

    corpus = pairs()
    texts = list(dict.fromkeys(t for a, b, _ in corpus for t in (a, b)))
    index = {t: i for i, t in enumerate(texts)}
    cosines = {}
    for path in paths:
        vectors = EmbeddingRouter(precision=path, cache_dir=models).embed_documents(texts)
        cosines[path] = np.array([vectors[index[a]] @ vectors[index[b]] for a, b, _ in corpus])
    base = decisions(cosines["fp32"])
    rows = []
    for path in paths[1:]:
        mine = decisions(cosines[path])
        shift = np.abs(cosines[path] - cosines["fp32"])
        row: dict[str, Any] = {"path": path, "pairs": len(corpus), "max |cosine change|": round(float(shift.max()), 5)}
        for name, t in THRESHOLDS.items():
            flips = int((mine[name] != base[name]).sum())
            margin = float(np.abs(cosines["fp32"] - t).min())
            row[f"flips at {name} (closest fp32 pair)"] = f"{flips} ({margin:.4f} away)"
        rows.append(row)
    return rows, cosines


async def through_server(path: str, root: Path, notes: dict[str, str]) -> list[tuple[bool, int, str]]:
    """Per pair: consolidate found a group, extract's deduplicated count, and what remember (the
    default on_duplicate=store) reports the first text as to the second: duplicate, contradiction or ""."""
    store = root / f"store-{path}"
    store.mkdir(parents=True)
    argv, env = ours_command(store, root / "user-cache")
    env["SPATIAL_MEMORY_EMBEDDING_PRECISION"] = path
    corpus = pairs()
    out = []
    async with spawn(argv, env, root) as (client, _pid):
        batch = [{"content": t, "namespace": f"pair-{i}"} for i, (a, b, _) in enumerate(corpus) for t in (a, b)]
        for start in range(0, len(batch), 100):
            await call(client, "remember_batch", {"memories": batch[start : start + 100]})
        for i, (_a, b, _kind) in enumerate(corpus):
            merged = await call(client, "consolidate", {"namespace": f"pair-{i}", "dry_run": True})
            extracted = await call(client, "extract", {"text": b, "namespace": f"pair-{i}"})
            await call(client, "remember", {"content": _a, "namespace": f"remember-{i}"})
            told = await call(client, "remember", {"content": b, "namespace": f"remember-{i}"})
            relation = next((s["relation"] for s in told.get("similar_existing", [])), "")
            out.append((merged["groups_found"] > 0, extracted["deduplicated_count"], relation))
        health = await call(client, "health", {"verbose": True})
        notes[path] = next(c["message"] for c in health["checks"] if c["name"] == "model")
    return out


async def main_async(paths: tuple[str, ...]) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sm-near-"))
    rows, cosines = vector_decisions(paths, root / "models")
    print_table(f"Decisions at the default thresholds against fp32 (pairs; {host_load()})", rows)
    notes: dict[str, str] = {}
    served = {path: await through_server(path, root, notes) for path in paths}
    corpus = pairs()
    server_rows = []
    for path in paths[1:]:
        flips = [
            {"pair": i, "kind": corpus[i][2], "fp32": served["fp32"][i], path: served[path][i]}
            for i in range(len(corpus))
            if served["fp32"][i][:2] != served[path][i][:2]
        ]
        told = {
            kind: sum((served["fp32"][i][2] == kind) != (served[path][i][2] == kind) for i in range(len(corpus)))
            for kind in ("duplicate", "contradiction")
        }
        server_rows.append(
            {
                "path": path,
                "pairs": len(corpus),
                "consolidate groups (fp32 / path)": f"{sum(g for g, _, _ in served['fp32'])} / "
                f"{sum(g for g, _, _ in served[path])}",
                "extract deduplicated (fp32 / path)": f"{sum(d for _, d, _ in served['fp32'])} / "
                f"{sum(d for _, d, _ in served[path])}",
                "pairs decided differently": len(flips),
                "remember's reports told differently (duplicate / contradiction)": (
                    f"{told['duplicate']} / {told['contradiction']}"
                ),
                "which": "; ".join(f"{f['pair']} {f['kind']}" for f in flips) or "none",
                "the model's health": notes[path],
            }
        )
    print_table("consolidate, extract and remember through each path's server, default thresholds", server_rows)
    kinds = sorted({k for _, _, k in corpus})
    ranges = [
        {
            "kind": kind,
            **{
                f"{path} cosine min-max": (
                    f"{min(c for c, (_, _, k) in zip(cosines[path], corpus, strict=True) if k == kind):.3f}-"
                    f"{max(c for c, (_, _, k) in zip(cosines[path], corpus, strict=True) if k == kind):.3f}"
                )
                for path in paths
            },
        }
        for kind in kinds
    ]
    print_table("Cosine ranges of the corpus's pairs", ranges)
    return {"vectors": rows, "server": server_rows, "ranges": ranges, "host": host_load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="fp32,int8-row", help="comma-separated; fp32 first (the baseline)")
    paths = tuple(parser.parse_args().paths.split(","))
    if paths[0] != "fp32":
        parser.error("fp32 comes first: every figure is against it")
    write_json("near_copies", asyncio.run(main_async(paths)))


if __name__ == "__main__":
    main()

"""How far a pair's cosine on the int8-row path can be from its fp32 cosine: the band within which
a threshold decision is re-decided on fp32 vectors (spatial_memory/embeddings/decisions.py).

    python -m benchmarks.similarity_band

Pairs: every pair among the texts of benchmarks/near_copies.py's corpus (near-copies, near-misses,
neighbours), and every pair among 5,000 LoCoMo dev texts (turns as stored, questions, utterances
without their date), each text embedded once per path. Reported: the largest |cos_int8row -
cos_fp32| over all pairs, over the pairs whose fp32 cosine is within 0.1 of each default threshold,
and quantiles; then how many pairs of each set fall inside the band of each threshold (the share
of decisions that would ask for fp32 vectors, were every pair a decision).

The largest shift per 0.05 of fp32 cosine (both sets) is written to
spatial_memory/embeddings/int8_row_shift.json with --write: decisions.py's band at a threshold is
SAFETY times the largest shift measured within NEAR of it (a pair farther than NEAR from the
threshold cannot flip while every measured shift is below NEAR).

Results: benchmarks/results/similarity_band.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from spatial_memory.evaluation import locomo
from spatial_memory.evaluation.near_copies import THRESHOLDS, pairs

from .common import print_table, write_json
from .model_paths import dev_texts
from .reference import host_load

NEAR = 0.1  # pairs this close (fp32) to a threshold are the ones whose bound matters
BIN = 0.05
SHIFT_FILE = Path(__file__).resolve().parents[1] / "spatial_memory" / "embeddings" / "int8_row_shift.json"


def pair_shifts(fp32: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fp32 cosine, |int8-row cosine - fp32 cosine|) of every distinct pair, float64."""
    a = fp32.astype(np.float64) @ fp32.astype(np.float64).T
    b = row.astype(np.float64) @ row.astype(np.float64).T
    upper = np.triu_indices(len(fp32), 1)
    return a[upper], np.abs(b - a)[upper]


def summary(name: str, cos: np.ndarray, shift: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {"pairs": name, "count": int(cos.size), "max |shift|": round(float(shift.max()), 5)}
    out["p99.99"] = round(float(np.quantile(shift, 0.9999)), 5)
    out["p99"] = round(float(np.quantile(shift, 0.99)), 5)
    out["mean"] = round(float(shift.mean()), 5)
    for label, t in THRESHOLDS.items():
        near = np.abs(cos - t) <= NEAR
        out[f"max near {label}"] = round(float(shift[near].max()), 5) if near.any() else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=5000, help="LoCoMo dev texts (all their pairs)")
    parser.add_argument("--write", action="store_true", help=f"write the per-bin maxima to {SHIFT_FILE.name}")
    args = parser.parse_args()
    from spatial_memory.embeddings import EmbeddingRouter

    models = Path(tempfile.gettempdir()) / "sm-band-models"
    routers = {path: EmbeddingRouter(precision=path, cache_dir=models) for path in ("fp32", "int8-row")}
    corpus = list(dict.fromkeys(t for a, b, _ in pairs() for t in (a, b)))
    dev = dev_texts(locomo.load(), args.texts)
    rows, measured = [], []
    for name, texts in (("near-copy corpus", corpus), (f"LoCoMo dev ({len(dev):,} texts)", dev)):
        cos, shift = pair_shifts(*(routers[p].embed_documents(texts) for p in ("fp32", "int8-row")))
        rows.append(summary(name, cos, shift))
        measured.append((name, cos, shift))
    cos = np.concatenate([m[1] for m in measured])
    shift = np.concatenate([m[2] for m in measured])
    bins = np.floor(cos / BIN).astype(np.int64)
    maxima = {f"{b * BIN:.2f}": round(float(shift[bins == b].max()), 5) for b in np.unique(bins).tolist()}
    worst = float(shift.max())
    if worst >= NEAR:
        raise SystemExit(f"a shift of {worst:.4f} >= NEAR ({NEAR}): the band argument needs a wider NEAR")
    table = {"bin": BIN, "near": NEAR, "pairs": int(cos.size), "max_shift": maxima}
    if args.write:
        SHIFT_FILE.write_text(json.dumps(table, indent=1) + "\n")
    from spatial_memory.embeddings.decisions import band_at, load_shifts

    shifts = load_shifts() if not args.write else table
    counts = []
    for name, c, _ in measured:
        row: dict[str, Any] = {"pairs": name}
        for label, t in THRESHOLDS.items():
            inside = np.abs(c - t) < band_at(shifts, t)
            row[f"{label} (band {band_at(shifts, t):.3f})"] = f"{int(inside.sum()):,} ({inside.mean():.2%})"
        counts.append(row)
    print_table(f"|cos int8-row - cos fp32| over all pairs ({host_load()})", rows)
    print_table("Pairs within the band of each threshold (what a decision on each pair would re-decide)", counts)
    print(f"largest shift measured: {worst:.5f} (NEAR {NEAR})")
    write_json("similarity_band", {"shifts": rows, "in_band": counts, "table": table, "host": host_load()})


if __name__ == "__main__":
    main()

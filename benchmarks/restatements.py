"""Precision and recall of distill's grouping of restatements, out of sample, on the labelled set
(spatial_memory/evaluation/restatements.py scores it; tests/fixtures/restatements.json holds it).

    python -m benchmarks.restatements
"""

from __future__ import annotations

import os
import time

from benchmarks.common import print_table, write_json
from spatial_memory.evaluation.restatements import cross_validate


def main() -> None:
    from spatial_memory.embeddings import EmbeddingRouter

    model = EmbeddingRouter()
    started = time.perf_counter()
    result = cross_validate(model.embed_documents)
    seconds = time.perf_counter() - started
    print_table("tuned on one fold, scored on the other", result["held_out"])
    shipped = result["shipped"]
    print_table(
        f"the shipped figures ({shipped['figures']})",
        [*shipped["folds"], {"fold": "all", **shipped["all"]}],
    )
    print_table("the rule before (near copies), on the whole set", [result["near_copies_before"]])
    print(
        f"\nheld out: precision {result['held_out_precision']:.3f}, recall {result['held_out_recall']:.3f} "
        f"({result['groups']} groups, {result['texts']} texts, {result['negatives']} hard negatives; "
        f"{seconds:.1f} s, load {os.getloadavg()[0]:.2f})"
    )
    print(f"wrote {write_json('restatements', {**result, 'seconds': round(seconds, 1)})}")


if __name__ == "__main__":
    main()

"""Precision (and recall) of the procedures capture proposes, on labelled histories held apart from
the rules (spatial_memory/evaluation/procedure_capture.py scores them).

    python -m benchmarks.procedure_capture
"""

from __future__ import annotations

from benchmarks.common import print_table, write_json
from spatial_memory.evaluation.procedure_capture import score


def main() -> None:
    result = score()
    print_table("procedures proposed per labelled history", result["rows"])
    print(f"\nprecision {result['precision']:.3f}, recall {result['recall']:.3f} ({result['totals']})")
    print(f"wrote {write_json('procedure_capture', result)}")


if __name__ == "__main__":
    main()

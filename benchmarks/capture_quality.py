"""Capture quality on the labelled sample session (tests/fixtures/hooks/labelled_session.json).

The session is replayed as Claude Code would run its hooks: each user message fires
UserPromptSubmit and is appended to the transcript, each tool use fires PostToolUse, each
assistant turn ends with Stop (which reads the transcript since the last capture), and the
session ends with SessionEnd. Every captured memory is traced back to the unit it came from (by
the tool use id or transcript entry id it records, else by its text); a unit counts as captured
when at least one memory came from it. Precision and recall are over the units' labels, which
were written before the rules in spatial_memory/capture/selection.py.

    python -m benchmarks.capture_quality
"""

from __future__ import annotations

import json
import sys

from benchmarks.common import RESULTS_DIR
from spatial_memory.evaluation.capture_replay import HELD_OUT, SESSION, evaluate


def main() -> None:
    verbose = "-v" in sys.argv
    out = {}
    for name, path in (("claude-code (rules written with it in view)", SESSION), ("cursor (held out)", HELD_OUT)):
        result = evaluate(json.loads(path.read_text()))
        out[name] = result if verbose else {k: v for k, v in result.items() if k != "captured"}
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "capture_quality.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

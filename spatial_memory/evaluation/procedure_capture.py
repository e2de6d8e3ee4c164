"""Precision and recall of the procedures capture proposes, on labelled histories held apart from
the rules (tests/fixtures/hooks/labelled_procedures.json). Each history is replayed through the
hooks as Claude Code runs them (PostToolUse per tool use, SessionEnd per session) into its own
spool; a proposal is one distinct procedure fingerprint (seen again, it confirms the same
procedure), right when a label names it: a fix by its failing command, a routine by its commands."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ..capture import payloads
from ..capture.hook import capture
from ..capture.selection import _command_key
from ..capture.spool import Spool

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hooks" / "labelled_procedures.json"


def proposals(history: dict[str, Any], workdir: Path) -> dict[str, dict[str, Any]]:
    """The distinct procedures the hooks propose for a history, by fingerprint."""
    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    spool = Spool(workdir / "store")
    found: dict[str, dict[str, Any]] = {}
    for number, session in enumerate(history["sessions"]):
        common = {"session_id": f"session-{number}", "cwd": str(project)}

        def fire(name: str, common: dict[str, Any] = common, **fields: Any) -> None:
            event = payloads.parse(name, json.dumps({**common, "hook_event_name": name, **fields}))
            for record in capture(event, spool, "project-bench", write=False):
                if "procedure" in record:
                    found.setdefault(record["procedure"]["fingerprint"], record["procedure"])

        for step in session:
            if "bash" in step:
                response = {"stdout": step["out"] if step["ok"] else "", "stderr": "" if step["ok"] else step["out"]}
                if not step["ok"]:
                    response["exit_code"] = 1
                fire("PostToolUse", tool_name="Bash", tool_input={"command": step["bash"]}, tool_response=response)
            else:
                tool_input = {"file_path": str(project / step["edit"]), "old_string": "", "new_string": step["new"]}
                fire("PostToolUse", tool_name="Edit", tool_input=tool_input, tool_response={})
        fire("SessionEnd", reason="other")
    return found


def label_key(label: dict[str, Any]) -> str:
    if label["kind"] == "fix":
        return "fix:" + _command_key(label["command"])
    return "routine:" + " | ".join(_command_key(c) for c in label["commands"])


def proposal_key(fingerprint: str) -> str:
    if fingerprint.startswith("fix:"):
        return "fix:" + fingerprint[len("fix:") :].split(":", 1)[0]
    return fingerprint


def score() -> dict[str, Any]:
    fixture = json.loads(FIXTURE.read_text())
    rows = []
    totals = {"proposed": 0, "right": 0, "expected": 0, "found": 0}
    with tempfile.TemporaryDirectory() as root:
        for index, history in enumerate(fixture["histories"]):
            found = proposals(history, Path(root) / str(index))
            expected = {label_key(label) for label in history["expected"]}
            proposed = {proposal_key(f) for f in found}
            right = proposed & expected
            totals["proposed"] += len(proposed)
            totals["right"] += len(right)
            totals["expected"] += len(expected)
            totals["found"] += len(right)
            rows.append(
                {
                    "history": history["name"],
                    "expected": len(expected),
                    "proposed": len(proposed),
                    "right": len(right),
                    "wrong": sorted(proposed - expected),
                    "missed": sorted(expected - proposed),
                }
            )
    precision = totals["right"] / totals["proposed"] if totals["proposed"] else 1.0
    recall = totals["found"] / totals["expected"] if totals["expected"] else 1.0
    return {"rows": rows, "totals": totals, "precision": round(precision, 3), "recall": round(recall, 3)}

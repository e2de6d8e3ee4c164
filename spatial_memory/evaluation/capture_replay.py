"""Capture replayed on labelled sample sessions (tests/fixtures/hooks/): the sessions are run
through the client hooks as the client would fire them, and what is captured is scored against the
units' labels (benchmarks/capture_quality.py reports the figures; tests/test_capture_selection.py
holds floors). Needs a checkout: the sessions are test fixtures, not part of the package."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..capture import payloads
from ..capture.hook import capture
from ..capture.spool import Spool

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hooks"
SESSION = FIXTURES / "labelled_session.json"  # the rules were written with this one in view
HELD_OUT = FIXTURES / "labelled_session_cursor.json"  # labelled before the rules first ran on it


def replay(session: dict, workdir: Path) -> list[dict]:
    """The spool records the hooks write for the session (in order)."""
    if session.get("client") == "cursor":
        return replay_cursor(session, workdir)
    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    transcript = workdir / "transcript.jsonl"
    transcript.write_text("")
    spool = Spool(workdir / "store")
    sid = session["session_id"]
    common = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)}
    records: list[dict] = []

    def fire(name: str, **fields) -> None:
        event = payloads.parse(name, json.dumps({**common, "hook_event_name": name, **fields}))
        records.extend(capture(event, spool, "project-sample", write=False))

    previous = None
    for unit in session["units"]:
        if unit["kind"] == "message":
            if unit["speaker"] == "user" and previous == "assistant":
                fire("Stop", stop_hook_active=False)  # the assistant's turn ended
            entry = {"type": unit["speaker"], "uuid": unit["id"], "timestamp": "2026-11-20T10:00:00Z"}
            entry["message"] = {"role": unit["speaker"], "content": [{"type": "text", "text": unit["text"]}]}
            with transcript.open("a") as handle:
                handle.write(json.dumps(entry) + "\n")
            if unit["speaker"] == "user":
                fire("UserPromptSubmit", prompt=unit["text"])
            previous = unit["speaker"]
        else:
            text = json.dumps(unit["tool_input"]).replace("$CWD", str(project))
            response = json.loads(json.dumps(unit["tool_response"]).replace("$CWD", str(project)))
            fire(
                "PostToolUse",
                tool_name=unit["tool_name"],
                tool_input=json.loads(text),
                tool_response=response,
                tool_use_id=unit["id"],
            )
            previous = "assistant"
    fire("Stop", stop_hook_active=False)
    fire("SessionEnd", reason="prompt_input_exit")
    return records


def replay_cursor(session: dict, workdir: Path) -> list[dict]:
    """Cursor's events for the session: beforeSubmitPrompt, afterAgentResponse, afterFileEdit,
    afterShellExecution, then stop and sessionEnd (each unit's id as its generation_id)."""
    project = workdir / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    spool = Spool(workdir / "store")
    common = {"conversation_id": session["session_id"], "workspace_roots": [str(project)], "cursor_version": "2.1.0"}
    records: list[dict] = []

    def fire(name: str, **fields) -> None:
        event = payloads.parse(name, json.dumps({**common, "hook_event_name": name, **fields}))
        records.extend(capture(event, spool, "project-sample", write=False))

    for unit in session["units"]:
        ids = {"generation_id": unit["id"]}
        if unit["kind"] == "message" and unit["speaker"] == "user":
            fire("beforeSubmitPrompt", prompt=unit["text"], attachments=[], **ids)
        elif unit["kind"] == "message":
            fire("afterAgentResponse", text=unit["text"], **ids)
        elif unit["kind"] == "edit":
            edits = json.loads(json.dumps(unit["edits"]))
            fire("afterFileEdit", file_path=unit["file_path"].replace("$CWD", str(project)), edits=edits, **ids)
        else:
            fire("afterShellExecution", command=unit["command"], output=unit["output"], duration=100, **ids)
    fire("stop", status="completed", loop_count=0)
    fire("sessionEnd", session_id=session["session_id"], reason="user_close")
    return records


def _admitted(records: list[dict]) -> list[dict]:
    """The records the store keeps: candidate statements only when the classifier admits them
    (capture/store.py), scored with the bundled model's vectors."""
    from ..capture import memorable  # numpy and the weights: only when scoring
    from ..embeddings import EmbeddingRouter  # only when there are candidates: the model is heavy

    candidates = [r for r in records if any(t.startswith("candidate") for t in r.get("tags", []))]
    if not candidates:
        return records
    vectors = EmbeddingRouter().embed_documents([r["content"] for r in candidates])
    dropped = {
        r["id"]
        for r, v in zip(candidates, vectors)
        if (memorable.probability(v, r["content"], r["speaker"], "candidate-answer" in r["tags"]) or 0.0)
        < memorable.ADMIT
    }
    return [r for r in records if r["id"] not in dropped]


def _norm(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def evaluate(session: dict | None = None) -> dict:
    chosen: dict = session or json.loads(SESSION.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        records = replay(chosen, Path(tmp))
    units = chosen["units"]
    by_id = {u["id"]: u for u in units}
    stored = _admitted(list({r["id"]: r for r in records}.values()))  # ingest stores each id once
    captured: dict[str, list[str]] = {}
    unmatched = []
    for record in stored:
        if record["metadata"]["capture_kind"] == "session_summary":
            continue
        ref = record["metadata"].get("capture_ref")
        unit = by_id.get(ref) if ref else None
        for other in record["metadata"].get("capture_refs", [])[1:]:  # one memory of several edits
            if other in by_id:
                captured.setdefault(other, []).append(record["content"])
        if unit is None:
            content = _norm(record["content"])
            unit = next((u for u in units if u["kind"] == "message" and content in _norm(u["text"])), None)
        if unit is None:
            unmatched.append(record["content"])
            continue
        captured.setdefault(unit["id"], []).append(record["content"])
    tp = sum(1 for u in units if u["memorable"] and u["id"] in captured)
    fp = sum(1 for u in units if not u["memorable"] and u["id"] in captured)
    fn = sum(1 for u in units if u["memorable"] and u["id"] not in captured)
    return {
        "units": len(units),
        "memorable": sum(u["memorable"] for u in units),
        "memories": len(stored),
        "session_summaries": sum(r["metadata"]["capture_kind"] == "session_summary" for r in stored),
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
        "false_positive_units": [u["id"] for u in units if not u["memorable"] and u["id"] in captured],
        "missed_units": [u["id"] for u in units if u["memorable"] and u["id"] not in captured],
        "unmatched_memories": unmatched,
        "captured": captured,
    }

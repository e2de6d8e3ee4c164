"""`spatial-memory backfill`: transcripts a client keeps on disk, captured as the hooks would."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spatial_memory.capture.backfill import Progress, backfill, transcripts
from spatial_memory.evaluation.history import synthetic_history

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def app(settings, fake_embedder):
    from spatial_memory.app import App
    from spatial_memory.runtime.resources import Resources

    app = App(Resources(settings, fake_embedder))
    yield app
    app.resources.close(5)


def contents(app) -> list[str]:
    return [r.content for r in app.resources.store().scan()]


def test_backfill_twice_stores_once_with_secrets_redacted(app, tmp_path):
    home = tmp_path / "home"
    synthetic_history(home, 600, sessions=6)
    out = io.StringIO()
    first = backfill(app, "claude-code", home=home, progress=Progress(6, out))
    assert first.transcripts == 6 and first.stored > 20
    stored = contents(app)
    assert len(stored) == first.stored
    assert not any("sk-live-" in text for text in stored)
    assert any(text.startswith("Fixed: `") for text in stored)  # a fail-edit-pass, as the hook sees it
    assert any("Session summary" in text for text in stored)
    assert "backfill [" in out.getvalue() and "6/6 transcripts" in out.getvalue()
    second = backfill(app, "claude-code", home=home, progress=Progress(6, io.StringIO()))
    assert second.records == first.records and second.stored == 0
    assert sorted(contents(app)) == sorted(stored)
    (memory,) = [r for r in app.resources.store().scan() if r.content.startswith("Fixed: `")][:1]
    assert memory.memory_type == "fact" and memory.expires_at is None and memory.provenance.via == "hook"
    assert memory.metadata["capture_client"] == "claude-code"
    failures = [r for r in app.resources.store().scan() if r.metadata.get("capture_kind") == "command_failed"]
    assert failures and all(r.memory_type == "conversation" and r.expires_at is not None for r in failures)


def test_project_and_since_select_transcripts(app, tmp_path):
    home = tmp_path / "home"
    project = synthetic_history(home, 900, sessions=9)
    assert len(transcripts("claude-code", home)) == 9
    assert len(transcripts("claude-code", home, project=project)) == 3
    from spatial_memory.capture.backfill import parse_since

    later = backfill(
        app, "claude-code", home=home, since=parse_since("2026-10-05"), progress=Progress(9, io.StringIO())
    )
    everything = backfill(app, "claude-code", home=home, progress=Progress(9, io.StringIO()))
    assert 0 < later.stored and everything.stored > 0  # the earlier sessions' memories came second
    days = {r.conversation.occurred_at.day for r in app.resources.store().scan() if r.conversation.occurred_at}
    assert min(days) < 5


def test_cursor_agent_transcripts(app, tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "work" / "app"
    (project / ".git").mkdir(parents=True)
    session = "3f0c8a7e-1111-4222-8333-444455556666"
    directory = (
        home / ".cursor" / "projects" / str(project).lstrip("/").replace("/", "-") / "agent-transcripts" / session
    )
    directory.mkdir(parents=True)
    lines = [
        {
            "role": "user",
            "message": {"content": [{"type": "text", "text": "We decided to use Postgres for the ledger."}]},
        },
        {
            "role": "assistant",
            "message": {
                "content": [{"type": "tool_use", "id": "t1", "name": "Shell", "input": {"command": "pytest -x"}}]
            },
        },
        {
            "role": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "FAILED test_ledger.py::test_sum - AssertionError",
                        "is_error": True,
                    }
                ]
            },
        },
    ]
    (directory / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = backfill(app, "cursor", home=home, project=project, progress=Progress(1, io.StringIO()))
    assert done.transcripts == 1 and done.stored >= 2
    records = app.resources.store().scan()
    assert {r.namespace for r in records} == {"project-app"}
    assert any("Postgres" in r.content for r in records) and any("failed" in r.content for r in records)


def test_the_command_line_backfills_a_claude_code_history_twice_and_stores_it_once(tmp_path, bundled_models):
    home = tmp_path / "home"
    synthetic_history(home, 200, sessions=2)
    store = tmp_path / "store"
    store.mkdir()
    (store / "models").symlink_to(bundled_models)
    env = {
        **os.environ,
        "HOME": str(home),
        "SPATIAL_MEMORY_PATH": str(store),
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
    }
    command = [sys.executable, "-m", "spatial_memory", "backfill", "--client", "claude-code"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout == ""  # stdout untouched; progress and the summary go to stderr
    assert "backfill [" in first.stderr and " new memories stored" in first.stderr
    stored = int(first.stderr.split(" captures, ")[1].split(" new")[0])
    assert stored > 5
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0 and ", 0 new memories stored" in second.stderr, second.stderr[-2000:]
    bad = subprocess.run([*command, "--since", "yesterday"], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--since" in bad.stderr and "Traceback" not in bad.stderr

"""Context for the model: SessionStart gets pinned memories and the last session's summary,
UserPromptSubmit what recall finds for the prompt, within the time budget; and with no server
running, a hook starts `spatial-memory ingest`, whose memories the next SessionStart reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from spatial_memory.capture.context import build_within
from spatial_memory.capture.hook import capture
from spatial_memory.capture.ingest import ingest_all
from spatial_memory.capture.payloads import parse
from spatial_memory.capture.spool import Spool
from spatial_memory.records import NewMemory
from spatial_memory.runtime.resources import Resources
from spatial_memory.server.app import App

from .hash_embedder import HashEmbedder
from .reliability import new_store
from .test_capture_hooks import fixture, hook_env, make_project, run_hook, store_settings

NS = "project-my-proj"


def seeded_app(tmp_path: Path) -> App:
    """A store with a pinned memory and an earlier session's captures, summary included."""
    settings = store_settings(tmp_path)
    app = App(Resources(settings, HashEmbedder()))
    app.memory.remember(NewMemory("Deploys go through the release train on Tuesdays", NS, pinned=True))
    app.memory.remember(NewMemory("Unrelated pinned note", "elsewhere", pinned=True))
    payloads = fixture("claude_code", make_project(tmp_path), tmp_path / "t.jsonl")
    spool = Spool(settings.path)
    for key in (
        "UserPromptSubmit",
        "PostToolUse_Edit",
        "PostToolUse_Bash_failed",
        "PostToolUse_Bash_fixed",
        "SessionEnd",
    ):
        capture(parse(key.split("_")[0], json.dumps(payloads[key])), spool, NS)
    ingest_all(app, spool)
    return app


def test_session_start_gets_pinned_memories_and_the_last_session(tmp_path: Path) -> None:
    app = seeded_app(tmp_path)
    text = build_within(5.0, app.resources.settings.path, NS, "a-new-session", None, open_app=lambda _: app)
    assert text.startswith(f"Memories from spatial-memory (namespace {NS}):")
    assert "Pinned:\n- Deploys go through the release train on Tuesdays" in text
    assert "Unrelated pinned note" not in text
    assert "Last session (" in text and "Session summary" in text and "billing/db.py" in text
    assert "hunter2secret" not in text


def test_the_running_session_is_not_its_own_last_session(tmp_path: Path) -> None:
    app = seeded_app(tmp_path)
    text = build_within(5.0, app.resources.settings.path, NS, "cc-fixture-0001", None, open_app=lambda _: app)
    assert "Last session" not in text and "Pinned:" in text


def test_a_prompt_gets_what_recall_finds(tmp_path: Path) -> None:
    app = seeded_app(tmp_path)
    text = build_within(
        5.0,
        app.resources.settings.path,
        NS,
        "new",
        "which database did we decide to use for the billing service",
        open_app=lambda _: app,
    )
    assert "Related to this prompt:" in text and "PostgreSQL 16" in text


def test_a_prompt_does_not_repeat_the_pinned_memories_the_session_start_gave(tmp_path: Path) -> None:
    """Recall lists the namespace's pinned memories first, whatever the prompt; the session start
    already put them in the context, so a prompt's part holds only what recall found for it."""
    app = seeded_app(tmp_path)
    prompt = "which database did we decide to use for the billing service"
    recalled = app.search.recall(prompt, namespace=NS, limit=5).memories
    assert recalled[0].pinned and recalled[0].content.startswith("Deploys go through")
    start = build_within(5.0, app.resources.settings.path, NS, "new", None, open_app=lambda _: app)
    text = build_within(5.0, app.resources.settings.path, NS, "new", prompt, open_app=lambda _: app)
    assert "Deploys go through the release train" in start
    assert "Deploys go through the release train" not in text and "PostgreSQL 16" in text


def test_nothing_ready_within_the_budget_means_no_context(tmp_path: Path) -> None:
    (tmp_path / "store" / "lancedb").mkdir(parents=True)

    def slow(_path: Path) -> App:
        time.sleep(2.0)
        raise RuntimeError("too late anyway")

    started = time.monotonic()
    assert build_within(0.2, tmp_path / "store", NS, "s", None, open_app=slow) == ""
    assert time.monotonic() - started < 1.0
    assert build_within(0.2, tmp_path / "missing", NS, "s", None) == ""  # no store: nothing opened


def test_without_a_server_the_next_hook_gets_the_captures_stored(tmp_path: Path, bundled_models: Path) -> None:
    """Hooks with no server running: Stop starts `spatial-memory ingest` (bundled model), and the
    next session's SessionStart answers with the summary it stored."""
    store = new_store(tmp_path, "store", bundled_models)  # the session's once-built model graph
    project = make_project(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payloads = fixture("claude_code", project, transcript)
    for key in ("UserPromptSubmit", "PostToolUse_Edit", "PostToolUse_Bash_failed", "PostToolUse_Bash_fixed"):
        assert run_hook(key.split("_")[0], payloads[key], store).returncode == 0
    env = hook_env(store, SPATIAL_MEMORY_CAPTURE_INGEST="true", HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-m", "spatial_memory", "hook", "SessionEnd"],
        input=json.dumps(payloads["SessionEnd"]).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while Spool(store).pending_count() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert Spool(store).pending_count() == 0
    while list((store / "spool" / "ingesters").glob("*.lock")) and time.monotonic() < deadline:
        time.sleep(0.2)  # the ingester is closing the store
    start = {**payloads["SessionStart"], "session_id": "the-next-session"}
    answer = subprocess.run(
        [sys.executable, "-m", "spatial_memory", "hook", "SessionStart"],
        input=json.dumps(start).encode(),
        capture_output=True,
        env={**env, "SPATIAL_MEMORY_CAPTURE_CONTEXT_SECONDS": "60"},
        timeout=90,
    )
    assert answer.returncode == 0, answer.stderr
    output = json.loads(answer.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "Session summary" in output["additionalContext"] and "billing/db.py" in output["additionalContext"]
    assert os.path.isdir(store / "lancedb")


@pytest.mark.anyio
@pytest.mark.skipif(os.name != "posix", reason="the server answers hooks over a Unix socket")
async def test_a_running_server_answers_the_prompt_hook(tmp_path: Path) -> None:
    """With a server running, UserPromptSubmit asks it (no store or model opened in the hook)."""
    from .test_capture_hooks import recall_until, server

    settings = store_settings(tmp_path)
    payloads = fixture("claude_code", make_project(tmp_path), tmp_path / "t.jsonl")
    async with server(settings) as client:
        await anyio.to_thread.run_sync(run_hook, "UserPromptSubmit", payloads["UserPromptSubmit"], settings.path)
        await recall_until(client, "PostgreSQL billing", NS, "We decided to use PostgreSQL 16")
        ask = {
            **payloads["UserPromptSubmit"],
            "session_id": "next",
            "prompt": "which database did we decide to use for the billing service",
        }
        started = time.monotonic()
        done = await anyio.to_thread.run_sync(run_hook, "UserPromptSubmit", ask, settings.path)
        took = time.monotonic() - started
    assert done.returncode == 0 and done.stdout, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Related to this prompt:" in context and "PostgreSQL 16" in context
    assert took < 3.0  # a round trip, not a model load (the server's embedder is the test's)


def test_a_prompt_gets_recall_less_its_weak_hits(tmp_path: Path) -> None:
    """The context a prompt adds stops where recall's relevance ends: the hits recall marks weak
    (algorithms/relevance.py) are left out, the others kept, in order."""
    app = App(Resources(store_settings(tmp_path), HashEmbedder()))
    for text in (
        "billing database settled: we use PostgreSQL for billing",
        "the billing cron runs nightly at two",
        "kiwi mango papaya",
        "zebra giraffe lion savannah",
        "red blue green",
    ):
        app.memory.remember(NewMemory(text, NS))
    prompt = "which database did we decide to use for the billing service"
    recalled = app.search.recall(prompt, namespace=NS, limit=5).memories
    assert len(recalled) == 5 and any(m.weak for m in recalled)
    text = build_within(5.0, app.resources.settings.path, NS, "new", prompt, open_app=lambda _: app)
    shown = [line[2:] for line in text.split("Related to this prompt:\n")[1].splitlines()]
    assert shown == [m.content for m in recalled if not m.weak] and len(shown) == 2
    # A hit below the fixed floor the context had before (0.3) that the rule keeps is shown: one rule.
    assert any(not m.weak and m.similarity < 0.3 for m in recalled)

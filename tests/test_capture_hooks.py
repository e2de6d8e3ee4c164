"""Capture end to end: hook processes fed the recorded payloads (tests/fixtures/hooks/, written
from Claude Code's and Cursor's documented schemas) spool what they keep, a running server
stores it within seconds, and `recall` through MCP finds it; secrets never reach the store, an
export or a log; hooks run while a server holds the store, and from several sessions at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from spatial_memory.capture import spool as spool_module
from spatial_memory.capture.ingest import ingest_once
from spatial_memory.capture.spool import Spool
from spatial_memory.config import Settings

from .conftest import data
from .hash_embedder import HashEmbedder
from .test_secret_redaction import SECRETS

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
RECALL_DEADLINE = 5.0


def make_project(root: Path, name: str = "my-proj") -> Path:
    project = root / name
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    return project


def fixture(client: str, cwd: Path, transcript: Path) -> dict[str, dict]:
    text = (FIXTURES / f"{client}.json").read_text()
    text = text.replace("$CWD", str(cwd)).replace("$TRANSCRIPT", str(transcript))
    return json.loads(text)


def hook_env(store: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), SPATIAL_MEMORY_PATH=str(store))
    env["SPATIAL_MEMORY_CAPTURE_INGEST"] = "false"  # the test's server ingests, or the test does
    env.update(extra)
    return env


def run_hook(event: str, payload: dict | str, store: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "spatial_memory", "hook", *args, event],
        input=body.encode(),
        capture_output=True,
        env=hook_env(store, **env),
        timeout=60,
    )


def write_transcript(path: Path, entries: list[tuple[str, str]]) -> None:
    with path.open("a") as handle:
        for i, (role, text) in enumerate(entries):
            entry = {"type": role, "uuid": f"{role}-{i}-{len(text)}", "timestamp": "2026-11-20T10:00:00Z"}
            entry["message"] = {"role": role, "content": [{"type": "text", "text": text}]}
            handle.write(json.dumps(entry) + "\n")


def store_settings(tmp_path: Path) -> Settings:
    return Settings(path=tmp_path / "store", preload=False, access_flush_seconds=0.05)


@asynccontextmanager
async def server(settings: Settings):
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=HashEmbedder())) as client:
        yield client


async def recall_until(client, query: str, namespace: str, wanted: str, deadline: float = RECALL_DEADLINE) -> dict:
    """Recall through MCP until a memory containing `wanted` comes back; fails after `deadline` s."""
    start = time.monotonic()
    while True:
        found = data(await client.call_tool("recall", {"query": query, "namespace": namespace, "limit": 20}))
        hits = [m for m in found["memories"] if wanted in m["content"]]
        hits.sort(key=lambda m: not m["content"].startswith(wanted))  # the memory itself, not a summary quoting it
        if hits:
            return hits[0]
        if time.monotonic() - start > deadline:
            pytest.fail(f"{wanted!r} not recallable within {deadline} s: {[m['content'] for m in found['memories']]}")
        await anyio.sleep(0.1)


pytestmark = pytest.mark.anyio


async def test_claude_code_hooks_end_to_end_to_recall(tmp_path: Path) -> None:
    settings = store_settings(tmp_path)
    project = make_project(tmp_path)
    transcript = tmp_path / "transcript.jsonl"
    payloads = fixture("claude_code", project / "src", transcript)
    async with server(settings) as client:
        first = await anyio.to_thread.run_sync(run_hook, "SessionStart", payloads["SessionStart"], settings.path)
        assert first.returncode == 0 and first.stdout == b""  # nothing stored yet: no context
        for name in ("UserPromptSubmit", "PostToolUse_Edit", "PostToolUse_Bash_failed", "PostToolUse_Bash_fixed"):
            done = await anyio.to_thread.run_sync(run_hook, name.split("_")[0], payloads[name], settings.path)
            assert done.returncode == 0, done.stderr
        acknowledged = time.monotonic()
        hit = await recall_until(
            client, "PostgreSQL billing decision", "project-my-proj", "We decided to use PostgreSQL 16"
        )
        assert time.monotonic() - acknowledged < RECALL_DEADLINE
        write_transcript(
            transcript,
            [("assistant", "The root cause was the MySQL driver; we decided to keep psycopg 3 for PostgreSQL.")],
        )
        for name in ("Stop", "SessionEnd"):
            done = await anyio.to_thread.run_sync(run_hook, name, payloads[name], settings.path)
            assert done.returncode == 0 and done.stdout == b"", done.stderr
        fix = await recall_until(
            client, "pytest billing fixed", "project-my-proj", "Fixed: `pytest tests/test_billing.py`"
        )
        said = await recall_until(
            client, "root cause MySQL driver", "project-my-proj", "root cause was the MySQL driver"
        )
        summary = await recall_until(client, "session summary", "project-my-proj", "Session summary")
        (full,) = data(await client.call_tool("get_memories", {"memory_ids": [hit["id"]]}))["memories"]
    assert full["memory_type"] == "fact" and full["source"] == "extracted"  # what the user said does not expire
    assert full["expires_at"] is None
    assert full["provenance"] == {
        "via": "hook",
        "client": "claude-code",
        "client_version": None,
        "session_id": "cc-fixture-0001",
        "derived_from": [],
    }
    assert hit["session_id"] == "cc-fixture-0001" and hit["speaker"] == "user" and hit["occurred_at"]
    assert hit["metadata"]["captured_by"] == "hook" and hit["metadata"]["capture_event"] == "UserPromptSubmit"
    assert fix["speaker"] == "tool" and fix["metadata"]["capture_tool"] == "Bash"
    assert said["speaker"] == "assistant" and "billing/db.py" in summary["content"]
    assert "hunter2secret" not in fix["content"] and "[REDACTED:url-password]" in fix["content"]
    sequences = [hit["sequence"], fix["sequence"], said["sequence"], summary["sequence"]]
    assert sequences == sorted(sequences) and len(set(sequences)) == 4


async def test_cursor_hooks_end_to_end_to_recall(tmp_path: Path) -> None:
    settings = store_settings(tmp_path)
    project = make_project(tmp_path, "Cursor Project!")
    payloads = fixture("cursor", project, tmp_path / "none.jsonl")
    outputs = {}
    async with server(settings) as client:
        for name, payload in payloads.items():
            done = await anyio.to_thread.run_sync(run_hook, name, payload, settings.path)
            assert done.returncode == 0, done.stderr
            outputs[name] = json.loads(done.stdout)
        namespace = "project-Cursor-Project"
        pref = await recall_until(client, "ruff formatting black", namespace, "ruff for formatting")
        failed = await recall_until(client, "ruff check failed", namespace, "Command `ruff check app.py` failed")
        cause = await recall_until(client, "root cause unused json import", namespace, "root cause")
        await recall_until(client, "edited app.py", namespace, "Edited app.py")
    assert outputs["sessionStart"] == {"continue": True} and outputs["beforeSubmitPrompt"] == {"continue": True}
    assert outputs["afterFileEdit"] == {} and outputs["stop"] == {}
    assert pref["session_id"] == "cur-fixture-0001" and pref["speaker"] == "user"
    assert failed["speaker"] == "tool" and cause["speaker"] == "assistant"
    assert "F401" in failed["content"]


async def test_a_secret_in_a_tool_output_never_reaches_the_store_an_export_or_a_log(tmp_path: Path, caplog) -> None:
    caplog.set_level("DEBUG")
    settings = store_settings(tmp_path)
    project = make_project(tmp_path)
    secrets = [secret for _, secret in SECRETS]
    output = "\n".join(text for text, _ in SECRETS)
    payload = {
        "session_id": "secret-session",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_secret",
        "tool_input": {"command": "env | grep KEY; export STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc && ./deploy"},
        "tool_response": {"stdout": output, "stderr": "Error: deploy failed with password=hunter2secret"},
    }
    prompt = {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "We decided the key is " + secrets[9]}
    write_transcript(tmp_path / "t.jsonl", [("assistant", f"Important: the token is {secrets[2]} for CI.")])
    stop = {**payload, "hook_event_name": "Stop"}
    async with server(settings) as client:
        runs = [await anyio.to_thread.run_sync(run_hook, "PostToolUse", payload, settings.path)]
        runs.append(await anyio.to_thread.run_sync(run_hook, "UserPromptSubmit", prompt, settings.path))
        runs.append(await anyio.to_thread.run_sync(run_hook, "Stop", stop, settings.path))
        await recall_until(client, "deploy failed", "project-my-proj", "failed")
        await recall_until(client, "token for CI", "project-my-proj", "for CI")
        exported = data(await client.call_tool("export_memories", {"output_path": "all.json"}))
    places = {"export": Path(exported["output_path"]).read_bytes(), "log": caplog.text.encode()}
    for i, run in enumerate(runs):
        places[f"hook {i} stdout"], places[f"hook {i} stderr"] = run.stdout, run.stderr
    for path in settings.path.rglob("*"):  # the table, its indexes, the spool, the session states
        if path.is_file():
            places[str(path.relative_to(settings.path))] = path.read_bytes()
    assert b"REDACTED" in places["export"]
    for secret in secrets:
        for where, content in places.items():
            assert secret.encode() not in content, f"{secret!r} reached {where}"


async def test_a_hook_firing_while_a_server_holds_the_store(tmp_path: Path) -> None:
    settings = store_settings(tmp_path)
    project = make_project(tmp_path)
    payloads = fixture("claude_code", project, tmp_path / "t.jsonl")
    async with server(settings) as client:
        await client.call_tool("remember", {"content": "opens the store", "namespace": "other"})
        from spatial_memory.storage.writing.locking import LOCK_FILE, StoreLock

        holding, release = threading.Event(), threading.Event()

        def hold() -> None:  # another process-wide writer holding the store's write lock
            lock = StoreLock(settings.db_path / LOCK_FILE, timeout=30)
            with lock:
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        holding.wait(5)
        started = time.monotonic()
        done = await anyio.to_thread.run_sync(run_hook, "PostToolUse", payloads["PostToolUse_Edit"], settings.path)
        took = time.monotonic() - started
        release.set()
        holder.join()
        assert done.returncode == 0 and took < 3.0, (took, done.stderr)
        # An edit is one memory per file per turn: it is spooled when the turn ends.
        ended = await anyio.to_thread.run_sync(run_hook, "Stop", payloads["Stop"], settings.path)
        assert ended.returncode == 0, ended.stderr
        await recall_until(client, "edited billing db.py", "project-my-proj", "Edited billing/db.py")


async def test_several_sessions_capture_into_one_store_at_once(tmp_path: Path) -> None:
    settings = store_settings(tmp_path)
    projects = [make_project(tmp_path, f"proj{i}") for i in range(3)]
    events = []
    for p, project in enumerate(projects):
        for n in range(6):
            events.append(
                {
                    "session_id": f"session-{p}",
                    "transcript_path": str(tmp_path / f"t{p}.jsonl"),
                    "cwd": str(project),
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Edit",
                    "tool_use_id": f"toolu_{p}_{n}",
                    "tool_input": {
                        "file_path": str(project / f"module_{n}.py"),
                        "old_string": "x = 1",
                        "new_string": f"value_{n} = compute_{p}({n})",
                    },
                    "tool_response": {},
                }
            )
    async with server(settings) as client:

        def fire_all() -> list[int]:
            with ThreadPoolExecutor(max_workers=6) as pool:
                return [r.returncode for r in pool.map(lambda e: run_hook("PostToolUse", e, settings.path), events)]

        assert set(await anyio.to_thread.run_sync(fire_all)) == {0}
        # The edits wait in each session's state (updated by six hooks at once) for their turn's end.
        stops = [{**events[p * 6], "hook_event_name": "Stop", "stop_hook_active": False} for p in range(3)]
        for stop in stops:
            assert (await anyio.to_thread.run_sync(run_hook, "Stop", stop, settings.path)).returncode == 0
        deadline = time.monotonic() + 15
        while True:
            counts = {}
            for p in range(3):
                args = {"query": "edited module value compute", "namespace": f"project-proj{p}", "limit": 50}
                found = data(await client.call_tool("recall", args))
                counts[p] = found.get("memories", [])
            if all(len(v) == 6 for v in counts.values()) or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
    for p, memories in counts.items():
        assert len(memories) == 6
        assert {m["session_id"] for m in memories} == {f"session-{p}"}
        assert sorted(m["sequence"] for m in memories) == list(range(6))


def test_ingest_retried_after_a_crash_stores_nothing_twice(tmp_path: Path, monkeypatch) -> None:
    from spatial_memory.capture.hook import capture
    from spatial_memory.capture.payloads import parse
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App

    settings = store_settings(tmp_path)
    project = make_project(tmp_path)
    payloads = fixture("claude_code", project, tmp_path / "t.jsonl")
    spool = Spool(settings.path)
    for name in ("UserPromptSubmit", "PostToolUse_Edit", "PostToolUse_Bash_failed", "Stop"):
        event = parse(name.split("_")[0], json.dumps(payloads[name]))
        capture(event, spool, "ns")
    app = App(Resources(settings, HashEmbedder()))
    crashed = monkeypatch.context()
    with crashed as patch:
        patch.setattr(Spool, "done", staticmethod(lambda claim: (_ for _ in ()).throw(SystemExit("killed"))))
        with pytest.raises(SystemExit):
            ingest_once(app, spool)  # stored, then "killed" before deleting its claim
    stored = app.resources.store().count()
    assert stored >= 3 and not spool.has_work()
    monkeypatch.setattr(spool_module, "STALE_SECONDS", -1.0)
    assert spool.has_work()
    files, again = ingest_once(app, spool)
    assert files >= 1 and again == 0
    assert app.resources.store().count() == stored
    assert not spool.has_work() and list(spool.claimed_dir.iterdir()) == []


def test_malformed_input_is_ignored_without_getting_in_the_way(tmp_path: Path) -> None:
    claude = run_hook("PostToolUse", "{not json", tmp_path / "store")
    cursor = run_hook("afterShellExecution", "[1, 2]", tmp_path / "store")
    assert claude.returncode == 0 and claude.stdout == b"" and b"ignoring the input" in claude.stderr
    assert cursor.returncode == 0 and json.loads(cursor.stdout) == {}
    assert not (tmp_path / "store" / "spool").exists() or not Spool(tmp_path / "store").has_work()


def test_a_tool_use_hook_imports_nothing_heavy(tmp_path: Path) -> None:
    payload = fixture("claude_code", make_project(tmp_path), tmp_path / "t.jsonl")["PostToolUse_Bash_failed"]
    env = hook_env(tmp_path / "store")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "spatial_memory", "hook", "PostToolUse"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "import time:" in line}
    heavy = {"lancedb", "onnxruntime", "numpy", "pyarrow", "pydantic", "pydantic_settings", "mcp", "argparse"}
    heavy |= {"dataclasses", "spatial_memory.text.extraction", "spatial_memory.config", "logging"}
    assert imported & heavy == set()
    assert Spool(tmp_path / "store").has_work()

"""`spatial-memory backfill`: transcripts a client keeps on disk, captured as the hooks would."""

from __future__ import annotations

import io
import json
import os
import sqlite3
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
    chosen = subprocess.run([*command, "--since", "2999-01-01"], env=env, capture_output=True, text=True, timeout=120)
    assert chosen.returncode == 0 and "none matching --project / --since" in chosen.stderr, chosen.stderr
    assert f"in {home / '.claude' / 'projects'}; 2 there" in chosen.stderr and "backfill [" not in chosen.stderr
    nobody = subprocess.run([*command, "--client", "cursor"], env=env, capture_output=True, text=True, timeout=120)
    assert nobody.returncode == 0, nobody.stderr
    assert f"{home / '.cursor' / 'projects'} does not exist" in nobody.stderr and "Nothing was stored" in nobody.stderr


def _vscdb(path: Path, items: dict[str, object], disk: dict[str, object] | None = None) -> sqlite3.Connection:
    """A Cursor state database in its real shape: two key-value tables, JSON values (some as BLOB)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for table, rows in (("ItemTable", items), ("cursorDiskKV", disk or {})):
        for key, value in rows.items():
            raw = value if isinstance(value, (str, bytes)) else json.dumps(value)
            db.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, raw))
    db.commit()
    return db


def _cursor_user(home: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """Cursor's stores under a Linux home: the global database (composers in the current split
    shape, an older inline one, damaged and foreign values), a workspace naming two of them, a
    workspace of the old chat panel, one with prompts only, and one whose database is not SQLite."""
    user = home / ".config" / "Cursor" / "User"
    app_dir, old_dir = tmp_path / "work" / "app", tmp_path / "work" / "old tool"
    for directory in (app_dir, old_dir):
        (directory / ".git").mkdir(parents=True)
    ms = 1_790_000_000_000  # 2026-09-21
    split, inline = "c0ffee00-0000-4000-8000-000000000001", "c0ffee00-0000-4000-8000-000000000002"
    disk = {
        f"composerData:{split}": {
            "_v": 10,
            "composerId": split,
            "createdAt": ms,
            "lastUpdatedAt": ms + 60_000,
            "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2}],
        },
        f"bubbleId:{split}:b1": {
            "_v": 3,
            "type": 1,
            "bubbleId": "b1",
            "text": "We decided to use Postgres for the ledger.",
        },
        f"bubbleId:{split}:b2": json.dumps(
            {"_v": 3, "type": 2, "bubbleId": "b2", "text": "Noted: the ledger goes in Postgres, not SQLite."}
        ).encode(),
        f"composerData:{inline}": {
            "composerId": inline,
            "createdAt": ms,
            "conversation": [
                {"type": 1, "bubbleId": "i1", "text": "Decision: the API listens on port 8080 in every environment."},
                {"type": 2, "bubbleId": "i2", "text": ""},
            ],
        },
        "composerData:broken": "{not json",
        "composerData:odd": [1, 2, 3],
        "bubbleId:nobody:x": {"type": 1, "text": "an orphan message"},
    }
    global_db = user / "globalStorage" / "state.vscdb"
    _vscdb(global_db, {"some.setting": {"on": True}}, disk).close()
    workspace = user / "workspaceStorage" / "aaa111"
    _vscdb(
        workspace / "state.vscdb",
        {"composer.composerData": {"allComposers": [{"composerId": split}, {"composerId": inline}]}},
    ).close()
    (workspace / "workspace.json").write_text(json.dumps({"folder": app_dir.as_uri()}))
    chat_panel = {
        "tabs": [
            {
                "tabId": "tab-1",
                "chatTitle": "old chat",
                "lastSendTime": ms - 86_400_000,
                "bubbles": [
                    {"type": "user", "text": "We decided to deploy the old tool with Docker Compose."},
                    {"type": "ai", "rawText": "Docker Compose it is for the old tool."},
                ],
            }
        ]
    }
    old = user / "workspaceStorage" / "bbb222"
    _vscdb(old / "state.vscdb", {"workbench.panel.aichat.view.aichat.chatdata": chat_panel}).close()
    (old / "workspace.json").write_text(json.dumps({"folder": old_dir.as_uri()}))
    prompts = user / "workspaceStorage" / "ccc333"
    _vscdb(
        prompts / "state.vscdb",
        {"aiService.prompts": [{"text": "We decided to keep logs for 14 days.", "commandType": 4}]},
    ).close()
    (user / "workspaceStorage" / "ddd444").mkdir()
    (user / "workspaceStorage" / "ddd444" / "state.vscdb").write_bytes(b"not a database at all" * 100)
    return global_db, app_dir, old_dir


def test_cursor_chat_history_from_its_sqlite_stores(app, tmp_path):
    from spatial_memory.capture import cursor_history

    home = tmp_path / "home"
    global_db, app_dir, old_dir = _cursor_user(home, tmp_path)
    before = global_db.read_bytes(), global_db.stat().st_mtime_ns
    chats = {c.session_id: c for c in cursor_history.conversations(home, "linux")}
    assert set(chats) == {
        "c0ffee00-0000-4000-8000-000000000001",
        "c0ffee00-0000-4000-8000-000000000002",
        "tab-1",
        "prompts-ccc333",
    }
    split = chats["c0ffee00-0000-4000-8000-000000000001"]
    assert [(e["role"], e["text"][:12]) for e in split.entries] == [
        ("user", "We decided t"),
        ("assistant", "Noted: the l"),
    ]
    assert split.folder == str(app_dir) and split.entries[0]["timestamp"].startswith("2026-09-21")
    assert [e["role"] for e in chats["tab-1"].entries] == ["user", "assistant"] and chats["tab-1"].folder == str(
        old_dir
    )
    assert (global_db.read_bytes(), global_db.stat().st_mtime_ns) == before  # read, never written

    done = backfill(app, "cursor", home=home, progress=Progress(4, io.StringIO()))
    assert done.transcripts == 4 and done.stored >= 3
    by_namespace: dict[str, list[str]] = {}
    for record in app.resources.store().scan():
        by_namespace.setdefault(record.namespace, []).append(record.content)
    assert any("Postgres" in text for text in by_namespace["project-app"])
    assert any("port 8080" in text for text in by_namespace["project-app"])
    assert any("Docker Compose" in text for text in by_namespace["project-old-tool"])
    assert backfill(app, "cursor", home=home, progress=Progress(4, io.StringIO())).stored == 0
    only_app = transcripts("cursor", home, project=app_dir)
    assert {t.session_id for t in only_app} == {
        "c0ffee00-0000-4000-8000-000000000001",
        "c0ffee00-0000-4000-8000-000000000002",
    }


def test_cursor_history_is_read_while_cursor_writes(tmp_path):
    """Cursor running: the global database in WAL mode with writes not yet checkpointed into it,
    and a writer holding it open. Those writes are read (from a copy with its log), nothing waits
    on a lock, and the database and its log are left as they were."""
    from spatial_memory.capture import cursor_history

    home = tmp_path / "home"
    global_db, _, _ = _cursor_user(home, tmp_path)
    writer = sqlite3.connect(global_db)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        composer = {
            "composerId": "fresh",
            "createdAt": 1_790_000_000_000,
            "conversation": [{"type": 1, "text": "Just now."}],
        }
        writer.execute(
            "INSERT INTO cursorDiskKV (key, value) VALUES (?, ?)", ("composerData:fresh", json.dumps(composer))
        )
        writer.commit()
        wal = global_db.with_name("state.vscdb-wal")
        assert wal.stat().st_size > 0
        before = global_db.read_bytes(), wal.read_bytes()
        writer.execute("BEGIN IMMEDIATE")  # Cursor in the middle of a write
        chats = {c.session_id for c in cursor_history.conversations(home, "linux")}
        assert "fresh" in chats and "c0ffee00-0000-4000-8000-000000000001" in chats
        assert (global_db.read_bytes(), wal.read_bytes()) == before
        writer.rollback()
    finally:
        writer.close()


def test_cursor_user_directory_per_os(tmp_path):
    from spatial_memory.capture.cursor_history import user_dir

    home = Path("/home/ada")
    assert user_dir(home, "linux") == home / ".config" / "Cursor" / "User"
    assert user_dir(home, "darwin") == home / "Library" / "Application Support" / "Cursor" / "User"
    assert user_dir(home, "win32", {"APPDATA": r"C:\Users\ada\AppData\Roaming"}) == (
        Path(r"C:\Users\ada\AppData\Roaming") / "Cursor" / "User"
    )
    assert user_dir(home, "win32", {}) == home / "AppData" / "Roaming" / "Cursor" / "User"

    from spatial_memory.capture.cursor_history import conversations

    assert conversations(tmp_path, "linux") == []  # no Cursor here: nothing, no error

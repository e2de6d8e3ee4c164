"""Cursor's chat history, read from its SQLite stores for backfill (backfill.py replays it).

Cursor is a VS Code build: its user directory (USER_DIRS, per OS) holds `globalStorage/state.vscdb`
and one `workspaceStorage/<hash>/state.vscdb` per workspace (its folder in `workspace.json`,
`{"folder": "file:///..."}`), each a key-value table. Shapes, as Cursor versions wrote them:

- Composer / agent chats (current): the global `cursorDiskKV` table, `composerData:<composer>` ->
  `{composerId, name, createdAt (ms), lastUpdatedAt, fullConversationHeadersOnly: [{bubbleId,
  type}]}` and each message at `bubbleId:<composer>:<bubble>` -> `{type: 1 user | 2 assistant,
  text, createdAt (ISO or ms)}`; earlier builds kept the messages inline (`conversation: [...]`,
  or `conversationMap: {bubbleId: bubble}`). A workspace's `ItemTable` key `composer.composerData`
  (`{allComposers: [{composerId, ...}]}`) says which composers were its, and so their folder.
- The chat panel (older versions): a workspace's `ItemTable` key
  `workbench.panel.aichat.view.aichat.chatdata` -> `{tabs: [{tabId, chatTitle, lastSendTime,
  bubbles: [{type: "user" | "ai", text | rawText}]}]}`.
- Prompts alone: `aiService.prompts` -> `[{text, commandType}]`, read only for a workspace that has
  neither of the above (its prompts are theirs too).

Anything else - a missing table or key, JSON of another shape, a locked or damaged database - is
skipped, never an error: the history is a bonus. The databases are never written: each is opened
read-only and immutable (no lock, so Cursor may be running), or, when a write-ahead log beside it
holds recent writes, copied with it to a temporary directory first so those are read too.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

log = logging.getLogger(__name__)

STATE_DB = "state.vscdb"
COMPOSER_KEY = "composerData:"
BUBBLE_KEY = "bubbleId:"
WORKSPACE_COMPOSERS = "composer.composerData"
CHAT_PANEL = "workbench.panel.aichat.view.aichat.chatdata"
PROMPTS = "aiService.prompts"
_ROLES = {1: "user", 2: "assistant", "user": "user", "ai": "assistant", "assistant": "assistant"}


@dataclass(frozen=True)
class Conversation:
    """One chat: its id (composer or tab), the workspace folder it belongs to ("" unknown), its
    messages as transcript entries (`role`, `text`, `id`, `timestamp`, `cwd`: what
    transcript._message reads) and when it last changed (seconds since the epoch)."""

    session_id: str
    folder: str
    entries: tuple[dict[str, Any], ...]
    modified: float
    database: Path


def user_dir(home: Path, platform: str = sys.platform, environ: Mapping[str, str] | None = None) -> Path:
    """Cursor's user directory on this OS."""
    environ = os.environ if environ is None else environ
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Cursor" / "User"
    if platform.startswith("win"):
        appdata = environ.get("APPDATA")
        return (Path(appdata) if appdata else home / "AppData" / "Roaming") / "Cursor" / "User"
    return home / ".config" / "Cursor" / "User"


def conversations(
    home: Path, platform: str = sys.platform, environ: Mapping[str, str] | None = None
) -> list[Conversation]:
    """Every chat with at least one message in Cursor's stores under `home`."""
    root = user_dir(home, platform, environ)
    found: list[Conversation] = []
    composer_folders: dict[str, str] = {}
    for workspace in sorted((root / "workspaceStorage").glob(f"*/{STATE_DB}")):
        folder = _folder(workspace.parent / "workspace.json")
        items = _items(workspace, "ItemTable", (WORKSPACE_COMPOSERS, CHAT_PANEL, PROMPTS))
        composers = _list(_dict(items.get(WORKSPACE_COMPOSERS)).get("allComposers"))
        for composer in composers:
            composer_id = _dict(composer).get("composerId")
            if isinstance(composer_id, str):
                composer_folders[composer_id] = folder
                inline = _composer(workspace, _dict(composer), {}, folder)  # early builds: messages here
                if inline is not None:
                    found.append(inline)
        tabs = [t for t in _list(_dict(items.get(CHAT_PANEL)).get("tabs")) if isinstance(t, dict)]
        found += [c for c in (_tab(workspace, tab, folder) for tab in tabs) if c is not None]
        if not composers and not tabs:
            prompts = _prompts(workspace, _list(items.get(PROMPTS)), folder)
            if prompts is not None:
                found.append(prompts)
    global_db = root / "globalStorage" / STATE_DB
    if global_db.is_file():
        seen = {c.session_id for c in found}
        for composer, bubbles in _global_composers(global_db):
            conversation = _composer(global_db, composer, bubbles, composer_folders.get(composer["composerId"], ""))
            if conversation is not None and conversation.session_id not in seen:
                found.append(conversation)
    return found


# ---- the databases -----------------------------------------------------------------------


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The database opened read-only and without locks (copied first, with its write-ahead log, when
    the log is not empty)."""
    wal = path.with_name(path.name + "-wal")
    with tempfile.TemporaryDirectory(prefix="spatial-memory-cursor-") as scratch:
        source = path
        if wal.is_file() and wal.stat().st_size > 0:
            source = Path(scratch) / path.name
            shutil.copyfile(path, source)
            shutil.copyfile(wal, source.with_name(source.name + "-wal"))
            uri = f"file:{quote(str(source))}?mode=ro"
        else:
            uri = f"file:{quote(str(source))}?mode=ro&immutable=1"
        connection = sqlite3.connect(uri, uri=True)
        try:
            yield connection
        finally:
            connection.close()


def _items(path: Path, table: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON values of `keys` in a key-value table (absent: not in the result)."""
    try:
        with _read_only(path) as db:
            marks = ",".join("?" * len(keys))
            rows = db.execute(f"SELECT key, value FROM {table} WHERE key IN ({marks})", keys).fetchall()  # noqa: S608 - table is ours
    except (sqlite3.Error, OSError) as exc:
        log.info("skipping %s: %s", path, exc)
        return {}
    return {key: value for key, raw in rows if (value := _json(raw)) is not None}


def _global_composers(path: Path) -> Iterator[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
    """Each composer of the global store with its separately stored messages (by bubble id)."""
    try:
        with _read_only(path) as db:
            rows = db.execute(
                "SELECT key, value FROM cursorDiskKV WHERE substr(key, 1, ?) = ?", (len(COMPOSER_KEY), COMPOSER_KEY)
            ).fetchall()
            for key, raw in rows:
                composer = _dict(_json(raw))
                composer_id = composer.get("composerId") or key[len(COMPOSER_KEY) :]
                if not isinstance(composer_id, str) or not composer_id:
                    continue
                prefix = f"{BUBBLE_KEY}{composer_id}:"
                bubbles = {
                    bubble_key[len(prefix) :]: value
                    for bubble_key, bubble_raw in db.execute(
                        "SELECT key, value FROM cursorDiskKV WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
                    )
                    if isinstance(value := _json(bubble_raw), dict)
                }
                yield {**composer, "composerId": composer_id}, bubbles
    except (sqlite3.Error, OSError) as exc:
        log.info("skipping %s: %s", path, exc)


# ---- the shapes ---------------------------------------------------------------------------


def _composer(
    database: Path, composer: dict[str, Any], bubbles: dict[str, dict[str, Any]], folder: str
) -> Conversation | None:
    """A composer's messages in order: its headers' bubbles, else its inline conversation."""
    composer_id = str(composer.get("composerId") or "")
    started = _stamp(composer.get("createdAt"))
    ordered: list[dict[str, Any]] = []
    for header in _list(composer.get("fullConversationHeadersOnly")):
        header = _dict(header)
        bubble = bubbles.get(str(header.get("bubbleId")))
        if bubble is not None:
            ordered.append({"type": header.get("type"), **bubble})
    if not ordered:
        ordered = [_dict(b) for b in _list(composer.get("conversation"))]
    if not ordered:
        ordered = [_dict(b) for b in _dict(composer.get("conversationMap")).values()]
    modified = _stamp(composer.get("lastUpdatedAt")) or started
    return _conversation(database, composer_id, ordered, folder, started, modified)


def _tab(database: Path, tab: dict[str, Any], folder: str) -> Conversation | None:
    sent = _stamp(tab.get("lastSendTime"))
    bubbles = [_dict(b) for b in _list(tab.get("bubbles"))]
    return _conversation(database, str(tab.get("tabId") or ""), bubbles, folder, sent, sent)


def _prompts(database: Path, prompts: list[Any], folder: str) -> Conversation | None:
    bubbles = [{"type": "user", "text": _dict(p).get("text")} for p in prompts]
    modified = database.stat().st_mtime if database.exists() else None
    session = "prompts-" + database.parent.name
    return _conversation(database, session, bubbles, folder, None, modified)


def _conversation(
    database: Path,
    session_id: str,
    bubbles: list[dict[str, Any]],
    folder: str,
    started: float | None,
    modified: float | None,
) -> Conversation | None:
    if not session_id:
        return None
    entries = []
    for number, bubble in enumerate(bubbles):
        role = _ROLES.get(bubble.get("type"))  # type: ignore[arg-type] - any JSON value
        text = bubble.get("text") or bubble.get("rawText")
        if role is None or not isinstance(text, str) or not text.strip():
            continue
        at = _stamp(bubble.get("createdAt")) or _stamp(bubble.get("timestamp")) or started or modified
        entry: dict[str, Any] = {"role": role, "text": text, "id": str(bubble.get("bubbleId") or number)}
        if at is not None:
            entry["timestamp"] = _iso(at)
        if folder:
            entry["cwd"] = folder
        entries.append(entry)
    if not entries:
        return None
    when = modified or started or (database.stat().st_mtime if database.exists() else 0.0)
    return Conversation(session_id, folder, tuple(entries), when, database)


def _folder(workspace_json: Path) -> str:
    """A workspace's folder (`{"folder": "file:///path"}`), "" when it has none we can read."""
    try:
        uri = json.loads(workspace_json.read_text(encoding="utf-8")).get("folder")
    except (OSError, ValueError, AttributeError):
        return ""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return ""
    path = unquote(urlparse(uri).path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # file:///C:/... on Windows
        path = path[1:]
    return path


def _stamp(value: Any) -> float | None:
    """Seconds since the epoch from milliseconds or an ISO 8601 time; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return value / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
    return None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(raw: Any) -> Any:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

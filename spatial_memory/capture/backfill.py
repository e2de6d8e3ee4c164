"""`spatial-memory backfill`: a cold start from the transcripts clients already keep on disk.

Each transcript is replayed through the hooks' own selection (hook.selected): its prose as the
Stop hook reads it, each tool use with its result as PostToolUse sees it, the session's end as
SessionEnd. The records get the hooks' deterministic ids (records.record_id: client, session,
speaker, kind, content), so running backfill twice, or over sessions the hooks already captured,
stores nothing twice; secrets are redacted on the way in, as in a hook.

Where the clients keep transcripts:
  Claude Code  ~/.claude/projects/<project>/<session>.jsonl, <project> the working directory with
               every character other than a letter or digit written `-`; entries carry `cwd`,
               `timestamp`, and `message.content` blocks (text, tool_use; tool_result in the next
               user entry, the tool's structured output in `toolUseResult`).
  Cursor       ~/.cursor/projects/<project>/agent-transcripts/<session>/<session>.jsonl (older
               builds: <session>.jsonl directly), <project> the workspace path without its leading
               `/` and with `/` written `-`; Anthropic-style entries (`role`, `message.content`
               blocks) without timestamps (the file's modification time stands in); and its chat
               history in its SQLite stores (~/.config/Cursor/User on Linux, ~/Library/Application
               Support/Cursor/User on macOS, %APPDATA%\\Cursor\\User on Windows), read-only by
               cursor_history.py, each chat replayed as a transcript of its messages.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import cursor_history
from . import payloads as p
from .hook import records_of, selected
from .namespace import project_namespace, sanitise
from .session_state import _fresh
from .transcript import Message, _text_of, text_turns

BATCH = 500  # records stored per commit (one embedding call each)
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class Transcript:
    client: str
    path: Path
    session_id: str
    project_dir: str  # the client's name for the project's directory
    # A chat read from a database (cursor_history): its entries and when it last changed; a
    # transcript file is read from `path` instead.
    entries: tuple[dict[str, Any], ...] | None = None
    modified: float | None = None

    @property
    def changed(self) -> float:
        return self.modified if self.modified is not None else self.path.stat().st_mtime


def claude_code_dir(project: Path) -> str:
    return _NOT_ALNUM.sub("-", str(project))


def cursor_dir(project: Path) -> str:
    return str(project).lstrip("/\\").replace("/", "-").replace("\\", "-")


def transcripts_root(client: str, home: Path) -> Path:
    """Where the client keeps its transcripts (module docstring)."""
    if client == p.CLAUDE_CODE:
        return home / ".claude" / "projects"
    if client == p.CURSOR:
        return home / ".cursor" / "projects"
    raise ValueError(f"unknown client {client!r}; one of {', '.join(p.CLIENTS)}")


def transcripts(
    client: str, home: Path, *, since: datetime | None = None, project: Path | None = None
) -> list[Transcript]:
    """The client's transcripts on disk, oldest first; only `project`'s, and only those written
    since `since`, when given."""
    root = transcripts_root(client, home)
    history: list[Transcript] = []  # Cursor's chats kept in its databases
    if client == p.CLAUDE_CODE:
        found = [(f, f.parent.name) for f in root.glob("*/*.jsonl")]
        wanted = None if project is None else claude_code_dir(project)
    else:
        found = [(f, f.relative_to(root).parts[0]) for f in root.glob("*/agent-transcripts/**/*.jsonl")]
        wanted = None if project is None else cursor_dir(project)
        history = [
            Transcript(
                client, c.database, c.session_id, cursor_dir(Path(c.folder)) if c.folder else "", c.entries, c.modified
            )
            for c in cursor_history.conversations(home)
        ]
    cutoff = since.timestamp() if since is not None else None
    chosen = [
        Transcript(client, path, path.stem, directory)
        for path, directory in found
        if (wanted is None or directory == wanted)
        and (cutoff is None or path.stat().st_mtime >= cutoff)
        and "subagents" not in path.parts
    ]
    if client == p.CURSOR:
        chosen += [
            t
            for t in history
            if (wanted is None or t.project_dir == wanted) and (cutoff is None or t.changed >= cutoff)
        ]
    return sorted(chosen, key=lambda t: (t.changed, str(t.path), t.session_id))


def _entries(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(entry, dict):
                yield entry


def _workdir(transcript: Transcript, entries: list[dict[str, Any]], project: Path | None) -> str:
    """The session's working directory: as the transcript says, else --project, else the client's
    directory name read back into a path when that path exists."""
    for entry in entries:
        if isinstance(entry.get("cwd"), str) and entry["cwd"]:
            return entry["cwd"]
    if project is not None:
        return str(project)
    guess = Path("/" + transcript.project_dir.replace("-", "/"))
    return str(guess) if guess.is_dir() else ""


def replay(
    transcript: Transcript,
    *,
    project: Path | None = None,
    since: datetime | None = None,
    namespace: str | None = None,
    routines: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The spool records the hooks would have written for this transcript; `routines`: the command
    routines of the transcripts replayed before it (updated)."""
    entries = list(transcript.entries) if transcript.entries is not None else list(_entries(transcript.path))
    cwd = _workdir(transcript, entries, project)
    if namespace is None:
        namespace = project_namespace(cwd) if cwd else sanitise(transcript.project_dir.split("-")[-1] or "project")
    project_root = cwd or str(Path.home())
    fallback = datetime.fromtimestamp(transcript.changed, timezone.utc).isoformat().replace("+00:00", "Z")
    state = _fresh()
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    records: list[dict[str, Any]] = []
    stamps: list[str] = []
    cutoff = since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") if since is not None else None

    def event(kind: str, name: str, **fields: Any) -> p.HookEvent:
        return p.HookEvent(transcript.client, name, kind, transcript.session_id, cwd, **fields)

    def keep(found: list, at: str, source: p.HookEvent) -> None:
        for item in found:
            item.occurred_at = item.occurred_at or at
        if cutoff is None or at[:19] >= cutoff:
            records.extend(records_of(found, source, namespace))

    turn: list[Message] = []  # the text of the turn under way: read when it ends, as the Stop hook reads it
    for entry, message in text_turns(entries):
        at = entry["timestamp"] if isinstance(entry.get("timestamp"), str) else fallback
        if at is not fallback:
            stamps.append(at)
        if message is not None:
            if message.speaker == "user" and turn:  # a new prompt: the turn before it has ended
                source = event(p.STOP, "Stop")
                keep(selected(source, state, project_root, namespace, turn), turn[-1].timestamp or at, source)
                turn = []
            turn.append(Message(message.speaker, message.text, message.ref, message.timestamp or at))
        inner = entry.get("message")
        body: dict[str, Any] = inner if isinstance(inner, dict) else entry
        content = body.get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                given = block.get("input")
                tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
                pending[block["id"]] = (str(block.get("name") or ""), tool_input)
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in pending:
                name, tool_input = pending.pop(block["tool_use_id"])
                source = event(
                    p.TOOL_USE,
                    "PostToolUse",
                    tool_name=name,
                    tool_input=tool_input,
                    tool_response=_response(entry, block),
                    tool_use_id=block["tool_use_id"],
                )
                keep(selected(source, state, project_root, namespace), at, source)
    last = max(stamps) if stamps else fallback
    end = event(p.SESSION_END, "SessionEnd")
    found = selected(
        end, state, project_root, namespace, turn, date=last[:10], routines={} if routines is None else routines
    )
    keep(found, last, end)
    return records


def _response(entry: dict[str, Any], block: dict[str, Any]) -> Any:
    """What PostToolUse would have been given: Claude Code's structured `toolUseResult`, else the
    result block's text with its error flag as an exit status."""
    structured = entry.get("toolUseResult")
    if isinstance(structured, dict):
        if not any(key in structured for key in ("exit_code", "exitCode", "returncode", "return_code")):
            structured = {**structured, "exit_code": 1 if block.get("is_error") else 0}  # the result says
        return structured
    return {"output": _text_of(block.get("content")), "exit_code": 1 if block.get("is_error") else 0}


class Progress:
    """A progress bar on stderr (stdout stays free): redrawn in place on a terminal, a line per tenth
    otherwise."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.stream = max(total, 1), stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._shown = -1

    def update(self, done: int, stored: int) -> None:
        share = done / self.total
        if not self.tty and int(share * 10) == self._shown and done != self.total:
            return
        self._shown = int(share * 10)
        bar = "#" * int(share * 30)
        line = f"backfill [{bar:<30}] {done}/{self.total} transcripts, {stored} stored"
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and done == self.total:
            self.stream.write("\n")
        self.stream.flush()


@dataclass
class BackfillResult:
    transcripts: int
    records: int
    stored: int  # new memories in the store (procedures included)
    seconds: float
    root: Path | None = None  # where the transcripts were looked for
    on_disk: int = 0  # transcripts there before --project and --since chose among them
    confirmed: int = 0  # procedures seen to work again: new versions of stored ones, not new memories

    def describe(self, client: str) -> str:
        """What happened and, when nothing could be read, why and what to do: one line for a person."""
        name = "Claude Code" if client == p.CLAUDE_CODE else "Cursor"
        where = f"{self.root}" if client == p.CLAUDE_CODE else f"{self.root} and Cursor's chat history"
        if self.transcripts == 0 and self.on_disk == 0 and self.root is not None and not self.root.is_dir():
            also = "" if client == p.CLAUDE_CODE else " (and no chat history in Cursor's user directory)"
            return (
                f"no transcripts: {self.root} does not exist{also}, so {name} has kept none on this machine for "
                f"this user (it writes them there once it has run). Nothing was stored."
            )
        if self.transcripts == 0:
            chosen = f"; {self.on_disk} there, none matching --project / --since" if self.on_disk else ""
            return f"no transcripts found in {where}{chosen}. Nothing was stored."
        confirmed = f"; {self.confirmed} procedures confirmed, not new memories" if self.confirmed else ""
        return (
            f"{self.transcripts} transcripts, {self.records} captures, {self.stored} new memories stored in "
            f"{self.seconds:.1f} s (read from {where}{confirmed})"
        )


def backfill(
    app: Any,
    client: str,
    *,
    home: Path | None = None,
    since: datetime | None = None,
    project: Path | None = None,
    progress: Progress | None = None,
) -> BackfillResult:
    """Replay every transcript and store what the hooks would have (idempotent)."""
    # Not at the top: store.py reaches the services and the model; the hook's replay path above
    # (selected, records_of) must stay as light as a hook.
    from .store import store_captured

    started = time.perf_counter()
    home = home or Path.home()
    found = transcripts(client, home, since=since, project=project)
    on_disk = len(found) if found or (since is None and project is None) else len(transcripts(client, home))
    progress = progress or Progress(len(found))
    records = stored = confirmed = 0
    batch: list[dict[str, Any]] = []
    routines: dict[str, Any] = {}  # across this history, oldest session first, as the hooks saw them
    for done, transcript in enumerate(found, 1):
        replayed = replay(transcript, project=project, since=since, routines=routines)
        records += len(replayed)
        batch += replayed
        while len(batch) >= BATCH:
            done_now = store_captured(app, batch[:BATCH])
            stored, confirmed = stored + done_now.memories, confirmed + done_now.confirmed
            del batch[:BATCH]
        progress.update(done, stored)
    if batch:
        done_now = store_captured(app, batch)
        stored, confirmed = stored + done_now.memories, confirmed + done_now.confirmed
    seconds = time.perf_counter() - started
    return BackfillResult(len(found), records, stored, seconds, transcripts_root(client, home), on_disk, confirmed)


def parse_since(value: str) -> datetime:
    """--since: a date (YYYY-MM-DD: from its start) or an ISO 8601 time, UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {value!r} is not a date (YYYY-MM-DD) or an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

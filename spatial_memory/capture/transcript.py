"""The conversation text added to a session's transcript since the last capture.

Claude Code's transcript (`transcript_path`) is JSONL, one entry per line: `{"type": "user" |
"assistant", "message": {"role": ..., "content": "..." | [{"type": "text", "text": ...},
{"type": "tool_use", ...}, {"type": "tool_result", ...}]}, "uuid": ..., "timestamp": ...}`,
plus bookkeeping entries (summaries, meta messages) that are skipped. Cursor's transcript, when
it gives one, is read the same way (entries with `role` and `content`/`text`). Only complete
lines are read, from the byte offset where the last capture stopped, so every message is seen
once even while the client is still writing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

MAX_READ_BYTES = 4 << 20  # one hook reads at most this much; the next one goes on from there
# Messages the client writes on the user's behalf (slash commands, their output, reminders).
_MACHINE_PREFIXES = (
    "<command-",
    "<local-command",
    "<system-reminder",
    "<task-notification",
    "<bash-",
    "<user-prompt-submit-hook",
    "Caveat:",
    "[Request interrupted",
)
_COMMAND = "<command-name>"  # a slash command: the user message after it is the command's template


class Message(NamedTuple):
    speaker: str  # "user" or "assistant"
    text: str
    ref: str | None  # the entry's uuid
    timestamp: str | None


def read_since(path: str, offset: int) -> tuple[list[Message], int]:
    """Messages after byte `offset` of the transcript, and the offset to continue from."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read(MAX_READ_BYTES)
    except OSError:
        return [], offset
    end = chunk.rfind(b"\n") + 1  # complete lines only
    entries = []
    for line in chunk[:end].splitlines():
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    messages = [m for _, m in text_turns(entries) if m is not None]
    return messages, offset + end


def text_turns(entries: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Message | None]]:
    """Each entry with its text turn (None when it has none). A slash command's expansion - the
    user message written right after a `<command-name>` entry - is the command's template, not
    the user's words: it has none."""
    expansion = False
    for entry in entries:
        message = _message(entry)
        if message is None:
            body = _body(entry)
            text = _text_of(body.get("content", body.get("text")))
            if text:  # the command itself, or what answered it (its output, a summary)
                expansion = _COMMAND in text[:300]
            yield entry, None
            continue
        if message.speaker == "user" and expansion:
            message = None
        expansion = False
        yield entry, message


def _body(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's message, or the entry itself when it holds none (Cursor's entries)."""
    inner = entry.get("message")
    return inner if isinstance(inner, dict) else entry


def _message(entry: dict[str, Any]) -> Message | None:
    if entry.get("isMeta") or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    body = _body(entry)
    role = body.get("role") or entry.get("role") or entry.get("type")  # Cursor: role beside message
    if role not in ("user", "assistant"):
        return None
    text = _text_of(body.get("content", body.get("text")))
    if not text or text.lstrip().startswith(_MACHINE_PREFIXES):
        return None
    ref = entry.get("uuid") or entry.get("id")
    stamp = entry.get("timestamp")
    return Message(role, text, str(ref) if ref else None, stamp if isinstance(stamp, str) else None)


def _text_of(content: Any) -> str:
    """The prose of a message: text blocks only (tool calls and results are captured by their hooks)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return ""

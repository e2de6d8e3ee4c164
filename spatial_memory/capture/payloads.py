"""The clients' hook payloads, read into one `HookEvent`, and the answers each client expects.

Claude Code (https://code.claude.com/docs/en/hooks, formerly
https://docs.anthropic.com/en/docs/claude-code/hooks): a command hook gets one JSON object on
stdin. Every event has `session_id`, `transcript_path` (the session's JSONL transcript), `cwd`,
`permission_mode` and `hook_event_name`. Per event:
  SessionStart      `source`: startup | resume | clear | compact (and `model`)
  UserPromptSubmit  `prompt`
  PostToolUse       `tool_name`, `tool_input`, `tool_response`, `tool_use_id`
                    (Bash: tool_response {stdout, stderr, interrupted, isImage};
                    Edit: tool_input {file_path, old_string, new_string}; Write: {file_path, content})
  PreCompact        `trigger`: manual | auto, `custom_instructions`
  Stop              `stop_hook_active`
  SessionEnd        `reason`: clear | logout | prompt_input_exit | other
Exit code 0 with stdout: for SessionStart and UserPromptSubmit, a JSON object
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": "..."}}` adds the text to
the model's context; for other events stdout is only shown in the transcript view, so nothing is
printed. Each hook has a `timeout` in seconds (60 by default).

Cursor (https://cursor.com/docs/agent/hooks; field lists cross-checked with
https://cupcake.eqtylab.io/reference/harnesses/cursor): `.cursor/hooks.json` or
`~/.cursor/hooks.json` = `{"version": 1, "hooks": {"<event>": [{"command": "..."}]}}`. Every
payload has `conversation_id`, `generation_id`, `model`, `hook_event_name`, `cursor_version`,
`workspace_roots` (a list: there is no `cwd`), `user_email` and, in newer builds,
`transcript_path`. Per event:
  sessionStart          `session_id`, `is_background_agent`, `composer_mode`;
                        answer `{"additional_context": "...", "continue": true}`
  beforeSubmitPrompt    `prompt`, `attachments`; answer `{"continue": true}` (no context field)
  afterFileEdit         `file_path`, `edits` [{old_string, new_string}]
  beforeShellExecution / afterShellExecution  `command`, `cwd`, and after: `output`, `duration` (ms)
  afterMCPExecution     `tool_name`, `tool_input` (a JSON string), `result_json`, `duration`
  afterAgentResponse    `text` (the assistant's message)
  stop                  `status`: completed | aborted | error, `loop_count`
  sessionEnd            `session_id`, `reason`, `duration_ms`
Observation-only events take `{}` as their answer.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from ..errors import ValidationError

if TYPE_CHECKING:
    from typing import Any

CLAUDE_CODE = "claude-code"
CURSOR = "cursor"
CLIENTS = (CLAUDE_CODE, CURSOR)

# What happened, whatever the client calls it.
SESSION_START = "session_start"
PROMPT = "prompt"
TOOL_USE = "tool_use"
FILE_EDIT = "file_edit"
SHELL = "shell"
ASSISTANT_TEXT = "assistant_text"
PRE_COMPACT = "pre_compact"
STOP = "stop"
SESSION_END = "session_end"
OTHER = "other"

CLAUDE_CODE_EVENTS = {
    "SessionStart": SESSION_START,
    "UserPromptSubmit": PROMPT,
    "PostToolUse": TOOL_USE,
    "PreCompact": PRE_COMPACT,
    "Stop": STOP,
    "SessionEnd": SESSION_END,
}
CURSOR_EVENTS = {
    "sessionStart": SESSION_START,
    "beforeSubmitPrompt": PROMPT,
    "afterFileEdit": FILE_EDIT,
    "afterShellExecution": SHELL,
    "afterMCPExecution": TOOL_USE,
    "afterAgentResponse": ASSISTANT_TEXT,
    "preCompact": PRE_COMPACT,
    "stop": STOP,
    "sessionEnd": SESSION_END,
}


class HookEvent:
    """One hook invocation, in the client's terms mapped onto ours.

    A plain class, not a dataclass: `dataclasses` imports `inspect`, which a hook cannot afford."""

    def __init__(
        self,
        client: str,
        name: str,  # the client's event name
        kind: str,  # one of the constants above
        session_id: str,
        cwd: str,
        transcript_path: str | None = None,
        prompt: str | None = None,
        tool_name: str | None = None,
        tool_input: dict[str, Any] | None = None,
        tool_response: Any = None,
        tool_use_id: str | None = None,
        text: str | None = None,  # Cursor's afterAgentResponse
        client_version: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> None:
        self.client, self.name, self.kind, self.session_id, self.cwd = client, name, kind, session_id, cwd
        self.transcript_path, self.prompt, self.text = transcript_path, prompt, text
        self.tool_name, self.tool_input, self.tool_response = tool_name, tool_input or {}, tool_response
        self.tool_use_id, self.client_version, self.raw = tool_use_id, client_version, raw or {}


def client_of(event_name: str) -> str:
    if event_name in CLAUDE_CODE_EVENTS:
        return CLAUDE_CODE
    if event_name in CURSOR_EVENTS or event_name[:1].islower():
        return CURSOR
    return CLAUDE_CODE


def parse(event_name: str, stdin_text: str, client: str | None = None) -> HookEvent:
    """The payload read from stdin, for the event named on the command line."""
    try:
        raw = json.loads(stdin_text) if stdin_text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(f"hook input is not JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise ValidationError("hook input must be a JSON object")
    name = str(raw.get("hook_event_name") or event_name)
    client = client or client_of(name)
    return _cursor(name, raw) if client == CURSOR else _claude_code(name, raw)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _claude_code(name: str, raw: dict[str, Any]) -> HookEvent:
    tool_input = raw.get("tool_input")
    return HookEvent(
        client=CLAUDE_CODE,
        name=name,
        kind=CLAUDE_CODE_EVENTS.get(name, OTHER),
        session_id=_text(raw.get("session_id")) or "unknown-session",
        cwd=_text(raw.get("cwd")) or os.getcwd(),
        transcript_path=_text(raw.get("transcript_path")),
        prompt=_text(raw.get("prompt")),
        tool_name=_text(raw.get("tool_name")),
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=raw.get("tool_response"),
        tool_use_id=_text(raw.get("tool_use_id")),
        client_version=_text(raw.get("version")),
        raw=raw,
    )


def _cursor(name: str, raw: dict[str, Any]) -> HookEvent:
    roots = raw.get("workspace_roots")
    cwd = _text(raw.get("cwd")) or (roots[0] if isinstance(roots, list) and roots and _text(roots[0]) else None)
    kind = CURSOR_EVENTS.get(name, OTHER)
    tool_input: Any = {}
    tool_name = _text(raw.get("tool_name"))
    tool_response: Any = None
    if kind == FILE_EDIT:
        tool_name, tool_input = "Edit", {"file_path": raw.get("file_path"), "edits": raw.get("edits") or []}
    elif kind == SHELL:
        tool_name, tool_input = "Shell", {"command": raw.get("command") or ""}
        tool_response = {"output": raw.get("output") or "", "duration": raw.get("duration")}
    elif kind == TOOL_USE:
        tool_input = _json_object(raw.get("tool_input"))
        tool_response = raw.get("result_json")
    return HookEvent(
        client=CURSOR,
        name=name,
        kind=kind,
        session_id=_text(raw.get("conversation_id")) or _text(raw.get("session_id")) or "unknown-session",
        cwd=cwd or os.getcwd(),
        transcript_path=_text(raw.get("transcript_path")),
        prompt=_text(raw.get("prompt")),
        tool_name=tool_name,
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=tool_response,
        tool_use_id=_text(raw.get("generation_id")),
        text=_text(raw.get("text")),
        client_version=_text(raw.get("cursor_version")),
        raw=raw,
    )


def _json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {}


def answer(event: HookEvent, context: str | None) -> str:
    """What the hook prints on stdout: the client's answer, with `context` for the model when
    the event can carry it; "" when the client wants nothing."""
    if event.client == CURSOR:
        if event.kind == SESSION_START:
            body: dict[str, Any] = {"continue": True}
            if context:
                body["additional_context"] = context
            return json.dumps(body, ensure_ascii=False)
        if event.kind == PROMPT:
            return json.dumps({"continue": True})
        return "{}"
    if context and event.kind in (SESSION_START, PROMPT):
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": context}}, ensure_ascii=False
        )
    return ""


def takes_context(event: HookEvent) -> bool:
    """Whether the client shows the model context returned for this event."""
    if event.kind == SESSION_START:
        return True
    return event.kind == PROMPT and event.client == CLAUDE_CODE

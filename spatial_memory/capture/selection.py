"""Which parts of a hook event are worth remembering, as `Captured` items (not yet redacted).

Tool uses (speaker "tool"):
  - a file edited or written: which file and the first changed line;
  - a shell command that failed: the command and its first error line;
  - a command that passes again after failing in this session: the fix, with the error it had
    and the files edited in between (the most useful memory a session leaves);
  - a commit or a dependency change that succeeded;
  - nothing for reads, searches, listings, fetches or a command that simply passed.
Procedures (kind "procedure", proposed at low confidence: services/procedures.py stores them
captured, and live once they are seen to work again):
  - fail-edit-pass: a command that failed, the edits after it, and the same command passing -
    "to fix this error, do this"; the same error fixed again (in another session) confirms it;
  - a routine: ROUTINE_LENGTH commands (not reads or listings) run one after the other, passing,
    in ROUTINE_SESSIONS sessions; seen in one more session, it is confirmed.
Text (the user's prompts, the assistant's messages; speaker "user" / "assistant"): the
statements text/extraction.py's pattern rules score at MIN_CONFIDENCE or above (decisions,
preferences, root causes, requirements, explicit notes, ...), at most MAX_PER_MESSAGE of them.

These rules were written after tests/fixtures/hooks/labelled_session.json was labelled;
benchmarks/capture_quality.py scores them against it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MIN_CONFIDENCE = 0.5
MAX_PER_MESSAGE = 4
MIN_TEXT_CHARS = 20
MAX_CONTENT_CHARS = 1000
MAX_LINE_CHARS = 200
MAX_FIX_STEPS = 5  # edits kept as steps of a fix procedure
MAX_RAN = 200  # commands of a session kept for its routines
ROUTINE_LENGTH = 3
ROUTINE_SESSIONS = 2  # a routine is proposed once seen in this many sessions
MAX_ROUTINES = 2_000  # routine windows remembered across sessions

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "edit_file", "write"})
SHELL_TOOLS = frozenset({"Bash", "Shell", "run_terminal_cmd"})

# A line of output that says something went wrong.
_ERROR_LINE = re.compile(
    r"(?:^|\s)(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception):|FAILED\b|FAIL:|"
    r"error(?:\[\w+\])?:|fatal:|panic:|npm ERR!|ERR!|command not found|No such file or directory|"
    r"Permission denied|Found \d+ errors?\b|\d+ (?:failed|errors?)\b)",
)
# Lines of a traceback that only say where: the error line after them is the useful one.
_LOCATION_LINE = re.compile(r"^\s*(?:File \"|at |Traceback|\^|~)")
_COUNT_LINE = re.compile(r"(?i)^(?:found \d+ errors?|\d+ (?:failed|errors?))\b")
_PASSED = re.compile(r"(?i)\b(?:0 failed|all checks passed|no errors?|\d+ passed)\b")
_COMMIT = re.compile(r"^\s*git\s+commit\b")
# Commands that only look (a routine is what changes something or checks it).
_READ_ONLY = re.compile(
    r"^\s*(?:ls|ll|cd|pwd|cat|less|more|head|tail|echo|printf|grep|rg|ag|find|fd|tree|wc|which|whoami|env|"
    r"clear|history|man|file|stat|du|df|ps|top|git\s+(?:status|diff|log|show|branch|remote|blame|stash\s+list))\b"
)
_DEPENDENCY = re.compile(
    r"^\s*(?:(?:uv\s+)?pip3?\s+install|uv\s+(?:add|remove)|poetry\s+(?:add|remove)|npm\s+(?:install|i|uninstall)\s+\S|"
    r"yarn\s+(?:add|remove)|pnpm\s+(?:add|remove)|cargo\s+(?:add|remove)|go\s+get)\b"
)


class Captured:
    """One memory to store, as selected (a plain class: a hook does not import dataclasses)."""

    def __init__(
        self,
        content: str,
        speaker: str,  # user | assistant | tool
        kind: str,  # statement | file_edit | command_failed | fix | command | session_summary
        importance: float,
        tags: list[str] | None = None,
        ref: str | None = None,  # the transcript entry or tool use it came from
        occurred_at: str | None = None,
        procedure: dict[str, Any] | None = None,  # kind "procedure": what build_skill takes, and a fingerprint
    ) -> None:
        self.content, self.speaker, self.kind, self.importance = content, speaker, kind, importance
        self.tags, self.ref, self.occurred_at, self.procedure = tags or [], ref, occurred_at, procedure

    def __repr__(self) -> str:
        return f"Captured({self.kind}, {self.speaker}, {self.content[:60]!r})"


# ---- tool uses ------------------------------------------------------------------------------


def from_tool_use(
    tool_name: str | None, tool_input: dict[str, Any], tool_response: Any, state: dict[str, Any], project: str
) -> list[Captured]:
    """What to keep from one tool use; updates the session state (failures, edited files, counts)."""
    if tool_name in EDIT_TOOLS:
        return _file_edit(tool_name, tool_input, state, project)
    if tool_name in SHELL_TOOLS:
        return _shell(str(tool_input.get("command") or ""), tool_response, state)
    return []


def _file_edit(tool_name: str, tool_input: dict[str, Any], state: dict[str, Any], project: str) -> list[Captured]:
    raw_path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if not isinstance(raw_path, str) or not raw_path:
        return []
    path = _relative(raw_path, project)
    edited = state.setdefault("edited", [])
    if path not in edited:
        edited.append(path)
    if tool_name == "Write" or "content" in tool_input:
        content = str(tool_input.get("content") or "")
        first = _first_meaningful(content)
        lines = content.count("\n") + bool(content and not content.endswith("\n"))
        what = f"Wrote {path} ({lines} lines)" + (f": {first}" if first else "")
    else:
        changes = tool_input.get("edits") if isinstance(tool_input.get("edits"), list) else [tool_input]
        first = ""
        for change in changes:
            if isinstance(change, dict):
                first = _changed_line(str(change.get("old_string") or ""), str(change.get("new_string") or ""))
                if first:
                    break
        what = f"Edited {path}" + (f": now `{first}`" if first else "")
    for failure in state.get("failures", {}).values():
        if path not in failure["edits"]:
            failure["edits"].append(path)
        changes = failure.setdefault("changes", [])
        if len(changes) < MAX_FIX_STEPS:
            changes.append(what)
    return [Captured(what, "tool", "file_edit", 0.45, ["file-edit"])]


def _shell(command: str, response: Any, state: dict[str, Any]) -> list[Captured]:
    command = " ".join(command.split())
    if not command:
        return []
    state["commands"] = state.get("commands", 0) + 1
    output = _output_of(response)
    key = _command_key(command)
    failures = state.setdefault("failures", {})
    error = _error_line(output)
    if error is None and _exit_failed(response):
        error = _first_meaningful(output) or "a non-zero exit status"
    shown = _clip(command, MAX_LINE_CHARS)
    if error is not None:
        state["failed"] = state.get("failed", 0) + 1
        failures[key] = {"command": shown, "error": error, "edits": []}
        return [Captured(f"Command `{shown}` failed: {error}", "tool", "command_failed", 0.6, ["error"])]
    if not _READ_ONLY.match(command):
        ran = state.setdefault("ran", [])
        ran.append(shown)
        del ran[:-MAX_RAN]
    failed = failures.pop(key, None)
    if failed is not None:
        state["fixed"] = state.get("fixed", 0) + 1
        edits = failed["edits"]
        after = f" after editing {', '.join(edits[:5])}" if edits else ""
        content = f"Fixed: `{shown}` passes now{after}; it had failed with: {failed['error']}"
        found = [Captured(content, "tool", "fix", 0.8, ["solution", "fix"])]
        if edits:  # a rerun that passes without an edit is a flaky check, not a fix
            found.append(_fix_procedure(shown, key, failed))
        return found
    if _COMMIT.match(command) or _DEPENDENCY.match(command):
        first = _first_meaningful(output)
        content = f"Ran `{shown}`" + (f": {first}" if first else "")
        return [Captured(content, "tool", "command", 0.5, ["command"])]
    return []


def _fix_procedure(shown: str, key: str, failed: dict[str, Any]) -> Captured:
    """The procedure a fail-edit-pass sequence shows: run, read the error, make the edits, run again."""
    error = failed["error"]
    steps = [{"action": f"Run `{shown}`; it fails with: {error}", "tool": "Bash"}]
    steps += [{"action": change, "tool": "Edit"} for change in failed.get("changes", [])[:MAX_FIX_STEPS]]
    steps.append({"action": f"Run `{shown}` again", "tool": "Bash", "result": "it passes"})
    trigger = f"`{shown}` fails with: {error}"
    procedure = {
        "name": _clip(f"fix {_error_kind(error)} in {key}", 64),
        "trigger_pattern": trigger,
        "domain": "coding",
        "steps": steps,
        "fingerprint": "fix:" + key + ":" + _error_shape(error),
    }
    content = f"To fix {trigger}: " + "; then ".join(step["action"] for step in steps[1:])
    return Captured(_clip(content, MAX_CONTENT_CHARS), "tool", "procedure", 0.3, ["procedure"], procedure=procedure)


def routines(state: dict[str, Any], seen: dict[str, Any], session_id: str) -> list[Captured]:
    """At a session's end: the routines it ran (ROUTINE_LENGTH passing commands in a row, no reads)
    that `seen` (the routines of earlier sessions, updated here) shows in ROUTINE_SESSIONS sessions
    or more, as procedures. Windows overlapping one already taken in this session are skipped."""
    ran = state.get("ran", [])
    found: list[Captured] = []
    taken_until = -1
    for start in range(len(ran) - ROUTINE_LENGTH + 1):
        window = ran[start : start + ROUTINE_LENGTH]
        if len({_command_key(c) for c in window}) < ROUTINE_LENGTH:
            continue  # the same check rerun is not a routine
        fingerprint = "routine:" + " | ".join(_command_key(c) for c in window)
        entry = seen.setdefault(fingerprint, {"sessions": []})
        if session_id not in entry["sessions"]:
            entry["sessions"] = [*entry["sessions"], session_id][-ROUTINE_SESSIONS * 4 :]
        if len(entry["sessions"]) < ROUTINE_SESSIONS or start <= taken_until:
            continue
        taken_until = start + ROUTINE_LENGTH - 1
        steps = [{"action": f"Run `{command}`", "tool": "Bash"} for command in window]
        procedure = {
            "name": _clip("routine: " + " then ".join(_command_key(c) for c in window), 64),
            "trigger_pattern": "the usual sequence: " + ", ".join(f"`{c}`" for c in window),
            "domain": "devops",
            "steps": steps,
            "fingerprint": fingerprint,
        }
        content = "Routine, run in several sessions: " + "; then ".join(f"`{c}`" for c in window)
        found.append(
            Captured(_clip(content, MAX_CONTENT_CHARS), "tool", "procedure", 0.3, ["procedure"], procedure=procedure)
        )
    while len(seen) > MAX_ROUTINES:  # the oldest first (dicts keep insertion order)
        seen.pop(next(iter(seen)))
    return found


def _error_kind(error: str) -> str:
    """A few words naming an error: its exception or tool code, else its first words."""
    named = re.search(r"([A-Z]\w*(?:Error|Exception))|(error\[\w+\])|\b([A-Z]{1,4}\d{2,4})\b", error)
    if named:
        return next(g for g in named.groups() if g)
    return " ".join(error.split()[:4])


def _error_shape(error: str) -> str:
    """An error without what changes between occurrences of it (numbers, quoted names, paths)."""
    shape = re.sub(r"(['\"`]).*?\1", "''", error.lower())
    shape = re.sub(r"[\w./-]*/[\w./-]*", "<path>", shape)
    return re.sub(r"\d+", "<n>", " ".join(shape.split()))[:120]


def _output_of(response: Any) -> str:
    if isinstance(response, dict):
        parts = [response.get(k) for k in ("stdout", "stderr", "output", "error")]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return response if isinstance(response, str) else ""


def _exit_code(response: Any) -> int | None:
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "return_code"):
            if isinstance(response.get(key), int):
                return response[key]
    return None


def _exit_failed(response: Any) -> bool:
    code = _exit_code(response)
    return (code is not None and code != 0) or (isinstance(response, dict) and response.get("interrupted") is True)


def _error_line(output: str) -> str | None:
    """The line of the output that best says what went wrong (the last error line of a traceback)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    hits = [i for i, line in enumerate(lines) if _ERROR_LINE.search(" " + line) and not _PASSED.search(line)]
    hits = [i for i in hits if not _LOCATION_LINE.match(lines[i])]
    if not hits:
        return None
    # After a traceback, its last error line names the exception; otherwise the first error line.
    traceback = any(line.startswith("Traceback") for line in lines)
    at = hits[-1] if traceback else hits[0]
    line = lines[at]
    if _COUNT_LINE.match(line) and at > 0:  # "Found 1 error.": the line before says which
        line = f"{lines[at - 1]} ({line})"
    return _clip(line, MAX_LINE_CHARS)


def _command_key(command: str) -> str:
    """Commands that count as the same check: the words without options, first four."""
    words = [w for w in command.split() if not w.startswith("-")]
    return " ".join(words[:4])


# ---- text -----------------------------------------------------------------------------------


def from_text(text: str, speaker: str, *, ref: str | None = None, occurred_at: str | None = None) -> list[Captured]:
    """The memorable statements of a prompt or message (text/extraction.py's rules)."""
    if not text or len(text.strip()) < MIN_TEXT_CHARS:
        return []
    from ..text.extraction import extract_candidates  # its regexes compile slowly: only when there is text

    candidates = extract_candidates(text, min_confidence=MIN_CONFIDENCE)
    best = sorted(candidates, key=lambda c: -c.confidence)[:MAX_PER_MESSAGE]
    return [
        Captured(
            _clip(c.content, MAX_CONTENT_CHARS),
            speaker,
            "statement",
            round(min(1.0, max(0.0, c.confidence)), 3),
            [c.pattern_matched],
            ref=ref,
            occurred_at=occurred_at,
        )
        for c in sorted(best, key=lambda c: c.start_pos)
    ]


# ---- the session summary --------------------------------------------------------------------


def remember_highlights(state: dict[str, Any], items: list[Captured]) -> None:
    """Keep the session's strongest statements and fixes for its summary."""
    highlights = state.setdefault("highlights", [])
    for item in items:
        text = _clip(item.content, 160)
        if item.kind in ("statement", "fix") and all(h[1] != text for h in highlights):
            highlights.append([item.importance, text])
    highlights.sort(key=lambda h: -h[0])
    del highlights[5:]


def session_summary(state: dict[str, Any], namespace: str, date: str) -> Captured | None:
    edited = state.get("edited", [])
    highlights = [h[1] for h in state.get("highlights", [])]
    if not edited and not highlights and not state.get("commands"):
        return None
    parts = [f"Session summary ({namespace}, {date}):"]
    if edited:
        more = f" and {len(edited) - 8} more" if len(edited) > 8 else ""
        parts.append(f"edited {', '.join(edited[:8])}{more};")
    if state.get("commands"):
        parts.append(
            f"ran {state['commands']} commands ({state.get('failed', 0)} failed, {state.get('fixed', 0)} fixed);"
        )
    if highlights:
        parts.append("highlights: " + " | ".join(highlights))
    return Captured(" ".join(parts).rstrip(";"), "assistant", "session_summary", 0.7, ["session-summary"])


# ---- helpers --------------------------------------------------------------------------------


def _relative(path: str, project: str) -> str:
    try:
        relative = os.path.relpath(path, project)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def _changed_line(old: str, new: str) -> str:
    """The first line of `new` that `old` does not have."""
    old_lines = {line.strip() for line in old.splitlines()}
    changed = [line.strip() for line in new.splitlines() if line.strip() and line.strip() not in old_lines]
    telling = [line for line in changed if len(line) >= 12]  # "try:" or "}" says little
    return _clip((telling or changed or [""])[0], MAX_LINE_CHARS)


def _first_meaningful(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if len(line) > 3 and not line.startswith(("#!", "import ", "from ", "//", "/*", '"""', "'''")):
            return _clip(line, MAX_LINE_CHARS)
    return ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

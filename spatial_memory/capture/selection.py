"""Which parts of a hook event are worth remembering, as `Captured` items (not yet redacted).

Tool uses (speaker "tool"):
  - files edited or written: held in the session's state and kept when the turn ends, one memory
    per file per turn (edits_of_turn) with its telling changed lines and the line naming where
    they are (a configuration file: its settings; a new file: its size, names and opening lines);
  - a shell command that failed (by its exit status when known, else by its output): the command
    and its error with the lines that explain it;
  - a command that passes again after failing in this session, or the same program and
    subcommand run differently: the fix, with the error it had and the files edited in between
    (the most useful memory a session leaves);
  - a commit or a dependency change that succeeded;
  - nothing for reads, searches, listings, fetches or a command that simply passed (the programs
    a session runs are named in its summary).
Procedures (kind "procedure", proposed at low confidence: services/procedures.py stores them
captured, and live once they are seen to work again in another session):
  - fail-edit-pass: a command that failed, the edits after it, and the same command passing -
    "to fix this error, do this", named after the error and the command;
  - a routine: ROUTINE_LENGTH commands (not reads or listings) run one after the other, passing,
    in ROUTINE_SESSIONS sessions; seen in one more session, it is confirmed.
Text (the user's prompts, the assistant's messages; speaker "user" / "assistant"): whole turns,
as capture/turns.py chooses them - what the person states, the assistant's answer at a turn's end
and its conclusions, not narration; a turn the rules leave is spooled as a candidate that the
store keeps only if the memorability classifier admits it (capture/memorable.py).

tests/fixtures/hooks/labelled_session.json was labelled before the first rules were written;
benchmarks/capture_quality.py scores them against it, ../shared/eval/capture/ on real sessions.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MIN_TEXT_CHARS = 20
MAX_CONTENT_CHARS = 1300
USER_IMPORTANCE = 0.7  # what the person said: requirements, facts, preferences, decisions
ANSWER_IMPORTANCE = 0.6  # the assistant's answer at a turn's end
CONCLUSION_IMPORTANCE = 0.55  # a conclusion in the middle of a turn
CANDIDATE_IMPORTANCE = 0.5  # a turn the rules left, kept only if the classifier admits it
CANDIDATE_TAG = "candidate"
MAX_LINE_CHARS = 200
MAX_FIX_STEPS = 5  # edits kept as steps of a fix procedure
MAX_RAN = 200  # commands of a session kept for its routines
MAX_PROGRAMS = 12  # named in the session summary
ROUTINE_LENGTH = 3
ROUTINE_SESSIONS = 2  # a routine is proposed once seen in this many sessions
MAX_ROUTINES = 2_000  # routine windows remembered across sessions

MAX_EDIT_CHARS = 700  # of a written configuration file's settings
MAX_PART_CHARS = 500  # of one edit's description
MAX_PARTS = 8  # edits of one file in a turn remembered
MAX_CHANGED_LINES = 4  # of one change
WRITTEN_LINES = 4  # of a new file's opening (its header comment says what it is)

# A configuration file: its settings are facts a developer asks for.
_CONFIG_FILE = re.compile(
    r"(?:^|/)(?:\.env[\w.]*|[\w.-]+\.(?:toml|ya?ml|ini|cfg|conf|properties|exs|env)|Dockerfile|Makefile|"
    r"docker-compose[\w.-]*|settings\.\w+|config\.\w+)$"
)
_SETTING = re.compile(r"^[\w.\-\[\]\"':]+\s*(?:=|:|\s)\s*\S|^\[[\w.\- ]+\]$|^config\s+:|^export\s+\w+=")
# A line that says where a change is: a definition, a section, a key opening a block, a heading.
_NAMING = re.compile(
    r"^\s*(?:(?:async\s+)?def\s|class\s|(?:export\s+)?(?:async\s+)?function\s|(?:pub\s+)?fn\s|func\s|defp?\s|"
    r"defmodule\s|describe\s|test\s|it\s*\(|#{1,6}\s|\[[\w.\- ]+\]\s*$|[\w.\-\"']+\s*[:=]\s*[{\[(]?\s*$|"
    r"(?:const|let|var)\s+\w+\s*=\s*(?:function|\(|async))|^\s*\w+\s*\([^)]*\)\s*\{\s*$"
)
_DEFINES = re.compile(
    r"^(?:(?:async\s+)?def|class|(?:export\s+)?(?:async\s+)?function|(?:pub\s+)?fn|func|defp?|defmodule)\s+([\w.]+)"
)
_IMPORT = re.compile(r"^(?:import|from\s+\S+\s+import|alias|require|use|include|using|#include|@import)\b")
_VALUE_SET = re.compile(r"(?:[=:(,]|=>)\s*(?:[\"'][^\"']+[\"']|-?\d[\d.]*\b|:\w+|true|false)")
_TRIVIAL = re.compile(r"^(?:[{}()\[\];,]+|end|else:?|try:|\}\s*else\s*\{|pass|return;?|break;?)$")

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "edit_file", "write"})
SHELL_TOOLS = frozenset({"Bash", "Shell", "run_terminal_cmd"})

# A line of output that says something went wrong.
_ERROR_LINE = re.compile(
    r"(?:^|\s)(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception):|\*\* \([\w.]+\)|FAILED\b|FAIL:|"
    r"error(?:\[\w+\])?:|fatal:|panic:|npm ERR!|ERR!|command not found|No such file or directory|"
    r"Permission denied|Found \d+ errors?\b|\d+ (?:failed|errors?|failures?)\b|[Aa]ssertion\b.{0,40}\bfailed\b)",
)
_EXIT_LINE = re.compile(r"^(?:Error:\s*)?Exit code (-?\d+)\s*$", re.MULTILINE)
_REJECTED = re.compile(r"^\s*(?:User rejected tool use|The user doesn't want to proceed with this tool use)")
MAX_ERROR_CHARS = 300
ERROR_CONTEXT_LINES = 2  # lines after an error line kept with it: the hint, the cause
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
        self.also: list[str] = []  # further tool uses it was made from (the edits of one file in a turn)

    def __repr__(self) -> str:
        return f"Captured({self.kind}, {self.speaker}, {self.content[:60]!r})"


# ---- tool uses ------------------------------------------------------------------------------


def from_tool_use(
    tool_name: str | None,
    tool_input: dict[str, Any],
    tool_response: Any,
    state: dict[str, Any],
    project: str,
    ref: str | None = None,
) -> list[Captured]:
    """What to keep from one tool use (`ref`: its id); updates the session state (failures, edited
    files, counts, the turn's edits)."""
    if tool_name in EDIT_TOOLS:
        return _file_edit(tool_name, tool_input, state, project, ref)
    if tool_name in SHELL_TOOLS:
        return _shell(str(tool_input.get("command") or ""), tool_response, state)
    return []


def _file_edit(
    tool_name: str, tool_input: dict[str, Any], state: dict[str, Any], project: str, ref: str | None
) -> list[Captured]:
    """An edit is held in the session's state until its turn ends (edits_of_turn): several edits
    of one file in a turn are one memory of what changed in it."""
    raw_path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if not isinstance(raw_path, str) or not raw_path:
        return []
    path = _relative(raw_path, project)
    edited = state.setdefault("edited", [])
    if path not in edited:
        edited.append(path)
    config = _CONFIG_FILE.search(path) is not None
    if tool_name == "Write" or "content" in tool_input:
        content = str(tool_input.get("content") or "")
        what = _written(content, config)
        verb = "Wrote"
    else:
        edits = tool_input.get("edits")
        changes: list[Any] = edits if isinstance(edits, list) else [tool_input]
        what = [
            _changed(str(change.get("old_string") or ""), str(change.get("new_string") or ""), config)
            for change in changes
            if isinstance(change, dict)
        ]
        what = [w for w in what if w]
        verb = "Edited"
    pending = state.setdefault("turn_edits", {})
    entry = pending.setdefault(path, {"verb": verb, "parts": [], "refs": []})
    if ref and ref not in entry["refs"] and len(entry["refs"]) < MAX_PARTS:
        entry["refs"].append(ref)
    if verb == "Wrote":
        entry["verb"] = "Wrote"
    for part in what:
        if part and part not in entry["parts"]:
            entry["parts"] = [*entry["parts"], _clip(part, MAX_PART_CHARS)][-MAX_PARTS:]
    step = f"{verb} {path}" + (f": {_clip(what[0], MAX_LINE_CHARS)}" if what else "")
    for failure in state.get("failures", {}).values():
        if path not in failure["edits"]:
            failure["edits"].append(path)
        steps = failure.setdefault("changes", [])
        if len(steps) < MAX_FIX_STEPS:
            steps.append(step)
    return []


def edits_of_turn(state: dict[str, Any]) -> list[Captured]:
    """At a turn's end: one memory per file edited in it, with what changed and what names it."""
    found = []
    for path, entry in state.pop("turn_edits", {}).items():
        parts, shown, size = entry["parts"], [], 0
        for part in reversed(parts):  # the latest changes first, when they do not all fit
            if size + len(part) > MAX_CONTENT_CHARS - len(path) - 16 and shown:
                break
            shown.insert(0, part)
            size += len(part) + 1
        content = f"{entry['verb']} {path}" + (":\n" + "\n".join(shown) if shown else "")
        refs: list[str] = entry.get("refs") or []
        first = refs[0] if refs else None
        item = Captured(_clip(content, MAX_CONTENT_CHARS), "tool", "file_edit", 0.45, ["file-edit"], first)
        item.also = refs[1:]  # the other edits this memory holds
        found.append(item)
    return found


def _shell(command: str, response: Any, state: dict[str, Any]) -> list[Captured]:
    command = " ".join(command.split())
    if not command:
        return []
    state["commands"] = state.get("commands", 0) + 1
    output = _output_of(response)
    if _REJECTED.match(output):
        return []  # never ran
    key = _command_key(command)
    failures = state.setdefault("failures", {})
    code = _exit_code(response)
    # A command that exited 0 passed, whatever its output says ("3 FAILED extractions" in a report).
    error = None if code == 0 else _error_line(output)
    if error is None and _exit_failed(response):
        error = _first_meaningful(output) or "a non-zero exit status"
    shown = _clip(command, MAX_LINE_CHARS)
    if error is not None:
        state["failed"] = state.get("failed", 0) + 1
        failures[key] = {"command": shown, "error": error, "edits": []}
        return [Captured(f"Command `{shown}` failed: {error}", "tool", "command_failed", 0.6, ["error"])]
    if not _READ_ONLY.match(command):
        program = _program(command)
        if program:
            programs = state.setdefault("programs", {})
            if program in programs or len(programs) < MAX_RAN:
                programs[program] = programs.get(program, 0) + 1
        ran = state.setdefault("ran", [])
        ran.append(shown)
        del ran[:-MAX_RAN]
    failed = failures.pop(key, None)
    if failed is None and not _READ_ONLY.match(command):
        failed = _same_program_failure(failures, key)
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


def _same_program_failure(failures: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The failure a passing command fixes when it is the same program and subcommand run
    differently (`git push` failed, `git push --set-upstream origin main` passed): the most recent."""
    program = " ".join(key.split()[:2])
    if len(program.split()) < 2 or _READ_ONLY.match(key):  # a look is not a fix
        return None
    for other in reversed(list(failures)):
        if " ".join(other.split()[:2]) == program:
            return failures.pop(other)
    return None


def _error_kind(error: str) -> str:
    """A few words naming an error: its exception or tool code, else its first words."""
    named = re.search(r"([A-Z]\w*(?:Error|Exception))|(error\[\w+\])|\b([A-Z]{1,4}\d{2,4})\b", error)
    if named:
        return next(g for g in named.groups() if g)
    said = re.search(r"(?i)\b(?:fatal|error|panic)\b:?\s*([^.:;]{3,40})", error)
    return " ".join(said.group(1).split()[:5]) if said else "a failure"


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
    stated = _EXIT_LINE.match(_output_of(response).lstrip())
    return int(stated.group(1)) if stated else None


def _exit_failed(response: Any) -> bool:
    code = _exit_code(response)
    return (code is not None and code != 0) or (isinstance(response, dict) and response.get("interrupted") is True)


def _error_line(output: str) -> str | None:
    """What the output says went wrong: the error line (the last one of a traceback, else the
    first) with the lines after it that explain it (a hint, the cause), up to MAX_ERROR_CHARS."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not _EXIT_LINE.match(line.strip())]
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
    for following in lines[at + 1 : at + 1 + ERROR_CONTEXT_LINES]:
        if _LOCATION_LINE.match(following) or len(line) + len(following) > MAX_ERROR_CHARS:
            break
        line += " " + following
    return _clip(line, MAX_ERROR_CHARS)


def _program(command: str) -> str:
    """The program and its subcommand (`git push`, `mix test`, `bd ready`), after any `cd X &&`."""
    command = re.sub(r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*)+", "", command)
    words = command.split()[:2]
    if not words or not re.fullmatch(r"[a-z][\w.+-]*", words[0]):
        return ""
    subcommand = len(words) > 1 and re.fullmatch(r"[a-z][\w:-]*", words[1])
    return " ".join(words[:2]) if subcommand else words[0]


def _command_key(command: str) -> str:
    """Commands that count as the same check: the words without options, first four."""
    words = [w for w in command.split() if not w.startswith("-")]
    return " ".join(words[:4])


# ---- text -----------------------------------------------------------------------------------


def from_text(
    text: str, speaker: str, *, ref: str | None = None, occurred_at: str | None = None, final: bool = True
) -> list[Captured]:
    """What a prompt or message leaves (capture/turns.py): the user's statements, the assistant's
    answer at the end of a turn (`final`) or its conclusions in the middle of one."""
    if not text or len(text.strip()) < MIN_TEXT_CHARS and speaker != "user":
        return []
    from . import turns  # the prose rules: only when there is text

    if speaker == "user":
        kept, importance, tag = turns.user_turn(text), USER_IMPORTANCE, "said"
    elif final:
        kept, importance, tag = turns.assistant_turn(text, final=True), ANSWER_IMPORTANCE, "answer"
    else:
        kept, importance, tag = turns.assistant_turn(text, final=False), CONCLUSION_IMPORTANCE, "conclusion"
    if not kept:  # the store's classifier (memorable.py) may still find it worth keeping
        kept, importance, tag = turns.candidate(text, speaker), CANDIDATE_IMPORTANCE, CANDIDATE_TAG
        tag = f"{tag}-answer" if final and speaker == "assistant" else tag
    return [
        Captured(_clip(chunk, MAX_CONTENT_CHARS), speaker, "statement", importance, [tag], ref, occurred_at)
        for chunk in kept
    ]


# ---- the session summary --------------------------------------------------------------------


def remember_highlights(state: dict[str, Any], items: list[Captured]) -> None:
    """Keep the session's strongest statements and fixes for its summary."""
    highlights = state.setdefault("highlights", [])
    for item in items:
        text = _clip(item.content, 160)
        candidate = any(t.startswith(CANDIDATE_TAG) for t in item.tags)  # not kept yet: the store decides
        if item.kind in ("statement", "fix") and not candidate and all(h[1] != text for h in highlights):
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
    programs = state.get("programs", {})
    if programs:  # the project's tools, most used first
        used = sorted(programs, key=lambda k: -programs[k])[:MAX_PROGRAMS]
        parts.append("commands used: " + ", ".join(f"`{u}`" for u in used) + ";")
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


def _changed(old: str, new: str, config: bool) -> str:
    """What an edit changed: its changed lines (up to MAX_CHANGED_LINES, the telling ones first
    kept in order), under the line that names where they are (the function, class, section or key
    above the first of them); in a configuration file, every setting of the new text."""
    old_lines = {line.strip() for line in old.splitlines()}
    lines = new.splitlines()
    changed = [i for i, line in enumerate(lines) if line.strip() and line.strip() not in old_lines]
    if not changed:
        removed = [line.strip() for line in old.splitlines() if line.strip() and line.strip() not in new]
        return ("removed: " + " / ".join(removed[:3])) if removed else ""
    telling = [i for i in changed if not _TRIVIAL.match(lines[i].strip())]
    # A line that sets a value says most; an import says least. Kept in the file's order.
    best = sorted(telling, key=lambda i: -_telling(lines[i].strip()))[:MAX_CHANGED_LINES]
    shown = [lines[i].strip() for i in sorted(best)]
    if config:  # the settings around the change say what it configures (a host beside a port)
        settings = [line.strip() for line in lines if _SETTING.match(line.strip())]
        shown = list(dict.fromkeys(shown + settings))[: MAX_CHANGED_LINES * 2]
    where = ""
    for i in range(changed[0], -1, -1):
        if _NAMING.match(lines[i]) and lines[i].strip() not in shown:
            where = lines[i].strip()
            break
    body = "\n".join(_clip(line, MAX_LINE_CHARS) for line in shown)
    return (f"in `{_clip(where, 120)}`: " if where else "") + body


def _telling(line: str) -> int:
    if _IMPORT.match(line):
        return 0
    return 2 if _VALUE_SET.search(line) else 1


def _written(content: str, config: bool) -> list[str]:
    """What a written file holds, in short: its settings (configuration), else the names it
    defines and its first meaningful line."""
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    if not lines:
        return []
    if config:
        return [
            "\n".join(line for line in lines if _SETTING.match(line))[:MAX_EDIT_CHARS] or _first_meaningful(content)
        ]
    names = [m.group(1) for line in lines if (m := _DEFINES.match(line))]
    head = f"{len(lines)} lines" + (f"; defines {', '.join(dict.fromkeys(names[:12]))}" if names else "")
    opening = [line for line in lines[:16] if not line.startswith("#!") and not _IMPORT.match(line) and len(line) > 3]
    return [head + "\n" + "\n".join(_clip(line, MAX_LINE_CHARS) for line in opening[:WRITTEN_LINES])]


def _first_meaningful(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if _EXIT_LINE.match(line):
            continue
        if len(line) > 3 and not line.startswith(("#!", "import ", "from ", "//", "/*", '"""', "'''")):
            return _clip(line, MAX_LINE_CHARS)
    return ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

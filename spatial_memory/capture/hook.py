"""`spatial-memory hook <event>`: one client hook invocation, from stdin JSON to the spool.

Fast path: a tool use imports only the standard library and capture's own small modules (no
pydantic, numpy, LanceDB or onnxruntime; text/extraction.py only when there is prose to read),
appends what it keeps to the spool and exits. Only SessionStart and UserPromptSubmit open the
store, for their context, within a time budget. stdout carries nothing but the client's answer;
logs go to stderr.

Exit status: 0 when everything kept was spooled (acknowledged), 1 when spooling failed (both
clients treat it as a non-blocking error and go on); a malformed payload is logged and ignored
with 0, so a hook is never in the client's way.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..text.secrets import redact, redact_value
from . import payloads as p
from .namespace import project_namespace, project_root
from .records import now_iso, to_record
from .selection import edits_of_turn, from_text, from_tool_use, remember_highlights, session_summary
from .selection import routines as find_routines
from .session_state import routines_seen, session_state
from .spool import Spool

INGEST_ENV = "SPATIAL_MEMORY_CAPTURE_INGEST"  # Settings.capture_ingest: false = no one ingests on their own
CONTEXT_SECONDS = {p.SESSION_START: 10.0, p.PROMPT: 5.0}  # well inside the hook timeouts setup.py sets
CONTEXT_ENV = "SPATIAL_MEMORY_CAPTURE_CONTEXT_SECONDS"
MAX_OUTPUT_CHARS = 32_000  # of a tool's output, read for errors: its head and tail
# Events after which a background ingester is started when no server would ingest (not at
# SessionStart: the client is starting its MCP server then, which ingests on its own).
_INGEST_AFTER = (p.STOP, p.SESSION_END, p.PRE_COMPACT)


def run(event_name: str, *, client: str | None = None, store: str | None = None, stdin: bytes | None = None) -> int:
    raw = sys.stdin.buffer.read() if stdin is None else stdin
    try:
        event = p.parse(event_name, raw.decode("utf-8", "replace"), client)
    except Exception as exc:  # noqa: BLE001 - a hook must never stand in the client's way
        _warn(f"spatial-memory hook {event_name}: ignoring the input: {exc}")
        _answer(p.HookEvent(client or p.client_of(event_name), event_name, p.OTHER, "", ""), None)
        return 0
    store_path = store_directory(store)
    spool = Spool(store_path)
    namespace = project_namespace(event.cwd)
    status = 0
    try:
        capture(event, spool, namespace)
    except Exception as exc:  # noqa: BLE001
        _warn(f"spatial-memory hook {event.name}: could not spool the capture: {type(exc).__name__}: {exc}")
        status = 1
    context = None
    if p.takes_context(event):
        context = _context(event, store_path, namespace)
    _answer(event, context)
    if event.kind in _INGEST_AFTER:
        start_ingester_if_idle(spool, store_path)
    if context is not None and _context_still_running():
        # A context part that missed the budget is still loading the model or the store: do not
        # wait for it at interpreter exit. Everything the client needs is written and flushed.
        sys.stderr.flush()
        os._exit(status)
    return status


def capture(event: p.HookEvent, spool: Spool, namespace: str, *, write: bool = True) -> list[dict]:
    """The spool records for this event (redacted), appended to the spool (unless `write` is
    False), and the session's state updated. The records are spooled before the state is saved,
    under its lock: a hook killed in between leaves the transcript offset where it was, so the
    next hook reads those messages again (same ids: stored once) instead of skipping them."""
    project = str(project_root(event.cwd))
    with session_state(spool.dir, event.client, event.session_id) as state:
        messages = []
        if event.kind in (p.PRE_COMPACT, p.STOP, p.SESSION_END) and event.transcript_path:
            from .transcript import read_since  # a hook process imports only what its event needs

            messages, state["transcript_offset"] = read_since(event.transcript_path, state["transcript_offset"])
        if event.kind == p.SESSION_END:
            with routines_seen(spool.dir) as seen:
                items = selected(event, state, project, namespace, messages, routines=seen)
        else:
            items = selected(event, state, project, namespace, messages)
        records = records_of(items, event, namespace)
        if write:
            spool.append(records)
    return records


def selected(
    event: p.HookEvent,
    state: dict,
    project: str,
    namespace: str,
    messages: Sequence = (),
    *,
    date: str | None = None,
    routines: dict | None = None,
) -> list:
    """What one event (and the transcript messages read with it) leaves to remember, redacted; the
    session's `state` updated; `date`: the session summary's (today); `routines`: the routines of
    earlier sessions, read at the session's end. Shared by the hooks and by backfill."""
    items = []
    if event.kind == p.PROMPT and event.prompt:
        items += from_text(redact(event.prompt), "user", occurred_at=now_iso())
    elif event.kind in (p.TOOL_USE, p.FILE_EDIT, p.SHELL):
        response = redact_value(_bounded(event.tool_response))
        found = from_tool_use(
            event.tool_name, redact_value(event.tool_input), response, state, project, event.tool_use_id
        )
        for item in found:
            item.ref = event.tool_use_id
        items += found
    elif event.kind == p.ASSISTANT_TEXT and event.text:
        items += from_text(redact(event.text), "assistant", ref=event.tool_use_id, occurred_at=now_iso())
    turn_ends = event.kind in (p.STOP, p.SESSION_END, p.PRE_COMPACT)
    last_answer = max((i for i, m in enumerate(messages) if m.speaker == "assistant"), default=-1)
    for i, m in enumerate(messages):
        # The assistant's last message when a turn ends is its answer; a user message after it
        # would mean the turn had not ended there.
        final = turn_ends and event.kind != p.PRE_COMPACT and i == last_answer
        items += from_text(redact(m.text), m.speaker, ref=m.ref, occurred_at=m.timestamp, final=final)
    if turn_ends:
        items += edits_of_turn(state)
    remember_highlights(state, items)
    if event.kind == p.SESSION_END:
        summary = session_summary(state, namespace, date or now_iso()[:10])
        if summary is not None:
            items.append(summary)
        if routines is not None:
            items += find_routines(state, routines, event.session_id)
    for item in items:  # everything was redacted on the way in; this is the last line of defence
        item.content = redact(item.content)
    return items


def records_of(items: list, event: p.HookEvent, namespace: str) -> list[dict]:
    return [
        to_record(
            item,
            client=event.client,
            client_version=event.client_version,
            event=event.name,
            session_id=event.session_id,
            namespace=namespace,
            tool_name=event.tool_name,
        )
        for item in items
    ]


def store_directory(explicit: str | None = None) -> Path:
    """The store's directory as the server finds it (--store, SPATIAL_MEMORY_PATH, else the per-user
    data directory), without importing the settings machinery (pydantic) into the hook."""
    value = explicit or os.environ.get("SPATIAL_MEMORY_PATH") or os.environ.get("SPATIAL_MEMORY_MEMORY_PATH")
    if value:
        return Path(value).expanduser().resolve()
    import platformdirs  # only without SPATIAL_MEMORY_PATH: the hook starts fast

    return platformdirs.user_data_path("spatial-memory-mcp", appauthor=False)


def start_ingester_if_idle(spool: Spool, store_path: Path) -> None:
    """Start a detached `spatial-memory ingest` when there is something to ingest and neither a
    server nor another ingester is running; the hook does not wait for it."""
    if os.environ.get(INGEST_ENV, "true").strip().lower() in ("0", "false", "no", "off", "n", "f"):
        return
    if not spool.has_work():
        return
    from .presence import someone_ingesting  # only when there is work: the hook starts fast

    if someone_ingesting(spool.dir):
        return
    import subprocess  # only when nobody ingests: the hook starts fast

    command = [sys.executable, "-m", "spatial_memory", "ingest", "--store", str(store_path)]
    options: dict = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if os.name == "nt":  # pragma: no cover
        options["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        options["start_new_session"] = True  # outlives the hook; the client's kill of the hook spares it
    try:
        subprocess.Popen(command, close_fds=True, **options)
    except OSError as exc:
        _warn(f"spatial-memory hook: could not start the background ingester: {exc}")


def _context(event: p.HookEvent, store_path: Path, namespace: str) -> str:
    # Only the events that answer with context import what answering takes: the others stay fast.
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    from .context import build_within  # see above: only events that answer with context

    try:
        budget = float(os.environ.get(CONTEXT_ENV) or CONTEXT_SECONDS[event.kind])
    except ValueError:
        budget = CONTEXT_SECONDS[event.kind]
    if budget <= 0:
        return ""
    prompt = redact(event.prompt) if event.kind == p.PROMPT and event.prompt else None
    if event.kind == p.PROMPT and not prompt:
        return ""
    from .context_server import ask  # see above: only events that answer with context

    started = time.monotonic()
    answered = ask(store_path, namespace, event.session_id, prompt, budget)  # a running server's: fast
    if answered is not None:
        return answered
    return build_within(
        max(0.0, budget - (time.monotonic() - started)), store_path, namespace, event.session_id, prompt
    )


def _context_still_running() -> bool:
    import threading  # only at the end of an event that answered with context

    return any(t.name == "capture-context" and t.is_alive() for t in threading.enumerate())


def _answer(event: p.HookEvent, context: str | None) -> None:
    text = p.answer(event, context)
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _bounded(response: object) -> object:
    """A tool's output cut to its head and tail: errors are at the ends, and redaction is linear."""
    if isinstance(response, str):
        return _cut(response)
    if isinstance(response, dict):
        return {k: _cut(v) if isinstance(v, str) else v for k, v in response.items()}
    return response


def _cut(text: str) -> str:
    half = MAX_OUTPUT_CHARS // 2
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:half] + "\n…\n" + text[-half:]


def _warn(message: str) -> None:
    """One line on stderr (the `logging` import would cost the hook more than its message is worth).
    Messages name what failed, never captured content."""
    sys.stderr.write(message + "\n")


def main(argv: Sequence[str]) -> int:
    """`hook [--client C] [--store PATH] EVENT`, parsed by hand: importing argparse would slow every hook."""
    args = list(argv)
    if not args or any(a in ("-h", "--help") for a in args):
        sys.stderr.write(USAGE)
        return 0 if args else 2
    options: dict[str, str] = {}
    positional = []
    while args:
        arg = args.pop(0)
        if arg in ("--client", "--store") and args:
            options[arg[2:]] = args.pop(0)
        elif arg.startswith(("--client=", "--store=")):
            key, value = arg[2:].split("=", 1)
            options[key] = value
        else:
            positional.append(arg)
    if len(positional) != 1 or options.get("client", p.CLAUDE_CODE) not in p.CLIENTS:
        sys.stderr.write(USAGE)
        return 2
    return run(positional[0], client=options.get("client"), store=options.get("store"))


USAGE = """usage: spatial-memory hook [--client claude-code|cursor] [--store PATH] EVENT

Run one client hook: read the client's hook JSON on stdin, spool what is worth remembering
(secrets redacted) for the server to store, and answer on stdout (context for the model on
SessionStart / UserPromptSubmit / sessionStart).

events: Claude Code: SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd
        Cursor: sessionStart, beforeSubmitPrompt, afterFileEdit, afterShellExecution,
                afterMCPExecution, afterAgentResponse, preCompact, stop, sessionEnd
`spatial-memory setup-hooks --client ...` prints the configuration that runs them.
"""

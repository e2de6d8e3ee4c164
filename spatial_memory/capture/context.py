"""Context for the model at the start of a session and with each prompt, read from the store.

SessionStart gets the namespace's pinned memories and the last session's summary (or, when
that session ended without one, its strongest captures); UserPromptSubmit (Claude Code only:
Cursor's beforeSubmitPrompt cannot add context) gets what recall finds for the prompt, less the
pinned memories SessionStart gave and the hits recall marks weak (algorithms/relevance.py: the
one rule for where relevance ends), so a prompt the store has nothing on adds nothing. Parts are
built in order in a worker thread; whatever is ready when the client's time budget runs out is
returned, so a slow first model load costs the prompt its recall, not the user their wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..storage.filters import build_filter

log = logging.getLogger(__name__)

MAX_CONTEXT_CHARS = 4000
MAX_ITEM_CHARS = 400
PINNED_LIMIT = 10
RECALL_LIMIT = 5


def build_within(
    budget_seconds: float,
    store_path: Path,
    namespace: str,
    session_id: str,
    prompt: str | None,
    *,
    open_app: Callable[[Path], Any] | None = None,
) -> str:
    """The context text, with the parts ready within `budget_seconds` ("" when none). `prompt`
    None means a session start. `open_app` builds the App over the store (tests pass their own)."""
    if not (store_path / "lancedb").exists():
        return ""  # nothing stored yet: do not create a store just to find it empty
    parts: list[str] = []
    worker = threading.Thread(
        target=_build,
        args=(parts, open_app or _open, store_path, namespace, session_id, prompt),
        name="capture-context",
        daemon=True,
    )
    worker.start()
    worker.join(budget_seconds)
    return render(namespace, list(parts))  # the worker may still append: what is there now is sent


def render(namespace: str, parts: list[str]) -> str:
    if not parts:
        return ""
    text = f"Memories from spatial-memory (namespace {namespace}):\n" + "\n".join(parts)
    return text if len(text) <= MAX_CONTEXT_CHARS else text[: MAX_CONTEXT_CHARS - 1] + "…"


def _build(
    parts: list[str],
    open_app: Callable[[Path], Any],
    store_path: Path,
    namespace: str,
    session_id: str,
    prompt: str | None,
) -> None:
    try:
        parts_for(parts, open_app(store_path), namespace, session_id, prompt)
    except Exception as exc:  # noqa: BLE001 - no context is better than a failing hook
        log.warning("capture context unavailable: %s", exc)


def parts_for(parts: list[str], app: Any, namespace: str, session_id: str, prompt: str | None) -> None:
    """Append the context's parts to `parts`, each as soon as it is ready (the caller may stop
    waiting): for a session start (prompt None) pinned memories and the last session, else recall."""
    store = app.resources.store()
    if prompt is None:
        pinned = _pinned(store, namespace)
        if pinned:
            parts.append("Pinned:\n" + _bullets(r.content for r in pinned))
        last = _last_session(store, namespace, session_id)
        if last:
            parts.append(last)
        return
    found = app.search.recall(prompt, namespace=namespace, limit=RECALL_LIMIT)
    related = [m.content for m in _not_given_at_start(found.memories) if not m.weak]
    if related:
        parts.append("Related to this prompt:\n" + _bullets(related))


def _not_given_at_start(memories: list[Any]) -> list[Any]:
    """Recall's hits less the pinned memories SessionStart already put in the session's context:
    recall lists the namespace's pinned memories first in the store's pinned order, SessionStart
    gave the first PINNED_LIMIT of that order (and runs again after a clear or a compaction)."""
    given = 0
    kept = []
    for memory in memories:
        if memory.pinned and given < PINNED_LIMIT:
            given += 1
            continue
        kept.append(memory)
    return kept


def _open(store_path: Path) -> Any:
    # The store, the model and every service: only when no running server can answer (the hook
    # asks one first), so a hook whose server is up never imports them.
    from ..app import App
    from ..config import Settings
    from ..runtime.imports import import_heavy_modules
    from ..runtime.resources import Resources

    import_heavy_modules()
    return App(Resources(Settings(path=store_path, preload=False)))


def _pinned(store: Any, namespace: str) -> list[Any]:
    return store.pinned(namespace, PINNED_LIMIT)


def _last_session(store: Any, namespace: str, session_id: str) -> str:
    """The newest other session's summary, else that session's most important captures."""
    captured = store.scan(build_filter(namespace=namespace, filters={"metadata.captured_by": "hook"}))
    others = [r for r in captured if r.conversation.session_id and r.conversation.session_id != session_id]
    if not others:
        return ""
    newest = max(others, key=lambda r: r.created_at)
    last = newest.conversation.session_id
    of_last = [r for r in others if r.conversation.session_id == last]
    when = newest.created_at.strftime("%Y-%m-%d")
    summaries = [r for r in of_last if r.metadata.get("capture_kind") == "session_summary"]
    if summaries:
        return f"Last session ({when}):\n" + _bullets([max(summaries, key=lambda r: r.created_at).content])
    best = sorted(of_last, key=lambda r: (-r.importance, r.conversation.sequence or 0))[:5]
    best.sort(key=lambda r: r.conversation.sequence or 0)
    return f"Last session ({when}), its main points:\n" + _bullets(r.content for r in best)


def _bullets(texts: Any) -> str:
    lines = []
    for text in texts:
        text = " ".join(str(text).split())
        lines.append("- " + (text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 1] + "…"))
    return "\n".join(lines)

"""Storing what the hooks spooled: in a running server (a background thread polling every
POLL_SECONDS), or in `spatial-memory ingest`, which a hook starts when no server is running.

One pass claims the ready spool files (spool.py), stores their records in one commit per
MAX_RECORDS (store.py: idempotent) and deletes the files. A crash between the commit and the
deletion leaves a claim that is retried later and stores nothing twice.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .presence import ingesting, someone_ingesting
from .session_state import forget_old_sessions
from .spool import Spool
from .store import store_captured

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
SESSION_STATE_DAYS = 30.0  # hooks' per-session state older than this is removed (hourly)
MAX_FILES = 200
MAX_RECORDS = 500


def ingest_once(app: Any, spool: Spool) -> tuple[int, int]:
    """One pass over the spool; returns the numbers of files taken and of memories stored. A
    read-only store takes nothing: the spool waits for a process that can write."""
    if getattr(app.resources.store(), "read_only", False):
        return 0, 0
    claims = spool.claim(limit=MAX_FILES)
    if not claims:
        return 0, 0
    records = [record for claim in claims for record in spool.read(claim)]
    stored = 0
    for start in range(0, len(records), MAX_RECORDS):
        stored += store_captured(app, records[start : start + MAX_RECORDS]).memories
    for claim in claims:
        spool.done(claim)
    if stored:
        log.info("stored %d captured memories from %d spool files", stored, len(claims))
    return len(claims), stored


def ingest_all(app: Any, spool: Spool) -> int:
    """Passes until the spool is empty."""
    total = 0
    while True:
        files, stored = ingest_once(app, spool)
        total += stored
        if not files:  # nothing left that this process could take
            return total


class SpoolIngester:
    """A server's background thread: ingests the spool as soon as a hook adds to it; with a
    ContextServer, it also answers the hooks' context requests while it runs."""

    def __init__(self, app: Any, context_server: Any = None) -> None:
        self._app = app
        self._context_server = context_server
        self._spool = Spool(app.resources.settings.local_dir)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._context_server is not None:
            self._context_server.start()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="spatial-memory-capture-ingest", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        if self._context_server is not None:
            self._context_server.stop()
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def _run(self) -> None:
        tidied = 0.0
        try:
            with ingesting(self._spool.dir):
                while not self._stopping.wait(POLL_SECONDS):
                    self._pass()
                    if time.monotonic() - tidied > 3600:
                        tidied = time.monotonic()
                        forget_old_sessions(self._spool.dir, SESSION_STATE_DAYS * 86400)
        except OSError as exc:  # the store's directory is not one (a file) or cannot be written
            log.warning("capture ingest is off: %s", exc)
        except Exception:  # noqa: BLE001 - capture must never take the server down
            log.exception("capture ingest stopped")

    def _pass(self) -> None:
        if not self._spool.has_work():  # a directory listing: cheap enough every second
            return
        try:
            with self._app.resources.workers.running():  # shutdown waits for a pass in progress
                from ..runtime.imports import import_heavy_modules  # a server has it already

                import_heavy_modules()
                ingest_once(self._app, self._spool)
        except Exception as exc:  # noqa: BLE001 - the claim stays and is retried
            log.warning("capture ingest failed, will retry: %s", exc)


def run_ingester(settings: Any) -> int:
    """`spatial-memory ingest`: store everything spooled, then exit (unless a server does it)."""
    # `spatial-memory ingest`, started by a hook: the store and model only when it has work.
    from ..app import App
    from ..runtime.resources import Resources

    spool = Spool(settings.local_dir)
    total = 0
    app = None
    while spool.has_work():
        if someone_ingesting(spool.dir) and app is None:
            return 0  # a server or another ingester is on it
        with ingesting(spool.dir):
            app = app or App(Resources(settings))
            total += ingest_all(app, spool)
        # A hook that spooled while we held the announcement did not start anyone: look again.
    if app is not None:
        app.resources.close(settings.lock_timeout_seconds)
    return total

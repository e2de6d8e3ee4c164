"""Requests whose client has gone away (or cancelled them) must not write.

The tool layer binds a token to each request before handing the work to a worker
thread (contextvars follow the work into the thread). When the request is cancelled
- a `notifications/cancelled`, or the client closing the pipe - the token is set, and
the store refuses to start any further commit for it: the work is either fully
committed already or not written at all, never written after the client left.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import RequestCancelledError

_token: ContextVar[threading.Event | None] = ContextVar("spatial_memory_request_cancelled", default=None)


@contextmanager
def request_scope() -> Iterator[threading.Event]:
    """Bind a fresh cancellation token to the current context (and the threads it runs work in)."""
    token = threading.Event()
    reset = _token.set(token)
    try:
        yield token
    finally:
        _token.reset(reset)


def check_cancelled() -> None:
    """Raise RequestCancelledError if the current request was cancelled; no-op outside requests."""
    token = _token.get()
    if token is not None and token.is_set():
        raise RequestCancelledError("the request was cancelled (or its client disconnected); nothing was written")

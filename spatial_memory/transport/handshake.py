"""Answer the client's opening requests while the MCP SDK is still importing.

Importing the SDK takes 0.9-1.5 s on a 2-core machine, and a client can do nothing until
`initialize` (or `server/discover`) and `tools/list` are answered. Those answers depend
only on this build and the SDK, so the answers the SDK gave once are kept in the user's
cache directory, under a fingerprint of both, and served from there while
the SDK loads in a background thread. The first request that is not in the cache (any tool
call, any other method) ends this: the SDK takes over the wire, and is first fed the
`initialize` request and notifications it missed, so its session is in the state the client
believes it is in; its second answer to that `initialize` is dropped. Without a cache entry
nothing changes: the SDK answers, and the answer is recorded for the next start.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import select
import sys
import threading
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..limits import SCHEMA_SETTINGS

if TYPE_CHECKING:
    from ..config import Settings

log = logging.getLogger(__name__)

# Requests whose answers depend only on the build, the SDK and the settings in the fingerprint.
CACHEABLE_METHODS = ("initialize", "server/discover", "tools/list")
# Of those, the ones that change the SDK session's state: replayed to it on handover.
STATEFUL_METHODS = ("initialize",)
KEPT_CACHE_FILES = 8
MAX_CACHE_BYTES = 4 << 20


def cache_key(message: Any) -> str | None:
    """The cache key of a request the cache may answer, else None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    method, params = message.get("method"), message.get("params")
    if method not in CACHEABLE_METHODS or (params is not None and not isinstance(params, dict)):
        return None
    if params and "cursor" in params:
        return None  # a later page: rare, and answered by the SDK
    return json.dumps([method, params or {}], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(settings: Settings) -> str:
    """This build's code, the installed SDK, the Python version and the settings the answers
    depend on (the limits in the tool schemas: tests/test_handshake.py checks that no other
    setting changes an answer)."""
    digest = hashlib.sha256(sys.version.encode())
    digest.update(json.dumps({name: getattr(settings, name) for name in SCHEMA_SETTINGS}, sort_keys=True).encode())
    for path in fingerprint_sources():
        try:
            st = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def fingerprint_sources() -> list[Path]:
    """The files whose change invalidates cached answers: the SDK's packages and every module of
    this package (subpackages included, so a moved or renamed module counts too)."""
    sources = []
    for name in ("mcp", "mcp_types"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            sources.append(Path(spec.origin))
    package = Path(__file__).resolve().parents[1]  # spatial_memory/
    try:
        sources += sorted(package.rglob("*.py"))
    except OSError:
        pass
    return sources


class HandshakeCache:
    """Results the SDK gave to cacheable requests, one JSON file per fingerprint."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        self.directory = directory
        self.path = directory / f"handshake-{fingerprint}.json"
        self._entries: dict[str, str] | None = None
        self._lock = threading.Lock()

    def entries(self) -> dict[str, str]:
        if self._entries is None:
            try:
                if self.path.stat().st_size > MAX_CACHE_BYTES:
                    raise ValueError("too large")
                data = json.loads(self.path.read_text("utf-8"))
                self._entries = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    def get(self, key: str) -> str | None:
        return self.entries().get(key)

    def learn(self, key: str, result_json: str) -> None:
        """Record the SDK's result for a request; written at once (atomically), pruned to a few files."""
        with self._lock:
            entries = self.entries()
            if entries.get(key) == result_json:
                return
            entries[key] = result_json
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(entries, ensure_ascii=False), "utf-8")
                tmp.replace(self.path)
                others = sorted(
                    (p for p in self.directory.glob("handshake-*.json") if p != self.path),
                    key=lambda p: p.stat().st_mtime,
                    reverse=True,
                )
                for old in others[KEPT_CACHE_FILES - 1 :]:
                    old.unlink(missing_ok=True)
            except OSError as exc:
                log.debug("could not write the handshake cache: %s", exc)


@dataclass
class Handover:
    """What the SDK's transport needs to take over a wire the fast path has been serving."""

    wire_in: int
    wire_out: int
    replay: bytes = b""  # read from the wire but not answered: the SDK reads these first
    answered: set[Any] = field(default_factory=set)  # ids in `replay` already answered: drop the SDK's answer


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve_until_ready(wire_in: int, wire_out: int, cache: HandshakeCache, ready: threading.Event) -> Handover:
    """Answer cacheable requests from the cache until the SDK is ready, or until a request
    the cache cannot answer arrives (then wait for the SDK)."""
    handover = Handover(wire_in, wire_out)
    pending = bytearray()
    replay = bytearray()
    stopped = False
    while not ready.is_set() and not stopped:
        readable, _, _ = select.select([wire_in], [], [], 0.02)
        if not readable:
            continue
        chunk = os.read(wire_in, 1 << 16)
        if not chunk:
            break  # the client hung up: the SDK's reader sees the end of input too
        pending += chunk
        while not stopped and (end := pending.find(b"\n")) >= 0:
            line = bytes(pending[: end + 1])
            del pending[: end + 1]
            answer = _answer(line, cache)
            if answer is None:
                if line.strip():
                    replay += line
                    stopped = True
                continue
            response, message = answer
            if response is not None:
                _write_all(wire_out, response)
            if message is not None:  # state the SDK must see
                replay += line
                if response is not None:
                    handover.answered.add(message["id"])
    ready.wait()
    handover.replay = bytes(replay + pending)
    return handover


def _answer(line: bytes, cache: HandshakeCache) -> tuple[bytes | None, dict | None] | None:
    """(response to send or None, message to replay or None); None when the SDK must answer."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and "id" not in message and isinstance(message.get("method"), str):
        return None, message  # a notification: the SDK must see it, nothing to answer
    key = cache_key(message)
    result = cache.get(key) if key is not None else None
    if result is None:
        return None
    request_id = json.dumps(message["id"], ensure_ascii=False, separators=(",", ":"))
    response = f'{{"jsonrpc":"2.0","id":{request_id},"result":{result}}}\n'.encode()
    return response, (message if message["method"] in STATEFUL_METHODS else None)


class Recorder:
    """Watches the SDK's traffic: notes cacheable requests coming in, records their results
    going out, and drops the SDK's answers to requests the fast path already answered."""

    def __init__(self, cache: HandshakeCache | None, answered: AbstractSet[Any] = frozenset()) -> None:
        self._cache = cache
        self._waiting: dict[Any, str] = {}
        self._answered = set(answered)

    def incoming(self, line: str) -> None:
        if self._cache is None or not any(method in line for method in CACHEABLE_METHODS):
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        key = cache_key(message)
        if key is not None and self._cache.get(key) is None:
            self._waiting[_id_key(message["id"])] = key

    def outgoing(self, text: str) -> bool:
        """Whether to send this line (False for a second answer to an answered request)."""
        if not self._waiting and not self._answered:
            return True
        try:
            message = json.loads(text)
        except ValueError:
            return True
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return True
        request_id = message["id"]
        if request_id in self._answered:
            self._answered.discard(request_id)
            return False
        key = self._waiting.pop(_id_key(request_id), None)
        if key is not None and "result" in message and self._cache is not None:
            self._cache.learn(key, json.dumps(message["result"], ensure_ascii=False, separators=(",", ":")))
        return True


def _id_key(request_id: Any) -> str:
    return json.dumps(request_id)

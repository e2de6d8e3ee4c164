"""The spool's record format: one captured memory, as a hook writes it and an ingester reads it.

A record is plain JSON so that the hook never imports the storage layer. Its `id` is derived
from the session, the speaker, the kind and the content, so the same capture spooled twice (a
retried claim, a statement seen in a prompt and again in the transcript) is stored once.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from .selection import Captured

FORMAT = 1
CAPTURED_BY = "hook"
ID_NAMESPACE = "8f0f6f3e-6a0e-4a5e-9d1c-3c2b7d0e5a11"


def record_id(client: str, session_id: str, item: Captured) -> str:
    key = f"{client}\0{session_id}\0{item.speaker}\0{item.kind}\0{item.content}"
    return uuid5(ID_NAMESPACE, key)


def uuid5(namespace: str, name: str) -> str:
    """`str(uuid.uuid5(UUID(namespace), name))`, without importing `uuid` (and its C module) into a hook."""
    digest = bytearray(hashlib.sha1(bytes.fromhex(namespace.replace("-", "")) + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def to_record(
    item: Captured,
    *,
    client: str,
    client_version: str | None,
    event: str,
    session_id: str,
    namespace: str,
    tool_name: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "captured_by": CAPTURED_BY,
        "capture_kind": item.kind,
        "capture_client": client,
        "capture_event": event,
    }
    if item.ref:
        metadata["capture_ref"] = item.ref
    if item.also:
        metadata["capture_refs"] = [item.ref, *item.also]
    if tool_name and item.speaker == "tool":
        metadata["capture_tool"] = tool_name
    record = {
        "v": FORMAT,
        "id": record_id(client, session_id, item),
        "content": item.content,
        "namespace": namespace,
        "tags": ["captured", *item.tags],
        "importance": item.importance,
        "session_id": session_id,
        # Numbered by the store when stored, after the session's last, in spool order (file
        # names are times): no number to keep in step across hooks, and none reused after a crash.
        "sequence": None,
        "speaker": item.speaker,
        "occurred_at": item.occurred_at or now_iso(),
        "client": client,
        "client_version": client_version,
        "metadata": metadata,
    }
    if item.procedure is not None:  # a proposed procedure (store.py hands it to the procedures service)
        record["procedure"] = item.procedure
    return record


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")

"""The tokens file: bearer tokens stored as SHA-256 hashes, each naming a principal and its namespaces.

    {"tokens": [{"principal": "alice", "sha256": "<hex>", "namespaces": ["alice", "team-*"],
                 "read_namespaces": ["handbook"], "created_at": "2026-11-24T14:00:00Z"}]}

A token is shown once, when minted (`spatial-memory tokens add`); only its hash is written, in a
file readable by its owner alone (0600). A presented token's hash is compared with every entry in
constant time. The file is read again when it changes, so tokens are added or revoked without a
restart. No token, and no hash, ever goes to the logs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import anyio

from ..errors import ConfigurationError
from .principal import PrincipalToken

log = logging.getLogger(__name__)

TOKEN_PREFIX = "smm_"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenEntry:
    principal: str
    sha256: str
    namespaces: tuple[str, ...]
    read_namespaces: tuple[str, ...] = ()
    created_at: str | None = None

    def as_dict(self) -> dict:
        return {
            "principal": self.principal,
            "sha256": self.sha256,
            "namespaces": list(self.namespaces),
            "read_namespaces": list(self.read_namespaces),
            "created_at": self.created_at,
        }


def read_entries(path: Path) -> list[TokenEntry]:
    """The file's entries ([] when it does not exist); a malformed file is a ConfigurationError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"tokens file {path} cannot be read: {exc}") from None
    try:
        return [
            TokenEntry(
                str(item["principal"]),
                str(item["sha256"]).lower(),
                tuple(str(n) for n in item.get("namespaces", [])),
                tuple(str(n) for n in item.get("read_namespaces", [])),
                item.get("created_at"),
            )
            for item in data["tokens"]
        ]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"tokens file {path} is malformed ({exc!r}): see docs/TEAM.md") from None


def write_entries(path: Path, entries: list[TokenEntry]) -> None:
    """Replace the file atomically, readable and writable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"tokens": [e.as_dict() for e in entries]}, out, indent=2)
        out.write("\n")
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def mint(path: Path, principal: str, namespaces: Sequence[str], read_namespaces: Sequence[str] = ()) -> str:
    """A new token for `principal`, its hash added to the file; the token itself is returned once."""
    if not principal.strip():
        raise ConfigurationError("a token needs a principal")
    if not namespaces and not read_namespaces:
        raise ConfigurationError("a token needs at least one namespace (--namespace or --read-namespace)")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry = TokenEntry(principal, token_hash(token), tuple(namespaces), tuple(read_namespaces), created)
    write_entries(path, [*read_entries(path), entry])
    return token


def revoke(path: Path, principal: str) -> int:
    """Remove every token of `principal`; how many were removed."""
    entries = read_entries(path)
    kept = [e for e in entries if e.principal != principal]
    if len(kept) != len(entries):
        write_entries(path, kept)
    return len(entries) - len(kept)


class TokensFileVerifier:
    """The SDK's TokenVerifier over the tokens file (re-read when its size or mtime changes)."""

    def __init__(self, path: Path, *, scopes: list[str] | None = None) -> None:
        self._path = path
        self._scopes = list(scopes or [])
        self._entries: list[TokenEntry] = []
        self._seen: tuple[int, int] | None = None
        self._refresh()  # a missing or malformed file stops the server at start

    def _refresh(self) -> None:
        try:
            info = os.stat(self._path)
        except FileNotFoundError:
            raise ConfigurationError(f"tokens file {self._path} does not exist: create it with `tokens add`") from None
        seen = (info.st_mtime_ns, info.st_size)
        if seen != self._seen:
            self._entries = read_entries(self._path)
            self._seen = seen
            log.info("tokens file %s: %d tokens", self._path, len(self._entries))

    def find(self, token: str) -> TokenEntry | None:
        presented = token_hash(token)
        found = None
        for entry in self._entries:  # every entry compared: the time taken says nothing of which matched
            if hmac.compare_digest(presented, entry.sha256):
                found = entry
        return found

    async def verify_token(self, token: str) -> PrincipalToken | None:
        try:
            await anyio.to_thread.run_sync(self._refresh)
        except ConfigurationError as exc:  # keep serving the tokens read last
            log.warning("%s", exc.message)
        entry = self.find(token)
        if entry is None:
            return None
        return PrincipalToken(
            token=token,
            client_id=entry.principal,
            subject=entry.principal,
            scopes=self._scopes,
            namespaces=list(entry.namespaces),
            read_namespaces=list(entry.read_namespaces),
        )

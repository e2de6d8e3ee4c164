"""Secrets removed from text before anything is spooled, stored, exported or logged: every
memory's content and metadata (`validation`), and what the capture hooks see.

Each pattern replaces the secret (not its label) with `[REDACTED:<kind>]`, so a memory still
says that a key was set, not what it was. The list errs on the side of redacting: a lost
fragment of a memory costs little, a stored credential a lot. tests/test_secret_redaction.py
holds one positive and one negative example per pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# (kind, pattern, group holding the secret: 0 = the whole match)
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    # PEM private keys, whole blocks (also an unterminated block at the end of an output).
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        0,
    ),
    # Connection strings and URLs with credentials: scheme://user:password@host -> password.
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@'\"]{0,128}:([^\s@/'\"]{1,256})@", 1),
    # Key=value connection strings (ADO.NET / ODBC / libpq keyword style).
    ("connection-password", r"(?i)\b(?:password|pwd)\s*=\s*([^;\s'\"]{1,256})", 1),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", 0),
    (
        "aws-secret-key",
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})\b",
        1,
    ),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b", 0),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b", 0),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", 0),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}", 0),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b", 0),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
    ("bearer", r"(?i)\b(?:bearer|token)\s+([A-Za-z0-9_\-.=:/+]{16,})", 1),
    ("basic-auth", r"(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/=]{8,})", 1),
    # Assignments: password=..., secret: ..., api_key="...", TOKEN=... (env files, configs, CLIs).
    (
        "assignment",
        r"(?i)(?:\b|_)(?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
        r"private[_-]?key|client[_-]?secret|auth)\w*[\"']?\s*[:=]\s*[\"']?(?!(?:bearer|basic|token)\s)(?!\[REDACTED)"
        r"([^\s\"',;]{4,})",
        1,
    ),
    # Command-line flags: --password xyz, -p'xyz' is too ambiguous to catch.
    ("flag", r"(?i)--(?:password|passwd|token|secret|api-key)[= ]\s*[\"']?([^\s\"']{4,})", 1),
)


def _replacer(kind: str, group: int) -> Callable[[re.Match[str]], str]:
    marker = f"[REDACTED:{kind}]"

    def replace(match: re.Match[str]) -> str:
        if group == 0:
            return marker
        whole, start, end = match.group(0), match.start(group) - match.start(0), match.end(group) - match.start(0)
        if whole[start:end].startswith("[REDACTED:"):
            return whole
        return whole[:start] + marker + whole[end:]

    return replace


@cache
def _replacers() -> tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...]:
    """The compiled patterns (compiled on first use: every write path validates through here, and
    a server answers its first requests before any write)."""
    return tuple((re.compile(pattern), _replacer(kind, group)) for kind, pattern, group in _PATTERNS)


def redact(text: str) -> str:
    """The text with every secret the patterns know replaced by `[REDACTED:<kind>]`."""
    if not text:
        return text
    for pattern, replace in _replacers():
        text = pattern.sub(replace, text)
    return text


def redact_value(value: Any) -> Any:
    """Strings anywhere inside a JSON-like value redacted (dict keys kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def kinds() -> list[str]:
    """The kinds of secret redacted, in the order they are tried."""
    return [kind for kind, _, _ in _PATTERNS]

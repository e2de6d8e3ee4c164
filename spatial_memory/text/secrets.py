"""Secrets removed from text before anything is spooled, stored, exported or logged: every
memory's content and metadata (`validation`), and what the capture hooks see.

Each pattern replaces the secret (not its label) with `[REDACTED:<kind>]`, so a memory still
says that a key was set, not what it was. The list errs on the side of redacting: a lost
fragment of a memory costs little, a stored credential a lot. tests/test_secret_redaction.py
holds one positive and one negative example per pattern.
"""

from __future__ import annotations

import math
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
    ("connection-password", r"(?i);\s*(?:password|pwd)\s*=\s*([^;\s'\"]{1,256})", 1),
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
    # Request headers that carry a credential under their own name.
    (
        "header",
        r"(?im)^\s*(?:x-[\w-]*(?:token|key|secret|auth)[\w-]*|cookie|set-cookie|proxy-authorization)\s*:\s*(\S[^\r\n]{3,})",
        1,
    ),
    # Command-line flags: --password xyz, -p'xyz' is too ambiguous to catch.
    ("flag", r"(?i)--(?:password|passwd|token|secret|api-key)[= ]\s*[\"']?([^\s\"']{4,})", 1),
)


# Assignments to a secret-named key - `password=...`, `secret: ...`, `api_key="..."`, `TOKEN=...`
# (env files, configs, CLIs), `token: str = "..."` (an annotated assignment), `"client_secret" =>
# "..."` - redact the value unless it only refers to where the secret is kept
# (`api_key=settings.anthropic_api_key`, `token = os.environ["TOKEN"]`, `${API_KEY}`).
_SECRET_NAME = (
    r"(?:passw(?:or)?d|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|auth|credentials?|signing[_-]?key|encryption[_-]?key|salt)"
)
_ASSIGNMENT = (
    # The key starts where a name starts and is at most 80 characters before the secret's name:
    # a lazy prefix free to start anywhere made a long run of word characters quadratic.
    r"(?i)(?<![\w.-])([\w.-]{0,80}?)(?:\b|_|(?-i:(?<=[a-z])(?=[A-Z])))" + _SECRET_NAME + r"(\w*)[\"']?"
    r"(?:\s*:\s*[A-Za-z_][\w.\[\], |]{0,40}?(?=\s*=))?"  # a type annotation: `token: str = ...`
    r"\s*(=>|:=|[:=])\s*"
    r"(?!(?:bearer|basic|token)\s)(?!\[REDACTED)"
    r"([^\r\n;]{1,300})"
)
_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# The last word of a key that names something about a secret, not the secret (`token_count`,
# `password_policy`, `api_key_env`, `tokenizer`).
_NOT_SECRET = frozenset(
    """count counts length len size limit limits max min policy type types name names id ids url uri endpoint
    file path dir ttl expiry expires expiration at hash hashed header field prefix suffix env var timeout mode
    required enabled provider method scheme format rotation usage budget tokenizer tokens tokenize tokenized
    author authors authored authority authorities authorize authorized authentication authenticated
    secrets passwords keys label hint help prompt description docs validator validation rule rules""".split()
)
_LITERAL = re.compile(r"\"([^\"\n]{4,})\"|'([^'\n]{4,})'|`([^`\n]{4,})`")
_BARE = re.compile(r"[^\s\"',;]{4,}")
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]*[.,]?")
# A value that names where a secret is kept rather than holding it.
_REFERENCE = re.compile(
    r"(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[\"'][\w-]+[\"']\])+(?:\(\))?|\$\{?[A-Za-z_]\w*\}?|%\(?\w+\)?s?|\{\{[^}]*\}\}|"
    r"[A-Za-z_]\w*\(\)|\d+(?:\.\d+)?|None|null|nil|true|false|True|False|undefined|"
    r"<[\w -]+>|\*{3,}|x{4,}|\.{3}|…)[,;)]?"
)
# A literal that is a key to look the secret up by (a subscript, an environment or settings lookup).
_ENV_LOOKUP = re.compile(
    r"(?i)(?:\[|(?:get|getenv|get_env|environ|env|fetch_env!?|fetch|secret|config|settings|vault)\s*\()\s*$"
)


def _redact_assignment(match: re.Match[str]) -> str:
    whole, start = match.group(0), match.start(4) - match.start(0)
    value = whole[start:]
    key = whole[: match.start(3) - match.start(0)]
    segments = [w.lower() for w in _SEGMENT.findall(key)]
    if not segments or segments[-1] in _NOT_SECRET:
        return whole
    if value.startswith("[REDACTED:"):
        return whole
    literals = [m for m in _LITERAL.finditer(value) if not _ENV_LOOKUP.search(value[: m.start()])]
    if literals:  # every string literal of the value: `String.duplicate("...", 4)`, `"..." + x`
        out, at = [], 0
        for lit in literals:
            group = next(g for g in (1, 2, 3) if lit.group(g) is not None)
            if lit.group(group).startswith("[REDACTED:") or _REFERENCE.fullmatch(lit.group(group)):
                continue
            out += [value[at : lit.start(group)], "[REDACTED:assignment]"]
            at = lit.end(group)
        return whole[:start] + "".join(out) + value[at:]
    if _LITERAL.search(value) or re.match(r"\s*[\"'`]", value):
        return whole  # a literal inside an environment lookup, or one too short to be a secret
    bare = _BARE.match(value)
    name = re.match(r"[\w-]+", key.lstrip("_"))
    if bare is None or "(" in bare.group(0) or _REFERENCE.fullmatch(bare.group(0).rstrip(")]}")):
        return whole  # a call (its literals were looked at above) or a reference
    rest = value[bare.end() :].strip()
    if match.group(3) == ":" and _PROSE_WORD.fullmatch(bare.group(0)) and rest and rest[0] not in "#/,}":
        return whole  # "The tokenizer: splits words" is prose, not a setting
    if name and bare.group(0).strip(",;)").lower() == name.group(0).lower():  # `api_key=api_key`: passed on
        return whole
    return whole[:start] + "[REDACTED:assignment]" + value[bare.end() :]


# A long run of random-looking characters, named by nothing (an AWS secret key pasted alone):
# upper and lower case letters and digits mixed, spread like random text. Hex digests, ids and
# words do not mix all three classes that evenly.
_RANDOM_RUN = re.compile(r"(?<![\w/+=-])[A-Za-z0-9+/_-]{32,}={0,2}(?![\w/+=-])")
MIN_RANDOM_BITS = 4.2  # Shannon entropy per character; English words and paths stay far below


def _redact_random(match: re.Match[str]) -> str:
    run = match.group(0)
    if sum(c.isupper() for c in run) < 4 or sum(c.islower() for c in run) < 4 or sum(c.isdigit() for c in run) < 3:
        return run
    parts = [part for part in run.split("/") if part]
    wordy = sum(part.islower() or part.isdigit() or "-" in part or "_" in part or part.isalpha() for part in parts)
    if len(parts) >= 3 and wordy * 2 >= len(parts):  # a path: its parts are words, names, numbers
        return run
    counts: dict[str, int] = {}
    for char in run:
        counts[char] = counts.get(char, 0) + 1
    bits = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    return "[REDACTED:high-entropy]" if bits >= MIN_RANDOM_BITS else run


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
    compiled = [(re.compile(pattern), _replacer(kind, group)) for kind, pattern, group in _PATTERNS]
    flags = len(compiled) - 1  # the assignment rule goes before the command-line flags
    compiled.insert(flags, (re.compile(_ASSIGNMENT), _redact_assignment))
    compiled.append((_RANDOM_RUN, _redact_random))
    return tuple(compiled)


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
    named = [kind for kind, _, _ in _PATTERNS]
    return [*named[:-1], "assignment", named[-1], "high-entropy"]

"""Checks on values that will be stored, shared by every service."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from .config import Settings
from .errors import ValidationError
from .limits import MAX_LABEL_CHARS, MAX_RELATION_CHARS
from .records import Conversation
from .text.secrets import redact, redact_value

NAMESPACE_PATTERN = re.compile(r"^[\w][\w.:/@-]*$")
# Stored metadata comes back inside every result; JSON parsers (the MCP SDK's included) refuse
# documents nested much deeper than ~200 levels, so keep it far below that.
MAX_METADATA_DEPTH = 32


def nesting_depth(value: Any, stop_at: int = 1_000) -> int:
    """How deeply dicts and lists nest in `value` (a scalar is 0), without recursion; counting
    stops a little past `stop_at`."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > stop_at:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def argument_problem(arguments: Any, max_depth: int) -> str | None:
    """What makes tool arguments unusable before any tool sees them: nesting deeper than
    `max_depth`, or text that is not valid Unicode (lone surrogates cannot be stored, encoded
    or sent back). None when they are fine. Iterative, so no input can exhaust the stack."""
    stack = [(arguments, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return "text must be valid Unicode (a lone surrogate code point was found)"
            continue
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and not _encodable(key):
                    return "text must be valid Unicode (a lone surrogate code point was found)"
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _visible(text: str) -> bool:
    """Whether the text shows anything: not only spaces, zero-width and other invisible characters
    (separators Z*, controls and formats C*). Stops at the first visible character."""
    return any(not ch.isspace() and unicodedata.category(ch)[0] not in "CZ" for ch in text)


def query_text(value: str, *, field: str = "Query") -> str:
    """A text to search with (a recall query, a wander seed): a string that shows something."""
    if not isinstance(value, str) or not _visible(value):
        raise ValidationError(f"{field} cannot be empty")
    return value


def content(value: str, settings: Settings, *, field: str = "content") -> str:
    """The text to store: checked, with the secrets it holds (API keys, tokens, passwords, private
    keys, credentials in URLs) replaced by `[REDACTED:<kind>]`, so no write path can store one."""
    if not isinstance(value, str) or not _visible(value):
        raise ValidationError(f"{field.capitalize()} cannot be empty")
    value = redact(value)
    if len(value) > settings.max_content_length:
        raise ValidationError(
            f"{field.capitalize()} is {len(value):,} characters; the maximum is {settings.max_content_length:,}. "
            "Split it into several memories."
        )
    if "\x00" in value:
        raise ValidationError(f"{field.capitalize()} must not contain NUL characters")
    if not _encodable(value):
        raise ValidationError(f"{field.capitalize()} must be valid Unicode (no lone surrogate code points)")
    return value


def namespace(value: str, settings: Settings, *, field: str = "namespace") -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{field} cannot be empty")
    if len(value) > settings.max_namespace_length:
        raise ValidationError(f"{field} is longer than {settings.max_namespace_length} characters")
    if not NAMESPACE_PATTERN.match(value):
        raise ValidationError(
            f"invalid {field} {value[:60]!r}: use letters, digits and _ . : / @ - (starting with a letter, digit or _)"
        )
    return value


def tags(values: list[str] | None, settings: Settings) -> list[str]:
    cleaned: list[str] = []
    for tag in values or []:
        if not isinstance(tag, str) or not tag.strip():
            raise ValidationError("tags must be non-empty strings")
        tag = tag.strip()
        if len(tag) > settings.max_tag_length:
            raise ValidationError(f"tag {tag[:40]!r}... is longer than {settings.max_tag_length} characters")
        if "\x00" in tag or not _encodable(tag):
            raise ValidationError("tags must be valid Unicode without NUL characters")
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > settings.max_tags:
        raise ValidationError(f"at most {settings.max_tags} tags per memory")
    return cleaned


def importance(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError("importance must be a number from 0.0 to 1.0")
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"importance must be between 0.0 and 1.0, got {value}")
    return float(value)


def metadata(value: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    if value is None or (isinstance(value, dict) and not value):
        return {}  # most memories have none: four JSON passes spared per memory of a batch
    if not isinstance(value, dict):
        raise ValidationError("metadata must be a JSON object")
    if nesting_depth(value) > MAX_METADATA_DEPTH:
        raise ValidationError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be plain JSON (no NaN or infinity): {exc}") from None
    if not _encodable(encoded):
        raise ValidationError("metadata must be valid Unicode (no lone surrogate code points)")
    encoded = json.dumps(redact_value(json.loads(encoded)), ensure_ascii=False)  # secrets in values
    if len(encoded.encode()) > settings.max_metadata_bytes:
        raise ValidationError(f"metadata is larger than {settings.max_metadata_bytes:,} bytes")
    return json.loads(encoded)


def number_in(name: str, value: Any, low: float, high: float) -> float:
    """A finite number within [low, high] (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a number from {low:g} to {high:g}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low:g} and {high:g}, got {value:g}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false")
    return value


def one_of(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}; got {str(value)[:40]!r}")
    return value


def relation_label(value: str) -> str:
    """A relation's label: free text, trimmed, inner whitespace collapsed, lower case."""
    label = " ".join(str(value).split()).lower()
    if not label:
        raise ValidationError("relation is empty: name it, e.g. caused, supports, contradicts, part_of")
    if len(label) > MAX_RELATION_CHARS:
        raise ValidationError(f"relation is longer than {MAX_RELATION_CHARS} characters: use a short label")
    return label


def conversation(value: Conversation) -> Conversation:
    """A memory's conversation fields, checked: labels short plain text, sequence >= 0, occurred_at in UTC."""

    def label(name: str, text: str | None) -> str | None:
        if text is None:
            return None
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"{name} must be a non-empty string")
        if len(text) > MAX_LABEL_CHARS:
            raise ValidationError(f"{name} is longer than {MAX_LABEL_CHARS} characters")
        if "\x00" in text or not _encodable(text):
            raise ValidationError(f"{name} must be valid Unicode without NUL characters")
        return text.strip()

    sequence = value.sequence
    if sequence is not None and (
        isinstance(sequence, bool) or not isinstance(sequence, int) or not 0 <= sequence < 2**53
    ):
        raise ValidationError("sequence must be an integer from 0")
    occurred = value.occurred_at
    if occurred is not None:
        if not isinstance(occurred, datetime):
            raise ValidationError("occurred_at must be an ISO 8601 date and time")
        occurred = (
            occurred.replace(tzinfo=timezone.utc) if occurred.tzinfo is None else occurred.astimezone(timezone.utc)
        )
    return Conversation(
        session_id=label("session_id", value.session_id),
        sequence=sequence,
        speaker=label("speaker", value.speaker),
        occurred_at=occurred,
    )

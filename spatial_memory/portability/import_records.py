"""Checking imported records field by field: valid ones become ImportRecords, the others RowProblems."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any, cast

import numpy as np

from .. import validation as check
from ..config import Settings
from ..errors import ValidationError
from ..records import MEMORY_TYPES, SOURCES, Conversation, Provenance, utc_now
from .formats import (
    MAX_ACCESS_COUNT,
    MAX_SHOWN_VALUE,
)
from .import_file import BadRow, ParsedFile


@dataclass
class ImportRecord:
    """A valid record ready to be stored (the id is kept only when it is a free UUID)."""

    row_number: int
    id: str | None
    content: str
    namespace: str
    tags: list[str]
    importance: float
    source: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    access_count: int
    conversation: Conversation
    vector: np.ndarray | None
    memory_type: str = "fact"
    expires_at: datetime | None = None
    pinned: bool = False
    version: int = 1
    provenance: Provenance | None = None
    retired: Retirement | None = None  # set for a retired version (a row with valid_until)
    relations: list[OutgoingRelation] = field(default_factory=list)


@dataclass
class OutgoingRelation:
    """One of a record's relations (formats: `relations`), its target as the file names it."""

    target_id: str
    relation: str
    weight: float
    created_at: datetime


@dataclass
class Retirement:
    """How a retired version stopped being current (formats.HISTORY_FIELDS)."""

    valid_until: datetime
    retired_by: str
    superseded_by: str | None


@dataclass
class RowProblem:
    row_number: int
    field: str
    error: str
    value: str | None


def shown_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return f"<{value.size} values>"
    if isinstance(value, (list, tuple)) and len(value) > 20:
        return f"<{len(value)} values>"
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            value = repr(value)
    return value if len(value) <= MAX_SHOWN_VALUE else value[:MAX_SHOWN_VALUE] + "..."


def vector_lengths(vectors: list[Any] | None) -> set[int]:
    """Lengths of the vectors that look like vectors (for the file-level dimension check)."""
    lengths: set[int] = set()
    for raw in vectors or []:
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                continue
        if isinstance(raw, (list, tuple, np.ndarray)):
            lengths.add(len(raw))
    return lengths


class _Problem(Exception):
    def __init__(self, field: str, error: str, value: Any) -> None:
        super().__init__(error)
        self.field, self.error, self.value = field, error, value


def _checked(field: str, check_value: Callable[[], Any], value: Any) -> Any:
    """check_value()'s result; its ValidationError as a problem of `field` showing `value`."""
    try:
        return check_value()
    except ValidationError as exc:
        raise _Problem(field, exc.message, value) from None


def _timestamp(name: str, value: Any, default: datetime) -> datetime:
    if value is None:
        return default
    try:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            moment = datetime.fromtimestamp(value, tz=timezone.utc)
        elif isinstance(value, str) and value.strip():
            text = value.strip()
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "zZ" else text)
        else:
            raise ValueError
    except (ValueError, OverflowError, OSError):
        raise _Problem(name, "must be an ISO 8601 timestamp", value) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _conversation(raw: dict[str, Any]) -> Conversation:
    """The optional conversation fields (absent from the reference implementation's files)."""

    def text(name: str) -> str | None:
        value = raw.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise _Problem(name, "must be text", value)
        return value

    sequence = raw.get("sequence")
    if isinstance(sequence, str) and sequence.strip():  # a CSV cell
        try:
            sequence = int(sequence.strip())
        except ValueError:
            raise _Problem("sequence", "must be a whole number >= 0", sequence) from None
    elif isinstance(sequence, float) and sequence.is_integer():
        sequence = int(sequence)
    elif isinstance(sequence, str):
        sequence = None
    occurred = raw.get("occurred_at")
    occurred = None if occurred is None or occurred == "" else _timestamp("occurred_at", occurred, utc_now())
    found = Conversation(  # as given: check.conversation below refuses a sequence that is not a whole number
        session_id=text("session_id"),
        sequence=cast("int | None", sequence),
        speaker=text("speaker"),
        occurred_at=occurred,
    )
    try:
        return check.conversation(found)
    except ValidationError as exc:
        field = next(
            (f for f in ("session_id", "sequence", "speaker", "occurred_at") if f in exc.message), "conversation"
        )
        raise _Problem(field, exc.message, raw.get(field)) from None


def _memory_type(value: Any) -> str:
    if value is None or value == "":
        return "fact"
    if value not in MEMORY_TYPES:
        raise _Problem("memory_type", f"must be one of {', '.join(MEMORY_TYPES)}", value)
    return value


def _flag(name: str, value: Any) -> bool:
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):  # a CSV cell
        return value.strip().lower() in ("true", "1")
    raise _Problem(name, "must be true or false", value)


def _version(value: Any) -> int:
    if value is None or value == "":
        return 1
    try:
        number = int(value.strip()) if isinstance(value, str) else value
    except ValueError:
        number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number < 2**53:
        raise _Problem("version", "must be a whole number >= 1", value)
    return number


def _provenance(value: Any) -> Provenance | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = _json_text("provenance", value, dict, "a JSON object")
    found = Provenance.from_dict(value)
    if found is None:
        raise _Problem("provenance", "must be an object with a 'via' text", value)
    return found


def _retirement(raw: dict[str, Any]) -> Retirement | None:
    until = raw.get("valid_until")
    if until is None or until == "":
        return None
    moment = _timestamp("valid_until", until, utc_now())
    retired_by = raw.get("retired_by")
    if retired_by not in ("update", "supersede"):
        raise _Problem(
            "retired_by", "must be update or supersede (a row with valid_until is a retired version)", retired_by
        )
    successor = raw.get("superseded_by") or None
    if successor is not None and _uuid(successor) is None:
        raise _Problem("superseded_by", "must be a memory id", successor)
    return Retirement(moment, retired_by, _uuid(successor) if successor else None)


MAX_RELATIONS_PER_RECORD = 1_000


def _relations(value: Any, now: datetime) -> list[OutgoingRelation]:

    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = _json_text("relations", value, list, "a JSON list")
    if not isinstance(value, list) or len(value) > MAX_RELATIONS_PER_RECORD:
        raise _Problem("relations", f"must be a list of at most {MAX_RELATIONS_PER_RECORD:,} relations", value)
    found = []
    for item in value:
        target = _uuid(item.get("target_id")) if isinstance(item, dict) else None
        if not isinstance(item, dict) or target is None:
            raise _Problem("relations", "each relation needs a target_id (a memory id)", item)
        given = item.get("relation")
        relation = given if isinstance(given, str) else ""
        label = _checked("relations", partial(check.relation_label, relation), item)
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 < weight <= 1.0:
            raise _Problem("relations", "weight must be a number above 0.0 and at most 1.0", item)
        created = _timestamp("relations", item.get("created_at"), now)
        found.append(OutgoingRelation(target, label, float(weight), created))
    return found


def _json_text(name: str, value: str, expected: type, what: str) -> Any:
    try:
        decoded = json.loads(value)
    except ValueError:
        raise _Problem(name, f"must be {what}", value) from None
    if not isinstance(decoded, expected):
        raise _Problem(name, f"must be {what}", value)
    return decoded


def _tags(value: Any, settings: Settings) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = _json_text("tags", text, list, "a list of strings")
        else:
            value = [t for t in (part.strip() for part in text.split(",")) if t]
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise _Problem("tags", "must be a list of strings", value)
    return _checked("tags", lambda: check.tags(list(value), settings), value)


def _metadata(value: Any, settings: Settings) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = _json_text("metadata", value, dict, "a JSON object") if value.strip() else {}
    if not isinstance(value, dict):
        raise _Problem("metadata", "must be a JSON object", value)
    return _checked("metadata", lambda: check.metadata(value, settings), value)


def _importance(value: Any) -> float:
    if value is None:
        return 0.5
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise _Problem("importance", "must be a number from 0.0 to 1.0", value) from None
    return _checked("importance", lambda: check.importance(number), value)


def _access_count(value: Any) -> int:
    if value is None:
        return 0
    number = value
    try:
        if isinstance(value, str):
            number = float(value) if any(c in value for c in ".eE") else int(value)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number != int(number):
            raise ValueError
        count = int(number)
    except (ValueError, OverflowError):
        raise _Problem("access_count", "must be a whole number >= 0", value) from None
    if not 0 <= count <= MAX_ACCESS_COUNT:
        raise _Problem("access_count", f"must be between 0 and {MAX_ACCESS_COUNT}", value)
    return count


def _vector(value: Any, dim: int | None) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        value = _json_text("vector", value, list, "a list of numbers")
    try:
        vector = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise _Problem("vector", "must be a list of numbers", value) from None
    if vector.ndim != 1 or vector.size == 0:
        raise _Problem("vector", "must be a flat list of numbers", value)
    if dim is not None and vector.size != dim:
        raise _Problem("vector", f"has {vector.size} dimensions, the store needs {dim}", value)
    if not np.all(np.isfinite(vector)):
        raise _Problem("vector", "must contain only finite numbers", value)
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        raise _Problem("vector", "must not be all zeros", value)
    # Stored vectors are unit length (cosine = dot product); exact round trips stay untouched.
    return vector if abs(norm - 1.0) <= 1e-3 else (vector / norm).astype(np.float32)


def _source(value: Any) -> str:
    return value if isinstance(value, str) and value in SOURCES else "imported"


def _uuid(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value).strip()))
    except ValueError:
        return None


def check_rows(
    parsed: ParsedFile,
    settings: Settings,
    *,
    namespace_override: str | None,
    dim: int | None,
    need_vectors: bool,
) -> tuple[list[ImportRecord], list[RowProblem]]:
    """Check every record (every field of it): the valid ones, and one problem per bad field.

    Row numbers count records from 1 in file order (a CSV header is not a record).
    With `dim` given, vectors are read and checked (`need_vectors`: a missing one is a problem);
    without it they are ignored (the content will be embedded again).
    """
    candidates: list[ImportRecord] = []
    problems: list[RowProblem] = []
    now = utc_now()
    for index, raw in enumerate(parsed.rows):
        vector = parsed.vectors[index] if parsed.vectors is not None else None
        candidate, row_problems = _check_row(
            index + 1, raw, vector, settings, namespace_override, dim, need_vectors, now
        )
        problems.extend(row_problems)
        if candidate is not None:
            candidates.append(candidate)
    return candidates, problems


def _content(raw: dict, settings: Settings) -> str:
    value = raw.get("content")
    if not isinstance(value, str):
        raise _Problem("content", "is missing or not text", value)
    return _checked("content", lambda: check.content(value, settings), value)


def _namespace(raw: dict, settings: Settings, override: str | None) -> str:
    if override is not None:
        return override
    value = raw.get("namespace")
    if value is None:
        return "default"
    if not isinstance(value, str):
        raise _Problem("namespace", "must be text", value)
    return _checked("namespace", lambda: check.namespace(value, settings), value)


def _row_vector(raw_vector: Any, dim: int | None, need_vectors: bool) -> np.ndarray | None:
    if dim is None:
        return None
    found = _vector(raw_vector, dim)
    if found is None and need_vectors:
        raise _Problem("vector", "is missing: pass regenerate_embeddings=true to embed the content", None)
    return found


class _Problems(list):
    """The problems of one row, collected field by field so that every bad field is reported."""

    def __init__(self, row_number: int) -> None:
        super().__init__()
        self._row = row_number

    def take(self, fn: Callable[[], Any], default: Any = None) -> Any:
        """fn's value, or `default` with the problem noted."""
        try:
            return fn()
        except _Problem as problem:
            self.append(RowProblem(self._row, problem.field, problem.error, shown_value(problem.value)))
            return default


def _check_row(
    row_number: int,
    raw: Any,
    raw_vector: Any,
    settings: Settings,
    namespace_override: str | None,
    dim: int | None,
    need_vectors: bool,
    now: datetime,
) -> tuple[ImportRecord | None, list[RowProblem]]:
    if isinstance(raw, BadRow):
        return None, [RowProblem(row_number, "record", raw.reason, None)]
    if not isinstance(raw, dict):
        return None, [RowProblem(row_number, "record", "must be an object", shown_value(raw))]
    problems = _Problems(row_number)
    take = problems.take
    created = take(lambda: _timestamp("created_at", raw.get("created_at"), now), now)
    updated = take(lambda: _timestamp("updated_at", raw.get("updated_at"), created), created)
    candidate = ImportRecord(
        row_number=row_number,
        id=_uuid(raw.get("id")),
        content=take(lambda: _content(raw, settings), ""),
        namespace=take(lambda: _namespace(raw, settings, namespace_override), "default"),
        tags=take(lambda: _tags(raw.get("tags"), settings), []),
        importance=take(lambda: _importance(raw.get("importance")), 0.5),
        source=_source(raw.get("source")),
        metadata=take(lambda: _metadata(raw.get("metadata"), settings), {}),
        created_at=created,
        updated_at=updated,
        last_accessed=take(lambda: _timestamp("last_accessed", raw.get("last_accessed"), updated), updated),
        access_count=take(lambda: _access_count(raw.get("access_count")), 0),
        conversation=take(lambda: _conversation(raw), Conversation()),
        vector=take(lambda: _row_vector(raw_vector, dim, need_vectors), None),
        memory_type=take(lambda: _memory_type(raw.get("memory_type")), "fact"),
        expires_at=take(
            lambda: None if raw.get("expires_at") in (None, "") else _timestamp("expires_at", raw["expires_at"], now)
        ),
        pinned=take(lambda: _flag("pinned", raw.get("pinned")), False),
        version=take(lambda: _version(raw.get("version")), 1),
        provenance=take(lambda: _provenance(raw.get("provenance"))),
        retired=take(lambda: _retirement(raw)),
        relations=take(lambda: _relations(raw.get("relations"), now), []),
    )
    return (None if problems else candidate), list(problems)

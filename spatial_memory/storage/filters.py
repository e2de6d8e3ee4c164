"""Build LanceDB `where` clauses from typed values only.

No user string is ever pasted into SQL: columns come from an allow-list, operators
from an enum, and every value is rendered as an escaped literal of the column's type.
Conditions on metadata keys cannot be expressed on the JSON string column, so they
are returned separately and checked in Python (`metadata_matches`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timezone
from typing import Any, TypeVar

from ..errors import ValidationError

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains")
_SQL_OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

# column -> kind
COLUMNS: dict[str, str] = {
    "id": "string",
    "namespace": "string",
    "source": "string",
    "content": "string",
    "tags": "tags",
    "importance": "number",
    "access_count": "number",
    "created_at": "timestamp",
    "updated_at": "timestamp",
    "last_accessed": "timestamp",
    "session_id": "string",
    "sequence": "number",
    "speaker": "string",
    "occurred_at": "timestamp",
    "memory_type": "string",
    "expires_at": "timestamp",
    "version": "number",
}
MAX_LIST_VALUES = 1_000
# A where clause no memory can meet (Reads.search_where): the search need not run.
NO_MATCH = "false"


def quote(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL refused."""
    if not isinstance(value, str):
        raise ValidationError(f"expected a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ValidationError("strings in filters must not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def _number(value: Any, column: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"filter on '{column}' needs a number, got {value!r:.60}")
    if not math.isfinite(value):
        raise ValidationError(f"filter on '{column}' needs a finite number")
    return repr(float(value)) if isinstance(value, float) else str(int(value))


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
# Operators whose date-only value means the end of that day: "until 2023-06-01" and
# "lte 2023-06-01" include the whole day, "gt 2023-06-01" starts after it.
_UPPER_OPS = ("<=", ">")


def end_of_day_if_date(value: Any) -> Any:
    """A date alone ("2023-06-01") as the last moment of that day (UTC); anything else as it
    is. Upper bounds use it, so a day named as a bound is covered whole."""
    if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        try:
            day = datetime.fromisoformat(value.strip()).date()
        except ValueError:
            return value  # not a real date: the usual parse reports it
        return datetime.combine(day, time.max, tzinfo=timezone.utc)
    return value


def _moment(value: Any, column: str) -> datetime:
    """A timestamp argument as a naive UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"filter on '{column}' needs an ISO 8601 timestamp, got {value!r:.60}") from None
    else:
        raise ValidationError(f"filter on '{column}' needs an ISO 8601 timestamp string")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def _timestamp(moment: datetime) -> str:
    return f"CAST('{moment.isoformat(sep=' ', timespec='microseconds')}' AS TIMESTAMP)"


def _literal(kind: str, value: Any, column: str) -> str:
    if kind == "number":
        return _number(value, column)
    if kind == "timestamp":
        return _timestamp(_moment(value, column))
    if not isinstance(value, str):
        raise ValidationError(f"filter on '{column}' needs a string, got {type(value).__name__}")
    return quote(value)


def _as_list(value: Any, column: str, op: str) -> list[Any]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ValidationError(f"operator '{op}' on '{column}' needs a non-empty list")
    if len(value) > MAX_LIST_VALUES:
        raise ValidationError(f"operator '{op}' takes at most {MAX_LIST_VALUES} values")
    return list(value)


def _condition(column: str, op: str, value: Any) -> str:
    kind = COLUMNS[column]
    if kind == "tags":
        if op in ("contains", "eq"):
            return f"array_contains(tags, {quote_str(value, column)})"
        if op == "in":
            return f"array_has_any(tags, [{', '.join(quote_str(v, column) for v in _as_list(value, column, op))}])"
        if op in ("nin", "ne"):
            values = _as_list(value, column, op) if op == "nin" else [value]
            return f"NOT array_has_any(tags, [{', '.join(quote_str(v, column) for v in values)}])"
        raise ValidationError(f"operator '{op}' is not supported on tags (use contains, in, nin, eq, ne)")
    if op in _SQL_OPS:
        sql_op = _SQL_OPS[op]
        if kind == "timestamp" and sql_op in _UPPER_OPS:
            value = end_of_day_if_date(value)
        return f"{column} {sql_op} {_literal(kind, value, column)}"
    if op in ("in", "nin"):
        values = ", ".join(_literal(kind, v, column) for v in _as_list(value, column, op))
        return f"{column} {'IN' if op == 'in' else 'NOT IN'} ({values})"
    if op == "contains":
        if kind != "string":
            raise ValidationError(f"operator 'contains' needs a text column, not '{column}'")
        escaped = quote_str(value, column)[1:-1]
        escaped = escaped.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"{column} LIKE '%{escaped}%' ESCAPE '\\'"
    raise ValidationError(f"unknown operator '{op}'")


def quote_str(value: Any, column: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"filter on '{column}' needs a string, got {type(value).__name__}")
    return quote(value)


@dataclass
class MetadataCondition:
    key: str
    op: str
    value: Any


@dataclass
class Filter:
    """A where clause for LanceDB plus conditions checked in Python on metadata."""

    sql: str | None = None
    metadata: list[MetadataCondition] = field(default_factory=list)
    # Set when the filter is exactly "namespace = <this>" (searches can use the exact index).
    only_namespace: str | None = None
    # The table columns its where clause reads.
    columns: frozenset[str] = frozenset()
    # The moment whose memories it reads (recall's as_of): expiry is judged then, not now.
    as_of: datetime | None = None


def build_filter(
    *,
    namespace: str | None = None,
    tags: Iterable[str] | None = None,
    filters: Mapping[str, Any] | None = None,
    ids: Iterable[str] | None = None,
    since: Any = None,
    until: Any = None,
) -> Filter:
    """Combine typed conditions with AND.

    `filters` maps a column (or `metadata.<key>`) to a value (equality) or to
    `{operator: value}`; operators are eq, ne, gt, gte, lt, lte, in, nin, contains.
    `tags` matches memories carrying any of the tags. `since` / `until` (ISO 8601, inclusive)
    bound when a memory happened: its occurred_at, or its created_at when it has none; a date
    alone as `until` (or a timestamp filter's lte / gt) means the end of that day.
    """
    clauses: list[str] = []
    meta: list[MetadataCondition] = []
    columns: set[str] = set()
    if namespace is not None:
        columns.add("namespace")
        clauses.append(f"namespace = {quote(namespace)}")
    tag_list = list(tags or [])
    if tag_list:
        columns.add("tags")
        clauses.append(_condition("tags", "in", tag_list))
    if ids is not None:
        id_list = list(ids)
        columns.add("id")
        clauses.append(f"id IN ({', '.join(quote(i) for i in id_list)})" if id_list else "false")
    start = None if since is None else _moment(since, "since")
    end = None if until is None else _moment(end_of_day_if_date(until), "until")
    if start is not None and end is not None and start > end:
        raise ValidationError(
            f"since ({start.isoformat()}Z) is after until ({end.isoformat()}Z): no memory can match; "
            "swap them or widen the range"
        )
    for moment, op in ((start, ">="), (end, "<=")):
        if moment is not None:
            columns.update(("occurred_at", "created_at"))
            clauses.append(f"COALESCE(occurred_at, created_at) {op} {_timestamp(moment)}")
    for column, spec in (filters or {}).items():
        conditions = spec.items() if isinstance(spec, Mapping) else [("eq", spec)]
        for op, value in conditions:
            if op not in OPERATORS:
                raise ValidationError(f"unknown filter operator '{op}'; use one of {', '.join(OPERATORS)}")
            if column.startswith("metadata."):
                key = column[len("metadata.") :]
                if not key:
                    raise ValidationError("metadata filters need a key: 'metadata.<key>'")
                meta.append(MetadataCondition(key, op, value))
            elif column in COLUMNS:
                clauses.append(_condition(column, op, value))
                columns.add(column)
            else:
                raise ValidationError(
                    f"cannot filter on '{column}'; allowed: {', '.join(sorted(COLUMNS))} or metadata.<key>"
                )
    only_namespace = namespace if namespace is not None and len(clauses) == 1 and not meta else None
    return Filter(" AND ".join(f"({c})" for c in clauses) or None, meta, only_namespace, frozenset(columns))


_T = TypeVar("_T")


def chunks(values: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """The values at most MAX_LIST_VALUES at a time: what one IN list holds."""
    for start in range(0, len(values), MAX_LIST_VALUES):
        yield values[start : start + MAX_LIST_VALUES]


def any_in(columns: Sequence[str], keys: Sequence[str]) -> Iterator[str]:
    """Where clauses for the rows with one of these keys in any of these columns (of a side table),
    one per chunk of keys: `a IN (...) OR b IN (...)`. Keys are quoted literals."""
    for chunk in chunks(keys):
        listed = ", ".join(quote(k) for k in chunk)
        yield " OR ".join(f"{column} IN ({listed})" for column in columns)


def ids_clause(ids: Iterable[str]) -> str:
    """The where clause for the memories with these ids (at least one)."""
    where = build_filter(ids=ids).sql
    if where is None:
        raise ValueError("ids_clause needs at least one id")
    return where


def both(first: Filter, second: Filter) -> Filter:
    """Memories matching both filters."""
    clauses = [f"({f.sql})" for f in (first, second) if f.sql]
    return Filter(
        " AND ".join(clauses) or None,
        [*first.metadata, *second.metadata],
        None,
        first.columns | second.columns,
        first.as_of or second.as_of,
    )


def unexpired(moment: datetime) -> str:
    """Memories not expired at `moment`: no expiry, pinned, or an expiry after it."""
    return (
        f"(expires_at IS NULL OR COALESCE(pinned, false) OR expires_at > {_timestamp(_moment(moment, 'expires_at'))})"
    )


def current_at(moment: datetime) -> Filter:
    """Memories (current rows) whose present version already existed at `moment`. Together with
    `retired_current_at` (history rows) they are what was current then."""
    at = _timestamp(_moment(moment, "as_of"))
    return Filter(
        f"(created_at <= {at} AND updated_at <= {at})",
        [],
        None,
        frozenset({"created_at", "updated_at"}),
        moment,
    )


def retired_current_at(moment: datetime) -> str:
    """History rows that were the current version at `moment`."""
    at = _timestamp(_moment(moment, "as_of"))
    return f"(updated_at <= {at} AND valid_until > {at}) AND {unexpired(moment)}"


def pinned_only(namespace: str | None) -> Filter:
    sql = "COALESCE(pinned, false)" + (f" AND namespace = {quote(namespace)}" if namespace is not None else "")
    return Filter(sql, [], None, frozenset({"pinned", "namespace"}))


def session_windows(windows: Iterable[tuple[str, int, int]], *, namespace: str | None = None) -> Filter:
    """Memories of these sessions whose sequence lies in [low, high] (one window per session)."""
    parts = [
        f"(session_id = {quote(session)} AND sequence >= {int(low)} AND sequence <= {int(high)})"
        for session, low, high in windows
    ]
    if not parts:
        return Filter("false", [], None, frozenset({"session_id"}))
    sql = "(" + " OR ".join(parts) + ")"
    if namespace is not None:
        sql = f"(namespace = {quote(namespace)}) AND {sql}"
    return Filter(sql, [], None, frozenset({"session_id", "sequence", "namespace"}))


def _compare(actual: Any, op: str, expected: Any) -> bool:
    try:
        if op == "eq":
            return actual == expected
        if op == "ne":
            return actual != expected
        if op == "in":
            return isinstance(expected, list) and actual in expected
        if op == "nin":
            return isinstance(expected, list) and actual not in expected
        if op == "contains":
            if isinstance(actual, str) and isinstance(expected, str):
                return expected in actual
            return isinstance(actual, list) and expected in actual
        if actual is None or isinstance(actual, bool) != isinstance(expected, bool):
            return False
        if op == "gt":
            return actual > expected
        if op == "gte":
            return actual >= expected
        if op == "lt":
            return actual < expected
        if op == "lte":
            return actual <= expected
    except TypeError:
        return False
    return False


_MISSING = object()


def metadata_matches(metadata: Mapping[str, Any], conditions: list[MetadataCondition]) -> bool:
    for cond in conditions:
        value: Any = metadata
        for part in cond.key.split("."):
            value = value.get(part, _MISSING) if isinstance(value, Mapping) else _MISSING
        if value is _MISSING:
            if cond.op in ("ne", "nin"):
                continue
            return False
        if not _compare(value, cond.op, cond.value):
            return False
    return True

"""Recall's filters: the one definition of the parameters that choose which memories a call
considers (namespace, tags, filters, min_similarity, since, until, as_of).

recall, hybrid_recall and forget take them as `**where: Unpack[RecallFilters]` (or `MemoryFilters`, the
part forget uses), in their services and in their tools alike: a tool lists them as its own
parameters (tools/registry.py expands the TypedDict), with these types, limits and words.
None (or an absent key) is no such filter.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, TypedDict

from pydantic import BeforeValidator, Field

from ..errors import ValidationError
from ..limits import MAX_NAMESPACE_CHARS, MAX_TAGS
from ..records import as_utc
from ..storage.filters import Filter, both, build_filter, current_at, end_of_day_if_date

NamespaceFilter = Annotated[str, MAX_NAMESPACE_CHARS] | None
Filters = Annotated[
    dict[str, Any] | None,
    Field(
        description="{field: value or {op: value}}, all must hold; op: eq ne gt gte lt lte in nin contains; "
        "field: a result field or metadata.<key>"
    ),
]
TagFilter = Annotated[list[str], MAX_TAGS, Field(description="Any of these.")] | None
MinSimilarity = Annotated[float, Field(ge=0, le=1)]
Since = datetime | None
Until = Annotated[
    datetime | None,
    BeforeValidator(end_of_day_if_date),
    Field(description="Happened then or earlier; a date: that whole day."),
]
AsOf = Annotated[datetime | None, Field(description="As things stood then.")]


class MemoryFilters(TypedDict, total=False):
    """Which memories: one namespace, and conditions on their fields."""

    namespace: NamespaceFilter
    filters: Filters


class RecallFilters(MemoryFilters, total=False):
    """Which memories a search considers. since/until compare occurred_at, else created_at."""

    tags: TagFilter
    min_similarity: MinSimilarity | None
    since: Since
    until: Until
    as_of: AsOf


def store_filter(where: RecallFilters) -> Filter:
    """The store's filter for these filters; with as_of, over the memories current at that time."""
    found = build_filter(
        namespace=where.get("namespace"),
        tags=where.get("tags"),
        filters=where.get("filters"),
        since=where.get("since"),
        until=where.get("until"),
    )
    moment = as_of_moment(where)
    return found if moment is None else both(found, current_at(moment))


def as_of_moment(where: RecallFilters) -> datetime | None:
    """as_of in UTC, or None."""
    moment = where.get("as_of")
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        raise ValidationError("as_of must be an ISO 8601 date and time")
    return as_utc(moment)


def similarity_floor(where: RecallFilters) -> float:
    """min_similarity, 0.0 when not given."""
    return where.get("min_similarity") or 0.0

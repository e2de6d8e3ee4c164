"""When a memory expires: by its type (fact: never, conversation: after Settings.conversation_ttl_days,
context: at the end of the day, or after Settings.context_ttl_hours), or when the client says."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from ..config import Settings
from ..errors import ValidationError
from ..records import DEFAULT_MEMORY_TYPE, MEMORY_TYPES, as_utc


def memory_type_of(value: str | None) -> str:
    if value is None:
        return DEFAULT_MEMORY_TYPE
    if value not in MEMORY_TYPES:
        raise ValidationError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, not {value!r:.40}")
    return value


def expiry_for(
    memory_type: str | None, expires_at: datetime | None, now: datetime, settings: Settings
) -> datetime | None:
    """The expiry of a memory of this type written at `now`; an explicit `expires_at` wins (it must
    lie in the future: a memory that would be gone at once is refused rather than silently lost)."""
    if expires_at is not None:
        moment = as_utc(expires_at)
        if moment <= now:
            raise ValidationError(
                f"expires_at {moment.isoformat()} is not in the future; give a later time, or forget the memory instead"
            )
        return moment
    if memory_type == "conversation":
        return now + timedelta(days=settings.conversation_ttl_days)
    if memory_type == "context":
        if settings.context_ttl_hours:
            return now + timedelta(hours=settings.context_ttl_hours)
        local = now.astimezone()  # the end of the user's day, not of UTC's
        return datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=local.tzinfo).astimezone(now.tzinfo)
    return None

"""The model-visible form of a tool result: what a client hands the model, in fewer tokens.

A result's structured content keeps the whole typed result (its output schema, for clients and
programs); its text is this lean form of the same result, built here for every tool alike:

- a field at its default or empty (null, [], {}) is left out (a top-level list is kept, so an
  empty answer still reads as one), and so is a memory's field at the value remember gives it
  when not told (STORE_DEFAULTS: namespace "default", importance 0.5) or one repeating another
  (SAME_AS: updated_at equal to created_at...), or counting the list beside it (COUNT_FIELDS),
  or marked for programs only (services/results/visibility.py: the store's machinery, echoes of
  the call's arguments);
- numbers are rounded to what they mean: two decimals below 10, one below 100, whole above
  (a tiny non-zero value keeps two significant digits; a whole one is written without ".0");
- times are given to the second, or to the day where the field is a date (DAY_FIELDS);
- a memory id is given as its first SHORT_ID_CHARS characters, which every tool taking an id
  accepts back (tools/calls.py resolves them; an ambiguous one is a typed error);
- a memory shown by its id and content alone is written as one string, "<id>: <content>"; memories
  marked BY_ID (visibility.py) as their ids alone; a procedure's step with only an action, a tool
  and a result as one string, "<action> (<tool>) -> <result>" (one with parameters stays an
  object); a number that is the item's place in its list (ORDINAL_FIELDS) is left out;
- a hit recall or how_to marked weak (algorithms/relevance.py) is shown as what names it (id and
  content, or procedure id and name) with `"weak": true` in place of its similarity: the model sees
  where relevance ends, and a number for what is marked irrelevant would only cost tokens.

What to do with each field of a result type is worked out once per type (`_plan`).

User data (metadata, a step's parameters) is passed as it is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..limits import MIN_ID_PREFIX_CHARS, SHORT_ID_CHARS
from ..services.results.visibility import by_id, for_programs

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_PREFIX = re.compile(rf"^[0-9a-f][0-9a-f-]{{{MIN_ID_PREFIX_CHARS - 1},35}}$")
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")
# Fields that are dates in what their tool means (the span of a store or a namespace).
DAY_FIELDS = frozenset({"oldest_memory_date", "newest_memory_date", "oldest_memory", "newest_memory"})
# Labels a client chose, which it sends back as they are (never shortened).
VERBATIM_FIELDS = frozenset({"session_id"})
# User data, passed through untouched.
OPAQUE_FIELDS = frozenset({"metadata", "parameters"})
# What a memory is given when stored without saying (remember's defaults): left out as well.
STORE_DEFAULTS: dict[str, Any] = {"namespace": "default", "importance": 0.5, "source": "manual"}
# A field left out when it says what another field of the same object already says.
SAME_AS = {
    "updated_at": "created_at",
    "last_accessed": "created_at",
    "vector_score": "similarity",
    "newest_memory": "oldest_memory",  # a span within one day, given once
    "newest_memory_date": "oldest_memory_date",
    "trigger_pattern": "name",  # a procedure named after its trigger
}
# A number left out when it is the item's place in its list (from 0).
ORDINAL_FIELDS = frozenset({"cluster_id"})
# A count left out when it is the length of the one list beside it.
COUNT_FIELDS = frozenset({"total", "total_namespaces", "count", "node_count"})
# What a weak hit keeps.
WEAK_FIELDS = frozenset({"id", "content", "procedure_id", "name", "weak"})
# A procedure step's fields that read as one string, "<action> (<tool>) -> <result>".
STEP_FIELDS = frozenset({"action", "tool", "result"})
_NO_DEFAULT = object()


def short_id(value: str) -> str:
    """A full memory id as its short form (other strings as they are)."""
    return value[:SHORT_ID_CHARS] if _UUID.match(value) else value


def is_short_id(value: str) -> bool:
    """A string a tool resolves as the start of a memory id: hex digits (and dashes), not a full id."""
    return _PREFIX.match(value) is not None and _UUID.match(value) is None


def lean(result: BaseModel, dumped: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lean form of a typed tool result (see the module docstring); `dumped`, when given, is
    its `model_dump(mode="json")` already made (the structured content), so it is not made twice."""
    return _model(result, result.model_dump(mode="json") if dumped is None else dumped, top=True)


@dataclass(frozen=True)
class _Field:
    """What the lean form does with one field of a result type."""

    name: str
    shown: bool  # not FOR_PROGRAMS
    ids_only: bool  # BY_ID
    default: Any  # its default as JSON (_NO_DEFAULT: a required field)
    store_default: Any  # STORE_DEFAULTS' value for it (_NO_DEFAULT: none)
    opaque: bool  # OPAQUE_FIELDS: passed as it is
    weak_kept: bool  # WEAK_FIELDS: kept for a weak hit


@dataclass(frozen=True)
class _Plan:
    """What the lean form does with a result type: its fields, and the field-to-field rules that
    can apply to it (SAME_AS pairs both of whose fields it has; whether it has a COUNT_FIELDS one)."""

    fields: tuple[_Field, ...]
    same_as: tuple[tuple[str, str], ...]
    counts: bool


_PLANS: dict[type[BaseModel], _Plan] = {}


def _plan(cls: type[BaseModel]) -> _Plan:
    """What the lean form does with each field of a result type, worked out once per type (a default
    factory is called once: results' factories build empty lists and dicts)."""
    plan = _PLANS.get(cls)
    if plan is None:
        names = cls.model_fields.keys()
        fields = tuple(
            _Field(
                name,
                shown=not for_programs(info.metadata),
                ids_only=by_id(info.metadata),
                default=_NO_DEFAULT if info.is_required() else _as_json(info.get_default(call_default_factory=True)),
                store_default=STORE_DEFAULTS.get(name, _NO_DEFAULT),
                opaque=name in OPAQUE_FIELDS,
                weak_kept=name in WEAK_FIELDS,
            )
            for name, info in cls.model_fields.items()
        )
        same_as = tuple((name, other) for name, other in SAME_AS.items() if name in names and other in names)
        plan = _PLANS[cls] = _Plan(fields, same_as, counts=not COUNT_FIELDS.isdisjoint(names))
    return plan


def _as_json(default: Any) -> Any:
    return default.model_dump(mode="json") if isinstance(default, BaseModel) else default


def _model(model: BaseModel, dumped: dict[str, Any], *, top: bool = False) -> dict[str, Any]:
    plan = _plan(type(model))
    weak = getattr(model, "weak", False) is True
    out: dict[str, Any] = {}
    for field in plan.fields:
        if not field.shown or (weak and not field.weak_kept):
            continue
        name = field.name
        value = dumped.get(name)
        if value is None or (field.default is not _NO_DEFAULT and _same(value, field.default)):
            continue
        if (not top and value in ([], {})) or (
            field.store_default is not _NO_DEFAULT and _same(value, field.store_default)
        ):
            continue
        if field.ids_only and isinstance(value, list):
            out[name] = [short_id(m["id"]) if isinstance(m, dict) else m for m in value]
        else:
            out[name] = value if field.opaque else _value(getattr(model, name), value, name)
    for name, other in plan.same_as:
        if name in out and out[name] == out.get(other):
            del out[name]
    if plan.counts:
        lengths = {len(v) for v in out.values() if isinstance(v, list)}
        for name in [n for n in out if n in COUNT_FIELDS and len(lengths) == 1 and out[n] in lengths]:
            del out[name]  # the length of the list beside it
    return out


def _value(original: Any, value: Any, name: str) -> Any:
    if isinstance(original, BaseModel):
        return _reference(_model(original, value))
    if isinstance(value, list):
        items = original if isinstance(original, list) and len(original) == len(value) else value
        shown = [_value(o, v, name) for o, v in zip(items, value, strict=True)]
        for place, item in enumerate(shown):
            if isinstance(item, dict):
                for ordinal in ORDINAL_FIELDS:
                    if ordinal in item and item[ordinal] == place:
                        del item[ordinal]
        return shown
    if isinstance(value, dict):
        return {k: v if k in OPAQUE_FIELDS else _value(v, v, k) for k, v in value.items()}
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return rounded(value)
    if isinstance(value, str):
        return _text(value, name)
    return value


def _reference(shown: dict[str, Any]) -> dict[str, Any] | str:
    """A memory shown by its id and content alone as one string, "<id>: <content>"; a procedure
    step with only an action, a tool and a result as "<action> (<tool>) -> <result>" (where each
    part reads back unambiguously)."""
    if shown.keys() == {"id", "content"} and isinstance(shown["id"], str) and isinstance(shown["content"], str):
        return f"{shown['id']}: {shown['content']}"
    if "action" in shown and shown.keys() <= STEP_FIELDS and _plain_step(shown):
        tool, result = shown.get("tool"), shown.get("result")
        return shown["action"] + (f" ({tool})" if tool else "") + (f" -> {result}" if result else "")
    return shown


def _plain_step(step: dict[str, Any]) -> bool:
    """Whether a step's parts are text that cannot be mistaken for the separators around them."""
    parts = [step.get(k) for k in ("action", "tool", "result")]
    if not all(p is None or (isinstance(p, str) and "\n" not in p) for p in parts):
        return False
    action, tool, _ = parts
    return (
        " -> " not in str(action) + str(tool)
        and not str(action).rstrip().endswith(")")
        and (tool is None or not any(c in tool for c in "()"))
    )


def _text(value: str, name: str) -> str:
    if name not in VERBATIM_FIELDS and _UUID.match(value):
        return value[:SHORT_ID_CHARS]
    moment = _TIME.match(value)
    if moment is None:
        return value
    day, clock, _, zone = moment.groups()
    if name in DAY_FIELDS:
        return day
    return f"{day}T{clock}{'Z' if zone in ('Z', '+00:00') else zone}"


def rounded(value: float) -> float | int:
    """A number to what it means: 2 decimals below 10, 1 below 100, whole above; a tiny non-zero
    value to two significant digits."""
    if not math.isfinite(value):
        return value
    size = abs(value)
    if size >= 100:
        return round(value)
    digits = 2 if size < 10 else 1
    short = round(value, digits)
    if short == 0 and value != 0:
        return float(f"{value:.2g}")
    return int(short) if short.is_integer() else short


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default

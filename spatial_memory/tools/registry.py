"""Turning the tool functions into the SDK's Tool objects for one server's settings.

A tool is a plain `async def` whose signature is its schema and whose docstring is its
description. Building it for a server does three things the SDK does not: a `SettingLimit` in
a type becomes the setting's value (limits.py), a `**where: Unpack[SomeTypedDict]` parameter is
listed as the TypedDict's keys (services/recall_filters.py: recall's filters, defined once), and
the input schema is written compactly (every client sends it to the model in every conversation).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from annotated_types import MaxLen
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, create_model

from ..limits import SettingLimit
from .calls import full_ids
from .types import IdArgument

F = TypeVar("F", bound=Callable[..., Any])
_ANNOTATIONS_ATTRIBUTE = "__tool_annotations__"
_META_ATTRIBUTE = "__tool_meta__"


def tool(annotations: ToolAnnotations, meta: dict[str, Any] | None = None) -> Callable[[F], F]:
    """Mark a function as a tool with these hints (read-only, destructive...); it stays a plain function.
    `meta`: the tool's `_meta` (the MCP App that shows its results: atlas/__init__.py)."""

    def mark(fn: F) -> F:
        setattr(fn, _ANNOTATIONS_ATTRIBUTE, annotations)
        setattr(fn, _META_ATTRIBUTE, meta)
        return fn

    return mark


def build(fn: Callable[..., Any], settings: Any) -> Tool:
    """The SDK's Tool for a tool function, with the limits of these settings."""
    signature = _signature(fn, settings)
    id_names = [p.name for p in signature.parameters.values() if _takes_ids(p.annotation)]

    @functools.wraps(fn)
    async def run(**arguments: Any) -> Any:
        if id_names:  # short ids, as results show them, become full ids first
            context = next(v for v in arguments.values() if isinstance(v, Context))
            resolved = await full_ids(context, arguments, id_names)
            if isinstance(resolved, CallToolResult):
                return resolved
            arguments = resolved
        return await fn(**arguments)

    # The SDK reads the signature (and the annotations, to find the Context) of what it calls.
    run.__signature__ = signature  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    run.__annotations__["return"] = signature.return_annotation
    built = Tool.from_function(
        run,
        name=fn.__name__,
        description=inspect.cleandoc(fn.__doc__ or ""),
        annotations=getattr(fn, _ANNOTATIONS_ATTRIBUTE),
        meta=getattr(fn, _META_ATTRIBUTE, None),
    )
    # Unknown arguments are refused (the server checks them by name): say so in the schema.
    built.parameters = compact_input_schema({**built.parameters, "additionalProperties": False})
    if built.fn_metadata.output_schema is not None:
        built.fn_metadata.output_schema = plain_output_schema(without_titles(built.fn_metadata.output_schema))
    return built


def _takes_ids(hint: Any) -> bool:
    """Whether a parameter's type is a memory id or holds some (a list, an optional one)."""
    if any(isinstance(m, IdArgument) for m in getattr(hint, "__metadata__", ())):
        return True
    return any(_takes_ids(arg) for arg in get_args(hint))


def _signature(fn: Callable[..., Any], settings: Any) -> inspect.Signature:
    signature = inspect.signature(fn, eval_str=True)
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # **where: Unpack[SomeTypedDict]
            (keys,) = get_args(parameter.annotation)
            for name, hint in get_type_hints(keys, include_extras=True).items():
                kind = inspect.Parameter.KEYWORD_ONLY
                parameters.append(inspect.Parameter(name, kind, default=None, annotation=resolve(hint, settings)))
        else:
            parameters.append(parameter.replace(annotation=resolve(parameter.annotation, settings)))
    return signature.replace(parameters=parameters)


def resolve(hint: Any, settings: Any) -> Any:
    """`hint` with every SettingLimit in it (nested types and models included) replaced by the
    maximum the settings give."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        inner, *metadata = args
        limits = [MaxLen(getattr(settings, m.setting)) if isinstance(m, SettingLimit) else m for m in metadata]
        return Annotated[(resolve(inner, settings), *limits)]
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return _model(hint, settings)
    if not args or origin is None or origin is Literal:
        return hint
    resolved = tuple(resolve(arg, settings) for arg in args)
    if origin in (Union, types.UnionType):
        return Union[resolved]  # noqa: UP007 - a union of a runtime tuple
    return origin[resolved]


def _model(model: type[BaseModel], settings: Any) -> type[BaseModel]:
    limits = tuple(getattr(settings, name) for name in _setting_names(model))
    return _model_with(model, limits) if limits else model


def _setting_names(model: type[BaseModel]) -> list[str]:
    return sorted({m.setting for info in model.model_fields.values() for m in _markers(info.rebuild_annotation())})


def _markers(hint: Any) -> Iterator[SettingLimit]:
    for part in (*get_args(hint), *getattr(hint, "__metadata__", ())):
        if isinstance(part, SettingLimit):
            yield part
        else:
            yield from _markers(part)


@functools.lru_cache(maxsize=32)
def _model_with(model: type[BaseModel], limits: tuple[int, ...]) -> type[BaseModel]:
    """`model` with its SettingLimits resolved, under the same name (the same JSON schema)."""
    settings = types.SimpleNamespace(**dict(zip(_setting_names(model), limits, strict=True)))
    fields: Any = {
        name: (resolve(info.rebuild_annotation(), settings), info.default) for name, info in model.model_fields.items()
    }
    return create_model(model.__name__, __base__=model, __doc__=model.__doc__, **fields)


def compact_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as the model reads it, saying what to send in fewer words: no titles, a
    definition used once written in place, and an optional value as its type alone. Every
    parameter a tool takes as `T | None` means the same by null and by leaving it out, so the
    schema asks for the one way (the server still takes null); and `additionalProperties: true`
    is what an object schema means without it."""
    return _compact(plain_output_schema(without_titles(schema)))


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = _without_null(node)
    return {
        key: value if key in _LITERAL_KEYWORDS else _compact(value)
        for key, value in node.items()
        if not (key == "default" and value is None) and not (key == "additionalProperties" and value is True)
    }


_LITERAL_KEYWORDS = {"enum", "const", "default", "required", "examples"}


def _without_null(node: dict[str, Any]) -> dict[str, Any]:
    """`T | None` as T: `"type": [T, "null"]` as `"type": T`, an anyOf of one branch and null as that branch."""
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:
        return {**node, "type": next(k for k in kind if k != "null")}
    branches = node.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        other = next(b for b in branches if b != {"type": "null"})
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if isinstance(other, dict) and not rest.keys() & other.keys():
            return {**rest, **other}
    return node


def read_only_names(tools: list[Tool]) -> set[str]:
    """The names of the tools annotated readOnlyHint (they never change the store)."""
    return {tool.name for tool in tools if tool.annotations is not None and tool.annotations.read_only_hint}


def without_titles(schema: Any) -> Any:
    """A JSON schema without its "title" annotations (a property named title is kept)."""
    if isinstance(schema, dict):
        return {k: without_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    return schema


_DEFS_PREFIX = "#/$defs/"
# Keywords that only describe: where a place and the definition it refers to both have one, the
# place's is kept.
_ANNOTATIONS = {"description", "title", "default", "examples"}
# Keywords that apply to null too: a branch holding one cannot take null into its own type.
_APPLY_TO_NULL = {"enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "if"}


def plain_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same output schema, in the form clients validate fastest: a definition used once written
    in place of its `$ref`, and a nullable field as `"type": [T, "null"]` instead of an `anyOf` of T
    and null (the keywords of T apply to T's values only, so both accept the same values). Every
    client validates every result against this schema, faster in this form (docs/BENCHMARKS.md)."""
    definitions = schema.get("$defs", {})
    # A definition referred to once, from anywhere (its own body included), is used in one place only.
    counts = Counter(ref[len(_DEFS_PREFIX) :] for ref in _refs(schema) if ref.startswith(_DEFS_PREFIX))
    inline = {name for name in definitions if counts[name] == 1}
    plain = _plain({k: v for k, v in schema.items() if k != "$defs"}, definitions, inline)
    kept = {name: _plain(d, definitions, inline) for name, d in definitions.items() if name not in inline}
    return {**plain, "$defs": kept} if kept else plain


def _refs(node: Any) -> Iterator[str]:
    """Every `$ref` under a node, the node's own included."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _plain(node: Any, definitions: dict[str, Any], inline: set[str]) -> Any:
    if isinstance(node, list):
        return [_plain(item, definitions, inline) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX) and ref[len(_DEFS_PREFIX) :] in inline:
        target = definitions[ref[len(_DEFS_PREFIX) :]]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if siblings.keys() & target.keys() <= _ANNOTATIONS:
            node = {**target, **siblings}
        else:
            node = {"allOf": [target], **siblings}
    node = {k: _plain(v, definitions, inline) for k, v in node.items()}
    return _nullable_as_type_list(node)


def _nullable_as_type_list(node: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [T, {"type": "null"}], ...}` as `{...T, "type": [T's type, "null"], ...}` where that
    says the same; any other node as it is."""
    branches = node.get("anyOf")
    null = {"type": "null"}
    if not isinstance(branches, list) or len(branches) != 2 or null not in branches:
        return node
    other = branches[1] if branches[0] == null else branches[0]
    kind = other.get("type") if isinstance(other, dict) else None
    if not isinstance(kind, str) or kind == "null" or _APPLY_TO_NULL & other.keys():
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if rest.keys() & other.keys():
        return node
    return {**rest, **other, "type": [kind, "null"]}
